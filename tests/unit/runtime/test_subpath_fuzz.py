"""Generated volume layouts against the subPath code: whatever a pod plants in its volume,
what ``open_sub_path`` opens, and what ``bind_sub_path`` mounts, is inside the volume, and
``safe_make_dir`` makes nothing outside it.

A layout is a volume directory with random nested directories, files, fifos and symlinks
(absolute and relative, to inside, to ``/``, ``..``, ``../../..``, the volume's parent, a
sibling ``host`` directory with a sentinel file, through ``/proc/self/root``, dangling, in
loops, with ``..`` in their targets), and random subPaths over the names it holds (where
they lead), ``.`` and names it never holds (no ``..`` segment: makeMounts refuses those
before). The kernel is the oracle: a subPath it resolves inside the volume must open, as
the same file; one it resolves outside the volume, or not at all, must be refused.

Every layout comes from ``random.Random(f"{SEED}-{index}")``: a failure names the seed,
the index and the layout, and ``_check_layout`` replays it alone.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runtime.kuberuntime.subpath import (
    SubPath,
    SubPathError,
    bind_sub_path,
    clean_sub_paths,
    open_sub_path,
    safe_make_dir,
    sub_path_target,
)
from runtime.mounts import mount_points_under
from tests.unit.runtime.subpath_fixtures import remove_made_dirs, unmount_all_under

SEED = 31
LAYOUTS = 10_000
MOUNTED_LAYOUTS = 300

NAMES = ("a", "b", "c", "d")
"""What a layout's entries are called (so subPaths meet them often)."""

MISSING = ("fz-missing-1", "fz-missing-2")
"""Names no layout holds: what safe_make_dir makes, and what must never appear outside."""


@dataclass
class Case:
    """One layout under ``case_dir``: the volume, the ``host`` sibling, and what was made."""

    case_dir: Path
    index: int
    made: list[str] = field(default_factory=list)

    @property
    def vol(self) -> Path:
        return self.case_dir / "vol"

    @property
    def pod_dir(self) -> Path:
        """Beside the case dir: the pod's bind targets are no part of the layout."""
        return self.case_dir.parent / "pod"

    @property
    def host(self) -> Path:
        return self.case_dir / "host"

    def describe(self, sub: str = "") -> str:
        return (f"seed {SEED} layout {index_note(self.index)} in {self.case_dir}:\n  "
                + "\n  ".join(self.made) + (f"\nsubPath {sub!r}" if sub else ""))


def index_note(index: int) -> str:
    return f"{index} (replay: _check_layout(Path(...), {index}, mount=...))"


def _symlink_target(rng: random.Random, case: Case, parent: str, dirs: list[str]) -> str:
    """Where a symlink planted in ``vol/parent`` points."""
    here = case.vol / parent
    depth = parent.count("/") + 1 if parent else 0

    def inside() -> str:
        return rng.choice([*dirs, rng.choice(NAMES)])

    choices: tuple[Callable[[], str], ...] = (
        lambda: "/",
        lambda: "..",
        lambda: "../../..",
        lambda: ".",
        lambda: str(case.case_dir),  # the volume's parent
        lambda: str(case.host),
        lambda: str(case.host / "sentinel"),
        lambda: os.path.relpath(case.host, here),
        lambda: os.path.relpath(case.host / "sentinel", here),
        lambda: f"/proc/self/root{case.host}",
        lambda: str(case.vol / inside()),
        lambda: os.path.relpath(case.vol / inside(), here),
        lambda: rng.choice(NAMES),  # a sibling, maybe itself: a loop
        lambda: f"{rng.choice(NAMES)}/{rng.choice(NAMES)}",
        lambda: f"{rng.choice(NAMES)}/../..",  # up through a sibling
        lambda: ("../" * depth + inside()) or ".",  # to the volume's root, then down
        lambda: "../" * (depth + 1) + "vol/" + inside(),  # out and back in by name
        lambda: "../" * (depth + 1) + "host",
        lambda: "nowhere",  # dangling
    )
    return rng.choice(choices)()


def _make_layout(case: Case, rng: random.Random) -> None:
    case.host.mkdir(parents=True)
    (case.host / "sentinel").write_text("host")
    case.vol.mkdir()
    dirs = [""]
    for _ in range(rng.randint(2, 14)):
        parent = rng.choice(dirs)
        rel = f"{parent}/{rng.choice(NAMES)}".lstrip("/")
        path = case.vol / rel
        if os.path.lexists(path) or not os.path.isdir(case.vol / parent):
            continue
        kind = rng.choices(("dir", "file", "symlink", "fifo"), (4, 2, 5, 1))[0]
        if kind == "dir":
            path.mkdir()
            dirs.append(rel)
            case.made.append(f"dir {rel}")
        elif kind == "file":
            path.write_text("vol")
            case.made.append(f"file {rel}")
        elif kind == "fifo":
            os.mkfifo(path)
            case.made.append(f"fifo {rel}")
        else:
            target = _symlink_target(rng, case, parent, dirs)
            os.symlink(target, path)
            case.made.append(f"symlink {rel} -> {target}")


