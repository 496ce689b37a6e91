"""Who shares the test bed, each in its own corner, and the error it raises.

The e2e tests, the drills and the benchmarks each run private containerds in fresh
directories under DIR_PARENT, with a directory prefix, bridge and subnet of their own: one
user's cleanup of a dead run never touches another's containerd, and their pods never share
a network. All of them take the one machine-wide lock (actors.app.testbed.lock), so on one
machine only one of them runs at a time.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

DIR_PARENT = Path("/var/tmp")
"""Where private containerds live: on disk (overlayfs needs a real filesystem, not tmpfs)."""


class TestbedError(Exception):
    """The test bed cannot be set up here (lock, registry, images, containerd); says why."""

    __test__ = False  # not a pytest test class, though its name starts with "Test"


@dataclass(frozen=True, slots=True)
class Bed:
    """One user's corner of the test bed: its dirs' prefix under ``parent``, bridge, subnet."""

    user: str
    dir_prefix: str
    bridge: str
    subnet: str
    parent: Path = DIR_PARENT

    def new_dir(self) -> Path:
        """A fresh directory for one private containerd of this user."""
        try:
            return Path(tempfile.mkdtemp(prefix=self.dir_prefix, dir=self.parent))
        except OSError as err:
            raise TestbedError(f"cannot make a {self.user} dir in {self.parent}: {err}") from err

    def dirs(self) -> list[Path]:
        """This user's directories; under the lock, what this user's dead runs left."""
        return sorted(self.parent.glob(f"{self.dir_prefix}*"))


E2E = Bed("e2e", "kat-e2e-", "kat0", "10.89.0.0/24")
DRILLS = Bed("drills", "kad-drill-", "kad0", "10.92.0.0/24")
BENCH = Bed("bench", "kab-bench-", "kab0", "10.91.0.0/24")
