"""A pod's fsGroup on the volumes the kubelet makes (upstream pkg/volume/volume_linux.go
SetVolumeOwnership, and when each volume plugin calls it).

With ``securityContext.fsGroup`` set, every file and directory of the volume gets that
group, the permission bits rw for the group (r only on a read-only volume) and, on
directories, x and setgid, so files the containers create there belong to the group too.
Symlinks get the group but no chmod (it would reach their target). With
``fsGroupChangePolicy: OnRootMismatch`` the walk is skipped when the volume's root already
has the group, the bits and setgid.

Which volumes, as upstream's plugins do it: emptyDir once, when it is first made (its
"ready" marker in the pod's plugin dir records that, so a resync or a kubelet restart does
not walk it again); downwardAPI, projected, configMap and secret volumes each time they are
written; hostPath never. The plugins upstream pass no change policy (it is for volumes
from storage drivers), so none of these reads ``fsGroupChangePolicy``; set_volume_ownership
takes it for the plugins that will.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from loguru import logger

from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Pod, Volume, volume_source

__all__ = [
    "apply_fs_group",
    "requires_permission_change",
    "set_volume_ownership",
]

RW_MASK = 0o660
RO_MASK = 0o440
EXEC_MASK = 0o110

# Volumes the kubelet writes again on every set-up (upstream's AtomicWriter plugins).
_REWRITTEN = frozenset({"downwardAPI", "projected", "configMap", "secret"})


def requires_permission_change(root: str, fs_group: int, readonly: bool) -> bool:
    """Upstream requiresPermissionChange: does the volume's root lack the group, the
    permission bits or setgid?"""
    try:
        info = os.stat(root)
    except OSError as err:
        logger.warning("reading the permissions of volume root {} failed, changing them "
                       "all: {}", root, err)
        return True
    if info.st_gid != fs_group:
        return True
    if not stat.S_ISDIR(info.st_mode):
        return True
    wanted = (RO_MASK if readonly else RW_MASK) | EXEC_MASK
    return (stat.S_IMODE(info.st_mode) & wanted) != wanted or not info.st_mode & stat.S_ISGID


def _walk_deep(root: str) -> Iterator[tuple[str, os.stat_result]]:
    """Every path under ``root``, children before their directory (upstream walkDeep);
    an unreadable directory raises OSError."""
    info = os.lstat(root)
    if stat.S_ISDIR(info.st_mode):
        for name in os.listdir(root):
            yield from _walk_deep(os.path.join(root, name))
    yield root, info


def _change(path: str, info: os.stat_result, fs_group: int, readonly: bool) -> None:
    """Upstream changeFilePermission: a failed chown or chmod is logged, not fatal."""
    try:
        os.lchown(path, -1, fs_group)
    except OSError as err:
        logger.warning("lchown {} to group {} failed: {}", path, fs_group, err)
    if stat.S_ISLNK(info.st_mode):
        return
    mask = RO_MASK if readonly else RW_MASK
    if stat.S_ISDIR(info.st_mode):
        mask |= stat.S_ISGID | EXEC_MASK
    try:
        os.chmod(path, stat.S_IMODE(info.st_mode) | mask)
    except OSError as err:
        logger.warning("chmod {} failed: {}", path, err)


def set_volume_ownership(path: str, fs_group: int | None, change_policy: str = "",
                         readonly: bool = False) -> bool:
    """Give the volume at ``path`` to ``fs_group`` (upstream SetVolumeOwnership); False
    when there was nothing to do (no fsGroup, or OnRootMismatch and the root matches)."""
    if fs_group is None:
        return False
    if change_policy == "OnRootMismatch" and not requires_permission_change(
            path, fs_group, readonly):
        return False
    for entry, info in _walk_deep(path):
        _change(entry, info, fs_group, readonly)
    return True


def _ready_marker(pod: Pod, volume: Volume, settings: NodeSettings) -> Path:
    """Upstream's emptyDir meta dir: ``pods/<uid>/plugins/kubernetes.io~empty-dir/<name>``."""
    return Path(settings.pod_dir(pod.metadata.uid), "plugins", "kubernetes.io~empty-dir",
                volume.name, "ready")


def apply_fs_group(pod: Pod, volume: Volume, path: str, settings: NodeSettings) -> None:
    """The pod's fsGroup on ``volume`` (set up at ``path``), when and as its plugin
    upstream applies it. OSError when the volume cannot be walked."""
    sc = pod.spec.security_context
    fs_group = sc.fs_group if sc is not None else None
    if volume.host_path is not None:
        return
    source = volume_source(volume)
    if source is None or source == "emptyDir":
        marker = _ready_marker(pod, volume, settings)
        if marker.exists():
            return
        set_volume_ownership(path, fs_group)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    elif source in _REWRITTEN:
        set_volume_ownership(path, fs_group, readonly=True)
