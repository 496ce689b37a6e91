"""Upstream's subpath_linux_test.go tables (pkg/volume/util/subpath), on the real node.

Each table keeps upstream's case names and asserts what upstream asserts: an error or none,
and the paths and modes it leaves. Where upstream uses a fake mounter, these make real bind
mounts with ``bind_sub_path`` (the tests run as root) and check what the mount shows; every
mount made under ``tmp_path`` is unmounted at teardown, failed test or not.

Two of upstream's TestCleanSubPaths cases are answered differently on purpose: here the
pod's whole ``volume-subpaths`` is cleaned at once, not one volume's, and once nothing is
mounted under it what is left is the kubelet's own empty targets, so a stray file where a
container's directory belongs is removed rather than stopping the cleanup (see
``test_clean_sub_paths``).
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runtime.kuberuntime import subpath as subpath_module
from runtime.kuberuntime.subpath import (
    SUB_PATHS_DIR,
    SubPath,
    SubPathError,
    _existing_prefix,
    bind_sub_path,
    clean_sub_paths,
    open_sub_path,
    safe_make_dir,
    safe_open,
    sub_path_target,
)
from runtime.mounts import MountError, bind_mount, is_mount_point, mount_points_under
from tests.unit.runtime.subpath_fixtures import mounts_at, remove_made_dirs, unmount_all_under

DEFAULT_PERM = 0o750


@pytest.fixture(autouse=True)
def _no_mount_left(tmp_path: Path) -> Iterator[None]:
    yield
    unmount_all_under(str(tmp_path))


def _make_socket(directory: Path) -> Path:
    """upstream's createSocketFile: ``mt.sock``, bound by a relative name (a socket path
    may not be longer than 108 bytes)."""
    cwd = os.getcwd()
    os.chdir(directory)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind("mt.sock")
    finally:
        os.chdir(cwd)
    return directory / "mt.sock"


def _same_file(a: str | int, b: str) -> bool:
    sa = os.fstat(a) if isinstance(a, int) else os.stat(a)
    sb = os.stat(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


# --- TestSafeMakeDir ---------------------------------------------------------------------

Prepare = Callable[[Path], None]


def _nothing(base: Path) -> None:
    """The case's volume holds nothing made before the call."""


def _mkdirs(*paths: str) -> Prepare:
    def prepare(base: Path) -> None:
        for p in paths:
            (base / p).mkdir(DEFAULT_PERM, parents=True)
    return prepare


def _symlink(target: str, link: str, *dirs: str) -> Prepare:
    def prepare(base: Path) -> None:
        _mkdirs(*dirs)(base)
        os.symlink(target, base / link)
    return prepare


def _file(name: str) -> Prepare:
    def prepare(base: Path) -> None:
        (base / name).write_bytes(b"")
    return prepare


def _two_dirs_pointing_at_each_other(base: Path) -> None:
    """test1/dir points to test2 and test2/dir points to test1, by absolute paths."""
    _mkdirs("test1", "test2")(base)
    os.symlink(base / "test2", base / "test1/dir")
    os.symlink(base / "test1", base / "test2/dir")


