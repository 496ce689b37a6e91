"""Graceful node shutdown's settings: KubeletConfiguration's ``shutdownGracePeriod``,
``shutdownGracePeriodCriticalPods`` and ``shutdownGracePeriodByPodPriority`` (file only, as
upstream has no flags for them), checked as upstream's ValidateKubeletConfiguration checks
them, in its words, and made into the shutdown manager's groups (runtime.nodeshutdown).

Both periods 0 and no list (the default): the feature is off, as upstream's "No graceful
configuration specified, node shutdown will be immediate".
"""

from __future__ import annotations

import argparse
from typing import Any

from actors.app.config.feature_gates import (
    GRACEFUL_NODE_SHUTDOWN,
    GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY,
    enabled,
)
from runtime.errors import ConfigError
from runtime.events.v1 import go_duration
from runtime.nodeshutdown import ShutdownGracePeriodByPodPriority, shutdown_periods

BY_POD_PRIORITY = "shutdownGracePeriodByPodPriority"


def by_pod_priority(value: Any) -> tuple[ShutdownGracePeriodByPodPriority, ...]:
    """shutdownGracePeriodByPodPriority: a list of {priority, shutdownGracePeriodSeconds}."""
    if not isinstance(value, list):
        raise TypeError("expected a list of {priority, shutdownGracePeriodSeconds}")
    out: list[ShutdownGracePeriodByPodPriority] = []
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise TypeError(f"[{i}]: expected an object with priority and "
                            "shutdownGracePeriodSeconds")
        unknown = sorted(set(entry) - {"priority", "shutdownGracePeriodSeconds"})
        if unknown:
            raise ValueError(f'[{i}]: unknown field "{unknown[0]}"')
        numbers = []
        for key in ("priority", "shutdownGracePeriodSeconds"):
            number = entry.get(key, 0)
            if isinstance(number, bool) or not isinstance(number, int):
                raise TypeError(f"[{i}].{key}: expected an integer, got "
                                f"{type(number).__name__}")
            numbers.append(number)
        if not -2**31 <= numbers[0] < 2**31:
            raise ValueError(f"[{i}].priority: {numbers[0]} is out of range for an int32")
        out.append(ShutdownGracePeriodByPodPriority(numbers[0], numbers[1]))
    return tuple(out)




def shutdown_settings(ns: argparse.Namespace
                      ) -> tuple[float, float, tuple[ShutdownGracePeriodByPodPriority, ...]]:
    """(shutdownGracePeriod, shutdownGracePeriodCriticalPods, shutdownGracePeriodByPodPriority)
    as merged (0, 0 and none when not set)."""
    total = float(getattr(ns, "shutdown_grace_period", 0.0) or 0.0)
    critical = float(getattr(ns, "shutdown_grace_period_critical_pods", 0.0) or 0.0)
    by_priority: tuple[ShutdownGracePeriodByPodPriority, ...] = tuple(
        getattr(ns, "shutdown_grace_period_by_pod_priority", ()) or ())
    return total, critical, by_priority


def shutdown_problems(total: float, critical: float,
                      by_priority: tuple[ShutdownGracePeriodByPodPriority, ...],
                      gates: tuple[tuple[str, bool], ...]) -> list[ConfigError]:
    """Every rule of upstream's ValidateKubeletConfiguration the settings break, in its
    words (all are reported together, as upstream's aggregate error)."""
    found: list[ConfigError] = []
    if enabled(gates, GRACEFUL_NODE_SHUTDOWN):
        if critical > total:
            found.append(ConfigError(
                f"invalid configuration: shutdownGracePeriodCriticalPods "
                f"{go_duration(critical)} must be <= shutdownGracePeriod {go_duration(total)}",
                field="shutdownGracePeriodCriticalPods", related=("shutdownGracePeriod",)))
        for name, value in (("shutdownGracePeriod", total),
                            ("shutdownGracePeriodCriticalPods", critical)):
            if value < 0 or 0 < value < 1:
                found.append(ConfigError(
                    f"invalid configuration: {name} {go_duration(value)} must be either zero "
                    "or otherwise >= 1 sec", field=name))
    elif total > 0 or critical > 0:
        found.append(ConfigError(
            "invalid configuration: specifying shutdownGracePeriod or "
            "shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown",
            field="shutdownGracePeriod", related=("shutdownGracePeriodCriticalPods",)))
    if enabled(gates, GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY):
        if by_priority and (total > 0 or critical > 0):
            found.append(ConfigError(
                "invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority "
                "and shutdownGracePeriod at the same time", field=BY_POD_PRIORITY,
                related=("shutdownGracePeriod",)))
    elif by_priority:
        found.append(ConfigError(
            "invalid configuration: Specifying shutdownGracePeriodByPodPriority requires "
            "feature gate GracefulNodeShutdownBasedOnPodPriority", field=BY_POD_PRIORITY))
    return found


def periods(total: float, critical: float,
            by_priority: tuple[ShutdownGracePeriodByPodPriority, ...],
            gates: tuple[tuple[str, bool], ...]) -> tuple[ShutdownGracePeriodByPodPriority, ...]:
    """The shutdown manager's groups; empty: graceful node shutdown is off (its gate off, or
    nothing configured)."""
    if not enabled(gates, GRACEFUL_NODE_SHUTDOWN):
        return ()
    return shutdown_periods(total, critical, by_priority,
                            enabled(gates, GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY))
