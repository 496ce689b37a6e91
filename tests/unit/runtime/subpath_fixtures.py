"""What the subPath tests share: the real bind mounts they make are all undone at teardown
(a test that fails half-way must not leave a mount under pytest's tmp dir), and the count of
mounts stacked on one mount point."""

from __future__ import annotations

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
