"""Node allocatable as upstream computes it: the cases of node_container_manager_linux_test.go
(TestNodeAllocatableReservationForScheduling, TestNodeAllocatableForEnforcement,
TestNodeAllocatableInputValidation) with their numbers, the Node status' allocatable, the
cgroup limits, --reserved-cpus, and the settings' checks in upstream's words."""

from __future__ import annotations

from decimal import Decimal

import pytest

from runtime.cm.node_allocatable import (
    AllocatableConfig,
    check_enforcement,
    check_reservation,
    node_allocatable,
    parse_resource_list,
    plan,
    reservation,
)
from runtime.cm.resources import NodeResourceConfig, milli_cpu_to_shares
from runtime.errors import ConfigError
from runtime.eviction.api import MEMORY_AVAILABLE, NODEFS_AVAILABLE, Threshold, ThresholdValue
from runtime.eviction.parse import hard_eviction_reserves, parse_threshold
from runtime.machine import MachineCapacity, format_cpuset, parse_cpuset
from runtime.pod.quantity import parse_quantity

GI = 2**30
MI = 2**20


def capacity(cpu: int = 10, memory: int = 10 * GI, storage: int = 10 * GI, pods: int = 110,
             pid: int | None = None, hugepages: tuple[tuple[str, int], ...] = (),
             online: tuple[int, ...] = ()) -> MachineCapacity:
    return MachineCapacity(cpu, memory, storage, pods, pid, hugepages, online)


def resources(cpu: str = "", memory: str = "", storage: str = "",
              pid: str = "") -> tuple[tuple[str, str], ...]:
    given = {"cpu": cpu, "memory": memory, "ephemeral-storage": storage, "pid": pid}
    return parse_resource_list({k: v for k, v in given.items() if v})


def threshold(signal: str, text: str) -> tuple[Threshold, ...]:
    parsed = parse_threshold(signal, text)
    assert parsed is not None
    return (parsed,)


def config(kube: tuple[tuple[str, str], ...] = (), system: tuple[tuple[str, str], ...] = (),
           hard: tuple[Threshold, ...] = (), **more: object) -> AllocatableConfig:
    return AllocatableConfig(system_reserved=system, kube_reserved=kube,
                             hard_eviction=hard_eviction_reserves(hard),
                             **more)  # type: ignore[arg-type]


def amounts(**expected: str) -> dict[str, Decimal]:
    return {name.replace("_", "-"): parse_quantity(text) for name, text in expected.items()}


# TestNodeAllocatableReservationForScheduling: cpu and memory.
@pytest.mark.parametrize(("kube", "system", "hard", "expected"), [
    (resources("100m", "100Mi"), resources("50m", "50Mi"), (),
     amounts(cpu="150m", memory="150Mi")),
    (resources("100m", "100Mi"), resources("50m", "50Mi"),
     threshold(MEMORY_AVAILABLE, "100Mi"), amounts(cpu="150m", memory="250Mi")),
    # 5% as a float32 of 10Gi, plus 150Mi: upstream's 694157320.
    (resources("100m", "100Mi"), resources("50m", "50Mi"),
     threshold(MEMORY_AVAILABLE, "5%"), amounts(cpu="150m", memory="694157320")),
    ((), (), (), {}),
    (resources("", "100Mi"), resources("50m", "50Mi"), (),
     amounts(cpu="50m", memory="150Mi")),
    (resources("50m", "100Mi"), resources("", "50Mi"), (),
     amounts(cpu="50m", memory="150Mi")),
])
def test_reservation_for_scheduling(kube: tuple[tuple[str, str], ...],
                                    system: tuple[tuple[str, str], ...],
                                    hard: tuple[Threshold, ...],
                                    expected: dict[str, Decimal]) -> None:
    assert reservation(capacity(), config(kube, system, hard)) == expected


