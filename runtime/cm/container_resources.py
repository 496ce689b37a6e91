"""A container's CRI LinuxContainerResources (upstream kuberuntime_container_linux.go
generateLinuxContainerResources / calculateLinuxResources and
GetHugepageLimitsFromResources).

cpu shares from the request (the limit when no request; 2 when neither), the CFS period
always 100 ms and the quota from the limit (0 = none, else at least 1 ms), the memory
limit, a limit per huge page size the node has (0 unless the container asks for it) and
the oom_score_adj of the pod's QoS.
"""

from __future__ import annotations

import os

from runtime.cm.aggregate import limits_of
from runtime.cm.oom import container_oom_score_adjust
from runtime.cm.resources import (
    QUOTA_PERIOD,
    hugepage_size,
    hugepage_unit_size,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    milli_value,
    value,
)
from runtime.cri.types import HugepageLimit, LinuxContainerResources
from runtime.pod.model import Container, Pod
from runtime.pod.quantity import parse_quantity

HUGEPAGES_SYSFS = "/sys/kernel/mm/hugepages"


def node_hugepage_sizes(sysfs: str = HUGEPAGES_SYSFS) -> tuple[str, ...]:
    """The huge page sizes the kernel offers, as runc names them ("2MB"), from
    ``hugepages-2048kB`` entries (libcontainer cgroups.HugePageSizes)."""
    try:
        entries = sorted(os.listdir(sysfs))
    except OSError:
        return ()
    sizes: list[str] = []
    for entry in entries:
        if entry.startswith("hugepages-") and entry.endswith("kB"):
            try:
                sizes.append(hugepage_unit_size(int(entry[len("hugepages-"):-2]) * 1024))
            except ValueError:
                continue
    return tuple(sizes)


def container_hugepage_limits(container: Container, node_sizes: tuple[str, ...]
                              ) -> tuple[HugepageLimit, ...]:
    """A limit for every page size of the node: the container's hugepages-<size> limit
    for that size, 0 for the others (so a container cannot use pages it did not ask
    for)."""
    asked: dict[str, int] = {}
    for name, amount in limits_of(container).items():
        size = hugepage_size(name)
        if size is None:
            continue
        try:
            asked[hugepage_unit_size(size)] = value(amount)
        except ValueError:
            continue
    return tuple(HugepageLimit(size, asked.get(size, 0)) for size in node_sizes)


def linux_container_resources(
    pod: Pod, container: Container, memory_capacity: int,
    hugepage_sizes: tuple[str, ...] = (), cpu_cfs_quota: bool = True,
) -> LinuxContainerResources:
    """The resources CreateContainer gets for ``container``; ValueError on a bad
    quantity."""
    res = container.resources
    requests = res.requests if res is not None else {}
    limits = res.limits if res is not None else {}
    cpu_limit = milli_value(parse_quantity(limits["cpu"])) if "cpu" in limits else 0
    cpu_request = milli_value(parse_quantity(requests["cpu"])) if "cpu" in requests else 0
    if cpu_request == 0 and cpu_limit:
        cpu_request = cpu_limit  # the API server's defaulting, repeated as upstream does
    memory = value(parse_quantity(limits["memory"])) if "memory" in limits else 0
    for quantity in (*requests.values(), *limits.values()):
        parse_quantity(quantity)  # a bad quantity anywhere fails the container
    period = QUOTA_PERIOD if cpu_cfs_quota else 0
    quota = milli_cpu_to_quota(cpu_limit, QUOTA_PERIOD) if cpu_cfs_quota else 0
    return LinuxContainerResources(
        cpu_period=period,
        cpu_quota=quota,
        cpu_shares=milli_cpu_to_shares(cpu_request),
        memory_limit_in_bytes=max(memory, 0),
        oom_score_adj=container_oom_score_adjust(pod, container, memory_capacity),
        hugepage_limits=container_hugepage_limits(container, hugepage_sizes),
    )


