"""Graceful node shutdown's rules (upstream's pkg/kubelet/nodeshutdown), with no I/O.

The configuration as upstream reads it: ``shutdownGracePeriodByPodPriority`` when given,
else ``shutdownGracePeriod`` and ``shutdownGracePeriodCriticalPods`` migrated to two groups
(priority 0 gets the difference, SystemCriticalPriority the critical pods' share); the
groups sorted by priority, lowest first; the pods put into groups by ``spec.priority``
(a pod between two groups' priorities goes to the lower one, one below the lowest to the
lowest, one above the highest to the highest); each pod killed with the smaller of its own
``terminationGracePeriodSeconds`` and its group's; the time logind must wait
(``InhibitDelayMaxSec``) the sum of the groups' periods. And the words upstream's status,
admission refusal and Ready condition use.
"""

from __future__ import annotations

import bisect
from typing import Final

from msgspec import Struct

from runtime.pod.model import Pod

NODE_SHUTDOWN_REASON: Final = "Terminated"
NODE_SHUTDOWN_MESSAGE: Final = "Pod was terminated in response to imminent node shutdown."
NODE_SHUTDOWN_NOT_ADMITTED_REASON: Final = "NodeShutdown"
NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE: Final = "Pod was rejected as the node is shutting down."
NODE_SHUTTING_DOWN: Final = "node is shutting down"
"""ShutdownStatus's error: the Ready condition's message while the node shuts down."""

DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: Final = 0
SYSTEM_CRITICAL_PRIORITY: Final = 2 * 1000000000
"""scheduling.SystemCriticalPriority: system-cluster-critical; node-critical is 1000 more."""


class ShutdownGracePeriodByPodPriority(Struct, frozen=True):
    """One entry of ``shutdownGracePeriodByPodPriority``: pods of ``priority`` (up to the
    next entry's) get ``shutdown_grace_period_seconds`` to stop."""

    priority: int
    shutdown_grace_period_seconds: int


class ShutdownGroup(Struct, frozen=True):
    """The pods one entry covers, stopped together before the next entry's."""

    period: ShutdownGracePeriodByPodPriority
    pods: tuple[Pod, ...]


def migrate_config(grace_period: float, critical_pods: float
                   ) -> tuple[ShutdownGracePeriodByPodPriority, ...]:
    """shutdownGracePeriod and shutdownGracePeriodCriticalPods as the two groups upstream's
    migrateConfig makes of them; none when the grace period is 0 (the feature is off)."""
    if grace_period == 0:
        return ()
    default_priority = grace_period - critical_pods
    if default_priority < 0:
        return ()
    critical = grace_period - default_priority
    return (ShutdownGracePeriodByPodPriority(DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS,
                                             int(default_priority)),
            ShutdownGracePeriodByPodPriority(SYSTEM_CRITICAL_PRIORITY, int(critical)))


def shutdown_periods(grace_period: float, critical_pods: float,
                     by_pod_priority: tuple[ShutdownGracePeriodByPodPriority, ...],
                     based_on_pod_priority: bool = True
                     ) -> tuple[ShutdownGracePeriodByPodPriority, ...]:
    """The groups the manager works with, sorted by priority (lowest first): the list when
    given (and its gate is on), else the two migrated ones. Empty: the feature is off."""
    periods = by_pod_priority
    if not based_on_pod_priority or not periods:
        periods = migrate_config(grace_period, critical_pods)
    return tuple(sorted(periods, key=lambda p: p.priority))


def period_requested(periods: tuple[ShutdownGracePeriodByPodPriority, ...]) -> int:
    """The whole shutdown's seconds: what logind's InhibitDelayMaxSec must allow."""
    return sum(p.shutdown_grace_period_seconds for p in periods)


def group_by_priority(periods: tuple[ShutdownGracePeriodByPodPriority, ...],
                      pods: tuple[Pod, ...]) -> tuple[ShutdownGroup, ...]:
    """``pods`` in the groups of ``periods`` (sorted lowest first), as upstream's
    groupByPriority puts them."""
    if not periods:
        return ()
    members: list[list[Pod]] = [[] for _ in periods]
    priorities = [p.priority for p in periods]
    for pod in pods:
        priority = pod.spec.priority or 0
        index = bisect.bisect_left(priorities, priority)
        if index == len(periods):
            index = len(periods) - 1
        elif index > 0 and priorities[index] > priority:
            index -= 1
        members[index].append(pod)
    return tuple(ShutdownGroup(period, tuple(group))
                 for period, group in zip(periods, members, strict=True))


def pod_grace_period(pod: Pod, group: ShutdownGracePeriodByPodPriority) -> int:
    """The pod's own terminationGracePeriodSeconds when it is not more than its group's,
    else the group's."""
    own = pod.spec.termination_grace_period_seconds
    period = group.shutdown_grace_period_seconds
    return own if own is not None and own <= period else period