# TestNodeAllocatableReservationForScheduling: ephemeral storage.
@pytest.mark.parametrize(("kube", "hard", "expected"), [
    (resources(storage="100Mi"), (), "100Mi"),
    (resources(storage="100Mi"), threshold(NODEFS_AVAILABLE, "100Mi"), "200Mi"),
    (resources(storage="150Mi"), threshold(NODEFS_AVAILABLE, "5%"), "694157320"),
    ((), (), None),
])
def test_ephemeral_storage_reservation(kube: tuple[tuple[str, str], ...],
                                       hard: tuple[Threshold, ...],
                                       expected: str | None) -> None:
    reserved = reservation(capacity(), config(kube, (), hard))
    assert reserved.get("ephemeral-storage") == (
        parse_quantity(expected) if expected is not None else None)


def test_soft_thresholds_and_other_signals_reserve_nothing() -> None:
    soft = Threshold(MEMORY_AVAILABLE, ThresholdValue(percentage=0.5), grace_period=30.0)
    hard = threshold("imagefs.available", "15%") + threshold("nodefs.inodesFree", "5%")
    assert hard_eviction_reserves((soft, *hard)) == ()
    assert reservation(capacity(), config(hard=(soft, *hard))) == {}


# TestNodeAllocatableForEnforcement: the kubepods cgroup's limits, eviction not taken off.
@pytest.mark.parametrize(("kube", "system", "hard", "cpu", "memory"), [
    (resources("100m", "100Mi"), resources("50m", "50Mi"), (), "9850m", "10090Mi"),
    (resources("100m", "100Mi"), resources("50m", "50Mi"),
     threshold(MEMORY_AVAILABLE, "100Mi"), "9850m", "10090Mi"),
    (resources("100m", "100Mi"), resources("50m", "50Mi"),
     threshold(MEMORY_AVAILABLE, "5%"), "9850m", "10090Mi"),
    ((), (), (), "10", "10Gi"),
    (resources("", "100Mi"), resources("50m", "50Mi"), (), "9950m", "10090Mi"),
    (resources("50m", "100Mi"), resources("", "50Mi"), (), "9950m", "10090Mi"),
])
def test_kubepods_limits_for_enforcement(kube: tuple[tuple[str, str], ...],
                                         system: tuple[tuple[str, str], ...],
                                         hard: tuple[Threshold, ...], cpu: str,
                                         memory: str) -> None:
    kubepods = plan(capacity(), config(kube, system, hard)).kubepods
    assert kubepods.cpu_shares == milli_cpu_to_shares(int(parse_quantity(cpu) * 1000))
    assert kubepods.memory == parse_quantity(memory)


def test_without_pods_enforced_kubepods_gets_the_whole_capacity() -> None:
    reserved = config(resources("1", "1Gi"), resources("1", "1Gi"))
    for enforce, per_qos in (((), True), (("none",), True), (("pods",), False)):
        node = plan(capacity(pid=4096), AllocatableConfig(
            system_reserved=reserved.system_reserved, kube_reserved=reserved.kube_reserved,
            enforce=enforce), per_qos)
        assert (node.kubepods.cpu_shares, node.kubepods.memory, node.kubepods.pids_limit) == (
            milli_cpu_to_shares(10_000), 10 * GI, 4096)
        # The Node's allocatable still leaves the reservation out.
        assert node.allocatable_map()["memory"] == "8Gi"


def test_pids_limit_is_the_process_ids_less_their_reservation() -> None:
    node = plan(capacity(pid=32768), config(resources(pid="1000"), resources(pid="768")))
    assert node.kubepods.pids_limit == 31000
    # pid is internal capacity only: the Node does not list it.
    assert "pid" not in dict(node.capacity) and "pid" not in node.allocatable_map()
    assert plan(capacity(pid=None), config()).kubepods.pids_limit is None


def test_hugepages_are_their_own_limit_and_leave_the_nodes_memory() -> None:
    pages = (("hugepages-2Mi", 512 * MI),)
    node = plan(capacity(hugepages=pages), config(resources(memory="1Gi"),
                                                  hard=threshold(MEMORY_AVAILABLE, "100Mi")))
    assert node.kubepods.hugepage_limits == {2 * MI: 512 * MI}
    assert node.kubepods.memory == 9 * GI  # the cgroup keeps the huge pages' bytes
    allocatable = node.allocatable_map()
    assert allocatable["memory"] == f"{10 * 1024 - 1024 - 100 - 512}Mi"
    assert allocatable["hugepages-2Mi"] == "512Mi"


