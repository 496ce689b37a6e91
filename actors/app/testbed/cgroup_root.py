"""A cgroup root of a bed's own, for a kubelet that runs beside other kubelets.

Every kubelet with the default ``--cgroup-root /`` manages the same QoS cgroups
(``/kubepods``, ``/kubepods/burstable``, ``/kubepods/besteffort``) and writes their cpu
shares from its own pods: two on one machine (a soak beside the tests) overwrite each
other's, and a test that reads the burstable class's shares reads the other kubelet's.
A kubelet run under ``--cgroup-root /<bed>`` keeps its QoS cgroups to itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from actors.app.testbed.beds import Bed, TestbedError
from runtime.cm.cgroupfs import CgroupFS
from runtime.cm.names import CGROUPFS, parse_root
from runtime.cm.resources import ResourceConfig


def cgroup_root_of(bed: Bed) -> str:
    """The bed's cgroup root, named after its directories: ``/kas-soak`` for the soak."""
    return "/" + bed.dir_prefix.strip("-")


@contextlib.contextmanager
def own_cgroup_root(bed: Bed) -> Iterator[str]:
    """Make the bed's cgroup root in every hierarchy; remove it (and what is left under
    it) on the way out. Yields the value for ``--cgroup-root``."""
    path = cgroup_root_of(bed)
    manager = CgroupFS(CGROUPFS)
    name = parse_root(path, CGROUPFS)
    try:
        manager.create(name, ResourceConfig())
    except OSError as err:
        raise TestbedError(f"cannot make the {bed.user} cgroup root {path}: {err}") from err
    try:
        yield path
    finally:
        manager.destroy(name)
