"""mergePodStatus (actors.kubelet.cluster.pod_writer.merge_status): the kubelet's status,
plus the conditions others set in the API that it neither owns nor set itself."""

from __future__ import annotations

from actors.kubelet.cluster.pod_writer import merge_status

READY = {"type": "Ready", "status": "False", "reason": "PodFailed"}
OLD_READY = {"type": "Ready", "status": "True"}
GATE = {"type": "example.com/gate", "status": "True"}
EVICTED = {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
           "message": "The node was low on resource: memory. "}


def test_the_api_s_own_conditions_are_kept_and_the_kubelet_s_replaced() -> None:
    merged = merge_status({"conditions": [OLD_READY, GATE]},
                          {"phase": "Failed", "conditions": [READY]})
    assert merged == {"phase": "Failed", "conditions": [READY, GATE]}


def test_a_disruption_condition_the_kubelet_set_is_written_once() -> None:
    # The second write of an evicted pod's status: the API already holds the condition.
    merged = merge_status({"conditions": [EVICTED, OLD_READY, GATE]},
                          {"phase": "Failed", "conditions": [EVICTED, READY]})
    assert merged["conditions"] == [EVICTED, READY, GATE]
    # A controller's DisruptionTarget stays while the kubelet sets none.
    kept = merge_status({"conditions": [{**EVICTED, "reason": "PreemptionByScheduler"}]},
                        {"phase": "Running", "conditions": [OLD_READY]})
    assert [c["type"] for c in kept["conditions"]] == ["Ready", "DisruptionTarget"]
