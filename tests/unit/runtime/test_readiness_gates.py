"""Readiness gates (runtime.status.generate, upstream's GeneratePodReadyCondition): Ready
is True only when the containers are ready and every gate's condition is True; the
conditions others set are kept in the status, first, as the API holds them."""

from __future__ import annotations

import msgspec
import pytest

from runtime.pod.model import Pod, PodReadinessGate
from runtime.status.conditions import others_conditions
from runtime.status.generate import generate_pod_status
from runtime.status.types import PodCondition
from tests.unit.runtime.test_pod_status import T0, R, inst, make_pod, runtime_status

GATE, OTHER = "example.com/gate", "example.com/other"
MISSING = 'corresponding condition of pod readiness gate "{}" does not exist.'
NOT_TRUE = 'the status of pod readiness gate "{}" is not "True", but {}'


def gated(*gates: str) -> Pod:
    pod = make_pod()
    spec = msgspec.structs.replace(
        pod.spec, readiness_gates=tuple(PodReadinessGate(condition_type=g) for g in gates))
    return msgspec.structs.replace(pod, spec=spec)


def set_(type_: str, status: str) -> PodCondition:
    return PodCondition(type=type_, status=status, reason="Controller",
                        last_transition_time="2026-01-01T00:00:00Z")


ALL_RUNNING = ("app",)

# name, gates, containers running, conditions others set, Ready, ContainersReady
CASES: list[tuple[str, tuple[str, ...], tuple[str, ...], tuple[PodCondition, ...],
                  tuple[str, str, str], tuple[str, str, str]]] = [
    ("no gates", (), ALL_RUNNING, (), ("True", "", ""), ("True", "", "")),
    ("gate's condition missing", (GATE,), ALL_RUNNING, (),
     ("False", "ReadinessGatesNotReady", MISSING.format(GATE)), ("True", "", "")),
    ("gate's condition False", (GATE,), ALL_RUNNING, (set_(GATE, "False"),),
     ("False", "ReadinessGatesNotReady", NOT_TRUE.format(GATE, "False")), ("True", "", "")),
    ("gate's condition Unknown", (GATE,), ALL_RUNNING, (set_(GATE, "Unknown"),),
     ("False", "ReadinessGatesNotReady", NOT_TRUE.format(GATE, "Unknown")), ("True", "", "")),
    ("gate's condition True", (GATE,), ALL_RUNNING, (set_(GATE, "True"),),
     ("True", "", ""), ("True", "", "")),
    ("several gates, in the spec's order, joined", (GATE, OTHER, "example.com/ok"),
     ALL_RUNNING, (set_("example.com/ok", "True"), set_(GATE, "False")),
     ("False", "ReadinessGatesNotReady",
      NOT_TRUE.format(GATE, "False") + ", " + MISSING.format(OTHER)), ("True", "", "")),
    ("several gates all True", (GATE, OTHER), ALL_RUNNING,
     (set_(OTHER, "True"), set_(GATE, "True")), ("True", "", ""), ("True", "", "")),
    ("containers not ready come first", (GATE,), (), (set_(GATE, "False"),),
     ("False", "ContainersNotReady", "containers with unready status: [app]"),
     ("False", "ContainersNotReady", "containers with unready status: [app]")),
    ("containers not ready, gate True", (GATE,), (), (set_(GATE, "True"),),
     ("False", "ContainersNotReady", "containers with unready status: [app]"),
     ("False", "ContainersNotReady", "containers with unready status: [app]")),
    ("a kubelet-owned type among others' is not theirs to set", ("Ready",), ALL_RUNNING,
     (set_("Ready", "False"),), ("False", "ReadinessGatesNotReady", MISSING.format("Ready")),
     ("True", "", "")),
]


@pytest.mark.parametrize(("name", "gates", "running", "others", "ready", "containers_ready"),
                         CASES, ids=[c[0] for c in CASES])
def test_ready_condition_with_readiness_gates(
        name: str, gates: tuple[str, ...], running: tuple[str, ...],
        others: tuple[PodCondition, ...], ready: tuple[str, str, str],
        containers_ready: tuple[str, str, str]) -> None:
    pod = gated(*gates)
    status = generate_pod_status(pod, runtime_status(*(inst(n, R) for n in running)),
                                 now=T0, others=others)
    got = {c.type: (c.status, c.reason, c.message) for c in status.conditions}
    assert got["Ready"] == ready
    assert got["ContainersReady"] == containers_ready


def test_others_conditions_are_kept_first_as_they_are() -> None:
    others = (set_(GATE, "True"), set_("DisruptionTarget", "True"))
    status = generate_pod_status(gated(GATE), runtime_status(inst("app", R)), now=T0,
                                 others=(*others, set_("Ready", "False")))
    assert status.conditions[:2] == others  # their times and reasons untouched
    assert [c.type for c in status.conditions[2:]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
        "PodScheduled"]


def test_ready_turns_true_when_the_gate_does_and_its_transition_is_stamped() -> None:
    pod, running = gated(GATE), runtime_status(inst("app", R))
    before = generate_pod_status(pod, running, now=T0, others=(set_(GATE, "False"),))
    after = generate_pod_status(pod, running, now=T0 + 30, previous=before,
                                others=(set_(GATE, "True"),))
    old, new = before.condition("Ready"), after.condition("Ready")
    assert old is not None and new is not None
    assert (old.status, new.status) == ("False", "True")
    assert new.last_transition_time != old.last_transition_time
    # ContainersReady did not change: its transition time stays.
    assert before.condition("ContainersReady") == after.condition("ContainersReady")


def test_others_conditions_from_the_api_s_json() -> None:
    raw = [{"type": "Ready", "status": "True"},
           {"type": GATE, "status": "True", "lastProbeTime": None,
            "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "Ok", "message": "m"},
           {"type": OTHER, "status": "False", "lastTransitionTime": None},
           "junk", {"status": "True"}]
    assert others_conditions(raw) == (
        PodCondition(type=GATE, status="True", reason="Ok", message="m",
                     last_transition_time="2026-01-01T00:00:00Z"),
        PodCondition(type=OTHER, status="False"))