# name, prepare, path, path whose mode is checked ("" for none), perm, error (None for none)
SAFE_MAKE_DIR: list[tuple[str, Prepare, str, str, int, str | None]] = [
    ("directory-does-not-exist", _nothing, "test/directory", "test/directory",
     DEFAULT_PERM, None),
    ("all-created-subpath-directory-with-permissions", _nothing, "test/directory", "test",
     0o777, None),
    ("directory-with-sgid", _nothing, "test/directory", "test/directory", 0o2777, None),
    ("directory-with-suid", _nothing, "test/directory", "test/directory", 0o4777, None),
    ("directory-with-sticky-bit", _nothing, "test/directory", "test/directory", 0o1777,
     None),
    ("directory-exists", _mkdirs("test/directory"), "test/directory", "test/directory",
     DEFAULT_PERM, None),
    ("create-base", _nothing, "", "", DEFAULT_PERM, None),
    ("escape-base-using-dots", _nothing, "..", "", DEFAULT_PERM,
     "is outside of allowed base"),
    ("escape-base-using-dots-2", _nothing, "test/../../..", "", DEFAULT_PERM,
     "is outside of allowed base"),
    ("follow-symlinks", _symlink("destination", "test", "destination"), "test/directory",
     "destination/directory", DEFAULT_PERM, None),
    ("follow-symlink-loop", _symlink("test", "test"), "test/directory", "", DEFAULT_PERM,
     "error opening directory"),
    ("follow-symlink-multiple follow", _two_dirs_pointing_at_each_other,
     "test1/dir/dir/dir/dir/dir/dir/dir/foo", "test2/foo", DEFAULT_PERM, None),
    ("danglink-symlink", _symlink("non-existing", "test"), "test/directory", "",
     DEFAULT_PERM, "cannot create directory"),
    ("non-directory", _file("test"), "test/directory", "", DEFAULT_PERM,
     "error opening directory"),
    ("non-directory-final", _file("test"), "test", "", DEFAULT_PERM, "Not a directory"),
    ("escape-with-relative-symlink", _symlink("../exists", "dir/test", "dir", "exists"),
     "dir/test", "", DEFAULT_PERM, None),
    ("escape-with-relative-symlink-not-exists", _symlink("../not-exists", "dir/test", "dir"),
     "dir/test", "", DEFAULT_PERM, "cannot create directory"),
    ("escape-with-symlink", _symlink("/", "test"), "test/directory", "", DEFAULT_PERM,
     "is outside of allowed base"),
]


@pytest.mark.parametrize(("prepare", "path", "check_path", "perm", "error"),
                         [c[1:] for c in SAFE_MAKE_DIR], ids=[c[0] for c in SAFE_MAKE_DIR])
def test_safe_make_dir(tmp_path: Path, prepare: Prepare, path: str, check_path: str,
                       perm: int, error: str | None) -> None:
    base = tmp_path / "base"
    base.mkdir()
    prepare(base)
    outside_before = sorted(os.listdir(tmp_path)), os.path.lexists("/directory")
    try:
        if error is None:
            safe_make_dir(path, str(base), perm)
        else:
            with pytest.raises((SubPathError, OSError), match=error):
                safe_make_dir(path, str(base), perm)
    finally:
        outside = sorted(os.listdir(tmp_path)), os.path.lexists("/directory")
        if outside[1] and not outside_before[1]:
            remove_made_dirs({"/directory"})  # made through the symlink to /
    assert outside == outside_before
    if check_path:
        assert stat.S_IMODE(os.stat(base / check_path).st_mode) == perm


def test_safe_make_dir_refuses_a_made_directory_swapped_for_a_fifo(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race upstream's comment names: a directory safe_make_dir just made, replaced by
    the pod before it is opened. A symlink is refused by O_NOFOLLOW; a fifo must be refused
    too, not opened for reading (which would wait for a writer for ever)."""
    base = tmp_path / "base"
    base.mkdir()
    real_mkdir = os.mkdir

    def mkdir_then_swap(name: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(name, mode, dir_fd=dir_fd)
        os.rmdir(name, dir_fd=dir_fd)
        os.mkfifo(name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", mkdir_then_swap)
    fifo = base / "test"
    with pytest.raises(SubPathError, match=f"cannot open {fifo}: Not a directory"):
        _unless_it_waits_on(fifo, lambda: safe_make_dir("test/directory", str(base),
                                                        DEFAULT_PERM))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(base) == ["test"]


def _unless_it_waits_on(fifo: Path, call: Callable[[], None]) -> None:
    """Run ``call``; should it wait on a read-only open of ``fifo`` (for a writer that
    never comes), a writer opens it after a deadline and the test fails, not hangs."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as err:  # handed to the test's thread
            outcome.append(err)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=10)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY))  # the waiting open returns
        thread.join()
        pytest.fail(f"a read-only open of the fifo {fifo} waited for a writer")
    if outcome[0] is not None:
        raise outcome[0]


