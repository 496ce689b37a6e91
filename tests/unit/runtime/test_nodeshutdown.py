"""Graceful node shutdown's rules as upstream's nodeshutdown tests pin them: the migrated
configuration, the grouping by priority (boundaries, below the lowest, above the highest),
each pod's grace period, and the whole period logind must allow."""

from __future__ import annotations

from msgspec.structs import replace

from runtime.nodeshutdown import (
    SYSTEM_CRITICAL_PRIORITY,
    group_by_priority,
    migrate_config,
    period_requested,
    pod_grace_period,
    shutdown_periods,
)
from runtime.nodeshutdown import ShutdownGracePeriodByPodPriority as Period
from runtime.pod.model import Pod
from tests.unit.kubelet.test_sync_loop import pod


def prioritized(uid: str, priority: int | None, grace: int | None = None) -> Pod:
    p = pod(uid, uid)
    return replace(p, spec=replace(p.spec, priority=priority,
                                   termination_grace_period_seconds=grace))


def test_migrate_config_as_upstream() -> None:
    assert migrate_config(0, 0) == ()
    assert migrate_config(30, 10) == (Period(0, 20), Period(SYSTEM_CRITICAL_PRIORITY, 10))
    assert migrate_config(30, 0) == (Period(0, 30), Period(SYSTEM_CRITICAL_PRIORITY, 0))
    assert migrate_config(10, 20) == ()  # critical more than the whole: nothing


def test_shutdown_periods_prefer_the_list_and_sort_it() -> None:
    listed = (Period(1000, 5), Period(-10, 7))
    assert shutdown_periods(0, 0, listed) == (Period(-10, 7), Period(1000, 5))
    assert shutdown_periods(30, 10, listed, based_on_pod_priority=False) == migrate_config(30, 10)
    assert shutdown_periods(0, 0, ()) == ()
    assert period_requested(shutdown_periods(30, 10, ())) == 30


def test_group_by_priority_boundaries() -> None:
    periods = (Period(1, 10), Period(2, 20), Period(3, 30), Period(4, 40))
    pods = tuple(prioritized(str(p), p) for p in (0, 1, 2, 3, 4, 5))
    pods += (prioritized("none", None),)
    groups = group_by_priority(periods, pods)
    assert [[p.uid for p in g.pods] for g in groups] == [
        ["0", "1", "none"], ["2"], ["3"], ["4", "5"]]
    # Between two groups' priorities: the lower group.
    between = group_by_priority((Period(0, 10), Period(100, 20)),
                                (prioritized("50", 50), prioritized("100", 100)))
    assert [[p.uid for p in g.pods] for g in between] == [["50"], ["100"]]


def test_pod_grace_period_is_the_smaller() -> None:
    group = Period(0, 20)
    assert pod_grace_period(prioritized("a", 0, 5), group) == 5
    assert pod_grace_period(prioritized("b", 0, 20), group) == 20
    assert pod_grace_period(prioritized("c", 0, 60), group) == 20
    assert pod_grace_period(prioritized("d", 0, None), group) == 20
