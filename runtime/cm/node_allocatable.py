"""Node allocatable: what the node reserves from its capacity, and the cgroup limits that
enforce it (upstream pkg/kubelet/cm/node_container_manager_linux.go, helpers.go
hardEvictionReservation, cmd/kubelet/app/server.go parseResourceList and getReservedCPUs,
pkg/kubelet/nodestatus MachineInfo's allocatable).

A pure computation, planned before anything acts on it: from the machine's capacity and
the reservation settings it gives
- the reservation (GetNodeAllocatableReservation): --system-reserved + --kube-reserved +
  the hard eviction thresholds of memory.available (of memory) and nodefs.available (of
  ephemeral-storage), a percentage taken of the capacity;
- the Node's allocatable (what the Node status reports and admission checks against):
  capacity less the reservation, never below 0, and memory less the huge pages;
- the kubepods cgroup's limits (getNodeAllocatableInternalAbsolute): with
  enforceNodeAllocatable "pods", capacity less --system-reserved and --kube-reserved only
  (the eviction thresholds are not taken off the cgroup: the eviction manager acts before
  the kernel would), as cpu shares, memory and pids (the internal capacity has the node's
  process IDs); without it, the whole capacity;
- with "system-reserved" or "kube-reserved" enforced, the named cgroup's limits: its
  reservation; with "system-reserved-compressible" or "kube-reserved-compressible", only
  its compressible part, the cpu (getCgroupConfigInternal's compressibleResourcesOnly: a
  memory or pid limit would have the kernel kill or refuse the system's daemons).

--reserved-cpus takes precedence over the cpu of --system-reserved and --kube-reserved: the
system reserves as many cpus as the set has, kube none.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Final

from msgspec import Struct

from runtime.cm.resources import (
    NodeResourceConfig,
    hugepage_size,
    milli_cpu_to_shares,
    milli_value,
    value,
)
from runtime.errors import ConfigError
from runtime.machine import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PIDS,
    MachineCapacity,
    format_cpuset,
    parse_cpuset,
)
from runtime.pod.quantity import FORMAT_WRONG, canonical, parse_quantity
from runtime.pod.validation.fields import go_quote

__all__ = ["ENFORCE_KEYS", "ENFORCE_KUBE_RESERVED", "ENFORCE_KUBE_RESERVED_COMPRESSIBLE",
           "ENFORCE_NONE", "ENFORCE_PODS", "ENFORCE_SYSTEM_RESERVED",
           "ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE", "RESERVABLE", "AllocatableConfig",
           "AllocatablePlan", "EvictionReserve", "ReservedCgroup", "check_enforcement",
           "check_reservation", "parse_resource_list", "plan"]

RESERVABLE: Final = (CPU, MEMORY, EPHEMERAL_STORAGE, PIDS)
"""What --system-reserved and --kube-reserved may name (parseResourceList)."""

ENFORCE_PODS: Final = "pods"
ENFORCE_SYSTEM_RESERVED: Final = "system-reserved"
ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE: Final = "system-reserved-compressible"
ENFORCE_KUBE_RESERVED: Final = "kube-reserved"
ENFORCE_KUBE_RESERVED_COMPRESSIBLE: Final = "kube-reserved-compressible"
ENFORCE_NONE: Final = "none"
ENFORCE_KEYS: Final = (ENFORCE_PODS, ENFORCE_SYSTEM_RESERVED,
                       ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE, ENFORCE_KUBE_RESERVED,
                       ENFORCE_KUBE_RESERVED_COMPRESSIBLE, ENFORCE_NONE)
"""enforceNodeAllocatable's values, in the order upstream's error lists them."""

_SYSTEM_KEYS: Final = (ENFORCE_SYSTEM_RESERVED, ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE)
_KUBE_KEYS: Final = (ENFORCE_KUBE_RESERVED, ENFORCE_KUBE_RESERVED_COMPRESSIBLE)
_WHERE: Final = "enforceNodeAllocatable (--enforce-node-allocatable)"

_BINARY: Final = frozenset({MEMORY, EPHEMERAL_STORAGE})
"""Capacity quantities cAdvisor gives in BinarySI (and huge pages); the rest DecimalSI."""

Resources = tuple[tuple[str, str], ...]
"""A resource list as (name, quantity text) pairs, sorted by name."""


class EvictionReserve(Struct, frozen=True):
    """What a hard eviction threshold holds back of a resource (hardEvictionReservation):
    a quantity, or a percentage (a float32, as upstream keeps it) of the capacity
    (runtime.eviction.parse.hard_eviction_reserves makes them from the thresholds)."""

    resource: str
    quantity: int | None = None
    percentage: float = 0.0

    def amount(self, capacity: int) -> int:
        """GetThresholdQuantity."""
        if self.quantity is not None:
            return self.quantity
        return int(float(capacity) * self.percentage)


class AllocatableConfig(Struct, frozen=True):
    """The reservation settings, parsed and checked (see actors.app.config.reserved)."""

    system_reserved: Resources = ()
    kube_reserved: Resources = ()
    reserved_cpus: tuple[int, ...] = ()
    reserved_cpus_text: str = ""
    """--reserved-cpus as given (upstream's errors print it so)."""
    enforce: tuple[str, ...] = (ENFORCE_PODS,)
    system_reserved_cgroup: str = ""
    kube_reserved_cgroup: str = ""
    hard_eviction: tuple[EvictionReserve, ...] = ()

    def reserved(self) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
        """System and kube reserved as quantities, --reserved-cpus applied: it overwrites
        the cpu of both (server.go: systemReserved cpu = the set's size, kube's dropped)."""
        system = {k: parse_quantity(v) for k, v in self.system_reserved}
        kube = {k: parse_quantity(v) for k, v in self.kube_reserved}
        if self.reserved_cpus:
            kube.pop(CPU, None)
            system[CPU] = Decimal(len(self.reserved_cpus))
        return system, kube


class ReservedCgroup(Struct, frozen=True):
    """An existing cgroup enforceNodeAllocatable limits: the key that asks for it (one of
    system-reserved, kube-reserved and their -compressible variants), its name as the flag
    gave it, and its limits; None when there is nothing reserved to enforce (upstream's
    nil resource list, refused as "cgroup is not configured properly")."""

    key: str
    cgroup: str
    limits: NodeResourceConfig | None

    @property
    def system(self) -> bool:
        return self.key in _SYSTEM_KEYS

    @property
    def compressible(self) -> bool:
        return self.key in (ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE,
                            ENFORCE_KUBE_RESERVED_COMPRESSIBLE)


class AllocatablePlan(Struct, frozen=True):
    """What the node does with its reservation: the Node's capacity and allocatable (as
    quantity text), the kubepods cgroup's limits, and each reserved cgroup to limit, in
    upstream's order (system-reserved, kube-reserved, then the compressible ones)."""

    capacity: Resources
    allocatable: Resources
    reservation: Resources
    kubepods: NodeResourceConfig
    reserved_cgroups: tuple[ReservedCgroup, ...] = ()

    def allocatable_map(self) -> dict[str, str]:
        return dict(self.allocatable)


# --- parsing (server.go parseResourceList, cpuset.Parse) ---------------------------------


def parse_resource_list(reserved: Mapping[str, str]) -> Resources:
    """parseResourceList: cpu, memory, ephemeral-storage and pid, each a quantity that is
    not negative; ValueError in upstream's words otherwise."""
    out: dict[str, str] = {}
    for name, text in reserved.items():
        if name not in RESERVABLE:
            raise ValueError(f'cannot reserve "{name}" resource')
        try:
            amount = parse_quantity(text)
        except ValueError as err:
            raise ValueError(f'failed to parse quantity "{text}" for "{name}" resource: '
                             f"{FORMAT_WRONG}") from err
        if amount < 0:
            raise ValueError(f'resource quantity for "{name}" cannot be negative: {text}')
        out[name] = text.strip()
    return tuple(sorted(out.items()))


def check_enforcement(enforce: tuple[str, ...], system_reserved_cgroup: str,
                      kube_reserved_cgroup: str, reserved_cpus: str,
                      cgroups_per_qos: bool) -> list[str]:
    """ValidateKubeletConfiguration's rules for these fields, each broken one in its
    words: a cgroup and its -compressible variant not both; no key twice; the cgroup flag
    of a reserved key set; "none" alone; a known key; cgroupsPerQOS for every key but
    "none"."""
    broken: list[str] = []
    for plain, compressible in ((ENFORCE_SYSTEM_RESERVED, ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE),
                                (ENFORCE_KUBE_RESERVED, ENFORCE_KUBE_RESERVED_COMPRESSIBLE)):
        if plain in enforce and compressible in enforce:
            broken.append(f'invalid configuration: both "{plain}" and "{compressible}" cannot '
                          f"be specified together in {_WHERE}")
    seen: set[str] = set()
    for key in enforce:
        if key in seen:
            broken.append(f"invalid configuration: duplicated enforcements {go_quote(key)} in "
                          f"{_WHERE}")
            continue
        seen.add(key)
        if key in _SYSTEM_KEYS:
            if not system_reserved_cgroup:
                broken.append("invalid configuration: systemReservedCgroup "
                              "(--system-reserved-cgroup) must be specified when "
                              f'"{ENFORCE_SYSTEM_RESERVED}" or '
                              f'"{ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE}" included in {_WHERE}')
        elif key in _KUBE_KEYS:
            if not kube_reserved_cgroup:
                broken.append("invalid configuration: kubeReservedCgroup "
                              "(--kube-reserved-cgroup) must be specified when "
                              f'"{ENFORCE_KUBE_RESERVED}" or '
                              f'"{ENFORCE_KUBE_RESERVED_COMPRESSIBLE}" included in {_WHERE}')
        elif key == ENFORCE_NONE:
            if len(enforce) > 1:
                broken.append(f"invalid configuration: {_WHERE} may not contain additional "
                              f'enforcements when "{ENFORCE_NONE}" is specified')
            continue
        elif key != ENFORCE_PODS:
            valid = ", ".join(f'"{k}"' for k in ENFORCE_KEYS[:-1])
            broken.append(f"invalid configuration: option {go_quote(key)} specified for "
                          f"{_WHERE}. Valid options are {valid} or \"{ENFORCE_NONE}\"")
            continue
        if not cgroups_per_qos:
            broken.append("invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be "
                          f"set to true when {go_quote(key)} contained in {_WHERE}")
    if reserved_cpus:
        if system_reserved_cgroup or kube_reserved_cgroup:
            broken.append("invalid configuration: can't use reservedSystemCPUs "
                          "(--reserved-cpus) with systemReservedCgroup "
                          "(--system-reserved-cgroup) or kubeReservedCgroup "
                          "(--kube-reserved-cgroup)")
        try:
            parse_cpuset(reserved_cpus)
        except ValueError as err:
            broken.append("invalid configuration: unable to parse reservedSystemCPUs "
                          f"(--reserved-cpus) {reserved_cpus}, error: {err}")
    return broken


# --- the computation -------------------------------------------------------------------


def _format(name: str, amount: Decimal) -> str:
    binary = name in _BINARY or hugepage_size(name) is not None
    return canonical(amount, binary=binary)


def _sorted(resources: Mapping[str, Decimal]) -> Resources:
    return tuple(sorted((k, _format(k, v)) for k, v in resources.items()))


def hard_eviction_reservation(reserves: tuple[EvictionReserve, ...],
                              capacity: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """hardEvictionReservation: each hard threshold's amount, a percentage taken of its
    resource's capacity."""
    return {r.resource: Decimal(r.amount(int(capacity.get(r.resource, Decimal(0)))))
            for r in reserves}


def reservation(capacity: MachineCapacity, config: AllocatableConfig) -> dict[str, Decimal]:
    """GetNodeAllocatableReservation: per capacity resource, system + kube reserved + the
    hard eviction threshold; resources with nothing reserved left out."""
    total = capacity.resources()
    eviction = hard_eviction_reservation(config.hard_eviction, total)
    system, kube = config.reserved()
    out: dict[str, Decimal] = {}
    for name in total:
        amount = system.get(name, Decimal(0)) + kube.get(name, Decimal(0)) + eviction.get(
            name, Decimal(0))
        if amount != 0:
            out[name] = amount
    return out


def check_reservation(capacity: MachineCapacity, config: AllocatableConfig) -> None:
    """getReservedCPUs (the reserved cpus are online ones) and validateNodeAllocatable (no
    reservation over its capacity); ConfigError in upstream's words otherwise, as the
    kubelet then refuses to start."""
    online = set(capacity.online_cpus)
    if config.reserved_cpus and online and not set(config.reserved_cpus) <= online:
        given = config.reserved_cpus_text or format_cpuset(config.reserved_cpus)
        raise ConfigError(f"reserved-cpus: {given} is not a "
                          f"subset of online-cpus: {format_cpuset(capacity.online_cpus)}",
                          field="reservedSystemCPUs")
    total = capacity.resources()
    # The reservation is a DecimalSI sum upstream (its first term a DecimalSI zero).
    broken = [f'Resource "{name}" has a reservation of {canonical(amount, binary=False)} but '
              f"capacity of {_format(name, total[name])}. Expected capacity >= reservation."
              for name, amount in sorted(reservation(capacity, config).items())
              if total[name] - amount < 0]
    if broken:
        raise ConfigError("invalid Node Allocatable configuration. " + " ".join(broken))


def node_allocatable(capacity: MachineCapacity, config: AllocatableConfig
                     ) -> dict[str, Decimal]:
    """The Node status' allocatable (nodestatus.MachineInfo): each capacity less its
    reservation, not below 0; memory less every huge page size's capacity, not below 0."""
    total = capacity.resources()
    reserved = reservation(capacity, config)
    out = {name: max(amount - reserved.get(name, Decimal(0)), Decimal(0))
           for name, amount in total.items()}
    for name, amount in total.items():
        if hugepage_size(name) is not None:
            out[MEMORY] = max(out[MEMORY] - amount, Decimal(0))
    return out


def _absolute(resources: Mapping[str, Decimal], config: AllocatableConfig
              ) -> dict[str, Decimal]:
    """getNodeAllocatableAbsoluteImpl: each less system and kube reserved, not below 0."""
    system, kube = config.reserved()
    return {name: max(amount - system.get(name, Decimal(0)) - kube.get(name, Decimal(0)),
                      Decimal(0))
            for name, amount in resources.items()}


def cgroup_config(resources: Mapping[str, Decimal], compressible_only: bool = False
                  ) -> NodeResourceConfig:
    """getCgroupConfig: memory in bytes, cpu as shares, pid as pids.max, huge pages as
    their hugetlb limits; a resource not in the list is left alone. ``compressible_only``:
    the cpu shares alone."""
    if compressible_only:
        return NodeResourceConfig(cpu_shares=(milli_cpu_to_shares(milli_value(resources[CPU]))
                                              if CPU in resources else None))
    pages = {size: value(amount) for name, amount in resources.items()
             if (size := hugepage_size(name)) is not None}
    return NodeResourceConfig(
        cpu_shares=(milli_cpu_to_shares(milli_value(resources[CPU]))
                    if CPU in resources else None),
        memory=value(resources[MEMORY]) if MEMORY in resources else None,
        pids_limit=value(resources[PIDS]) if PIDS in resources else None,
        hugepage_limits=pages)


def plan(capacity: MachineCapacity, config: AllocatableConfig,
         cgroups_per_qos: bool = True) -> AllocatablePlan:
    """Everything the reservation decides, computed before anything is written."""
    internal = capacity.resources(internal=True)
    enforce_pods = cgroups_per_qos and ENFORCE_PODS in config.enforce
    kubepods = cgroup_config(_absolute(internal, config) if enforce_pods else internal)
    system, kube = config.reserved()
    reserved_cgroups = [
        ReservedCgroup(key, cgroup,
                       cgroup_config(reserved, compressible) if reserved else None)
        for key, cgroup, reserved, compressible in (
            (ENFORCE_SYSTEM_RESERVED, config.system_reserved_cgroup, system, False),
            (ENFORCE_KUBE_RESERVED, config.kube_reserved_cgroup, kube, False),
            (ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE, config.system_reserved_cgroup, system, True),
            (ENFORCE_KUBE_RESERVED_COMPRESSIBLE, config.kube_reserved_cgroup, kube, True))
        if key in config.enforce]
    return AllocatablePlan(
        capacity=_sorted(capacity.resources()),
        allocatable=_sorted(node_allocatable(capacity, config)),
        reservation=_sorted(reservation(capacity, config)),
        kubepods=kubepods, reserved_cgroups=tuple(reserved_cgroups))