# --- TestRemoveEmptyDirs -----------------------------------------------------------------
# Upstream's removeEmptyDirs runs when a bind fails: the target and the empty directories
# above it go, up to the pod's directory. Here that is what a failed bind_sub_path leaves.
# (Its "path-not-within-base" and "path-not-dir" cases test arguments this module never
# takes: the directories are always the target's own, below the pod's directory.)

def _failing_bind(source: str, target: str) -> None:
    raise MountError(1, f"mount {target}: Operation not permitted", target)


@pytest.mark.parametrize("other_container", [False, True], ids=["all-empty", "dir-not-empty"])
def test_remove_empty_dirs_after_a_failed_bind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               other_container: bool) -> None:
    vol, pod = tmp_path / "vol1", tmp_path / "pod0"
    (vol / "dir0").mkdir(parents=True)
    pod.mkdir()
    other = pod / SUB_PATHS_DIR / "vol1" / "container1"
    if other_container:
        other.mkdir(parents=True)
    monkeypatch.setattr(subpath_module, "bind_mount", _failing_bind)
    sub = SubPath(str(vol / "dir0"), str(vol), str(pod), "vol1", "container0", 1)
    with pytest.raises(MountError, match="Operation not permitted"):
        bind_sub_path(sub)
    assert not os.path.lexists(sub_path_target(sub))
    if other_container:
        assert sorted(os.listdir(pod / SUB_PATHS_DIR / "vol1")) == ["container1"]
    else:
        assert os.listdir(pod) == []
    assert os.listdir(vol) == ["dir0"]


# --- TestCleanSubPaths -------------------------------------------------------------------

def _bind(tmp_path: Path, volume: str, container: str, index: int, inside: str) -> str:
    """A real subPath bind mount of ``inside`` (made already in the volume)."""
    vol = tmp_path / volume
    return bind_sub_path(SubPath(str(vol / inside), str(vol), str(tmp_path / "pod"), volume,
                                 container, index))


def _volume(tmp_path: Path, name: str = "vol1") -> Path:
    """A volume whose contents a bad cleanup would remove through a bind mount."""
    vol = tmp_path / name
    (vol / "dir0" / "my-dir").mkdir(parents=True)
    (vol / "dir0" / "my-dir" / "data").write_text("keep")
    (vol / "file0").write_text("keep")
    return vol


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def _subpaths(tmp_path: Path) -> Path:
    return tmp_path / "pod" / SUB_PATHS_DIR


def _not_exists(tmp_path: Path) -> None:
    """The case's path is left missing."""


def _subpath_not_mount(tmp_path: Path) -> None:
    (_subpaths(tmp_path) / "vol1/container1/0").mkdir(DEFAULT_PERM, parents=True)


def _subpath_file(tmp_path: Path) -> None:
    (_subpaths(tmp_path) / "vol1/container1").mkdir(DEFAULT_PERM, parents=True)
    (_subpaths(tmp_path) / "vol1/container1/0").write_bytes(b"")


def _subpath_container_not_dir(tmp_path: Path) -> None:
    (_subpaths(tmp_path) / "vol1").mkdir(DEFAULT_PERM, parents=True)
    (_subpaths(tmp_path) / "vol1/container1").write_bytes(b"")


def _subpath_multiple_container_not_dir(tmp_path: Path) -> None:
    (_subpaths(tmp_path) / "vol1/container1").mkdir(DEFAULT_PERM, parents=True)
    (_subpaths(tmp_path) / "vol1/container2").write_bytes(b"")


