"""A pod's QoS class (upstream pkg/apis/core/v1/helper/qos GetPodQOS / ComputePodQOS).

Only cpu and memory count; a zero quantity counts as unset. With pod-level resources
(spec.resources) the pod's own requests and limits decide, the containers' are ignored.
Requests are taken as the API server defaults them (a missing request is its limit; a
missing pod-level request the containers' sum or the pod limit), so a pod decoded
without defaulting gets the class upstream gives it after defaulting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Final

from runtime.cm.aggregate import as_list, limits_of, pod_level_requests, requests_of
from runtime.pod.model import Pod

GUARANTEED: Final = "Guaranteed"
BURSTABLE: Final = "Burstable"
BEST_EFFORT: Final = "BestEffort"

QOS_COMPUTE_RESOURCES: Final = frozenset({"cpu", "memory"})


def _add_positive(total: dict[str, Decimal], resources: Mapping[str, Decimal]) -> set[str]:
    """Add the positive cpu/memory amounts of ``resources`` to ``total``; the names
    added."""
    found: set[str] = set()
    for name, amount in resources.items():
        if name in QOS_COMPUTE_RESOURCES and amount > 0:
            found.add(name)
            total[name] = total.get(name, Decimal(0)) + amount
    return found


def is_pod_level_resources_set(pod: Pod) -> bool:
    """spec.resources names cpu or memory in requests or limits (IsPodLevelResourcesSet)."""
    res = pod.spec.resources
    return res is not None and any(
        name in QOS_COMPUTE_RESOURCES for name in (*res.requests, *res.limits))


def classify(pairs: Iterable[tuple[Mapping[str, Decimal], Mapping[str, Decimal] | None]]
             ) -> str:
    """The class of (requests, limits) pairs taken together; limits None means "not
    given" (a pod level without limits), which does not by itself rule out
    Guaranteed."""
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for reqs, lims in pairs:
        _add_positive(requests, reqs)
        found = _add_positive(limits, lims or {})
        if lims is not None and not found >= QOS_COMPUTE_RESOURCES:
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and len(requests) == len(limits) and all(
            limits.get(name) == amount for name, amount in requests.items()):
        return GUARANTEED
    return BURSTABLE


def pod_qos(pod: Pod) -> str:
    """Guaranteed, Burstable or BestEffort, as upstream's ComputePodQOS decides it.

    Ephemeral containers do not count (they cannot have resources).
    """
    res = pod.spec.resources
    if res is not None and is_pod_level_resources_set(pod):
        limits = as_list(res.limits)
        return classify([(pod_level_requests(pod), limits if limits else None)])
    return classify((requests_of(c), limits_of(c)) for c in pod.all_containers())
