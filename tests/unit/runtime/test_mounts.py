"""runtime.mounts on the real kernel (the tests run as root): a directory made a shared
mount as upstream's MakeRShared makes the kubelet's root dir, and the mount table read
back."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.mounts import (
    MOUNTINFO,
    bind_mount,
    is_mount_point,
    make_rshared,
    mount_points_under,
    parse_mountinfo,
    unmount,
)


@pytest.fixture
def base(tmp_path: Path) -> Iterator[Path]:
    """A directory whose mounts are all undone at the end, the test failed or not."""
    yield tmp_path
    for _ in range(10):  # a path mounted twice (below a bind of its parent) lists once
        points = [p for p in mount_points_under(str(tmp_path.parent))
                  if p == str(tmp_path) or p.startswith(f"{tmp_path}/")]
        if not points:
            return
        for point in points:
            unmount(point)


def shared(path: Path) -> bool:
    with open(MOUNTINFO, encoding="utf-8") as f:
        lines = [line.split() for line in f]
    mine = [f for f in lines if f[4] == str(path)]
    return bool(mine) and any(o.startswith("shared:") for o in mine[-1][6:mine[-1].index("-")])


def test_a_root_dir_on_a_private_mount_is_made_shared_once(base: Path) -> None:
    root = base / "root"
    (root / "pods" / "inside").mkdir(parents=True)
    (root / "pods" / "inside" / "file").write_text("kept")
    assert not shared(Path("/")), "this test needs / to be a private mount, as it is here"
    assert make_rshared(str(root)) is True
    assert is_mount_point(str(root)) and shared(root)
    # What it held is still there, through the new mount.
    assert (root / "pods" / "inside" / "file").read_text() == "kept"
    assert make_rshared(str(root)) is False  # already on a shared mount: left as it is
    assert make_rshared(str(root / "pods")) is False  # below a shared one too


def test_what_was_mounted_below_it_stays_visible(base: Path) -> None:
    root, source = base / "root", base / "source"
    (root / "sub").mkdir(parents=True)
    source.mkdir()
    (source / "f").write_text("bound")
    bind_mount(str(source), str(root / "sub"))
    assert make_rshared(str(root)) is True
    assert (root / "sub" / "f").read_text() == "bound"  # carried by the recursive bind


def test_the_mount_table_is_read_with_escapes_undone() -> None:
    text = ("36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root "
            "rw,errors=continue\n"
            "37 35 0:40 / /var/lib/k/pods/u/volumes/kubernetes.io~empty-dir/m rw shared:7 - "
            "tmpfs tmpfs rw,size=1024k\n")
    points = parse_mountinfo(text)
    assert [(p.path, p.fstype, p.options) for p in points] == [
        ("/mnt/with space", "ext3", ("rw", "errors=continue")),
        ("/var/lib/k/pods/u/volumes/kubernetes.io~empty-dir/m", "tmpfs",
         ("rw", "size=1024k")),
    ]


def test_mount_points_are_listed_deepest_first(base: Path) -> None:
    for sub in ("a", "a/b", "c"):
        (base / "t" / sub).mkdir(parents=True, exist_ok=True)
        (base / "s" / sub).mkdir(parents=True, exist_ok=True)
    for sub in ("a", "a/b", "c"):
        bind_mount(str(base / "s" / sub), str(base / "t" / sub))
    assert mount_points_under(str(base / "t")) == (
        str(base / "t" / "a" / "b"), str(base / "t" / "a"), str(base / "t" / "c"))
    assert os.path.isdir(base / "t" / "a" / "b")