def _subpath_mount(tmp_path: Path) -> None:
    _volume(tmp_path)
    _bind(tmp_path, "vol1", "container1", 0, "dir0")


def _subpath_mount_multiple(tmp_path: Path) -> None:
    _volume(tmp_path)
    _bind(tmp_path, "vol1", "container1", 0, "dir0")
    (_subpaths(tmp_path) / "vol1/container1/1").mkdir(DEFAULT_PERM)
    _bind(tmp_path, "vol1", "container2", 1, "dir0")


def _subpath_mount_multiple_vols(tmp_path: Path) -> None:
    _volume(tmp_path)
    _volume(tmp_path, "vol2")
    _bind(tmp_path, "vol1", "container1", 0, "dir0")
    (_subpaths(tmp_path) / "vol2/container1/1").mkdir(DEFAULT_PERM, parents=True)


def _subpath_with_files(tmp_path: Path) -> None:
    """Files and directories with content bound on a container's targets 0..3: removing
    through any of them would remove the volume's files."""
    _volume(tmp_path)
    _bind(tmp_path, "vol1", "container1", 0, "file0")
    _bind(tmp_path, "vol1", "container1", 1, "dir0")
    _bind(tmp_path, "vol1", "container1", 2, "dir0/my-dir")
    _bind(tmp_path, "vol1", "container1", 3, "dir0/my-dir/data")


# name, prepare, mounts it makes
CLEAN_SUB_PATHS: list[tuple[str, Callable[[Path], None], int]] = [
    ("not-exists", _not_exists, 0),
    ("subpath-not-mount", _subpath_not_mount, 0),
    ("subpath-file", _subpath_file, 0),
    # Upstream: an error, vol1 left. Here: nothing mounted, the stray file is removed too.
    ("subpath-container-not-dir", _subpath_container_not_dir, 0),
    # Upstream: an error, container2 left. Here as above.
    ("subpath-multiple-container-not-dir", _subpath_multiple_container_not_dir, 0),
    ("subpath-mount", _subpath_mount, 1),
    ("subpath-mount-multiple", _subpath_mount_multiple, 2),
    # Upstream cleans vol1 only and leaves vol2 for its own call; here the pod's all go.
    ("subpath-mount-multiple-vols", _subpath_mount_multiple_vols, 1),
    ("subpath-with-files", _subpath_with_files, 4),
]


@pytest.mark.parametrize(("prepare", "mounts"), [c[1:] for c in CLEAN_SUB_PATHS],
                         ids=[c[0] for c in CLEAN_SUB_PATHS])
def test_clean_sub_paths(tmp_path: Path, prepare: Callable[[Path], None],
                         mounts: int) -> None:
    prepare(tmp_path)
    volumes = {v: _tree(tmp_path / v) for v in ("vol1", "vol2") if (tmp_path / v).exists()}
    assert len(mount_points_under(str(tmp_path))) == mounts
    clean_sub_paths(str(tmp_path / "pod"))
    assert mount_points_under(str(tmp_path)) == ()
    assert not os.path.lexists(_subpaths(tmp_path))
    assert {v: _tree(tmp_path / v) for v in volumes} == volumes
    if volumes:
        assert (tmp_path / "vol1/dir0/my-dir/data").read_text() == "keep"


def test_clean_sub_paths_under_a_root_dir_reached_through_a_symlink(tmp_path: Path) -> None:
    """The kubelet's root dir may be a symlink (/var/lib/kubelet -> /data/kubelet): the
    mounts are still found (mountinfo names them by the resolved path), unmounted, and the
    volume's files are never removed through them."""
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    root = tmp_path / "link"
    _volume(root)
    before = _tree(root / "vol1")
    _bind(root, "vol1", "container1", 0, "dir0")
    assert is_mount_point(str(_subpaths(root) / "vol1/container1/0"))
    clean_sub_paths(str(root / "pod"))
    assert mount_points_under(str(tmp_path)) == ()
    assert not os.path.lexists(_subpaths(root))
    assert _tree(root / "vol1") == before


