"""The node's mount table, as the kubelet changes it: bind mounts (subPath), unmounts, and
what is mounted under a directory (mount(2) and umount2(2) through libc, mountinfo read).

Every mount the kubelet makes lives under its root directory, in a pod's directory; a pod's
directory is never removed while anything is still mounted under it (``mount_points_under``),
since removing files through a mount would remove what the mount shows: a hostPath's, or the
host's, files.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil

__all__ = ["MountError", "bind_mount", "is_mount_point", "mount_points_under",
           "remove_unmounted_tree", "unmount"]

MS_BIND = 0x1000
MNT_DETACH = 0x2
_EINVAL = 22

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_void_p)
_libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)

MOUNTINFO = "/proc/self/mountinfo"


class MountError(OSError):
    """A mount or unmount the kernel refused; errno and strerror are the kernel's."""


def _failed(call: str, path: str) -> MountError:
    err = ctypes.get_errno()
    return MountError(err, f"{call} {path}: {os.strerror(err)}", path)


def bind_mount(source: str, target: str) -> None:
    """Bind-mount ``source`` on ``target`` (both exist, of the same kind). ``source`` may be
    ``/proc/self/fd/N``: the kernel then mounts the file that descriptor holds open, not
    whatever a path names by the time of the call."""
    if _libc.mount(source.encode(), target.encode(), None, MS_BIND, None) != 0:
        raise _failed("mount", target)


def unmount(target: str) -> None:
    """Unmount ``target``; one still in use is detached (MNT_DETACH) rather than left."""
    if _libc.umount2(target.encode(), 0) == 0:
        return
    if ctypes.get_errno() == _EINVAL:  # not a mount point
        raise _failed("umount", target)
    if _libc.umount2(target.encode(), MNT_DETACH) != 0:
        raise _failed("umount", target)


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (``\\040``)."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and len(field[i + 1:i + 4]) == 3 and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mount_points_under(directory: str, mountinfo: str = MOUNTINFO) -> tuple[str, ...]:
    """The mount points strictly under ``directory``, deepest first (the order to unmount
    them in), as the kernel names them (symlinks resolved)."""
    # mountinfo names a mount point by its path with symlinks resolved: a root dir reached
    # through a symlink would otherwise show nothing mounted, and a caller would remove
    # files through the mounts.
    base = os.path.realpath(directory).rstrip("/") + "/"
    points = []
    with open(mountinfo, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4:
                point = _unescape(fields[4])
                if point.startswith(base):
                    points.append(point)
    return tuple(sorted(set(points), key=lambda p: (-p.count("/"), p)))


def is_mount_point(path: str, mountinfo: str = MOUNTINFO) -> bool:
    """Whether something is mounted at ``path`` (a bind mount of a directory of the same
    filesystem included, which a device-number check would miss)."""
    path = os.path.realpath(path)  # as mountinfo names it
    with open(mountinfo, encoding="utf-8") as f:
        return any(len(fields) > 4 and _unescape(fields[4]) == path
                   for fields in (line.split() for line in f))


def remove_unmounted_tree(directory: str) -> tuple[str, ...]:
    """Remove ``directory`` and everything in it, unless something is mounted under it:
    then nothing is removed, and the mount points are returned (removing through a mount
    removes what it shows, which is not the kubelet's to remove)."""
    if not os.path.isdir(directory):
        return ()
    points = mount_points_under(directory)
    if not points:
        shutil.rmtree(directory, ignore_errors=True)
    return points