def _sub_paths(rng: random.Random, case: Case) -> list[str]:
    """SubPaths of one to five segments: mostly a name found where the path has led so far
    (through symlinks, to ``host`` too), else any layout name, ``.``, or a missing name.
    (Only the case's own directories are listed: the node's others would make a layout
    differ from one machine to the next.)"""
    others = (*NAMES, ".", *MISSING)
    subs = []
    for _ in range(rng.randint(1, 4)):
        segments: list[str] = []
        for _ in range(rng.randint(1, 5)):
            here = os.path.realpath(os.path.join(case.vol, *segments))
            try:
                present = (sorted(os.listdir(here)) if os.path.isdir(here)
                           and _inside(here, str(case.case_dir)) else [])
            except OSError:  # a loop
                present = []
            if present and rng.random() < 0.75:
                segments.append(rng.choice(present))
            else:
                segments.append(rng.choice(others))
        subs.append("/".join(segments))
    return subs


def _inside(real: str, vol_real: str) -> bool:
    return real == vol_real or real.startswith(vol_real + "/")


def _kernel_resolves(path: str) -> tuple[int, os.stat_result | None, str]:
    """What the kernel makes of ``path``, all symlinks followed: (errno or 0, stat, real
    path)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as err:
        return err.errno or -1, None, ""
    try:
        return 0, os.fstat(fd), os.readlink(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


class Watch:
    """What must never change outside a layout's volume: the case dir holds ``host`` and
    ``vol`` only, ``host`` its sentinel only, and no subPath name appears that was not
    there before in the directories a layout's symlinks reach (the case dir's parent, the
    fuzz tmpfs's root: ``../../..`` from the volume, and ``/``)."""

    def __init__(self, case_dir: Path) -> None:
        self.dirs = [str(case_dir.parent), str(case_dir.parent.parent), "/"]
        self.before = self._names()

    def _names(self) -> set[str]:
        return {os.path.join(d, n) for d in self.dirs for n in NAMES + MISSING
                if os.path.lexists(os.path.join(d, n))}

    def check(self, case: Case, sub: str) -> None:
        assert sorted(os.listdir(case.case_dir)) == ["host", "vol"], case.describe(sub)
        assert os.listdir(case.host) == ["sentinel"], case.describe(sub)
        assert (case.host / "sentinel").read_text() == "host", case.describe(sub)
        new = self._names() - self.before
        remove_made_dirs(new)
        assert not new, f"made outside the volume: {sorted(new)}\n" + case.describe(sub)


def _joined(case: Case, sub: str) -> tuple[str, str]:
    """The subPath joined to the volume as the node joins it, and as upstream's
    filepath.Join does, cleaned (``c/.`` is ``c``, even where ``c`` is a file): what the
    kernel is asked to resolve."""
    full = os.path.join(case.vol, sub)
    return full, os.path.normpath(full)


def _check_sub_path(case: Case, vol_real: str, sub: str, watch: Watch) -> None:
    full, clean = _joined(case, sub)
    want_errno, want, want_real = _kernel_resolves(clean)
    spec = SubPath(full, str(case.vol), str(case.pod_dir), "v", "c", 0)
    try:
        resolved, fd = open_sub_path(spec)
    except SubPathError:
        # Refused: fine unless the kernel finds it inside the volume.
        assert want_errno or not _inside(want_real, vol_real), (
            f"refused a subPath inside the volume ({want_real})\n" + case.describe(sub))
    else:
        try:
            got = os.fstat(fd)
            got_real = os.readlink(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        assert _inside(got_real, vol_real), (
            f"opened {got_real}, outside {vol_real}\n" + case.describe(sub))
        # Where the kernel gives up, symlinks are resolved as upstream's EvalSymlinks does:
        # past 40 links (ELOOP), and ".." after a file taken lexically (ENOTDIR: ``d/..``
        # is the directory holding the file ``d``). Either way, inside, as checked above.
        assert want_errno in (0, errno.ELOOP, errno.ENOTDIR), case.describe(sub)
        if want is not None:
            assert _inside(want_real, vol_real), (
                f"opened what the kernel resolves outside ({want_real})\n" + case.describe(sub))
            assert (got.st_dev, got.st_ino) == (want.st_dev, want.st_ino), case.describe(sub)
        assert resolved.path == got_real and resolved.volume_path == vol_real
    if want_errno == errno.ENOENT:
        _check_make_dir(case, vol_real, sub, clean, watch)


def _check_make_dir(case: Case, vol_real: str, sub: str, full: str, watch: Watch) -> None:
    """As the node makes a missing subPath: from the volume's path, the subPath relative.
    Made or refused, nothing outside the volume changed; made, it is a directory inside."""
    try:
        safe_make_dir(os.path.relpath(full, case.vol), str(case.vol), 0o750)
    except (SubPathError, OSError):
        watch.check(case, sub)
        return
    watch.check(case, sub)
    made_errno, made, made_real = _kernel_resolves(full)
    assert made_errno == 0 and made is not None, case.describe(sub)
    assert stat.S_ISDIR(made.st_mode), case.describe(sub)
    assert _inside(made_real, vol_real), (
        f"made {made_real}, outside {vol_real}\n" + case.describe(sub))


def _volume_inodes(vol: Path) -> set[tuple[int, int]]:
    """Every file in the volume, the volume itself included, as (device, inode)."""
    return {(st.st_dev, st.st_ino) for st in
            (p.lstat() for p in (vol, *vol.rglob("*")))}


def _volume_tree(vol: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(vol)), stat.S_IFMT(p.lstat().st_mode))
                  for p in vol.rglob("*"))


