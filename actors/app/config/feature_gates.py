"""``--feature-gates`` (and KubeletConfiguration's ``featureGates``): the gates this kubelet has.

Upstream's kubelet refuses a gate it does not know ("unrecognized feature gate: X") and a
value that is not a boolean; so does this one. Each gate's default is this build's: the
event-driven PLEG is on by default here (upstream's EventedPLEG is alpha and off), because
the runtime's events are read from containerd's own events service, which every containerd
this kubelet supports has; off, the PLEG relists every second as upstream's generic PLEG.
"""

from __future__ import annotations

from collections.abc import Mapping

from actors.app.config.gostrconv import NumError, parse_bool
from runtime.errors import ConfigError

EVENTED_PLEG = "EventedPLEG"
CRASH_LOOP_BACKOFF_MAX = "KubeletCrashLoopBackOffMax"
"""crashLoopBackOff.maxContainerRestartPeriod may be set (alpha upstream: off)."""

KUBELET_FINE_GRAINED_AUTHZ = "KubeletFineGrainedAuthz"
"""The main port asks nodes/pods, healthz, configz before nodes/proxy (GA in 1.36, locked
on: actors.app.http.auth always does)."""

GRACEFUL_NODE_SHUTDOWN = "GracefulNodeShutdown"
"""shutdownGracePeriod and shutdownGracePeriodCriticalPods are used (beta upstream: on)."""
GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY = "GracefulNodeShutdownBasedOnPodPriority"
"""shutdownGracePeriodByPodPriority is used (beta upstream: on)."""

DEFAULTS: Mapping[str, bool] = {EVENTED_PLEG: True, CRASH_LOOP_BACKOFF_MAX: False,
                                KUBELET_FINE_GRAINED_AUTHZ: True,
                                GRACEFUL_NODE_SHUTDOWN: True,
                                GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY: True}
"""Every gate this kubelet knows, with its default."""

LOCKED: frozenset[str] = frozenset({KUBELET_FINE_GRAINED_AUTHZ})
"""GA gates locked to their default (upstream's LockToDefault): naming them with that value
is accepted, with the other refused."""


def parse_feature_gates(text: str) -> tuple[tuple[str, bool], ...]:
    """``A=true,B=false`` as (gate, enabled) pairs, each gate known and each value a bool."""
    gates: dict[str, bool] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        name, equals, value = pair.partition("=")
        name = name.strip()
        if not equals:
            raise ConfigError(f"--feature-gates {text!r}: missing bool value for {name}",
                              field="featureGates", rule=f"missing bool value for {name}")
        if name not in DEFAULTS:
            raise ConfigError(f"--feature-gates: unrecognized feature gate: {name}",
                              field="featureGates", rule=f"unrecognized feature gate: {name}")
        try:
            gates[name] = parse_bool(value.strip())
        except NumError as err:
            rule = f"invalid value of {name}={value.strip()}, err: {err}"
            raise ConfigError(f"--feature-gates: {rule}", field="featureGates",
                              rule=rule) from None
        if name in LOCKED and gates[name] != DEFAULTS[name]:
            rule = (f"cannot set feature gate {name} to {str(gates[name]).lower()}, feature "
                    f"is locked to {str(DEFAULTS[name]).lower()}")
            raise ConfigError(f"--feature-gates: {rule}", field="featureGates", rule=rule)
    return tuple(sorted(gates.items()))


def enabled(gates: tuple[tuple[str, bool], ...], name: str) -> bool:
    """Whether gate ``name`` is on: as set, else its default."""
    return dict(gates).get(name, DEFAULTS[name])
