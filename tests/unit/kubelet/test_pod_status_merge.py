"""mergePodStatus (actors.kubelet.cluster.pod_writer.merge_status): the kubelet's status,
with the conditions others set in the API kept as the API holds them, first, as upstream
orders them."""

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
    assert merged == {"phase": "Failed", "conditions": [GATE, READY]}


def test_the_kubelet_s_copy_of_another_s_condition_never_overwrites_the_api_s() -> None:
    # The kubelet computed its status while the gate was False; a controller has set it
    # True since: the write keeps True, and a condition the kubelet never saw stays.
    other = {"type": "example.com/other", "status": "False"}
    merged = merge_status({"conditions": [GATE, other, OLD_READY]},
                          {"phase": "Running",
                           "conditions": [{**GATE, "status": "False"}, OLD_READY]})
    assert merged["conditions"] == [GATE, other, OLD_READY]
    # Nothing in the API, nothing from the kubelet: no conditions key at all.
    assert merge_status({}, {"phase": "Pending"}) == {"phase": "Pending"}


def test_a_disruption_condition_the_kubelet_set_is_written_once() -> None:
    # The second write of an evicted pod's status: the API already holds the condition,
    # which the kubelet's replaces in its place.
    merged = merge_status({"conditions": [EVICTED, OLD_READY, GATE]},
                          {"phase": "Failed", "conditions": [EVICTED, READY]})
    assert merged["conditions"] == [EVICTED, GATE, READY]
    # The first write: the kubelet's comes after the API's others, before its own.
    first = merge_status({"conditions": [OLD_READY, GATE]},
                         {"phase": "Failed", "conditions": [EVICTED, READY]})
    assert first["conditions"] == [GATE, EVICTED, READY]
    # A controller's DisruptionTarget stays while the kubelet sets none.
    kept = merge_status({"conditions": [{**EVICTED, "reason": "PreemptionByScheduler"}]},
                        {"phase": "Running", "conditions": [OLD_READY]})
    assert [c["type"] for c in kept["conditions"]] == ["DisruptionTarget", "Ready"]
