"""The node's mount table as memory-backed volumes use it, as a service the kubelet calls.

A secret, projected or downwardAPI volume, and an emptyDir with ``medium: Memory``, is a
tmpfs upstream's emptyDir plugin mounts at the volume's directory; ``medium: HugePages``
is a hugetlbfs (runtime.kuberuntime.memory_volumes decides which, with what options).
Mounting, unmounting and reading what is mounted change or read the node, so they pass
one narrow interface (``VolumeMounts``) that a trace records and a replay answers: a
replayed pod worker never mounts nor unmounts anything on the machine it replays on.

Its own service rather than more of ``HostPaths``: that one answers for paths a pod names
on the node (hostPath), this one for mounts the kubelet makes in its own pod directories;
they are set up, torn down and replayed at different moments (a teardown has no hostPath).

The node's mounts are made as upstream's mount-utils makes them, by util-linux
``mount``/``umount`` (so a failure reads as upstream's ``mount failed: exit status 32
...`` with mount's own output), and read from ``/proc/self/mountinfo``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Protocol

from msgspec.structs import replace

from runtime.mounts import MOUNTINFO, MountPoint, read_mountinfo

__all__ = ["VOLUME_MOUNTS_TARGET", "MountPoint", "NodeVolumeMounts",
           "VolumeMounts"]

VOLUME_MOUNTS_TARGET = "volumemounts"
"""The service's name in traces (the ``target`` of its recorded calls)."""


class VolumeMounts(Protocol):
    """Mounts, unmounts and lists the filesystems of the kubelet's volume directories."""

    def mounts_under(self, directory: str) -> tuple[MountPoint, ...]:
        """The mounts at ``directory`` or below it (their paths relative to it), the
        deepest first and, of a path mounted twice, the top one first."""

    def mount(self, source: str, path: str, fstype: str, options: tuple[str, ...]) -> str:
        """Mount ``fstype`` from ``source`` at ``path`` (a directory) with ``options``;
        ``""`` when mounted, else upstream's error."""

    def tear_down(self, path: str) -> str:
        """Unmount what is mounted at ``path``, then remove the directory (upstream's
        teardownTmpfsOrHugetlbfs); ``""`` when done, else upstream's error (and the
        directory stays)."""


def _depth(relative: str) -> int:
    return relative.count("/") + 1 if relative else 0


def _output(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


class NodeVolumeMounts:
    """The real node's mount table."""

    def __init__(self, mountinfo: str = MOUNTINFO) -> None:
        self._mountinfo = mountinfo

    def mounts_under(self, directory: str) -> tuple[MountPoint, ...]:
        table = read_mountinfo(self._mountinfo)
        # mountinfo names mount points with symlinks resolved (a root dir reached through a
        # symlink would otherwise show nothing mounted, and a tear-down would remove files
        # through the mount).
        root = os.path.realpath(directory).rstrip("/")
        found = [replace(p, path=os.path.relpath(p.path, root) if p.path != root else "")
                 for p in table if p.path == root or p.path.startswith(root + "/")]
        # Deepest first; of one path, the later (upper) mount first.
        ordered = sorted(enumerate(found), key=lambda e: (-_depth(e[1].path), -e[0]))
        return tuple(p for _, p in ordered)

    def mount(self, source: str, path: str, fstype: str, options: tuple[str, ...]) -> str:
        # mount-utils' MakeMountArgs: -t fstype -o opt1,opt2 source target.
        args = ["-t", fstype, *(("-o", ",".join(options)) if options else ()), source, path]
        result = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return ""
        return (f"mount failed: exit status {result.returncode}\nMounting command: mount\n"
                f"Mounting arguments: {' '.join(args)}\nOutput: {_output(result)}")

    def tear_down(self, path: str) -> str:
        # Each mount stacked at the path in turn (a second set-up never stacks one, but a
        # kubelet from before might have).
        while any(p.path == "" for p in self.mounts_under(path)):
            result = subprocess.run(["umount", path], capture_output=True, text=True,
                                    check=False)
            if result.returncode != 0:
                return (f"unmount failed: exit status {result.returncode}\nUnmounting "
                        f"arguments: {path}\nOutput: {_output(result)}")
        shutil.rmtree(path, ignore_errors=True)
        return ""
