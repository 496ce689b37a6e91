"""actors.app.cgroups: the checks the daemon makes before it creates the QoS cgroups."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.cgroups import start_pod_cgroups
from actors.app.config.flags import parse_flags
from actors.app.node import node_settings
from runtime.clock import FakeClock
from runtime.errors import ConfigError
from runtime.testing.fake_runtime import FakeRuntime


def test_no_cgroups_without_cgroups_per_qos(tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path), "--cgroups-per-qos=false",
                         "--enforce-node-allocatable="])
    assert start_pod_cgroups(flags, FakeRuntime(FakeClock()), embedded=True) is None
    assert not node_settings(flags).cgroups_per_qos


def test_the_embedded_containerd_needs_the_cgroupfs_driver(tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path), "--cgroup-driver", "systemd"])
    with pytest.raises(ConfigError, match='the embedded containerd uses the cgroupfs driver'):
        start_pod_cgroups(flags, FakeRuntime(FakeClock()), embedded=True)


def test_node_settings_carry_the_cgroup_flags(tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path), "--cgroup-root", "/pods"])
    settings = node_settings(flags)
    assert (settings.cgroups_per_qos, settings.cgroup_root, settings.cgroup_driver) == (
        True, "/pods", "cgroupfs")
    assert settings.memory_capacity > 0
