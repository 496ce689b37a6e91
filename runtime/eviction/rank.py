"""Which pod goes first, and what it is told (rankers, evictionMessage, IsCriticalPod).

Memory: pods using more than they request first, then lower priority, then the most usage
above the request. Disk: the same with the pod's disk usage (which parts count depends on
whether images have a filesystem of their own). PIDs: lower priority, then most processes.
A pod without stats goes first. Critical pods (static, mirror, priority >= 2000000000) are
never evicted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from decimal import Decimal

from msgspec import Struct

from runtime.events import reasons
from runtime.eviction.api import (
    CRITICAL_PRIORITY,
    EPHEMERAL_STORAGE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    IMMEDIATE_GRACE_PERIOD,
    INODES,
    MEMORY,
    PIDS,
    SIGNAL_RESOURCE,
    EvictionConfig,
    Quantity,
    Threshold,
)
from runtime.eviction.signals import NodeSignals, PodUsage
from runtime.pod.admission import pod_requests
from runtime.pod.model import Pod, Volume
from runtime.pod.quantity import parse_quantity

REASON = reasons.EVICTED
"""The reason of an evicted (or, under pressure, rejected) pod's status and event."""
CONFIG_MIRROR = "kubernetes.io/config.mirror"


def is_critical(pod: Pod) -> bool:
    """IsCriticalPod: static pods, mirror pods, and pods of a system-critical priority."""
    if pod.is_static or CONFIG_MIRROR in pod.metadata.annotations:
        return True
    return pod.spec.priority is not None and pod.spec.priority >= CRITICAL_PRIORITY


def _priority(pod: Pod) -> int:
    return pod.spec.priority or 0


def _request(pod: Pod, resource: str) -> int:
    return int(pod_requests(pod).get(resource, Decimal(0)))


def is_local_ephemeral(volume: Volume) -> bool:
    """IsLocalEphemeralVolume: gitRepo, configMap, and emptyDir on the node's disk (the
    default medium; a memory emptyDir is memory). Their usage is the pod's ephemeral
    storage."""
    return (volume.git_repo is not None or volume.config_map is not None
            or (volume.empty_dir is not None and not volume.empty_dir.medium))


def _local_volumes(pod: Pod) -> set[str]:
    """localVolumeNames: hostPath and local ephemeral volumes."""
    return {v.name for v in pod.spec.volumes
            if v.host_path is not None or is_local_ephemeral(v)}


class DiskParts(Struct, frozen=True):
    """Which parts of a pod's disk usage a disk signal counts (fsStatsType)."""

    root: bool
    logs: bool
    volumes: bool


def disk_parts(signal: str, dedicated_image_fs: bool) -> DiskParts:
    """buildSignalToRankFunc (no separate container filesystem): with a dedicated imagefs,
    nodefs counts logs and local volumes, imagefs the writable layers; else all of them."""
    if not dedicated_image_fs:
        return DiskParts(True, True, True)
    if signal in (IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE):
        return DiskParts(True, False, False)
    return DiskParts(False, True, True)


def disk_usage(pod: Pod, usage: PodUsage, parts: DiskParts, resource: str) -> int:
    """podDiskUsage: bytes (or inodes) of the counted parts."""
    inodes = resource == INODES
    total = 0
    for c in usage.containers:
        if parts.root:
            total += (c.rootfs_inodes if inodes else c.rootfs) or 0
        if parts.logs:
            total += (c.logs_inodes if inodes else c.logs) or 0
    if parts.volumes:
        local = _local_volumes(pod)
        for v in usage.volumes:
            if v.name in local:
                total += (v.inodes if inodes else v.used) or 0
    return total


Compare = Callable[[Pod, Pod], int]


def _cmp_bool(a: bool, b: bool) -> int:
    """cmpBool: true first."""
    return 0 if a == b else (-1 if a else 1)


