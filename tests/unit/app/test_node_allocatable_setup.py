"""The node allocatable settings from the flags and the file, their checks where they name
more than one setting, the reserved cgroups' enforcement, and the eviction thresholds that
enforcing pods adds (upstream's ParseThresholdConfig with enforceNodeAllocatable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.cgroups import (
    ENFORCED,
    NodeAllocatableEnforcement,
    go_cgroup_name,
    missing_cgroup,
)
from actors.app.config.flags import parse_flags
from actors.app.eviction_setup import wire_eviction
from actors.app.node import allocatable_config
from actors.kubelet.stats_collector import StatsParts
from actors.kubelet.sync_loop import SyncLoopSettings
from runtime.cm.cgroupfs import CgroupFS
from runtime.cm.fake import FakeCgroupManager
from runtime.cm.names import CgroupName
from runtime.cm.node_allocatable import AllocatableConfig, AllocatablePlan, EvictionReserve, plan
from runtime.cm.pod_cgroups import PodCgroups
from runtime.cm.resources import NodeResourceConfig, ResourceConfig
from runtime.errors import ConfigError
from runtime.events.recorder import ListRecorder, Recorded, node_ref
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
        f"--config {config}: cgroupsPerQOS: invalid configuration: cgroupsPerQOS "
        '(--cgroups-per-qos) must be set to true when "pods" contained in '
        "enforceNodeAllocatable (--enforce-node-allocatable)")


def test_system_reserved_without_its_cgroup_is_refused_at_the_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, "staticPodPath: m\n"
                                    "enforceNodeAllocatable: [pods, kube-reserved]\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--config", str(config)])
    assert str(caught.value) == (
        f"--config {config}: enforceNodeAllocatable: invalid configuration: "
        "kubeReservedCgroup (--kube-reserved-cgroup) must be specified when "
        '"kube-reserved" or "kube-reserved-compressible" included in enforceNodeAllocatable '
        "(--enforce-node-allocatable)")


def test_the_compressible_enforcements_are_taken(tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path), "--enforce-node-allocatable",
                         "pods,system-reserved-compressible,kube-reserved-compressible",
                         "--system-reserved-cgroup", "/system.slice",
                         "--kube-reserved-cgroup", "/kube.slice", "--system-reserved",
                         "cpu=1,memory=1Gi"])
    assert flags.enforce_node_allocatable == (
        "pods", "system-reserved-compressible", "kube-reserved-compressible")
    config = write_config(tmp_path, (
        "staticPodPath: m\nsystemReservedCgroup: /system.slice\n"
        "enforceNodeAllocatable: [pods, system-reserved, system-reserved-compressible]\n"))
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--config", str(config)])
    assert str(caught.value) == (
        f"--config {config}: enforceNodeAllocatable: invalid configuration: both "
        '"system-reserved" and "system-reserved-compressible" cannot be specified together '
        "in enforceNodeAllocatable (--enforce-node-allocatable)")


def test_every_broken_setting_is_reported_together(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--pod-manifest-path", str(tmp_path), "--system-reserved", "gpu=1",
                     "--kube-reserved", "memory=-1", "--enforce-node-allocatable", "bogus"])
    message = str(caught.value)
    assert message.startswith("3 settings break their rules:"), message
    assert '--system-reserved: cannot reserve "gpu" resource' in message
    assert '--kube-reserved: resource quantity for "memory" cannot be negative: -1' in message
    assert 'option "bogus" specified for enforceNodeAllocatable' in message


def reserving(**settings: object) -> AllocatablePlan:
    return plan(MachineCapacity(cpu=4, memory=8 * GI, ephemeral_storage=GI, pods=110),
                AllocatableConfig(**settings))  # type: ignore[arg-type]


def enforcement(manager: FakeCgroupManager | CgroupFS, node: AllocatablePlan,
                events: ListRecorder, waits: list[float] | None = None
                ) -> NodeAllocatableEnforcement:
    """On ``manager``, its kubepods made; a retry's wait noted in ``waits`` (never stopped)."""
    cgroups = PodCgroups(manager, (), "cgroupfs", node=node.kubepods)
    cgroups.start()
    noted = waits if waits is not None else []

    def wait(seconds: float) -> bool:
        noted.append(seconds)
        return False

    return NodeAllocatableEnforcement(cgroups, manager, node, "cgroupfs", "n1", events,
                                      wait=wait)


def test_enforcing_the_reserved_cgroups_writes_their_reservation() -> None:
    fake = FakeCgroupManager()
    fake.create(("system",), ResourceConfig())
    fake.create(("kube",), ResourceConfig())
    node = reserving(system_reserved=(("memory", "1Gi"),),
                     kube_reserved=(("cpu", "1"), ("pid", "100")),
                     enforce=("pods", "system-reserved", "kube-reserved"),
                     system_reserved_cgroup="/system", kube_reserved_cgroup="/kube")
    events = ListRecorder()
    for reserved in node.reserved_cgroups:
        enforcement(fake, node, events).enforce_reserved(reserved)
    assert fake.cgroups[("system",)] == NodeResourceConfig(memory=GI)
    assert fake.cgroups[("kube",)] == NodeResourceConfig(cpu_shares=1024, pids_limit=100)
    assert events.events == [
        Recorded(node_ref("n1"), "Normal", "NodeAllocatableEnforced",
                 "Updated limits on system reserved cgroup /system"),
        Recorded(node_ref("n1"), "Normal", "NodeAllocatableEnforced",
                 "Updated limits on kube reserved cgroup /kube")]


