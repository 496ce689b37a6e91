"""Who owns which pod condition (upstream's kubetypes.PodConditionsByKubelet and
PodConditionSharedByKubelet), and the conditions others set, read from the API's JSON.

The kubelet computes the conditions it owns and nothing else: every other condition of a
pod's status (a readiness gate's, a controller's DisruptionTarget) is someone else's, is
kept as the API holds it in the status the kubelet computes (upstream's
generateAPIPodStatus) and writes (mergePodStatus), and is what readiness gates are
evaluated against.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from runtime.status.failed import DISRUPTION_TARGET
from runtime.status.types import PodCondition

KUBELET_CONDITIONS: Final = frozenset({"PodScheduled", "Ready", "Initialized",
                                       "ContainersReady", "PodReadyToStartContainers"})
"""The condition types the kubelet owns (PodConditionByKubelet, with the
PodReadyToStartContainers feature on, as it is by default)."""

SHARED_CONDITIONS: Final = frozenset({DISRUPTION_TARGET})
"""Types others set too, that the kubelet sets on eviction (PodConditionSharedByKubelet):
when the kubelet's status has one, it replaces the API's."""


def owned_by_kubelet(type_: str) -> bool:
    return type_ in KUBELET_CONDITIONS


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def others_conditions(raw: Iterable[Any]) -> tuple[PodCondition, ...]:
    """The conditions of an API status (its JSON ``conditions``) the kubelet does not own,
    in the API's order. Go encodes an unset time as null: read as unset here."""
    out: list[PodCondition] = []
    for c in raw:
        if not isinstance(c, Mapping) or not isinstance(c.get("type"), str):
            continue
        if owned_by_kubelet(c["type"]):
            continue
        probe = c.get("lastProbeTime")
        out.append(PodCondition(
            type=c["type"], status=_text(c.get("status")), reason=_text(c.get("reason")),
            message=_text(c.get("message")),
            last_probe_time=probe if isinstance(probe, str) else None,
            last_transition_time=_text(c.get("lastTransitionTime"))))
    return tuple(out)
