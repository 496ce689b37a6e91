"""The node allocatable settings from the flags and the file, their checks where they name
more than one setting, the reserved cgroups' enforcement, and the eviction thresholds that
enforcing pods adds (upstream's ParseThresholdConfig with enforceNodeAllocatable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.cgroups import enforce_reserved_cgroups
from actors.app.config.flags import parse_flags
from actors.app.eviction_setup import wire_eviction
from actors.app.node import allocatable_config
from actors.kubelet.stats_collector import StatsParts
from actors.kubelet.sync_loop import SyncLoopSettings
from runtime.cm.fake import FakeCgroupManager
from runtime.cm.node_allocatable import AllocatableConfig, EvictionReserve, plan
from runtime.cm.resources import NodeResourceConfig, ResourceConfig
from runtime.errors import ConfigError
from runtime.eviction.api import ALLOCATABLE_MEMORY_AVAILABLE, MEMORY_AVAILABLE
from runtime.machine import MachineCapacity
from tests.unit.app.test_flags import write_config

GI = 2**30


def test_the_defaults_enforce_pods_and_reserve_nothing(tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path)])
    assert (flags.system_reserved, flags.kube_reserved, flags.reserved_cpus,
            flags.enforce_node_allocatable, flags.system_reserved_cgroup,
            flags.kube_reserved_cgroup) == ((), (), "", ("pods",), "", "")
    config = allocatable_config(flags)
    # The default hard thresholds memory.available<100Mi and nodefs.available<10%.
    assert {r.resource for r in config.hard_eviction} == {"memory", "ephemeral-storage"}


def test_the_flags_and_the_file_give_the_same_settings(tmp_path: Path) -> None:
    from_flags = parse_flags([
        "--pod-manifest-path", str(tmp_path), "--system-reserved", "cpu=500m,memory=1Gi",
        "--kube-reserved", "memory=512Mi", "--kube-reserved", "pid=1000",
        "--reserved-cpus", "0", "--enforce-node-allocatable", "pods", "--eviction-hard",
        "memory.available<5%"])
    config = write_config(tmp_path, (
        "staticPodPath: m\nsystemReserved: {cpu: 500m, memory: 1Gi}\n"
        "kubeReserved: {memory: 512Mi, pid: \"1000\"}\nreservedSystemCPUs: \"0\"\n"
        "enforceNodeAllocatable: [pods]\nevictionHard: {memory.available: 5%}\n"))
    from_file = parse_flags(["--config", str(config)])
    for flags in (from_flags, from_file):
        assert flags.system_reserved == (("cpu", "500m"), ("memory", "1Gi"))
        assert flags.kube_reserved == (("memory", "512Mi"), ("pid", "1000"))
        assert flags.enforce_node_allocatable == ("pods",)
        reserved = allocatable_config(flags)
        assert reserved.reserved_cpus == (0,)
        (memory,) = reserved.hard_eviction
        assert (memory.resource, memory.quantity, round(memory.percentage, 6)) == (
            "memory", None, 0.05)


def test_reserved_cpus_with_a_reserved_cgroup_are_refused(tmp_path: Path) -> None:
    """Upstream: --reserved-cpus does not go with --system-reserved-cgroup."""
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--pod-manifest-path", str(tmp_path), "--reserved-cpus", "0",
                     "--system-reserved-cgroup", "/system.slice"])
    assert str(caught.value) == (
        "invalid configuration: can't use reservedSystemCPUs (--reserved-cpus) with "
        "systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup "
        "(--kube-reserved-cgroup)")


def test_none_with_another_enforcement_and_pods_without_cgroups_per_qos(
        tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--pod-manifest-path", str(tmp_path), "--enforce-node-allocatable",
                     "none,pods"])
    assert str(caught.value) == (
        "invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not "
        'contain additional enforcements when "none" is specified')
    config = write_config(tmp_path, "staticPodPath: m\ncgroupsPerQOS: false\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--config", str(config)])
    # Reported at the field the file set.
    assert str(caught.value) == (
        f"--config {config}: cgroupsPerQOS: invalid configuration: enforceNodeAllocatable "
        "(--enforce-node-allocatable) is not supported unless cgroupsPerQOS "
        "(--cgroups-per-qos) is set to true")


def test_system_reserved_without_its_cgroup_is_refused_at_the_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, "staticPodPath: m\n"
                                    "enforceNodeAllocatable: [pods, kube-reserved]\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--config", str(config)])
    assert str(caught.value) == (
        f"--config {config}: enforceNodeAllocatable: invalid configuration: "
        "kubeReservedCgroup (--kube-reserved-cgroup) must be specified when "
        '"kube-reserved" contained in enforceNodeAllocatable (--enforce-node-allocatable)')


def test_every_broken_setting_is_reported_together(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--pod-manifest-path", str(tmp_path), "--system-reserved", "gpu=1",
                     "--kube-reserved", "memory=-1", "--enforce-node-allocatable", "bogus"])
    message = str(caught.value)
    assert message.startswith("3 settings break their rules:"), message
    assert '--system-reserved: cannot reserve "gpu" resource' in message
    assert '--kube-reserved: resource quantity for "memory" cannot be negative: -1' in message
    assert 'option "bogus" specified for enforceNodeAllocatable' in message


def test_enforcing_the_reserved_cgroups_writes_their_reservation() -> None:
    fake = FakeCgroupManager()
    fake.create(("system",), ResourceConfig())
    fake.create(("kube",), ResourceConfig())
    node = plan(MachineCapacity(cpu=4, memory=8 * GI, ephemeral_storage=GI, pods=110),
                AllocatableConfig(system_reserved=(("memory", "1Gi"),),
                                  kube_reserved=(("cpu", "1"), ("pid", "100")),
                                  enforce=("pods", "system-reserved", "kube-reserved"),
                                  system_reserved_cgroup="/system",
                                  kube_reserved_cgroup="/kube"))
    enforce_reserved_cgroups(fake, node, "cgroupfs")
    assert fake.cgroups[("system",)] == NodeResourceConfig(memory=GI)
    assert fake.cgroups[("kube",)] == NodeResourceConfig(cpu_shares=1024, pids_limit=100)


def test_a_reserved_cgroup_that_does_not_exist_is_an_error_in_upstreams_words() -> None:
    node = plan(MachineCapacity(cpu=4, memory=8 * GI, ephemeral_storage=GI, pods=110),
                AllocatableConfig(kube_reserved=(("cpu", "1"),),
                                  enforce=("pods", "kube-reserved"),
                                  kube_reserved_cgroup="/kube.slice"))
    with pytest.raises(ConfigError) as caught:
        enforce_reserved_cgroups(FakeCgroupManager(), node, "cgroupfs")
    assert str(caught.value) == ('Failed to enforce Kube Reserved Cgroup Limits on '
                                 '"/kube.slice": "/kube.slice" cgroup does not exist')


@pytest.mark.parametrize(("argv", "allocatable"), [
    ([], True),
    (["--enforce-node-allocatable", "none"], False),
    (["--enforce-node-allocatable="], False),
])
def test_enforcing_pods_adds_the_allocatable_memory_threshold(
        tmp_path: Path, argv: list[str], allocatable: bool) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path), "--eviction-hard",
                         "memory.available<200Mi,nodefs.available<5%", "--eviction-soft",
                         "memory.available<1Gi", "--eviction-soft-grace-period",
                         "memory.available=1m", *argv])
    # The stats parts are only passed on: the wiring reads none of them.
    stats = StatsParts(None, None)  # type: ignore[arg-type]
    settings, _, _ = wire_eviction(flags, stats, SyncLoopSettings(), cluster=False)
    assert settings is not None
    added = [t for t in settings.config.thresholds
             if t.signal == ALLOCATABLE_MEMORY_AVAILABLE]
    if not allocatable:
        assert added == []
        return
    # A copy of the hard memory.available threshold only, as addAllocatableThresholds.
    (hard,) = [t for t in settings.config.thresholds
               if t.signal == MEMORY_AVAILABLE and t.hard]
    assert [(t.value, t.hard) for t in added] == [(hard.value, True)]


def test_hard_eviction_reserves_of_the_eviction_flags(tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path), "--eviction-hard",
                         "memory.available<1Gi,nodefs.inodesFree<5%,imagefs.available<15%"])
    assert allocatable_config(flags).hard_eviction == (EvictionReserve("memory", GI),)