def rank(signal: str, pods: Sequence[Pod], signals: NodeSignals) -> list[Pod]:
    """The pods in eviction order for ``signal`` (rankMemoryPressure, rankDiskPressureFunc,
    rankPIDPressure)."""
    resource = SIGNAL_RESOURCE[signal]
    parts = disk_parts(signal, signals.dedicated_image_fs)

    def amount(pod: Pod) -> int | None:
        usage = signals.pod(pod.uid)
        if usage is None:
            return None
        if resource == MEMORY:
            return usage.memory or 0
        if resource == PIDS:
            return usage.processes or 0
        return disk_usage(pod, usage, parts, resource)

    def request(pod: Pod) -> int:
        if resource == MEMORY:
            return _request(pod, MEMORY)
        return _request(pod, EPHEMERAL_STORAGE) if resource == EPHEMERAL_STORAGE else 0

    def missing_first(p1: Pod, p2: Pod) -> int | None:
        a1, a2 = amount(p1), amount(p2)
        if a1 is None or a2 is None:
            return _cmp_bool(a1 is None, a2 is None)
        return None

    def exceeds(p1: Pod, p2: Pod) -> int:
        if (missing := missing_first(p1, p2)) is not None:
            return missing
        return _cmp_bool((amount(p1) or 0) > request(p1), (amount(p2) or 0) > request(p2))

    def priority(p1: Pod, p2: Pod) -> int:
        a, b = _priority(p1), _priority(p2)
        return 0 if a == b else (1 if a > b else -1)

    def usage_above_request(p1: Pod, p2: Pod) -> int:
        if (missing := missing_first(p1, p2)) is not None:
            return missing
        d1 = (amount(p1) or 0) - request(p1)
        d2 = (amount(p2) or 0) - request(p2)
        return (d2 > d1) - (d2 < d1)

    def processes(p1: Pod, p2: Pod) -> int:
        if (missing := missing_first(p1, p2)) is not None:
            return missing
        return (amount(p2) or 0) - (amount(p1) or 0)

    order: tuple[Compare, ...] = ((priority, processes) if resource == PIDS
                                  else (exceeds, priority, usage_above_request))

    def compare(p1: Pod, p2: Pod) -> int:
        for cmp in order:
            if result := cmp(p1, p2):
                return result
        return 0

    return sorted(pods, key=functools.cmp_to_key(compare))


def eviction_message(resource: str, pod: Pod, signals: NodeSignals,
                     thresholds: Sequence[Threshold]) -> str:
    """evictionMessage: the starved resource, the threshold and what was available, and
    each container using more of it than it requests."""
    message = f"The node was low on resource: {resource}. "
    for threshold in thresholds:
        observed = signals.get(threshold.signal)
        if SIGNAL_RESOURCE.get(threshold.signal) == resource and observed is not None:
            quantity = threshold.value.amount(observed.capacity)
            available = Quantity(observed.available, quantity.binary if resource in (
                MEMORY, EPHEMERAL_STORAGE) else False)
            message += f"Threshold quantity: {quantity}, available: {available}. "
            break
    usage = signals.pod(pod.uid)
    if usage is None or resource not in (MEMORY, EPHEMERAL_STORAGE):
        return message
    containers = (*pod.spec.containers, *pod.spec.init_containers)
    for stats in usage.containers:
        container = next((c for c in containers if c.name == stats.name), None)
        if container is None:
            continue
        requests = container.resources.requests if container.resources is not None else {}
        raw = requests.get(resource)
        requested = int(parse_quantity(raw)) if raw is not None else 0
        used: int | None = None
        if resource == MEMORY:
            used = stats.memory
        elif stats.rootfs is not None and stats.logs is not None:
            used = stats.rootfs + stats.logs
        if used is not None and used > requested:
            shown = str(raw) if raw is not None else "0"
            message += (f"Container {container.name} was using {Quantity(used)}, request is "
                        f"{shown}, has larger consumption of {resource}. ")
    return message


class EvictionOrder(Struct, frozen=True):
    """Evict this pod: kill it with this grace and fail it with this message."""

    uid: str
    signal: str
    grace_period: int
    message: str
    disruption: bool = True  # the pod gets the DisruptionTarget condition (pressure does)


def choose(config: EvictionConfig, threshold: Threshold, resource: str, pods: Sequence[Pod],
           signals: NodeSignals, starved: Sequence[Threshold]) -> EvictionOrder | None:
    """The pod to evict this pass (one per pass): the first ranked that is not critical,
    killed with a grace of 1 s for a hard threshold, else ``--eviction-max-pod-grace-period``
    or the pod's own terminationGracePeriodSeconds when that is shorter."""
    for pod in rank(threshold.signal, pods, signals):
        if is_critical(pod):
            continue
        grace = IMMEDIATE_GRACE_PERIOD
        if not threshold.hard:
            own = pod.spec.termination_grace_period_seconds
            grace = config.max_pod_grace_period if own is None else min(
                config.max_pod_grace_period, own)
        return EvictionOrder(pod.uid, threshold.signal, grace,
                             eviction_message(resource, pod, signals, starved))
    return None