def _check_layout(case_dir: Path, index: int, mount: bool) -> None:
    """Make layout ``index`` in ``case_dir`` (which must not exist), check its subPaths,
    and remove it."""
    rng = random.Random(f"{SEED}-{index}")
    case = Case(case_dir, index)
    _make_layout(case, rng)
    watch = Watch(case_dir)
    vol_real = os.path.realpath(case.vol)
    try:
        for n, sub in enumerate(_sub_paths(rng, case)):
            if mount:
                # Each subPath on its own target (the index), so none replaces another.
                _check_sub_path_mounted(case, vol_real, sub, watch, n)
            else:
                _check_sub_path(case, vol_real, sub, watch)
        if mount:
            tree = _volume_tree(case.vol)
            clean_sub_paths(str(case.pod_dir))
            assert mount_points_under(str(case_dir.parent)) == (), case.describe()
            assert _volume_tree(case.vol) == tree, case.describe()
    except AssertionError:
        raise
    except Exception as err:  # an error no check expected: which layout gave it
        raise AssertionError(f"{err!r}\n" + case.describe()) from err
    finally:
        if mount:
            unmount_all_under(str(case_dir.parent))
        shutil.rmtree(case_dir)


def _check_sub_path_mounted(case: Case, vol_real: str, sub: str, watch: Watch,
                            n: int) -> None:
    full, clean = _joined(case, sub)
    spec = SubPath(full, str(case.vol), str(case.pod_dir), "v", "c", n)
    if _kernel_resolves(clean)[0] == errno.ENOENT:
        _check_make_dir(case, vol_real, sub, clean, watch)  # as the node makes a missing one
    want_errno, want, want_real = _kernel_resolves(clean)
    try:
        target = bind_sub_path(spec)
    except SubPathError:
        assert want_errno or not _inside(want_real, vol_real), (
            f"refused a subPath inside the volume ({want_real})\n" + case.describe(sub))
        assert not os.path.lexists(sub_path_target(spec)), case.describe(sub)
    else:
        shown = os.stat(target)
        assert (shown.st_dev, shown.st_ino) in _volume_inodes(case.vol), (
            "the bind target shows a file from outside the volume\n" + case.describe(sub))
        if want is None:
            assert want_errno in (errno.ELOOP, errno.ENOTDIR), case.describe(sub)
        else:
            assert _inside(want_real, vol_real), (
                f"bound what the kernel resolves to {want_real}\n" + case.describe(sub))
            assert (shown.st_dev, shown.st_ino) == (want.st_dev, want.st_ino), (
                case.describe(sub))
    watch.check(case, sub)


@pytest.fixture
def fuzz_dir(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of its own (tens of thousands of directories made and removed: on this
    machine's ext4, with discard, a rmdir takes half a millisecond), deep enough that
    ``../../..`` from inside a volume stays in it; it and every mount under it undone at
    teardown, failed test or not."""
    top = tmp_path / "fz"
    top.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0755", "fuzz", str(top)],
                   check=True)
    try:
        directory = top / "x"
        directory.mkdir()
        yield directory
    finally:
        unmount_all_under(str(tmp_path))


def test_fuzz_open_and_make_dir_stay_inside_the_volume(fuzz_dir: Path) -> None:
    for index in range(LAYOUTS):
        _check_layout(fuzz_dir / "case", index, mount=False)


def test_fuzz_bind_mounts_show_a_file_inside_the_volume(fuzz_dir: Path) -> None:
    for index in range(LAYOUTS, LAYOUTS + MOUNTED_LAYOUTS):
        _check_layout(fuzz_dir / "case", index, mount=True)
