"""Memory-backed volumes a previous kubelet left mounted, unmounted at start.

A kubelet stopped (or killed) between a pod's end and its volumes' teardown leaves the
pod's tmpfs and hugetlbfs mounts under ``<root-dir>/pods``, holding memory for a pod that
is gone. Upstream's volume manager finds them at start (reconstruction) and unmounts what
no pod wants; here a pod the runtime no longer holds (no sandbox) is gone: its mounts go.
A pod the runtime still holds keeps them: its worker or the pod killer takes them down.
"""

from __future__ import annotations

import os

from loguru import logger

from runtime.cri.service import CRIRuntime
from runtime.cri.types import SandboxFilter
from runtime.errors import CRIError
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.memory_volumes import sweep_leftover_mounts
from runtime.kuberuntime.volume_mounts import NodeVolumeMounts, VolumeMounts


def unmount_leftover_volumes(root_dir: str, runtime: CRIRuntime,
                             mounts: VolumeMounts | None = None) -> None:
    """Tear down the memory-backed volumes of pods the runtime no longer holds; with no
    answer from the runtime, none (a running pod's may be among them)."""
    try:
        holding = frozenset(s.labels.get(L.POD_UID, "") for s in
                            runtime.list_pod_sandbox(SandboxFilter()))
    except CRIError as err:
        logger.warning("leftover volume mounts: none unmounted, the runtime does not "
                       "answer: {}", err)
        return
    pods_dir = os.path.join(root_dir, "pods")
    left = sweep_leftover_mounts(pods_dir, holding, mounts or NodeVolumeMounts())
    for path, error in left:
        logger.warning("leftover volume mount {} stays: {}", path, error)