def test_node_status_capacity_and_allocatable_are_quantities_as_upstream_prints_them() -> None:
    node = plan(capacity(cpu=4, memory=16 * GI, storage=100 * GI + 512, pods=50),
                config(resources("500m", "1Gi", "1Gi"), resources("250m", "512Mi"),
                       threshold(MEMORY_AVAILABLE, "100Mi")
                       + threshold(NODEFS_AVAILABLE, "10%")))
    assert dict(node.capacity) == {"cpu": "4", "memory": "16Gi",
                                   "ephemeral-storage": str(100 * GI + 512), "pods": "50"}
    allocatable = node.allocatable_map()
    assert allocatable["cpu"] == "3250m"
    assert allocatable["memory"] == f"{16 * 1024 - 1024 - 512 - 100}Mi"
    disk = 100 * GI + 512
    assert parse_quantity(allocatable["ephemeral-storage"]) == (
        disk - GI - ThresholdValue(percentage=threshold(NODEFS_AVAILABLE, "10%")[0]
                                   .value.percentage).amount(disk).value)
    assert allocatable["pods"] == "50"


def test_reserved_cpus_take_precedence_over_the_reserved_cpu() -> None:
    """server.go: with --reserved-cpus, systemReserved cpu is the set's size and
    kubeReserved cpu is dropped."""
    reserved = config(resources("500m", "1Gi"), resources("2", "1Gi"),
                      reserved_cpus=parse_cpuset("0-1,3"))
    assert reservation(capacity(), reserved)["cpu"] == 3
    node = plan(capacity(), reserved)
    assert node.allocatable_map()["cpu"] == "7"
    assert node.kubepods.cpu_shares == milli_cpu_to_shares(7000)


def test_reserved_cgroups_get_their_reservation_when_enforced() -> None:
    node = plan(capacity(), config(
        resources("200m", "300Mi", pid="100"), resources("100m", "200Mi"),
        enforce=("pods", "system-reserved", "kube-reserved"),
        system_reserved_cgroup="/system.slice", kube_reserved_cgroup="/kube.slice"))
    system_cgroup, kube_cgroup = node.reserved_cgroups
    system, kube = system_cgroup.limits, kube_cgroup.limits
    assert system is not None and kube is not None
    assert (system_cgroup.key, system_cgroup.cgroup, system_cgroup.system) == (
        "system-reserved", "/system.slice", True)
    assert (system.cpu_shares, system.memory, system.pids_limit) == (
        milli_cpu_to_shares(100), 200 * MI, None)
    assert (kube_cgroup.key, kube_cgroup.cgroup, kube_cgroup.system) == (
        "kube-reserved", "/kube.slice", False)
    assert (kube.cpu_shares, kube.memory, kube.pids_limit) == (
        milli_cpu_to_shares(200), 300 * MI, 100)
    assert plan(capacity(), config(resources("1"))).reserved_cgroups == ()


def test_compressible_enforcement_limits_only_the_cpu() -> None:
    """getCgroupConfigInternal with compressibleResourcesOnly: the cpu shares alone, the
    memory, pids and huge pages of the reservation left to the system's daemons."""
    node = plan(capacity(hugepages=(("hugepages-2Mi", 4 * MI),)), config(
        resources("200m", "300Mi", pid="100"), resources("100m", "200Mi", pid="50"),
        enforce=("pods", "kube-reserved-compressible", "system-reserved-compressible"),
        system_reserved_cgroup="/system.slice", kube_reserved_cgroup="/kube.slice"))
    # Upstream's order: system before kube, whatever the flag's.
    assert [(r.key, r.cgroup, r.compressible, r.limits) for r in node.reserved_cgroups] == [
        ("system-reserved-compressible", "/system.slice", True,
         NodeResourceConfig(cpu_shares=milli_cpu_to_shares(100))),
        ("kube-reserved-compressible", "/kube.slice", True,
         NodeResourceConfig(cpu_shares=milli_cpu_to_shares(200)))]
    # Only memory reserved: nothing compressible to write, but a reservation all the same.
    (memory_only,) = plan(capacity(), config(
        system=resources(memory="1Gi"), enforce=("system-reserved-compressible",),
        system_reserved_cgroup="/system")).reserved_cgroups
    assert memory_only.limits == NodeResourceConfig()


