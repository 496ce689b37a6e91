"""Who shares the test bed, each in its own corner, and the error it raises.

The e2e tests, the drills and the benchmarks each run private containerds in fresh
directories under DIR_PARENT, with a directory prefix, bridge and subnet of their own: one
user's cleanup of a dead run never touches another's containerd, and their pods never share
a network. All of them take the one machine-wide lock (actors.app.testbed.lock), so on one
machine only one of them runs at a time. One user may run several containerds side by side
under that lock (parallel drills): each runs in a slot of the user's bed (``Bed.slot``),
with a prefix, bridge and subnet of its own.
"""

from __future__ import annotations

import ipaddress
import tempfile
from dataclasses import dataclass
from pathlib import Path

DIR_PARENT = Path("/var/tmp")
"""Where private containerds live: on disk (overlayfs needs a real filesystem, not tmpfs)."""

MAX_SLOTS = 16
"""Slots per bed: containerds one user may run side by side (bridges kad0..kad15)."""


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
        """This user's directories (its slots' included); under the lock, what this user's
        dead runs left."""
        return sorted(self.parent.glob(f"{self.dir_prefix}*"))

    def slot(self, n: int) -> Bed:
        """Slot ``n`` of this bed, for containerds run side by side: its dirs are named
        ``<prefix><n>-...``, its bridge is the bed's with the number ``n`` (kad0 -> kad3)
        and its subnet the ``n``-th after the bed's (10.92.0.0/24 -> 10.92.3.0/24), so
        neither clashes with another slot's. Slot 0 is the bed itself."""
        if not 0 <= n < MAX_SLOTS:
            raise TestbedError(f"slot {n} of the {self.user} bed: there are slots 0 to "
                               f"{MAX_SLOTS - 1}")
        if n == 0:
            return self
        net = ipaddress.ip_network(self.subnet)
        shifted = ipaddress.ip_network(
            (int(net.network_address) + n * net.num_addresses, net.prefixlen))
        return Bed(self.user, f"{self.dir_prefix}{n}-", f"{self.bridge.rstrip('0123456789')}{n}",
                   str(shifted), self.parent)

    def slot_of(self, path: Path) -> Bed:
        """The slot of this bed that made the directory ``path`` (one of ``dirs()``): what
        a cleanup of it needs (its bridge). mkdtemp's suffix has no "-", so a "<n>-" right
        after the prefix is a slot number."""
        head, dash, _ = path.name.removeprefix(self.dir_prefix).partition("-")
        return self.slot(int(head)) if dash and head.isdigit() else self


E2E = Bed("e2e", "kat-e2e-", "kat0", "10.89.0.0/24")
DRILLS = Bed("drills", "kad-drill-", "kad0", "10.92.0.0/24")
BENCH = Bed("bench", "kab-bench-", "kab0", "10.91.0.0/24")
BENCH_WIDE = Bed("bench-wide", "kaw-bench-", "kaw0", "10.94.0.0/22")
"""For benchmarks of more pods than a /24 holds (bench.scale_bench runs 500)."""
SOAK = Bed("soak", "kas-soak-", "kas0", "10.95.0.0/24")
"""For bench.soak_bench: its own, so a soak may run beside the others without the lock."""
