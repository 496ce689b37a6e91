"""A container's and a sandbox's CRI LinuxContainerResources (upstream
kuberuntime_container_linux.go generateLinuxContainerResources / calculateLinuxResources
and GetHugepageLimitsFromResources; kuberuntime_sandbox_linux.go applySandboxResources).

calculateLinuxResources, shared by both: cpu shares from the request (from the limit when
no request is given at all; 2 when neither), the CFS period always 100 ms and the quota from
the limit (0 = none, else at least 1 ms), the memory limit. A container adds a limit per
huge page size the node has (0 unless the container asks for it) and the oom_score_adj of
the pod's QoS. The sandbox gets two of them, for runtimes that size a VM per pod (kata):
``resources``, the pod's summed requests and limits without its overhead, and ``overhead``,
the pod's spec.overhead (set from its RuntimeClass by the API server) as requests = limits.
"""

from __future__ import annotations

import os
from decimal import Decimal

import msgspec

from runtime.cm.aggregate import as_list, limits_of, pod_limits, pod_requests
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


def linux_resources(cpu_request: int | None, cpu_limit: int, memory_limit: int,
                    cpu_cfs_quota: bool = True) -> LinuxContainerResources:
    """upstream calculateLinuxResources, in milli-cpu and bytes: ``cpu_request`` None (not
    given at all) takes its shares from the limit, as the API server's defaulting would;
    a request given as 0 gets the minimum shares, whatever the limit (upstream's
    RequestZeroCPU)."""
    shares = milli_cpu_to_shares(cpu_limit if cpu_request is None else cpu_request)
    return LinuxContainerResources(
        cpu_period=QUOTA_PERIOD if cpu_cfs_quota else 0,
        cpu_quota=milli_cpu_to_quota(cpu_limit, QUOTA_PERIOD) if cpu_cfs_quota else 0,
        cpu_shares=shares,
        memory_limit_in_bytes=max(memory_limit, 0),
    )


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
    cpu_request = milli_value(parse_quantity(requests["cpu"])) if "cpu" in requests else None
    memory = value(parse_quantity(limits["memory"])) if "memory" in limits else 0
    for quantity in (*requests.values(), *limits.values()):
        parse_quantity(quantity)  # a bad quantity anywhere fails the container
    return msgspec.structs.replace(
        linux_resources(cpu_request, cpu_limit, memory, cpu_cfs_quota),
        oom_score_adj=container_oom_score_adjust(pod, container, memory_capacity),
        hugepage_limits=container_hugepage_limits(container, hugepage_sizes),
    )


def sandbox_resources(pod: Pod, cpu_cfs_quota: bool = True) -> LinuxContainerResources:
    """The sandbox's ``linux.resources`` (upstream calculateSandboxResources): the pod's
    requests and limits as PodRequests / PodLimits sum them (init containers and sidecars
    included, pod-level resources replacing the sums) without the overhead; ValueError on
    a bad quantity."""
    requests = pod_requests(pod, overhead=False)
    limits = pod_limits(pod, overhead=False)
    cpu_request = milli_value(requests["cpu"]) if "cpu" in requests else None
    return linux_resources(cpu_request, milli_value(limits.get("cpu", Decimal(0))),
                           value(limits.get("memory", Decimal(0))), cpu_cfs_quota)


def overhead_resources(pod: Pod, cpu_cfs_quota: bool = True) -> LinuxContainerResources:
    """The sandbox's ``linux.overhead`` (upstream convertOverheadToLinuxResources): the
    pod's spec.overhead as a Guaranteed amount (request = limit); all zero, as upstream's
    empty message, for a pod without one (an empty spec.overhead reads as none: the pod
    model keeps no nil map apart from an empty one). ValueError on a bad quantity."""
    if not pod.spec.overhead:
        return LinuxContainerResources()
    overhead = as_list(pod.spec.overhead)
    cpu = milli_value(overhead.get("cpu", Decimal(0)))
    return linux_resources(cpu, cpu, value(overhead.get("memory", Decimal(0))),
                           cpu_cfs_quota)