def test_an_enforced_cgroup_with_nothing_reserved_has_no_limits() -> None:
    """Upstream's nil resource list, which enforcement refuses as not configured."""
    (kube,) = plan(capacity(), config(
        system=resources("1"), enforce=("pods", "kube-reserved"),
        kube_reserved_cgroup="/kube")).reserved_cgroups
    assert (kube.key, kube.limits) == ("kube-reserved", None)


# TestNodeAllocatableInputValidation.
@pytest.mark.parametrize(("reserved", "valid"), [
    (config(resources("100m", "100Mi"), resources("50m", "50Mi")), True),
    (config(resources("100m", "100Mi"), resources("50m", "50Mi"),
            threshold(MEMORY_AVAILABLE, "100Mi")), True),
    (config(resources("100m", "100Mi"), resources("50m", "50Mi"),
            threshold(MEMORY_AVAILABLE, "5%")), True),
    (config(), True),
    (config(resources("5", "10Gi"), resources("5", "10Gi"),
            threshold(MEMORY_AVAILABLE, "2Gi")), False),
])
def test_input_validation(reserved: AllocatableConfig, valid: bool) -> None:
    machine = capacity(memory=11 * GI)
    if valid:
        check_reservation(machine, reserved)
        return
    with pytest.raises(ConfigError) as caught:
        check_reservation(machine, reserved)
    assert str(caught.value) == (
        'invalid Node Allocatable configuration. Resource "memory" has a reservation of '
        f"{22 * GI} but capacity of 11Gi. Expected capacity >= reservation.")


def test_ephemeral_storage_input_validation() -> None:
    check_reservation(capacity(storage=500 * MI), config(resources(storage="100Mi")))
    with pytest.raises(ConfigError, match='Resource "ephemeral-storage" has a reservation of '
                                          f"{20 * GI + 100 * MI} but capacity of 20Gi"):
        check_reservation(capacity(storage=20 * GI),
                          config(resources(storage="20Gi"),
                                 hard=threshold(NODEFS_AVAILABLE, "100Mi")))


def test_reserved_cpus_must_be_online() -> None:
    machine = capacity(cpu=2, online=(0, 1))
    check_reservation(machine, config(reserved_cpus=(1,)))
    with pytest.raises(ConfigError) as caught:
        check_reservation(machine, config(reserved_cpus=(1, 2, 3),
                                          reserved_cpus_text="3,1-2"))
    # The list as given, the online cpus as a cpuset prints them (getReservedCPUs).
    assert str(caught.value) == "reserved-cpus: 3,1-2 is not a subset of online-cpus: 0-1"


# parseResourceList and cpuset.Parse.
@pytest.mark.parametrize(("given", "error"), [
    ({"gpu": "1"}, 'cannot reserve "gpu" resource'),
    ({"hugepages-2Mi": "1Gi"}, 'cannot reserve "hugepages-2Mi" resource'),
    ({"memory": "-1Gi"}, 'resource quantity for "memory" cannot be negative: -1Gi'),
    ({"cpu": "lots"}, 'failed to parse quantity "lots" for "cpu" resource: quantities must '
                      "match the regular expression"),
])
def test_resource_list_errors(given: dict[str, str], error: str) -> None:
    with pytest.raises(ValueError, match=error.replace("(", r"\(").replace(")", r"\)")):
        parse_resource_list(given)


def test_resource_list_keeps_every_reservable_resource() -> None:
    assert parse_resource_list({"pid": "100", "cpu": "0", "ephemeral-storage": "1Gi",
                                "memory": "1.5Gi"}) == (
        ("cpu", "0"), ("ephemeral-storage", "1Gi"), ("memory", "1.5Gi"), ("pid", "100"))


@pytest.mark.parametrize(("text", "cpus"), [
    ("", ()), ("0", (0,)), ("0-1,3", (0, 1, 3)), ("3,0-1", (0, 1, 3)), ("2-2", (2,)),
])
def test_cpuset_parse(text: str, cpus: tuple[int, ...]) -> None:
    assert parse_cpuset(text) == cpus


