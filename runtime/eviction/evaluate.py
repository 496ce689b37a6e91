"""Which thresholds are met, for how long, and what the node reports (synchronize's first half).

One pass of upstream's eviction manager, as a pure function of the settings, the state the
last pass left, the newest observations and the time: thresholds met now (and those still
short of their minimum reclaim), when each was first met (soft thresholds wait out their
grace period), which node conditions hold (kept for the pressure transition period after
the last time they were met), and the threshold to reclaim, memory first.
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import Struct

from runtime.eviction.api import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    CONDITIONS,
    MEMORY_AVAILABLE,
    SIGNAL_CONDITION,
    SIGNAL_RESOURCE,
    EvictionConfig,
    Threshold,
)
from runtime.eviction.signals import NodeSignals


class EvictionState(Struct, frozen=True):
    """What one pass leaves the next (upstream's managerImpl fields)."""

    first_observed: tuple[tuple[Threshold, float], ...] = ()
    conditions_last_observed: tuple[tuple[str, float], ...] = ()
    thresholds_met: tuple[Threshold, ...] = ()
    last_observed_at: float | None = None  # when the observations of the last pass were taken
    conditions: tuple[str, ...] = ()


class Evaluation(Struct, frozen=True):
    """One pass's verdict: the new state, and the threshold to reclaim (None: nothing)."""

    state: EvictionState
    starved: tuple[Threshold, ...]  # grace periods met and stats updated, by priority
    reclaim: Threshold | None
    resource: str = ""


def thresholds_met(thresholds: Iterable[Threshold], signals: NodeSignals,
                   enforce_min_reclaim: bool) -> list[Threshold]:
    """thresholdsMet: each threshold whose signal's available amount is below it (below it
    plus its minimum reclaim, with ``enforce_min_reclaim``)."""
    met: list[Threshold] = []
    for threshold in thresholds:
        observed = signals.get(threshold.signal)
        if observed is None:
            continue
        quantity = threshold.value.amount(observed.capacity).value
        if enforce_min_reclaim and threshold.min_reclaim is not None:
            quantity += threshold.min_reclaim.amount(observed.capacity).value
        if quantity > observed.available:
            met.append(threshold)
    return met


def _by_eviction_priority(thresholds: list[Threshold]) -> list[Threshold]:
    """byEvictionPriority: memory first, thresholds with no resource to reclaim last."""
    def rank(t: Threshold) -> int:
        if t.signal in (MEMORY_AVAILABLE, ALLOCATABLE_MEMORY_AVAILABLE):
            return 0
        return 1 if t.signal in SIGNAL_RESOURCE else 2
    return sorted(thresholds, key=rank)


def node_conditions(thresholds: Iterable[Threshold]) -> tuple[str, ...]:
    """The node conditions the thresholds raise, in the node status' order."""
    raised = {SIGNAL_CONDITION[t.signal] for t in thresholds if t.signal in SIGNAL_CONDITION}
    return tuple(c for c in CONDITIONS if c in raised)


def evaluate(config: EvictionConfig, state: EvictionState, signals: NodeSignals,
             now: float) -> Evaluation:
    """One pass: ``now`` is the eviction manager's clock (monotonic seconds)."""
    met = thresholds_met(config.thresholds, signals, False)
    if state.thresholds_met:
        for threshold in thresholds_met(state.thresholds_met, signals, True):
            if threshold not in met:
                met.append(threshold)
    first = dict(state.first_observed)
    first_observed = {t: first.get(t, now) for t in met}
    last_seen = dict(state.conditions_last_observed)
    for condition in node_conditions(met):
        last_seen[condition] = now
    conditions = tuple(c for c in CONDITIONS
                       if c in last_seen and now - last_seen[c] < config.pressure_transition_period)
    graced = [t for t, at in first_observed.items() if now - at >= t.grace_period]
    new_state = EvictionState(tuple(first_observed.items()), tuple(sorted(last_seen.items())),
                              tuple(graced), signals.at, conditions)
    # thresholdsUpdatedStats: act only on observations newer than the last pass's.
    fresh = state.last_observed_at is None or signals.at > state.last_observed_at
    starved = _by_eviction_priority(graced) if fresh else []
    reclaim = next((t for t in starved if t.signal in SIGNAL_RESOURCE), None)
    return Evaluation(new_state, tuple(starved), reclaim,
                      SIGNAL_RESOURCE[reclaim.signal] if reclaim is not None else "")