# --- TestBindSubPath (and TestSubpath_PrepareSafeSubpath) --------------------------------

def _test_paths(base: Path) -> tuple[Path, Path]:
    """upstream's getTestPaths: the volume, and the bind target of container0's mount 1."""
    return base / "vol1", base / "pod0" / SUB_PATHS_DIR / "vol1" / "container0" / "1"


BindPrepare = Callable[[Path], Path]


def _subpath_dir(base: Path) -> Path:
    vol, _ = _test_paths(base)
    (vol / "dir0").mkdir(DEFAULT_PERM, parents=True)
    return vol / "dir0"


def _subpath_dir_symlink(base: Path) -> Path:
    vol, _ = _test_paths(base)
    sub = _subpath_dir(base)
    os.symlink(sub, vol / "dirLink")
    return sub


def _subpath_file_in_volume(base: Path) -> Path:
    vol, _ = _test_paths(base)
    vol.mkdir(DEFAULT_PERM)
    (vol / "file0").write_bytes(b"")
    return vol / "file0"


def _subpath_not_exists(base: Path) -> Path:
    vol, _ = _test_paths(base)
    return vol / "file0"


def _subpath_outside(base: Path) -> Path:
    vol, _ = _test_paths(base)
    vol.mkdir(DEFAULT_PERM)
    os.symlink(base, vol / "dir0")
    return vol / "dir0"


def _subpath_symlink_child_outside(base: Path) -> Path:
    vol, _ = _test_paths(base)
    (vol / "dir0").mkdir(DEFAULT_PERM, parents=True)
    os.symlink(base, vol / "dir0" / "child0")
    return vol / "dir0" / "child0"


def _subpath_child_outside_exists(base: Path) -> Path:
    vol, _ = _test_paths(base)
    vol.mkdir(DEFAULT_PERM)
    (base / "child0").write_bytes(b"")
    os.symlink(base, vol / "dir0")
    return vol / "dir0" / "child0"


def _subpath_child_outside_not_exists(base: Path) -> Path:
    vol, _ = _test_paths(base)
    vol.mkdir(DEFAULT_PERM)
    os.symlink(base, vol / "dir0")
    return vol / "dir0" / "child0"


def _subpath_child_outside_exists_middle_dir_symlink(base: Path) -> Path:
    vol, _ = _test_paths(base)
    (vol / "dir0").mkdir(DEFAULT_PERM, parents=True)
    (base / "child0").write_bytes(b"")
    os.symlink(base, vol / "dir0" / "linkDir0")
    return vol / "dir0" / "linkDir0" / "child0"


def _subpath_backstepping(base: Path) -> Path:
    vol, _ = _test_paths(base)
    vol.mkdir(DEFAULT_PERM)
    os.symlink(vol / "..", vol / "dir0")
    return vol / "dir0"


def _subpath_mountdir_already_exists(base: Path) -> Path:
    _, target = _test_paths(base)
    target.mkdir(DEFAULT_PERM, parents=True)
    return _subpath_dir(base)


def _subpath_mount_already_exists(base: Path) -> Path:
    """Something else is mounted on the target already (upstream's fake mount point): it
    is unmounted and the subPath bound instead."""
    _, target = _test_paths(base)
    target.mkdir(DEFAULT_PERM, parents=True)
    (base / "other").mkdir()
    (base / "other" / "stale").write_bytes(b"")
    bind_mount(str(base / "other"), str(target))
    return _subpath_dir(base)


def _subpath_proc_root_escape(base: Path) -> Path:
    """Not upstream's: out through /proc's magic link to the root, back to a host file."""
    vol, _ = _test_paths(base)
    vol.mkdir(DEFAULT_PERM)
    (base / "host-file").write_bytes(b"")
    os.symlink(f"/proc/self/root{base}/host-file", vol / "file0")
    return vol / "file0"


