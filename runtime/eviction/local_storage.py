"""Local ephemeral storage limits (upstream's localStorageEviction, with the kubelet's
LocalStorageCapacityIsolation on, its default): the pods to evict whatever the node's
pressure, each for the first of three checks it fails, in upstream's order:

1. emptyDirLimitEviction: a disk-backed emptyDir uses more than its ``sizeLimit``;
2. podEphemeralStorageLimitEviction: the pod's ephemeral storage (its containers' writable
   layers and logs, and its local ephemeral volumes) is over the sum of its containers'
   ``ephemeral-storage`` limits (upstream's PodLimits, with init containers and overhead);
3. containerEphemeralStorageLimitEviction: one app container's logs, plus its writable layer
   when images share the node's filesystem, are over its own ``ephemeral-storage`` limit.

Usage is what /stats/summary reports (runtime.eviction.signals.PodUsage). A memory-medium
emptyDir is memory, not disk: upstream backs it with a tmpfs that its sizeLimit sizes (it
cannot outgrow it) and leaves it out of the pod's ephemeral storage (IsLocalEphemeralVolume);
here too, so neither check counts it. Each eviction kills the pod with upstream's
immediateEvictionGracePeriodSeconds (1 s), with no DisruptionTarget condition (upstream's
evictPod gets none for these). Critical pods are never evicted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Final

from runtime.cm.aggregate import pod_limits
from runtime.eviction.api import EPHEMERAL_STORAGE, IMMEDIATE_GRACE_PERIOD, format_quantity
from runtime.eviction.rank import EvictionOrder, is_critical, is_local_ephemeral
from runtime.eviction.signals import NodeSignals, PodUsage
from runtime.pod.model import Pod
from runtime.pod.quantity import parse_quantity

SIGNAL_EMPTY_DIR: Final = "emptydirfs.limit"
SIGNAL_POD: Final = "ephemeralpodfs.limit"
SIGNAL_CONTAINER: Final = "ephemeralcontainerfs.limit"
"""The eviction metric's signal label of each check (upstream's signal*FsLimit)."""


def empty_dir_message(volume: str, limit: str) -> str:
    """emptyDirMessageFmt."""
    return f"Usage of EmptyDir volume {go_quote(volume)} exceeds the limit {go_quote(limit)}. "


def pod_message(limit: str) -> str:
    """podEphemeralStorageMessageFmt."""
    return f"Pod ephemeral local storage usage exceeds the total limit of containers {limit}. "


def container_message(container: str, limit: str) -> str:
    """containerEphemeralStorageMessageFmt."""
    return (f"Container {container} exceeded its local ephemeral storage limit "
            f"{go_quote(limit)}. ")


def go_quote(text: str) -> str:
    """Go's %q of a printable string: double quotes, with backslashes and quotes escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_BINARY_SUFFIX = re.compile(r"[KMGTPE]i$")
_EXPONENT = re.compile(r"[eE][+-]?[0-9]+$")


def quantity_text(value: Decimal, like: str | int | float) -> str:
    """``value`` as Go's Quantity.String() prints it in the format ``like`` was written in
    (a ``Ki``..``Ei`` suffix: BinarySI; an exponent: DecimalExponent; else DecimalSI):
    ``10Mi`` stays ``10Mi``, ``1024Mi`` prints ``1Gi``, ``10M`` stays ``10M``."""
    raw = str(like).strip()
    if value != value.to_integral_value():
        return f"{math.ceil(value * 1000)}m"  # a fraction of a byte: Go's milli form
    amount = int(value)
    if _EXPONENT.search(raw):
        power = 0
        while amount and amount % 10 ** (power + 3) == 0:
            power += 3
        return f"{amount // 10 ** power}e{power}" if power else str(amount)
    return format_quantity(amount, bool(_BINARY_SUFFIX.search(raw)))