@pytest.mark.parametrize(("text", "error"), [
    ("a", 'strconv.Atoi: parsing "a": invalid syntax'),
    ("0-x", 'strconv.Atoi: parsing "x": invalid syntax'),
    ("3-1", 'invalid range "3-1" (3 > 1)'),
    ("0,", 'strconv.Atoi: parsing "": invalid syntax'),
])
def test_cpuset_parse_errors(text: str, error: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_cpuset(text)
    assert str(caught.value) == error


def test_cpuset_format() -> None:
    assert format_cpuset((0, 1, 2, 5, 7, 8)) == "0-2,5,7-8"


# ValidateKubeletConfiguration's rules.
NONE_MIXED = ('invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) '
              'may not contain additional enforcements when "none" is specified')
SYSTEM_CGROUP = ("invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must "
                 'be specified when "system-reserved" or "system-reserved-compressible" '
                 "included in enforceNodeAllocatable (--enforce-node-allocatable)")
KUBE_CGROUP = ("invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be "
               'specified when "kube-reserved" or "kube-reserved-compressible" included in '
               "enforceNodeAllocatable (--enforce-node-allocatable)")
PER_QOS = ("invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true "
           'when "%s" contained in enforceNodeAllocatable (--enforce-node-allocatable)')


@pytest.mark.parametrize(("enforce", "system_cgroup", "kube_cgroup", "cpus", "per_qos",
                          "broken"), [
    (("pods",), "", "", "", True, []),
    ((), "", "", "", False, []),
    (("pods", "system-reserved", "kube-reserved"), "/system", "/kube", "", True, []),
    (("none",), "", "", "", True, []),
    (("none", "pods"), "", "", "", True, [NONE_MIXED]),
    (("system-reserved",), "", "", "", True, [SYSTEM_CGROUP]),
    (("system-reserved-compressible",), "", "", "", True, [SYSTEM_CGROUP]),
    (("kube-reserved",), "", "", "", True, [KUBE_CGROUP]),
    (("kube-reserved-compressible",), "", "", "", True, [KUBE_CGROUP]),
    (("pods", "system-reserved-compressible", "kube-reserved-compressible"), "/system",
     "/kube", "", True, []),
    (("system-reserved", "system-reserved-compressible"), "/system", "", "", True, [
        'invalid configuration: both "system-reserved" and "system-reserved-compressible" '
        "cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)"]),
    (("kube-reserved-compressible", "kube-reserved"), "", "", "", True, [
        'invalid configuration: both "kube-reserved" and "kube-reserved-compressible" '
        "cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)",
        KUBE_CGROUP, KUBE_CGROUP]),
    (("pods", "pods"), "", "", "", True, [
        'invalid configuration: duplicated enforcements "pods" in enforceNodeAllocatable '
        "(--enforce-node-allocatable)"]),
    (("pods",), "", "", "", False, [PER_QOS % "pods"]),
    (("pods", "kube-reserved-compressible"), "", "/kube", "", False, [
        PER_QOS % "pods", PER_QOS % "kube-reserved-compressible"]),
    (("none",), "", "", "", False, []),
    (("bogus",), "", "", "", False, [
        'invalid configuration: option "bogus" specified for enforceNodeAllocatable '
        '(--enforce-node-allocatable). Valid options are "pods", "system-reserved", '
        '"system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or '
        '"none"']),
    (("pods",), "/system", "", "0-1", True, [
        "invalid configuration: can't use reservedSystemCPUs (--reserved-cpus) with "
        "systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup "
        "(--kube-reserved-cgroup)"]),
    (("pods",), "", "", "1-0", True, [
        "invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) 1-0, "
        'error: invalid range "1-0" (1 > 0)']),
])
def test_enforcement_rules(enforce: tuple[str, ...], system_cgroup: str, kube_cgroup: str,
                           cpus: str, per_qos: bool, broken: list[str]) -> None:
    assert check_enforcement(enforce, system_cgroup, kube_cgroup, cpus, per_qos) == broken


def test_node_allocatable_is_never_negative() -> None:
    out = node_allocatable(capacity(memory=GI, hugepages=(("hugepages-1Gi", 2 * GI),)),
                           config(resources(memory="512Mi")))
    assert out["memory"] == 0
