"""Safe subPath mounts: a path inside a volume that a pod wrote, opened so that it can
never lead out of the volume (upstream's pkg/volume/util/subpath, subpath_linux.go).

A pod controls what its volumes hold, symlinks included. A subPath joined to the volume's
path and handed to the runtime would be resolved by the runtime, outside the pod, with the
symlinks a container planted: ``ln -s / vol/x`` and a mount of ``vol`` with ``subPath: x``
would give the next container the node's root. So, as upstream does:

1. the subPath's symlinks are resolved once and the result must stay inside the volume
   (``subpath "..." not within volume path "..."``);
2. that path is opened again segment by segment from the volume's root with openat(2) and
   ``O_NOFOLLOW``, so a directory swapped for a symlink in between is caught;
3. the file descriptor's file is bind-mounted (``/proc/self/fd/N``) on
   ``<pod dir>/volume-subpaths/<volume>/<container>/<mount index>``, and that path, which
   the pod cannot change, is what the runtime mounts.

A missing subPath directory is made the same way (``safe_make_dir``): each directory made
with mkdirat(2) under a parent opened without following symlinks. The bind mounts are
unmounted when the pod's containers are gone (``clean_sub_paths``).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from msgspec import Struct

from runtime.mounts import bind_mount, is_mount_point, mount_points_under, unmount
from runtime.pod.model import Pod

__all__ = [
    "SUB_PATHS_DIR",
    "SubPath",
    "SubPathError",
    "bind_sub_path",
    "clean_sub_paths",
    "has_sub_paths",
    "open_sub_path",
    "path_within_base",
    "safe_make_dir",
    "safe_open",
    "sub_path_target",
]

SUB_PATHS_DIR = "volume-subpaths"
"""The directory of a pod's subPath bind mounts, in the pod's directory (upstream's name)."""

_NOFOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC
"""Opens a directory to walk on from, never through a symlink; anything else is refused
(ENOTDIR), where a plain read-only open of a fifo the pod swapped in would block forever."""

_PATH_NOFOLLOW = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
"""Opens any file (a fifo without blocking, a symlink as itself) without following it."""


class SubPathError(Exception):
    """A subPath that cannot be opened safely; the message is upstream's detail, for the
    log (the pod's status gets upstream's shorter words, which name no node path)."""


class SubPath(Struct, frozen=True):
    """One volume mount's subPath, as upstream's subpath.Subpath: the path inside the volume
    (``path``, joined already), the volume's own path, and where its bind mount goes."""

    path: str
    volume_path: str
    pod_dir: str
    volume_name: str
    container_name: str
    mount_index: int


def has_sub_paths(pod: Pod) -> bool:
    """Whether any container of ``pod`` mounts a subPath (or a subPathExpr): only such a
    pod has bind mounts to clean up."""
    mounts = [m for c in pod.all_containers() for m in c.volume_mounts]
    mounts += [m for e in pod.spec.ephemeral_containers for m in e.volume_mounts]
    return any(m.sub_path or m.sub_path_expr for m in mounts)


def path_within_base(full: str, base: str) -> bool:
    """Whether ``full`` is ``base`` or below it, lexically (mount-utils PathWithinBase)."""
    rel = os.path.relpath(full, base)
    return rel != ".." and not rel.startswith("../")


@contextmanager
def _closing(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


def safe_open(path: str, base: str) -> int:
    """Open ``path`` (symlinks resolved already, inside ``base``) from ``base`` down, one
    segment at a time, never following a symlink: the descriptor (``O_PATH``) of the file
    that is there now, which the caller closes. SubPathError otherwise."""
    path, base = os.path.normpath(path), os.path.normpath(base)
    rel = os.path.relpath(path, base)
    try:
        parent = os.open(base, _NOFOLLOW)
    except OSError as err:
        raise SubPathError(f"cannot open directory {base}: {err.strerror}") from err
    current = base
    try:
        for segment in rel.split("/"):
            current = os.path.join(current, segment)
            if not path_within_base(current, base):
                raise SubPathError(f"path {current} is outside of allowed base {base}")
            try:
                child = os.open(segment, _PATH_NOFOLLOW, dir_fd=parent)
            except OSError as err:
                raise SubPathError(f"cannot open {current}: {err.strerror}") from err
            if stat.S_ISLNK(os.fstat(child).st_mode):
                os.close(child)
                raise SubPathError(f"unexpected symlink found {current}")
            os.close(parent)
            parent = child
    except BaseException:
        os.close(parent)
        raise
    return parent


def _existing_prefix(base: str, path: str) -> tuple[str, list[str]]:
    """The longest prefix of ``path`` under ``base`` that exists, and the segments after it
    (upstream's findExistingPrefix)."""
    segments = os.path.relpath(path, base).split("/")
    current = base
    fd = os.open(base, os.O_RDONLY | os.O_CLOEXEC)
    try:
        for i, segment in enumerate(segments):
            try:
                child = os.open(segment, os.O_PATH | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                return current, segments[i:]
            os.close(fd)
            fd = child
            current = os.path.join(current, segment)
    finally:
        os.close(fd)
    return path, []


def safe_make_dir(sub_dir: str, base: str, perm: int) -> None:
    """Make the directory ``sub_dir`` inside ``base`` and the missing ones above it, each
    with mode ``perm``, so that none can be made outside ``base`` whatever the pod swaps in
    meanwhile (upstream's SafeMakeDir). OSError or SubPathError when it cannot."""
    try:
        real_base = os.path.realpath(base, strict=True)
    except OSError as err:
        raise SubPathError(f"error resolving symlinks in {base}: {err.strerror}") from err
    path = os.path.normpath(os.path.join(real_base, sub_dir))
    if not path_within_base(path, real_base):
        raise SubPathError(f"path {path} is outside of allowed base {real_base}")
    try:
        mode: int | None = os.stat(path).st_mode
    except OSError:
        mode = None  # missing, or a loop or a file on the way: the walk below tells which
    if mode is not None:
        if stat.S_ISDIR(mode):
            return  # exists (upstream: no race-proof check of where it leads; the bind does)
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    try:
        existing, to_make = _existing_prefix(real_base, path)
    except OSError as err:
        raise SubPathError(f"error opening directory {path}: {err.strerror}") from err
    try:
        real_existing = os.path.realpath(existing, strict=True)
    except OSError as err:
        raise SubPathError(f"error opening directory {existing}: {err.strerror}") from err
    if not path_within_base(real_existing, real_base):
        raise SubPathError(f"path {real_existing} is outside of allowed base {real_base}")
    try:
        parent = safe_open(real_existing, real_base)
    except SubPathError as err:
        raise SubPathError(f"cannot open directory {existing}: {err}") from err
    current = real_existing
    try:
        for name in to_make:
            current = os.path.join(current, name)
            try:
                os.mkdir(name, perm, dir_fd=parent)
            except OSError as err:
                raise SubPathError(f"cannot create directory {current}: {err.strerror}") from err
            try:
                child = os.open(name, _NOFOLLOW, dir_fd=parent)
            except OSError as err:
                raise SubPathError(f"cannot open {current}: {err.strerror}") from err
            os.close(parent)
            parent = child
            os.fchmod(parent, perm)  # mkdirat's mode went through the umask
    finally:
        os.close(parent)


def sub_path_target(sub: SubPath) -> str:
    """Where ``sub`` is bind-mounted (a container name is a DNS label: a safe dir name)."""
    return os.path.join(sub.pod_dir, SUB_PATHS_DIR, sub.volume_name, sub.container_name,
                        str(sub.mount_index))


def _same_file(a: str, b: str) -> bool:
    sa, sb = os.lstat(a), os.lstat(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _prepare_target(sub: SubPath) -> tuple[bool, str]:
    """Make the bind mount's target, of the kind of what it will show; (already mounted
    with that very file, target)."""
    target = sub_path_target(sub)
    if is_mount_point(target):
        if _same_file(sub.path, target):
            return True, target
        unmount(target)  # a mount of something else: redone
    os.makedirs(os.path.dirname(target), mode=0o750, exist_ok=True)
    if stat.S_ISDIR(os.lstat(sub.path).st_mode):
        if not os.path.isdir(target):
            os.mkdir(target, 0o750)
    elif not os.path.exists(target):
        # A file takes a bind mount of any kind but a directory (device, fifo, socket).
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o640))
    return False, target


def open_sub_path(sub: SubPath) -> tuple[SubPath, int]:
    """Resolve ``sub``'s symlinks once and open what it leads to inside its volume
    (upstream's first half of doBindSubPath and safeOpenSubPath): ``sub`` with its paths
    resolved, and the descriptor (``O_PATH``) of the file opened, which the caller closes.
    SubPathError when the path leads out of the volume or cannot be opened safely."""
    try:
        volume = os.path.realpath(sub.volume_path, strict=True)
    except OSError as err:
        raise SubPathError(f'error resolving symlinks in "{sub.volume_path}": '
                           f"{err.strerror}") from err
    try:
        path = os.path.realpath(sub.path, strict=True)
    except OSError as err:
        raise SubPathError(f'error resolving symlinks in "{sub.path}": {err.strerror}') from err
    if not path_within_base(path, volume):
        raise SubPathError(f'subpath "{path}" not within volume path "{volume}"')
    resolved = SubPath(path, volume, sub.pod_dir, sub.volume_name, sub.container_name,
                       sub.mount_index)
    try:
        fd = safe_open(path, volume)
    except SubPathError as err:
        raise SubPathError(f"error opening subpath {path}: {err}") from err
    return resolved, fd


def bind_sub_path(sub: SubPath) -> str:
    """Bind-mount what ``sub.path`` is inside its volume on its target and return the
    target, the path to give the runtime (upstream's doBindSubPath). SubPathError when the
    path leads out of the volume or cannot be opened safely; OSError when the mount
    cannot be made."""
    resolved, fd = open_sub_path(sub)
    with _closing(fd):
        mounted, target = _prepare_target(resolved)
        if mounted:
            return target
        try:
            # The descriptor's own file: whatever the pod renames meanwhile, this is what
            # was opened inside the volume.
            bind_mount(f"/proc/self/fd/{fd}", target)
        except OSError:
            _remove_empty_target(resolved)
            raise
    return target


def _remove_empty_target(sub: SubPath) -> None:
    """After a failed bind: the target and the directories above it that are empty."""
    target = sub_path_target(sub)
    if os.path.isdir(target):
        os.rmdir(target)
    elif os.path.lexists(target):
        os.unlink(target)
    stop = os.path.normpath(sub.pod_dir)
    directory = os.path.dirname(target)
    while directory != stop and path_within_base(directory, stop):
        try:
            os.rmdir(directory)
        except OSError:
            break
        directory = os.path.dirname(directory)


def clean_sub_paths(pod_dir: str) -> None:
    """Unmount every subPath bind mount of the pod and remove ``volume-subpaths`` (upstream
    cleans them per volume when it unmounts the pod's volumes). OSError when a mount stays:
    the directory is then left, never removed through a mount."""
    root = os.path.join(pod_dir, SUB_PATHS_DIR)
    if not os.path.lexists(root):
        return
    for point in mount_points_under(root):
        unmount(point)
    if mount_points_under(root):
        raise OSError(errno.EBUSY, f"mounts remain under {root}", root)
    # Only bind targets are left: empty directories and empty files.
    for directory, dirs, files in os.walk(root, topdown=False):
        for name in files:
            os.unlink(os.path.join(directory, name))
        for name in dirs:
            entry = os.path.join(directory, name)
            os.unlink(entry) if os.path.islink(entry) else os.rmdir(entry)
    os.rmdir(root)