def _mount_unix_socket(base: Path) -> Path:
    vol, _ = _test_paths(base)
    vol.mkdir(DEFAULT_PERM)
    return _make_socket(vol)


def _subpath_mounting_fifo(base: Path) -> Path:
    vol, _ = _test_paths(base)
    vol.mkdir(DEFAULT_PERM)
    os.mkfifo(vol / "mount_test.fifo", 0)
    return vol / "mount_test.fifo"


NOT_WITHIN = "not within volume path"
NOT_RESOLVED = "error resolving symlinks in"

# name, prepare (returns the subPath), error (None for none)
BIND_SUB_PATH: list[tuple[str, BindPrepare, str | None]] = [
    ("subpath-dir", _subpath_dir, None),
    ("subpath-dir-symlink", _subpath_dir_symlink, None),
    ("subpath-file", _subpath_file_in_volume, None),
    ("subpath-not-exists", _subpath_not_exists, NOT_RESOLVED),
    ("subpath-outside", _subpath_outside, NOT_WITHIN),
    ("subpath-symlink-child-outside", _subpath_symlink_child_outside, NOT_WITHIN),
    ("subpath-child-outside-exists", _subpath_child_outside_exists, NOT_WITHIN),
    ("subpath-child-outside-not-exists", _subpath_child_outside_not_exists, NOT_RESOLVED),
    ("subpath-child-outside-exists-middle-dir-symlink",
     _subpath_child_outside_exists_middle_dir_symlink, NOT_WITHIN),
    ("subpath-backstepping", _subpath_backstepping, NOT_WITHIN),
    ("subpath-proc-root-escape", _subpath_proc_root_escape, NOT_WITHIN),
    ("subpath-mountdir-already-exists", _subpath_mountdir_already_exists, None),
    ("subpath-mount-already-exists", _subpath_mount_already_exists, None),
    ("mount-unix-socket", _mount_unix_socket, None),
    ("subpath-mounting-fifo", _subpath_mounting_fifo, None),
]


@pytest.mark.parametrize(("prepare", "error"), [c[1:] for c in BIND_SUB_PATH],
                         ids=[c[0] for c in BIND_SUB_PATH])
def test_bind_sub_path(tmp_path: Path, prepare: BindPrepare, error: str | None) -> None:
    path = prepare(tmp_path)
    vol, expected_target = _test_paths(tmp_path)
    sub = SubPath(str(path), str(vol), str(tmp_path / "pod0"), "vol1", "container0", 1)
    if error is not None:
        with pytest.raises(SubPathError, match=error):
            bind_sub_path(sub)
        assert not os.path.lexists(expected_target)
        assert mount_points_under(str(tmp_path)) == ()
        return
    target = bind_sub_path(sub)
    assert target == str(expected_target)
    # The target shows the subPath's very file, mounted once.
    assert mounts_at(target) == 1
    assert _same_file(target, os.path.realpath(path))


def test_prepare_safe_subpath_mount_already_exists_with_samefile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """upstream's subpath-mount-already-exists-with-samefile: bound already with that very
    file, it is neither unmounted nor mounted again (upstream: no mounter action)."""
    path = _subpath_file_in_volume(tmp_path)
    vol, expected_target = _test_paths(tmp_path)
    sub = SubPath(str(path), str(vol), str(tmp_path / "pod0"), "vol1", "container0", 1)
    assert bind_sub_path(sub) == str(expected_target)
    actions: list[str] = []
    monkeypatch.setattr(subpath_module, "unmount", lambda t: actions.append(f"unmount {t}"))
    monkeypatch.setattr(subpath_module, "bind_mount",
                        lambda s, t: actions.append(f"mount {s} {t}"))
    assert bind_sub_path(sub) == str(expected_target)
    assert actions == []
    assert mounts_at(str(expected_target)) == 1