def test_compressible_enforcement_writes_only_the_cpu() -> None:
    fake = FakeCgroupManager()
    fake.create(("system",), NodeResourceConfig(memory=3 * GI, pids_limit=7))
    node = reserving(system_reserved=(("cpu", "500m"), ("memory", "1Gi"), ("pid", "100")),
                     enforce=("pods", "system-reserved-compressible"),
                     system_reserved_cgroup="/system")
    events = ListRecorder()
    (reserved,) = node.reserved_cgroups
    enforcement(fake, node, events).enforce_reserved(reserved)
    # The memory and pids the cgroup had are left as they were.
    assert fake.cgroups[("system",)] == NodeResourceConfig(cpu_shares=512, memory=3 * GI,
                                                           pids_limit=7)
    assert [e.message for e in events.events] == [
        "Updated limits on system reserved cgroup /system"]


def test_a_reserved_cgroup_that_does_not_exist_is_an_error_in_upstreams_words(
        tmp_path: Path) -> None:
    mounts = {c: str(tmp_path / c) for c in ("cpu", "cpuacct", "memory", "unified")}
    for path in mounts.values():
        Path(path).mkdir()
    (tmp_path / "cpu" / "kube.slice").mkdir()  # only there: the others are missing
    node = reserving(kube_reserved=(("cpu", "1"),), enforce=("pods", "kube-reserved"),
                     kube_reserved_cgroup="/kube.slice")
    events = ListRecorder()
    (reserved,) = node.reserved_cgroups
    with pytest.raises(ConfigError) as caught:
        enforcement(CgroupFS("cgroupfs", mounts=mounts), node, events).enforce_reserved(
            reserved)
    message = ('Failed to enforce Kube Reserved Cgroup Limits on "/kube.slice": cgroup '
               f'["kube.slice"] has some missing paths: {tmp_path}/cpuacct/kube.slice, '
               f"{tmp_path}/memory/kube.slice")
    assert str(caught.value) == message
    assert events.events == [Recorded(node_ref("n1"), "Warning",
                                      "FailedNodeAllocatableEnforcement", message)]


def test_a_missing_cgroup_on_cgroup_v2(tmp_path: Path) -> None:
    manager = CgroupFS("cgroupfs", unified_root=str(tmp_path))
    assert missing_cgroup(manager, ("system.slice",)) == (
        'could not read controllers for cgroup ["system.slice"]: open '
        f"{tmp_path}/system.slice/cgroup.controllers: no such file or directory")
    (tmp_path / "system.slice").mkdir()
    assert missing_cgroup(manager, ("system.slice",)) is None


def test_a_reserved_cgroup_with_nothing_reserved_is_not_configured_properly() -> None:
    fake = FakeCgroupManager()
    fake.create(("kube",), ResourceConfig())
    node = reserving(system_reserved=(("cpu", "1"),),
                     enforce=("pods", "kube-reserved-compressible"), kube_reserved_cgroup="/kube")
    (reserved,) = node.reserved_cgroups
    with pytest.raises(ConfigError) as caught:
        enforcement(fake, node, ListRecorder()).enforce_reserved(reserved)
    assert str(caught.value) == ('Failed to enforce Kube Reserved Compressible Cgroup Limits '
                                 'on "/kube": ["kube"] cgroup is not configured properly')


@pytest.mark.parametrize(("name", "quoted"), [
    (("kubepods",), '["kubepods"]'), (("a", "kubepods"), '["a" "kubepods"]'),
    ((), "[]"), (('we"ird',), '["we\\"ird"]')])
def test_go_cgroup_name(name: CgroupName, quoted: str) -> None:
    assert go_cgroup_name(name) == quoted


class RefusingKubepods(FakeCgroupManager):
    """The kernel refusing the kubepods memory limit ``refusals`` times (EBUSY: the pods
    use more than it), then taking it."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals

    def update(self, name: CgroupName, config: ResourceConfig) -> None:
        if name == ("kubepods",) and config.memory is not None and self.refusals:
            self.refusals -= 1
            raise OSError(16, "Device or resource busy")
        super().update(name, config)


def test_a_refused_kubepods_limit_is_retried_every_minute_with_events() -> None:
    fake = RefusingKubepods(refusals=2)
    fake.create(("kubepods",), ResourceConfig())  # an existing kubepods keeps its limits
    node = reserving(system_reserved=(("memory", "1Gi"),))
    events, waits = ListRecorder(), list[float]()
    enforcement(fake, node, events, waits).enforce_kubepods()
    refused = ('Failed to update Node Allocatable Limits ["kubepods"]: [Errno 16] Device or '
               "resource busy")
    assert [(e.type, e.reason, e.message) for e in events.events] == [
        ("Warning", "FailedNodeAllocatableEnforcement", refused),
        ("Warning", "FailedNodeAllocatableEnforcement", refused),
        ("Normal", "NodeAllocatableEnforced", ENFORCED)]
    assert waits == [60.0, 60.0]
    assert fake.cgroups[("kubepods",)].memory == 7 * GI


def test_stopping_ends_the_retries() -> None:
    fake = RefusingKubepods(refusals=10)
    fake.create(("kubepods",), ResourceConfig())
    cgroups = PodCgroups(fake, (), "cgroupfs", node=reserving().kubepods)
    cgroups.start()
    events = ListRecorder()
    stopping = NodeAllocatableEnforcement(cgroups, fake, reserving(), "cgroupfs", "n1", events,
                                          wait=lambda _seconds: True)
    stopping.enforce_kubepods()
    assert events.reasons() == ["FailedNodeAllocatableEnforcement"]
    assert fake.refusals == 9


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
