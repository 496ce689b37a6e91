"""A bed's own cgroup root (actors.app.testbed.cgroup_root) on this machine's cgroups: the
kubelet's QoS cgroups go under it, not under /kubepods, and nothing is left after."""

from __future__ import annotations

import os

from actors.app.cgroups import start_pod_cgroups
from actors.app.config.flags import parse_flags
from actors.app.testbed import Bed, cgroup_root_of, own_cgroup_root
from runtime.cm.cgroupfs import CgroupFS
from runtime.cm.names import CGROUPFS, parse_root
from runtime.testing.fake_runtime import FakeRuntime

BED = Bed("cgroup-root-test", "kat-cgroot-", "katcg0", "10.96.0.0/24")


def _dirs(root: str) -> dict[str, str]:
    manager = CgroupFS(CGROUPFS)
    return {c: manager.path(parse_root(root, CGROUPFS), c) for c in ("cpu", "memory")}


def test_the_qos_cgroups_of_a_kubelet_under_its_bed_root_and_gone_after() -> None:
    root = cgroup_root_of(BED)
    assert root == "/kat-cgroot"
    with own_cgroup_root(BED) as given:
        assert given == root
        for directory in _dirs(root).values():
            assert os.path.isdir(directory), directory
        flags = parse_flags(["--cgroup-root", root, "--pod-manifest-path", "/nonexistent"])
        cgroups = start_pod_cgroups(flags, FakeRuntime(), embedded=True)
        assert cgroups is not None
        for directory in _dirs(f"{root}/kubepods/burstable").values():
            assert os.path.isdir(directory), directory
    for directory in _dirs(root).values():
        assert not os.path.exists(directory), directory
