"""``--feature-gates`` (and KubeletConfiguration's ``featureGates``): every gate upstream's
kubelet knows, and what this node does with each.

Upstream's kubelet refuses a gate it does not know ("unrecognized feature gate: X"), a
value that is not a boolean, and the other value of a gate locked to its default; so does
this one, in the same words, for every gate name of upstream's release
(actors.app.config.upstream_gates). On top of that, a gate that changes what a kubelet does
is accepted at upstream's default (this node behaves as upstream's at that default, or the
gate's feature is one this node does not have and the default leaves it off), and refused
by name at the other value: "feature gate X=true: not implemented by kubelet-actors", never
accepted and silently ignored. A gate of the control plane, kube-proxy or Windows nodes
does nothing on a kubelet, upstream's or this one, and is accepted at either value.

This node's own gates (``OWN_DEFAULTS``) take either value, with this build's defaults: the
event-driven PLEG is on by default here (upstream's EventedPLEG is alpha and off), because
the runtime's events are read from containerd's own events service, which every containerd
this kubelet supports has; off, the PLEG relists every second as upstream's generic PLEG.
KubeletCrashLoopBackOffMax stays off by default here (upstream's 1.35 beta turned it on):
its crashLoopBackOff.maxContainerRestartPeriod is read only when it is turned on.
"""

from __future__ import annotations

from collections.abc import Mapping

from loguru import logger

from actors.app.config.gostrconv import NumError, parse_bool
from actors.app.config.upstream_gates import UPSTREAM_GATES
from runtime.errors import ConfigError

EVENTED_PLEG = "EventedPLEG"
CRASH_LOOP_BACKOFF_MAX = "KubeletCrashLoopBackOffMax"
"""crashLoopBackOff.maxContainerRestartPeriod may be set."""

KUBELET_FINE_GRAINED_AUTHZ = "KubeletFineGrainedAuthz"
"""The main port asks nodes/pods, healthz, configz before nodes/proxy (locked on here:
actors.app.http.auth always does)."""

GRACEFUL_NODE_SHUTDOWN = "GracefulNodeShutdown"
"""shutdownGracePeriod and shutdownGracePeriodCriticalPods are used."""
GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY = "GracefulNodeShutdownBasedOnPodPriority"
"""shutdownGracePeriodByPodPriority is used."""

ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"
"""component-base's gates that turn on every alpha (beta) gate not set otherwise."""

OWN_DEFAULTS: Mapping[str, bool] = {EVENTED_PLEG: True, CRASH_LOOP_BACKOFF_MAX: False,
                                    KUBELET_FINE_GRAINED_AUTHZ: True,
                                    GRACEFUL_NODE_SHUTDOWN: True,
                                    GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY: True}
"""The gates whose both values this node implements, with this build's defaults."""

DEFAULTS: Mapping[str, bool] = {**{name: spec.default for name, spec in UPSTREAM_GATES.items()},
                                **OWN_DEFAULTS}
"""Every gate this kubelet knows, with its default."""

LOCKED: frozenset[str] = frozenset(
    {KUBELET_FINE_GRAINED_AUTHZ}
    | {name for name, spec in UPSTREAM_GATES.items() if spec.locked and name not in OWN_DEFAULTS})
"""Gates locked to their default (upstream's LockToDefault): naming them with that value
is accepted, with the other refused."""


def _refusal(name: str, on: bool) -> str | None:
    """Why this node refuses gate ``name`` set to ``on`` (None: accepted)."""
    if name in LOCKED:
        if on != DEFAULTS[name]:
            return (f"cannot set feature gate {name} to {str(on).lower()}, feature is "
                    f"locked to {str(DEFAULTS[name]).lower()}")
        return None
    if name in OWN_DEFAULTS:
        return None
    spec = UPSTREAM_GATES[name]
    # AllAlpha (AllBeta) on turns on the kubelet's alpha (beta) gates too.
    kubelet = spec.kubelet or (on and name in (ALL_ALPHA, ALL_BETA))
    if kubelet and on != spec.default:
        return (f"feature gate {name}={str(on).lower()}: not implemented by kubelet-actors "
                f"(only upstream's default, {name}={str(spec.default).lower()}, is)")
    return None


def _warn(name: str, on: bool) -> None:
    """Upstream's warnings (component-base featuregate.Set) for a GA or deprecated gate."""
    spec = UPSTREAM_GATES.get(name)
    if spec is not None and spec.stage in ("GA", "DEPRECATED") and name not in OWN_DEFAULTS:
        stage = "GA" if spec.stage == "GA" else "deprecated"
        logger.warning("Setting {} feature gate {}={}. It will be removed in a future release.",
                       stage, name, str(on).lower())


def parse_feature_gates(text: str) -> tuple[tuple[str, bool], ...]:
    """``A=true,B=false`` as (gate, enabled) pairs, each gate known, each value a bool this
    node implements."""
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
        if refused := _refusal(name, gates[name]):
            raise ConfigError(f"--feature-gates: {refused}", field="featureGates",
                              rule=refused)
        _warn(name, gates[name])
    return tuple(sorted(gates.items()))


def enabled(gates: tuple[tuple[str, bool], ...], name: str) -> bool:
    """Whether gate ``name`` is on: as set, else its default."""
    return dict(gates).get(name, DEFAULTS[name])
