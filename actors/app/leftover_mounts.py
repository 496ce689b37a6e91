"""Mounts a previous kubelet left behind for pods that are gone, unmounted at start.

A kubelet stopped (or killed) between a pod's end and its volumes' teardown leaves the
pod's subPath bind mounts and its tmpfs and hugetlbfs volumes under ``<root-dir>/pods``:
memory held, and node paths bound, for a pod that is gone. Upstream's volume manager finds
them at start (reconstruction) and its housekeeping (cleanupOrphanedPodDirs) unmounts what
no pod wants; here a pod the runtime no longer holds (no sandbox) is gone: its mounts go.
A pod the runtime still holds keeps them: its containers mount them again (a subPath is
checked the same way a new one is), and its worker or the pod killer takes them down.
"""

from __future__ import annotations

import os

from loguru import logger

from runtime.cri.service import CRIRuntime
from runtime.cri.types import SandboxFilter
from runtime.errors import CRIError
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.memory_volumes import sweep_leftover_mounts
from runtime.kuberuntime.subpath import SUB_PATHS_DIR, clean_sub_paths
from runtime.kuberuntime.volume_mounts import NodeVolumeMounts, VolumeMounts


def unmount_leftovers(root_dir: str, runtime: CRIRuntime,
                      mounts: VolumeMounts | None = None) -> None:
    """Unmount the subPath mounts and tear down the memory-backed volumes of pods the
    runtime no longer holds; with no answer from the runtime, none (a running pod's may be
    among them)."""
    try:
        holding = frozenset(s.labels.get(L.POD_UID, "") for s in
                            runtime.list_pod_sandbox(SandboxFilter()))
    except CRIError as err:
        logger.warning("leftover mounts: none unmounted, the runtime does not answer: {}",
                       err)
        return
    pods_dir = os.path.join(root_dir, "pods")
    # The subPath binds first: one may show a file of a pod's tmpfs.
    _unmount_sub_paths(pods_dir, holding)
    left = sweep_leftover_mounts(pods_dir, holding, mounts or NodeVolumeMounts())
    for path, error in left:
        logger.warning("leftover volume mount {} stays: {}", path, error)


def _unmount_sub_paths(pods_dir: str, holding: frozenset[str]) -> None:
    try:
        uids = {u for u in os.listdir(pods_dir)
                if os.path.isdir(os.path.join(pods_dir, u, SUB_PATHS_DIR))}
    except FileNotFoundError:
        return
    cleaned = 0
    for uid in sorted(uids - holding):
        try:
            clean_sub_paths(os.path.join(pods_dir, uid))
        except OSError as err:
            logger.bind(pod="", uid=uid, container="").warning(
                "unmounting a gone pod's subPath mounts failed: {}", err)
        else:
            cleaned += 1
    if cleaned:
        logger.info("unmounted the subPath mounts of {} pod(s) the runtime no longer holds",
                    cleaned)
