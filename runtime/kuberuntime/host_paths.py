"""The node's filesystem as hostPath volumes see it, as a service the kubelet calls.

A hostPath volume reads the node (does the path exist, is it a directory, a socket ...)
and, for the ``*OrCreate`` types, writes it. Both are inputs from outside the kubelet, so
they pass one narrow interface (``HostPaths``) that a trace records and a replay answers:
a replayed pod worker never looks at, nor makes, a path on the machine it replays on.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

__all__ = ["HOST_PATHS_TARGET", "CheckOnlyHostPaths", "HostPaths", "NodeHostPaths"]

HOST_PATHS_TARGET = "hostpath"
"""The service's name in traces (the ``target`` of its recorded calls)."""


class HostPaths(Protocol):
    """Prepares hostPath volumes on the node."""

    def prepare(self, path: str, kind: str) -> str:
        """Make ``path`` if ``kind`` (the volume's ``type``) says to and it is missing, then
        check its type: ``""`` when the volume can be used, else upstream's error."""


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


class CheckOnlyHostPaths:
    """For replaying traces recorded before hostPath answers were: reads the node but
    never writes it, taking a missing ``*OrCreate`` path as made (as it was when
    recorded, unless making it failed: then the replay shows the difference)."""

    def prepare(self, path: str, kind: str) -> str:
        if kind in ("DirectoryOrCreate", "FileOrCreate") and not os.path.exists(path):
            return ""
        return _check(path, kind)
