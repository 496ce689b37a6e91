"""The subPath bind mounts a kubelet left behind, cleaned at start (upstream's
cleanupOrphanedPodDirs unmounts them for pods it no longer knows): a pod the runtime no
longer holds has no container that could use them.

A pod that still has a sandbox keeps its mounts: its containers (adopted, restarted) mount
them again, checked the same way a new mount is.
"""

from __future__ import annotations

import os

from loguru import logger

from runtime.cri.service import CRIRuntime
from runtime.cri.types import SandboxFilter
from runtime.errors import CRIError
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.subpath import SUB_PATHS_DIR, clean_sub_paths


def unmount_orphaned_sub_paths(root_dir: str, runtime: CRIRuntime) -> tuple[str, ...]:
    """Unmount the subPath mounts of every pod under ``<root_dir>/pods`` that the runtime
    holds no sandbox of; the UIDs cleaned."""
    pods = os.path.join(root_dir, "pods")
    try:
        uids = [u for u in os.listdir(pods)
                if os.path.isdir(os.path.join(pods, u, SUB_PATHS_DIR))]
    except FileNotFoundError:
        return ()
    if not uids:
        return ()
    try:
        holding = {s.labels.get(L.POD_UID, "") for s in runtime.list_pod_sandbox(SandboxFilter())}
    except CRIError as err:
        logger.warning("subPath mounts: no clean-up at start, the runtime does not answer: {}",
                       err)
        return ()
    cleaned = []
    for uid in sorted(set(uids) - holding):
        try:
            clean_sub_paths(os.path.join(pods, uid))
        except OSError as err:
            logger.bind(pod="", uid=uid, container="").warning(
                "unmounting a gone pod's subPath mounts failed: {}", err)
        else:
            cleaned.append(uid)
    if cleaned:
        logger.info("unmounted the subPath mounts of {} pod(s) the runtime no longer holds",
                    len(cleaned))
    return tuple(cleaned)
