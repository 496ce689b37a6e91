"""A pod's summed requests and limits (upstream pkg/api/v1/resource PodRequests,
PodLimits, AggregateContainerRequests/Limits, and the API server's defaulting of requests
from limits that upstream's kubelet repeats).

Regular containers and sidecars add up; an init container needs its own amount plus the
sidecars started before it; the pod needs the larger of the two, plus its overhead.
Pod-level resources (spec.resources) replace the sums for cpu and memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Final

from runtime.pod.model import Container, Pod
from runtime.pod.quantity import parse_quantity

POD_LEVEL_RESOURCES: Final = frozenset({"cpu", "memory"})
ResourceList = dict[str, Decimal]


def _decimal(quantity: str | int | float) -> Decimal:
    return parse_quantity(quantity)


def as_list(resources: Mapping[str, str | int | float]) -> ResourceList:
    return {name: _decimal(q) for name, q in resources.items()}


def _add(total: ResourceList, extra: ResourceList) -> None:
    for name, amount in extra.items():
        total[name] = total.get(name, Decimal(0)) + amount


def _max(total: ResourceList, other: ResourceList) -> None:
    for name, amount in other.items():
        if amount > total.get(name, Decimal(0)):
            total[name] = amount


def requests_of(container: Container) -> ResourceList:
    """The container's requests, each missing one taken from its limit (the API
    server's defaulting, which upstream's kubelet repeats for old pods)."""
    if container.resources is None:
        return {}
    merged = {**container.resources.limits, **container.resources.requests}
    return as_list(merged)


def limits_of(container: Container) -> ResourceList:
    return as_list(container.resources.limits) if container.resources else {}


def _aggregate(pod: Pod, of: Callable[[Container], ResourceList],
               seen: Callable[[ResourceList], None] | None = None) -> ResourceList:
    """Upstream's AggregateContainerRequests/Limits: regular containers and sidecars add
    up; an init container needs its own amount plus the sidecars started before it; the
    pod needs the larger of the two. ``seen`` gets each container's amounts as upstream's
    PodResourcesOptions.ContainerFn does (ResourceConfigForPod learns from it whether
    every container sets a limit)."""
    total: ResourceList = {}
    for container in pod.spec.containers:
        amounts = of(container)
        if seen is not None:
            seen(amounts)
        _add(total, amounts)
    sidecars: ResourceList = {}
    inits: ResourceList = {}
    for container in pod.spec.init_containers:
        amounts = of(container)
        if container.is_restartable_init:
            _add(total, amounts)
            _add(sidecars, amounts)
            needed = dict(sidecars)
        else:
            needed = dict(amounts)
            _add(needed, sidecars)
        if seen is not None:
            # Upstream's ContainerFn sees an init container's amount with the sidecars
            # that run beside it, not its own alone.
            seen(needed)
        _max(inits, needed)
    _max(total, inits)
    return total


def aggregate_container_requests(pod: Pod) -> ResourceList:
    return _aggregate(pod, requests_of)


def pod_level_requests(pod: Pod) -> ResourceList:
    """spec.resources.requests for cpu and memory, defaulted as upstream's
    defaultPodRequests: with pod-level limits, a missing pod request is the containers'
    aggregate request when any container asks for it, else the pod limit."""
    res = pod.spec.resources
    if res is None:
        return {}
    requests = {n: q for n, q in as_list(res.requests).items() if n in POD_LEVEL_RESOURCES}
    containers = aggregate_container_requests(pod)
    for name, limit in as_list(res.limits).items():
        if name in POD_LEVEL_RESOURCES and name not in requests:
            requests[name] = containers[name] if containers.get(name) else limit
    return requests


def pod_requests(pod: Pod, overhead: bool = True) -> ResourceList:
    """upstream resource.PodRequests (with pod-level resources; with the overhead unless
    ``overhead`` is False, upstream's ExcludeOverhead)."""
    requests = aggregate_container_requests(pod)
    requests.update(pod_level_requests(pod))
    if overhead:
        _add(requests, as_list(pod.spec.overhead))
    return requests


def pod_limits(pod: Pod, seen: Callable[[ResourceList], None] | None = None,
               overhead: bool = True) -> ResourceList:
    """upstream resource.PodLimits: the overhead is added only to limits that are set
    (and not at all when ``overhead`` is False, upstream's ExcludeOverhead)."""
    limits = _aggregate(pod, limits_of, seen)
    if pod.spec.resources is not None:
        for name, limit in as_list(pod.spec.resources.limits).items():
            if name in POD_LEVEL_RESOURCES:
                limits[name] = limit
    if overhead:
        for name, extra in as_list(pod.spec.overhead).items():
            if name in limits:
                limits[name] += extra
    return limits