def test_prepare_safe_subpath_mount_already_exists_with_mismatching_mount(
        tmp_path: Path) -> None:
    """upstream's subpath-mount-already-exists-with-mismatching-mount: the other mount is
    unmounted first, not stacked under."""
    path = _subpath_mount_already_exists(tmp_path)
    vol, expected_target = _test_paths(tmp_path)
    sub = SubPath(str(path), str(vol), str(tmp_path / "pod0"), "vol1", "container0", 1)
    assert bind_sub_path(sub) == str(expected_target)
    assert mounts_at(str(expected_target)) == 1
    assert _same_file(str(expected_target), str(path))
    assert os.listdir(expected_target) == []


# --- the directory swapped for a symlink between the check and the open -------------------

def _swap_for_symlink(directory: Path, to: Path) -> None:
    """What a container does while the kubelet works: the directory goes (renamed away),
    a symlink to ``to`` takes its name."""
    directory.rename(directory.with_name(directory.name + ".moved"))
    os.symlink(to, directory)


@pytest.mark.parametrize("swapped", ["a", "a/b"], ids=["middle-dir", "final-dir"])
def test_safe_open_refuses_a_directory_swapped_for_a_symlink_after_resolving(
        tmp_path: Path, swapped: str) -> None:
    vol, host = tmp_path / "vol", tmp_path / "host"
    (vol / "a" / "b").mkdir(parents=True)
    (host / "b").mkdir(parents=True)
    resolved, fd = open_sub_path(SubPath(str(vol / "a" / "b"), str(vol), "", "v", "c", 0))
    os.close(fd)
    _swap_for_symlink(vol / swapped, host if swapped == "a" else host / "b")
    with pytest.raises(SubPathError, match=f"unexpected symlink found {vol / swapped}$"):
        safe_open(resolved.path, resolved.volume_path)


