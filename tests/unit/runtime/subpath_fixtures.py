"""What the subPath tests share: the real bind mounts they make are all undone at teardown
(a test that fails half-way must not leave a mount under pytest's tmp dir), directories a
broken safe_make_dir made outside its base (``/`` included) are removed again, and the
count of mounts stacked on one mount point."""

from __future__ import annotations

import contextlib
import os

from runtime.mounts import MOUNTINFO, _unescape, mount_points_under, unmount


def unmount_all_under(directory: str) -> None:
    """Unmount everything mounted under ``directory``, stacked mounts included; fails if a
    mount stays (the tmp dir then must not be removed through it)."""
    for _ in range(64):  # far more than any test stacks
        points = mount_points_under(directory)
        if not points:
            return
        for point in points:
            unmount(point)
    raise AssertionError(f"mounts stay under {directory}: {mount_points_under(directory)}")


def mounts_at(path: str) -> int:
    """How many mounts are stacked on ``path`` (mountinfo's names, symlinks resolved)."""
    real = os.path.realpath(path)
    with open(MOUNTINFO, encoding="utf-8") as f:
        return sum(1 for line in f
                   if len(fields := line.split()) > 4 and _unescape(fields[4]) == real)


def remove_made_dirs(paths: set[str]) -> None:
    """Undo what a broken safe_make_dir made outside its base: the directories, all empty,
    under each of ``paths`` (which were not there before the test); nothing else."""
    for path in paths:
        if os.path.islink(path) or not os.path.isdir(path):
            continue
        for directory, _, _ in os.walk(path, topdown=False):
            with contextlib.suppress(OSError):  # not empty: not made by it alone, left
                os.rmdir(directory)
