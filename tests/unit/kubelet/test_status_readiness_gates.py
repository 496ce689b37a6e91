"""The status manager and readiness gates in cluster mode: the conditions others set in the
API (``APIPodConditions``) are kept in the pod's status, and the pod turns Ready when its
gate's condition turns True (upstream's HandlePodReconcile and GeneratePodReadyCondition)."""

from __future__ import annotations

import msgspec

from actors.core.dispatch import Dispatch
from actors.core.testing import Inbox
from actors.kubelet import names
from actors.kubelet.cluster.messages import APIPodConditions, PodConditions, PodStatusChanged
from actors.kubelet.messages import DesiredPods, GetPods, PodObserved, WorkerState
from actors.kubelet.status_manager import StatusManager
from runtime.clock import FakeClock
from runtime.pod.model import Pod, PodReadinessGate
from runtime.status.types import PodCondition, PodStatus
from tests.unit.runtime.test_pod_status import R, inst, make_pod, runtime_status

GATE = "example.com/gate"


def gated() -> Pod:
    pod = make_pod()
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(
        pod.spec, readiness_gates=(PodReadinessGate(condition_type=GATE),)))


def gate(status: str) -> APIPodConditions:
    return APIPodConditions((PodConditions("uid-1", (PodCondition(
        type=GATE, status=status, last_transition_time="2026-01-01T00:00:00Z"),)),))


def ready(status: PodStatus) -> tuple[str, str, str]:
    c = status.condition("Ready")
    assert c is not None
    return c.status, c.reason, c.message


def test_the_pod_turns_ready_when_its_gate_s_condition_turns_true() -> None:
    dispatch = Dispatch()
    inbox = Inbox(dispatch, names.POD_WRITER)
    try:
        manager = StatusManager(dispatch, FakeClock(), api=True)
        pod = gated()
        manager.handle(PodObserved(pod, runtime_status(inst("app", R)), None,
                                   WorkerState.SYNCING))
        ((_, status),) = manager.handle(GetPods())
        assert ready(status) == ("False", "ReadinessGatesNotReady",
                                 'corresponding condition of pod readiness gate '
                                 '"example.com/gate" does not exist.')
        manager.handle(gate("False"))
        ((_, status),) = manager.handle(GetPods())
        assert ready(status) == ("False", "ReadinessGatesNotReady",
                                 'the status of pod readiness gate "example.com/gate" is '
                                 'not "True", but False')
        manager.handle(gate("True"))
        ((_, status),) = manager.handle(GetPods())
        assert ready(status) == ("True", "", "")
        assert status.conditions[0].type == GATE  # kept, first, as upstream keeps it
        assert inbox.count() == 3  # each new status went to the pod writer
        published = inbox.all(PodStatusChanged)
        assert [ready(p.status)[0] for p in published] == ["False", "False", "True"]
        manager.handle(gate("True"))  # the same conditions again: nothing new
        assert inbox.count() == 3
        manager.handle(APIPodConditions(()))  # the condition removed: not ready again
        ((_, status),) = manager.handle(GetPods())
        assert ready(status)[1] == "ReadinessGatesNotReady"
    finally:
        inbox.stop()


def test_a_pod_not_synced_yet_shows_them_in_its_placeholder() -> None:
    manager = StatusManager(Dispatch(), FakeClock(), api=True)
    manager.handle(DesiredPods((gated(),)))
    manager.handle(gate("True"))
    ((_, status),) = manager.handle(GetPods())
    assert status.phase == "Pending" and status.conditions[0].type == GATE
    assert ready(status)[1] == "ContainersNotReady"