def test_bind_sub_path_refuses_a_directory_swapped_between_check_and_mount(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The swap lands after bind_sub_path resolved the symlinks and checked the result is
    inside the volume: the segment-by-segment open refuses it and nothing is mounted."""
    vol, host = tmp_path / "vol", tmp_path / "host"
    (vol / "a" / "b").mkdir(parents=True)
    (host / "b").mkdir(parents=True)
    (host / "b" / "secret").write_bytes(b"")
    real_safe_open = safe_open

    def swap_then_open(path: str, base: str) -> int:
        _swap_for_symlink(vol / "a", host)
        return real_safe_open(path, base)

    monkeypatch.setattr(subpath_module, "safe_open", swap_then_open)
    sub = SubPath(str(vol / "a" / "b"), str(vol), str(tmp_path / "pod"), "v", "c", 0)
    with pytest.raises(SubPathError,
                       match=f"error opening subpath {vol}/a/b: unexpected symlink found"):
        bind_sub_path(sub)
    assert mount_points_under(str(tmp_path)) == ()
    assert not os.path.lexists(sub_path_target(sub))


# --- TestSafeOpen ------------------------------------------------------------------------

def _socket(base: Path) -> None:
    _make_socket(base)


SYMLINK = "unexpected symlink found"
CANNOT_OPEN = "cannot open"
OUTSIDE = "is outside of allowed base"

# name, prepare, path, error (None for none)
SAFE_OPEN: list[tuple[str, Prepare, str, str | None]] = [
    ("directory-does-not-exist", _nothing, "test/directory", CANNOT_OPEN),
    ("directory-exists", _mkdirs("test/directory"), "test/directory", None),
    ("escape-base-using-dots", _nothing, "..", OUTSIDE),
    ("escape-base-using-dots-2", _mkdirs("test"), "test/../../..", OUTSIDE),
    ("symlink", _symlink("destination", "test", "destination"), "test", SYMLINK),
    ("symlink-nested", _symlink("dir1", "dir1/dir2/test", "dir1/dir2"), "test",
     CANNOT_OPEN),
    ("symlink-loop", _symlink("test", "test"), "test", SYMLINK),
    ("symlink-not-exists", _symlink("non-existing", "test"), "test", SYMLINK),
    ("non-directory", _file("test"), "test/directory", CANNOT_OPEN),
    ("non-directory-final", _file("test"), "test", None),
    ("escape-with-relative-symlink", _symlink("../exists", "dir/test", "dir", "exists"), "dir/test",
     SYMLINK),
    ("escape-with-relative-symlink-not-exists",
     _symlink("../not-exists", "dir/test", "dir"), "dir/test", SYMLINK),
    ("escape-with-symlink", _symlink("/", "test"), "test", SYMLINK),
    ("mount-unix-socket", _socket, "mt.sock", None),
    ("mounting-unix-socket-in-middle", _socket, "mt.sock/bar", CANNOT_OPEN),
    # Not upstream's: the /proc escape (a symlink to another process's root) and a fifo,
    # which an open that is not O_PATH would block on.
    ("proc-root-escape", _symlink("/proc/1/root", "test"), "test", SYMLINK),
    ("fifo", lambda base: os.mkfifo(base / "fifo", 0), "fifo", None),
]


@pytest.mark.parametrize(("prepare", "path", "error"), [c[1:] for c in SAFE_OPEN],
                         ids=[c[0] for c in SAFE_OPEN])
def test_safe_open(tmp_path: Path, prepare: Prepare, path: str, error: str | None) -> None:
    base = tmp_path / "base"
    base.mkdir()
    prepare(base)
    full = os.path.join(base, path)
    if error is not None:
        with pytest.raises(SubPathError, match=error):
            safe_open(full, str(base))
        return
    fd = safe_open(full, str(base))
    try:
        assert _same_file(fd, full)
        assert os.readlink(f"/proc/self/fd/{fd}") == os.path.normpath(full)
    finally:
        os.close(fd)


# --- TestFindExistingPrefix --------------------------------------------------------------

# name, prepare, path, existing prefix, segments to make (None: an error)
FIND_EXISTING_PREFIX: list[tuple[str, Prepare, str, str, list[str] | None]] = [
    ("directory-does-not-exist", _nothing, "directory", "", ["directory"]),
    ("directory-exists", _mkdirs("test/directory"), "test/directory", "test/directory", []),
    ("follow-symlinks", _symlink("destination", "test", "destination/directory"),
     "test/directory", "test/directory", []),
    ("follow-symlink-loop", _symlink("test", "test"), "test/directory", "", None),
    ("follow-symlink-multiple follow", _two_dirs_pointing_at_each_other,
     "test1/dir/dir/foo/bar", "test1/dir/dir", ["foo", "bar"]),
    # A dangling symlink and a missing directory read alike (ENOENT).
    ("danglink-symlink", _symlink("non-existing", "test"), "test/directory", "",
     ["test", "directory"]),
    ("with-fifo-in-middle", lambda base: os.mkfifo(base / "mount_test.fifo", 0),
     "mount_test.fifo/directory", "", None),
]


@pytest.mark.parametrize(("prepare", "path", "expected_path", "expected_dirs"),
                         [c[1:] for c in FIND_EXISTING_PREFIX],
                         ids=[c[0] for c in FIND_EXISTING_PREFIX])
def test_find_existing_prefix(tmp_path: Path, prepare: Prepare, path: str, expected_path: str,
                              expected_dirs: list[str] | None) -> None:
    base = tmp_path / "base"
    base.mkdir()
    prepare(base)
    full = os.path.join(base, path)
    if expected_dirs is None:
        with pytest.raises(OSError):
            _existing_prefix(str(base), full)
        return
    existing, dirs = _existing_prefix(str(base), full)
    assert (existing, dirs) == (os.path.normpath(os.path.join(base, expected_path)),
                                expected_dirs)