def empty_dir_limit(pod: Pod, usage: PodUsage) -> str | None:
    """emptyDirLimitEviction: the message for the first disk emptyDir, in the spec's order,
    whose usage is over its positive sizeLimit; None when none is."""
    used = {v.name: v.used for v in usage.volumes if v.used is not None}
    for volume in pod.spec.volumes:
        empty = volume.empty_dir
        if empty is None or empty.medium or empty.size_limit is None:
            continue
        limit = parse_quantity(empty.size_limit)
        if limit > 0 and volume.name in used and used[volume.name] > limit:
            return empty_dir_message(volume.name, quantity_text(limit, empty.size_limit))
    return None


def _pod_limit_written(pod: Pod) -> str | int | float | None:
    """The ephemeral-storage limit whose format the pod's sum keeps (Go's Add keeps the
    first addend's): the first container, app then init, that sets one."""
    for container in (*pod.spec.containers, *pod.spec.init_containers):
        if container.resources is not None and EPHEMERAL_STORAGE in container.resources.limits:
            return container.resources.limits[EPHEMERAL_STORAGE]
    return None


def pod_ephemeral_usage(pod: Pod, usage: PodUsage) -> int:
    """The pod's ephemeral storage as upstream's summary counts it: the summary's
    ephemeral-storage, less the volumes that are not local ephemeral (this node's summary
    walks every volume directory, not knowing the specs: a memory emptyDir, a secret, a
    projected volume are not ephemeral storage)."""
    total = usage.ephemeral_storage or 0
    local = {v.name for v in pod.spec.volumes if is_local_ephemeral(v)}
    for volume in usage.volumes:
        if volume.name not in local:
            total -= volume.used or 0
    return max(total, 0)


def pod_ephemeral_storage_limit(pod: Pod, usage: PodUsage) -> str | None:
    """podEphemeralStorageLimitEviction: the message when the pod's ephemeral storage is
    over its containers' summed limit (only when some container sets one); else None."""
    limit = pod_limits(pod).get(EPHEMERAL_STORAGE)
    written = _pod_limit_written(pod)
    if limit is None or written is None:
        return None
    if pod_ephemeral_usage(pod, usage) > limit:
        return pod_message(quantity_text(limit, written))
    return None


def container_ephemeral_storage_limit(pod: Pod, usage: PodUsage, dedicated_image_fs: bool
                                      ) -> str | None:
    """containerEphemeralStorageLimitEviction: the message for the first container, in the
    summary's order, whose logs (and writable layer, unless images have a filesystem of
    their own) are over its non-zero limit; None when none is. App containers only."""
    limits: dict[str, tuple[Decimal, str | int | float]] = {}
    for container in pod.spec.containers:
        written = (container.resources.limits.get(EPHEMERAL_STORAGE)
                   if container.resources is not None else None)
        if written is not None and (limit := parse_quantity(written)) != 0:
            limits[container.name] = (limit, written)
    for stats in usage.containers:
        if stats.name not in limits:
            continue
        used = stats.logs or 0
        if not dedicated_image_fs:
            used += stats.rootfs or 0
        limit, written = limits[stats.name]
        if used > limit:
            return container_message(stats.name, quantity_text(limit, written))
    return None


def local_storage_eviction(pods: Sequence[Pod], signals: NodeSignals
                           ) -> tuple[EvictionOrder, ...]:
    """localStorageEviction: every pod over a local storage limit (all of them this pass,
    not one), each with the first check it fails; pods without stats are skipped."""
    orders: list[EvictionOrder] = []
    for pod in pods:
        usage = signals.pod(pod.uid)
        if usage is None or is_critical(pod):
            continue
        for signal, message in (
                (SIGNAL_EMPTY_DIR, empty_dir_limit(pod, usage)),
                (SIGNAL_POD, pod_ephemeral_storage_limit(pod, usage)),
                (SIGNAL_CONTAINER, container_ephemeral_storage_limit(
                    pod, usage, signals.dedicated_image_fs))):
            if message is not None:
                orders.append(EvictionOrder(pod.uid, signal, IMMEDIATE_GRACE_PERIOD, message,
                                            disruption=False))
                break
    return tuple(orders)
