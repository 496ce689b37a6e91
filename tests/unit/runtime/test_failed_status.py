"""A pod the kubelet failed: its phase (a node shutdown keeps a Succeeded one), reason and
message, and an eviction's or a node shutdown's DisruptionTarget condition
(runtime.status.failed)."""

from __future__ import annotations

from runtime.status.failed import failed_status
from runtime.status.types import PodCondition, PodStatus

READY = PodCondition(type="Ready", status="False", reason="PodFailed",
                     last_transition_time="2026-01-01T00:00:00Z")
RUNNING = PodStatus(phase="Running", conditions=(READY,))
EARLY, LATE = "2026-01-01T00:00:05Z", "2026-01-01T00:00:09Z"


def test_a_deadline_fails_the_pod_without_a_disruption_condition() -> None:
    status = failed_status(RUNNING, "DeadlineExceeded", "Pod was active too long", EARLY)
    assert (status.phase, status.reason, status.message) == (
        "Failed", "DeadlineExceeded", "Pod was active too long")
    assert status.conditions == (READY,)


def test_an_eviction_adds_disruption_target_and_keeps_its_transition_time() -> None:
    message = "The node was low on resource: memory. "
    first = failed_status(RUNNING, "Evicted", message, EARLY)
    assert (first.phase, first.reason, first.message) == ("Failed", "Evicted", message)
    assert first.conditions == (
        PodCondition(type="DisruptionTarget", status="True", reason="TerminationByKubelet",
                     message=message, last_transition_time=EARLY), READY)
    # Recomputed later from a fresh status: one condition, still stamped when it came.
    again = failed_status(RUNNING, "Evicted", message, LATE, previous=first)
    assert again.conditions == first.conditions


def test_an_eviction_for_a_local_storage_limit_adds_no_disruption_condition() -> None:
    message = 'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". '
    status = failed_status(RUNNING, "Evicted", message, EARLY, disruption=False)
    assert (status.phase, status.reason, status.message) == ("Failed", "Evicted", message)
    assert status.conditions == (READY,)


def test_a_node_shutdown_leaves_a_succeeded_pod_succeeded_with_disruption_target() -> None:
    message = "Pod was terminated in response to imminent node shutdown."
    done = PodStatus(phase="Succeeded", conditions=(READY,))
    status = failed_status(done, "Terminated", message, EARLY)
    # Upstream: Failed "unless it was already in a successful terminal phase"; the reason,
    # message and condition all the same.
    assert (status.phase, status.reason, status.message) == ("Succeeded", "Terminated",
                                                             message)
    assert status.conditions == (
        PodCondition(type="DisruptionTarget", status="True", reason="TerminationByKubelet",
                     message=message, last_transition_time=EARLY), READY)
    running = failed_status(RUNNING, "Terminated", message, EARLY)
    assert running.phase == "Failed"


def test_an_eviction_fails_even_a_succeeded_pod() -> None:
    done = PodStatus(phase="Succeeded", conditions=(READY,))
    assert failed_status(done, "Evicted", "low on memory", EARLY).phase == "Failed"
