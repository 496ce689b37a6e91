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
import re
import shutil

from msgspec import Struct

__all__ = ["MountError", "MountPoint", "bind_mount", "is_mount_point", "make_rshared",
           "mount_points_under", "parse_mountinfo", "read_mountinfo", "remove_unmounted_tree",
           "unmount"]

MS_BIND = 0x1000
MS_REC = 0x4000
MS_SHARED = 1 << 20
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


class MountPoint(Struct, frozen=True):
    """One mount of the node's mount table."""

    path: str
    fstype: str  # "tmpfs", "hugetlbfs", ...
    options: tuple[str, ...] = ()  # the filesystem's own (super) options: "size=...", "pagesize=2M"


_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in a path as octal escapes."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> tuple[MountPoint, ...]:
    """The mounts of a ``/proc/<pid>/mountinfo`` text, in its order (later mounts over
    earlier ones)."""
    points: list[MountPoint] = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        if len(fields) < dash + 4:
            continue
        points.append(MountPoint(_unescape(fields[4]), fields[dash + 1],
                                 tuple(fields[dash + 3].split(","))))
    return tuple(points)


def read_mountinfo(mountinfo: str = MOUNTINFO) -> tuple[MountPoint, ...]:
    """The node's mount table (this process's mount namespace)."""
    with open(mountinfo, encoding="utf-8", errors="surrogateescape") as f:
        return parse_mountinfo(f.read())


def mount_points_under(directory: str, mountinfo: str = MOUNTINFO) -> tuple[str, ...]:
    """The mount points strictly under ``directory``, deepest first (the order to unmount
    them in), as the kernel names them (symlinks resolved)."""
    # mountinfo names a mount point by its path with symlinks resolved: a root dir reached
    # through a symlink would otherwise show nothing mounted, and a caller would remove
    # files through the mounts.
    base = os.path.realpath(directory).rstrip("/") + "/"
    points = {p.path for p in read_mountinfo(mountinfo) if p.path.startswith(base)}
    return tuple(sorted(points, key=lambda p: (-p.count("/"), p)))


def is_mount_point(path: str, mountinfo: str = MOUNTINFO) -> bool:
    """Whether something is mounted at ``path`` (a bind mount of a directory of the same
    filesystem included, which a device-number check would miss)."""
    path = os.path.realpath(path)  # as mountinfo names it
    return any(p.path == path for p in read_mountinfo(mountinfo))


def _is_shared(path: str, mountinfo: str) -> bool:
    """Whether the mount ``path`` lies on (the deepest mount point above it, the last
    mounted there) propagates: mountinfo's optional fields hold ``shared:N``."""
    found: tuple[int, bool] = (-1, False)
    with open(mountinfo, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            if "-" not in fields[6:]:
                continue
            point = _unescape(fields[4])
            if path == point or path.startswith(point.rstrip("/") + "/"):
                depth = len(point.rstrip("/"))
                if depth >= found[0]:
                    optional = fields[6:fields.index("-", 6)]
                    found = (depth, any(o.startswith("shared:") for o in optional))
    return found[1]


def make_rshared(directory: str, mountinfo: str = MOUNTINFO) -> bool:
    """Make ``directory`` a shared mount, recursively, unless the mount it lies on is
    shared already (upstream's MakeRShared on the kubelet's root directory): a bind of the
    directory on itself, carrying what is mounted below it, then marked shared. Mount
    propagation (HostToContainer, Bidirectional) needs the volumes' node mounts shared or
    slaves. True when it made the bind; MountError when the kernel refused."""
    real = os.path.realpath(directory)
    if _is_shared(real, mountinfo):
        return False
    if _libc.mount(real.encode(), real.encode(), None, MS_BIND | MS_REC, None) != 0:
        raise _failed("mount --rbind", real)
    if _libc.mount(None, real.encode(), None, MS_SHARED | MS_REC, None) != 0:
        raise _failed("mount --make-rshared", real)
    return True


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
