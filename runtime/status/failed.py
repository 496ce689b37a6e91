"""The status of a pod the kubelet itself failed (a pod-level verdict: DeadlineExceeded,
Evicted, Terminated by a node shutdown): phase Failed (a node shutdown leaves a Succeeded
pod Succeeded, as upstream's) with the verdict's reason and message
and, for an eviction under node pressure or a node shutdown, the DisruptionTarget condition
upstream's eviction and node shutdown managers add (status True, reason
TerminationByKubelet, the verdict's message), which tells controllers the pod was
disrupted rather than failed by itself. An eviction for a local storage limit adds none
(upstream's evictPod gets no condition for it).
"""

from __future__ import annotations

from typing import Final

import msgspec

from runtime.events import reasons
from runtime.nodeshutdown import NODE_SHUTDOWN_REASON
from runtime.status.types import PodCondition, PodStatus

DISRUPTION_TARGET: Final = "DisruptionTarget"
TERMINATION_BY_KUBELET: Final = "TerminationByKubelet"
DISRUPTING_REASONS: Final = frozenset({reasons.EVICTED, NODE_SHUTDOWN_REASON})
"""The verdicts that disrupt a pod (upstream adds the condition on eviction and on a
graceful node shutdown)."""


def keeps_succeeded(status: PodStatus, reason: str) -> bool:
    """Whether the verdict ``reason`` leaves ``status`` Succeeded (a node shutdown's does)."""
    return reason == NODE_SHUTDOWN_REASON and status.phase == "Succeeded"


def failed_status(status: PodStatus, reason: str, message: str, now: str,
                  previous: PodStatus | None = None, disruption: bool = True) -> PodStatus:
    """``status`` failed with ``reason`` and ``message``; ``now`` (RFC 3339) stamps a new
    DisruptionTarget condition (a disrupting reason, unless ``disruption`` is False), which
    keeps its time from ``previous`` after that."""
    # Upstream's node shutdown sets Failed "unless it was already in a successful terminal
    # phase": a Succeeded pod keeps its phase (and still gets the reason, message and
    # DisruptionTarget condition).
    phase = "Succeeded" if keeps_succeeded(status, reason) else "Failed"
    failed = msgspec.structs.replace(status, phase=phase, reason=reason, message=message)
    if reason not in DISRUPTING_REASONS or not disruption:
        return failed
    old = previous.condition(DISRUPTION_TARGET) if previous is not None else None
    since = old.last_transition_time if old is not None and old.status == "True" else now
    condition = PodCondition(type=DISRUPTION_TARGET, status="True",
                             reason=TERMINATION_BY_KUBELET, message=message,
                             last_transition_time=since)
    others = tuple(c for c in failed.conditions if c.type != DISRUPTION_TARGET)
    # Upstream's generateAPIPodStatus puts the kept DisruptionTarget before its own ones.
    return msgspec.structs.replace(failed, conditions=(condition, *others))
