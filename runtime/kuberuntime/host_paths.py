"""The node's filesystem as volumes' paths see it, as a service the kubelet calls.

A hostPath volume reads the node (does the path exist, is it a directory, a socket ...)
and, for the ``*OrCreate`` types, writes it; a subPath is made inside its volume and
bind-mounted where the runtime can mount it safely (runtime.kuberuntime.subpath), and
unmounted when the pod's containers are gone; an env var's ``fileKeyRef`` reads a key of a
file in an emptyDir (runtime.kuberuntime.env_file). All of these are inputs from outside the
kubelet, so they pass one narrow interface (``HostPaths``) that a trace records and a replay
answers: a replayed pod worker never looks at, nor makes, a path on the machine it replays
on.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol

from loguru import logger
from msgspec import Struct

from runtime.kuberuntime.env_file import EnvFileRead, read_env_key
from runtime.kuberuntime.subpath import (
    SubPath,
    SubPathError,
    bind_sub_path,
    clean_sub_paths,
    safe_make_dir,
)

__all__ = ["HOST_PATHS_TARGET", "EnvFileRead", "HostPaths",
           "NodeHostPaths", "SubPathMount"]

HOST_PATHS_TARGET = "hostpath"
"""The service's name in traces (the ``target`` of its recorded calls)."""


class HostPaths(Protocol):
    """Prepares hostPath volumes on the node."""

    def prepare(self, path: str, kind: str) -> str:
        """Make ``path`` if ``kind`` (the volume's ``type``) says to and it is missing, then
        check its type: ``""`` when the volume can be used, else upstream's error."""

    def mount_sub_path(self, sub: SubPath) -> SubPathMount:
        """Make ``sub.path`` inside its volume if it is missing, then bind-mount it safely
        (runtime.kuberuntime.subpath): where the runtime is to mount it from, or what
        failed."""

    def clean_sub_paths(self, pod_dir: str) -> str:
        """Unmount and remove the pod's subPath mounts: ``""``, else what failed."""

    def read_env_key(self, volume_path: str, path: str, key: str) -> EnvFileRead:
        """The value of ``key`` in the env file at ``path`` inside the volume at
        ``volume_path``, never read through a symlink out of it (runtime.kuberuntime.env_file):
        the value alone, so a trace records no more of the file than the container gets."""


class SubPathMount(Struct, frozen=True):
    """What came of a subPath: the host path to mount, or the step that failed (upstream's
    makeMounts tells the pod which, ``create`` or ``prepare``, and logs the detail)."""

    host_path: str = ""
    failed: Literal["", "create", "prepare"] = ""
    detail: str = ""


_CHECKS: dict[str, tuple[Callable[[Path], bool], str]] = {
    "DirectoryOrCreate": (Path.is_dir, "a directory"), "Directory": (Path.is_dir, "a directory"),
    "FileOrCreate": (Path.is_file, "a file"), "File": (Path.is_file, "a file"),
    "Socket": (Path.is_socket, "a socket file"),
    "CharDevice": (Path.is_char_device, "a character device"),
    "BlockDevice": (Path.is_block_device, "a block device"),
}
"""Upstream's hostPath checkTypeInternal: what each type must find, in its words."""


def _check(path: str, kind: str) -> str:
    if not kind:  # "" is upstream's HostPathUnset: no check
        return ""
    if kind not in _CHECKS:
        return f"{kind} is an invalid volume type"
    check, what = _CHECKS[kind]
    return "" if check(Path(path)) else f"hostPath type check failed: {path} is not {what}"


class NodeHostPaths:
    """The real node: makes what ``DirectoryOrCreate`` and ``FileOrCreate`` ask for."""

    def prepare(self, path: str, kind: str) -> str:
        if kind == "DirectoryOrCreate" and not os.path.exists(path):
            os.makedirs(path, mode=0o755, exist_ok=True)
        elif kind == "FileOrCreate" and not os.path.exists(path):
            try:
                Path(path).touch(mode=0o644)
            except OSError as err:
                return f"open {path}: {(err.strerror or str(err)).lower()}"
        return _check(path, kind)

    def mount_sub_path(self, sub: SubPath) -> SubPathMount:
        if not os.path.exists(sub.path):
            # Made with the volume's own mode, as upstream makes it: a pod whose user may
            # write the volume may write the subPath (fsGroup's setgid bit included).
            try:
                mode = os.stat(sub.volume_path).st_mode & 0o7777
                safe_make_dir(os.path.relpath(sub.path, sub.volume_path), sub.volume_path,
                              mode)
            except (OSError, SubPathError) as err:
                return SubPathMount(failed="create", detail=str(err))
        try:
            return SubPathMount(host_path=bind_sub_path(sub))
        except (OSError, SubPathError) as err:
            return SubPathMount(failed="prepare", detail=str(err))

    def clean_sub_paths(self, pod_dir: str) -> str:
        try:
            clean_sub_paths(pod_dir)
        except OSError as err:
            logger.warning("cleaning the subPath mounts of {} failed: {}", pod_dir, err)
            return str(err)
        return ""

    def read_env_key(self, volume_path: str, path: str, key: str) -> EnvFileRead:
        return read_env_key(volume_path, path, key)
