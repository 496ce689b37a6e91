"""A pod's cgroup resources (upstream pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod,
MilliCPUToShares, MilliCPUToQuota, HugePageLimits), from its summed requests and limits
(runtime.cm.aggregate).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Final

from msgspec import Struct, field

from runtime.cm.aggregate import ResourceList, as_list, pod_limits, pod_requests
from runtime.cm.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, pod_qos
from runtime.pod.model import Pod
from runtime.pod.quantity import parse_quantity

MIN_SHARES: Final = 2
MAX_SHARES: Final = 262144
SHARES_PER_CPU: Final = 1024
MILLI_CPU_TO_CPU: Final = 1000
QUOTA_PERIOD: Final = 100_000
"""CFS period in microseconds (100 ms), upstream's default --cpu-cfs-quota-period."""
MIN_QUOTA_PERIOD: Final = 1000
HUGEPAGES_PREFIX: Final = "hugepages-"



def _decimal(quantity: str | int | float) -> Decimal:
    return parse_quantity(quantity)


def milli_value(quantity: Decimal) -> int:
    """Quantity.MilliValue(): thousandths, rounded up."""
    return math.ceil(quantity * 1000)


def value(quantity: Decimal) -> int:
    """Quantity.Value(): whole units, rounded up."""
    return math.ceil(quantity)


def milli_cpu_to_shares(milli_cpu: int) -> int:
    """CFS shares for a cpu request: 1024 per cpu, at least 2, at most 262144."""
    if milli_cpu == 0:
        return MIN_SHARES  # the kernel's value for "nothing asked"
    shares = milli_cpu * SHARES_PER_CPU // MILLI_CPU_TO_CPU
    return min(max(shares, MIN_SHARES), MAX_SHARES)


def milli_cpu_to_quota(milli_cpu: int, period: int = QUOTA_PERIOD) -> int:
    """CFS quota for a cpu limit over ``period``; 0 for no limit, else at least 1 ms."""
    if milli_cpu == 0:
        return 0
    return max(milli_cpu * period // MILLI_CPU_TO_CPU, MIN_QUOTA_PERIOD)


def hugepage_size(resource: str) -> int | None:
    """The page size in bytes of ``hugepages-2Mi``; None for other names or bad sizes."""
    if not resource.startswith(HUGEPAGES_PREFIX):
        return None
    try:
        size = value(_decimal(resource[len(HUGEPAGES_PREFIX):]))
    except ValueError:
        return None
    return size if size > 0 else None


_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def hugepage_unit_size(size: int) -> str:
    """Upstream HugePageUnitSizeFromByteSize: 2097152 -> "2MB" (the runtime's and the
    kernel's page-size names, in powers of 1024)."""
    index = 0
    while size >= 1024 and size % 1024 == 0 and index < len(_UNITS) - 1:
        size //= 1024
        index += 1
    if index == 0 and size:
        raise ValueError(f"hugepage size {size}B is not a multiple of 1KiB")
    return f"{size}{_UNITS[index]}"


def hugepage_limits(requests: ResourceList) -> dict[int, int]:
    """upstream HugePageLimits: page size in bytes -> limit in bytes."""
    limits: dict[int, int] = {}
    for name, amount in requests.items():
        size = hugepage_size(name)
        if size is not None:
            limits[size] = limits.get(size, 0) + value(amount)
    return limits


class ResourceConfig(Struct, frozen=True):
    """What to write into one cgroup; None leaves the cgroup's value alone."""

    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    memory: int | None = None
    hugepage_limits: Mapping[int, int] = field(default_factory=dict)


class NodeResourceConfig(ResourceConfig, frozen=True):
    """A ResourceConfig with a pids.max too: what the node allocatable cgroups (kubepods,
    the reserved ones) get (upstream's ResourceConfig.PidsLimit). Kept apart from the pod
    cgroups' ResourceConfig, whose fields the traces record."""

    pids_limit: int | None = None


def resource_config_for_pod(pod: Pod, enforce_cpu_limits: bool = True,
                            cpu_period: int = QUOTA_PERIOD) -> ResourceConfig:
    """The pod cgroup's resources (upstream ResourceConfigForPod): Guaranteed gets shares,
    quota and memory; Burstable gets shares, and quota or memory only when every
    container (or the pod level) limits it; BestEffort gets 2 shares."""
    requests = pod_requests(pod)
    flags = {"cpu": True, "memory": True}

    def seen(limits: ResourceList) -> None:
        for name in flags:
            if not limits.get(name):
                flags[name] = False

    limits = pod_limits(pod, seen)
    if pod.spec.resources is not None:
        for name, limit in as_list(pod.spec.resources.limits).items():
            if name in flags and limit:
                flags[name] = True
    shares = milli_cpu_to_shares(milli_value(requests.get("cpu", Decimal(0))))
    quota = milli_cpu_to_quota(milli_value(limits.get("cpu", Decimal(0))), cpu_period)
    if not enforce_cpu_limits:
        quota = -1
    memory = value(limits.get("memory", Decimal(0)))
    pages = hugepage_limits(requests)
    qos = pod_qos(pod)
    if qos == GUARANTEED:
        return ResourceConfig(shares, quota, cpu_period, memory, pages)
    if qos == BURSTABLE:
        return ResourceConfig(
            shares,
            quota if flags["cpu"] else None,
            cpu_period if flags["cpu"] else None,
            memory if flags["memory"] else None,
            pages,
        )
    assert qos == BEST_EFFORT
    return ResourceConfig(cpu_shares=MIN_SHARES, hugepage_limits=pages)
