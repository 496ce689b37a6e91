"""The PLEG while pod workers stop their pods (actors.kubelet.pod_stopping): the events of
a pod being stopped make no relist, its worker's end of the stop makes one (one for many
ending together, after SAFETY_NET_DELAY), other pods' events relist as before."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.kubelet import names
from actors.kubelet.messages import EventType, RelistNow
from actors.kubelet.pleg import RECHECK_DELAYS, SAFETY_NET_DELAY
from actors.kubelet.pod_stopping import PodStopping
from runtime.containerd.events import EventKind, RuntimeEvent
from runtime.ids import ContainerID, PodUID, SandboxID
from tests.helpers import wait_for
from tests.unit.kubelet.test_pleg import _pod
from tests.unit.kubelet.test_pleg_evented import Rig, _connected, _wait_relists, pleg_rig


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield from pleg_rig()


def _after_the_safety_net_delay(rig: Rig) -> None:
    """Move time past the end-of-stop relist's wait, once the PLEG has set it."""
    wait_for(lambda: rig.timers.next_due() is not None, 10.0, "the delayed relist's timer")
    rig.timers.advance(SAFETY_NET_DELAY)


def _stop_and_remove(rig: Rig, sandbox: str, container: str) -> None:
    """What a worker's stop does to the runtime, and the events it makes."""
    rig.fake.stop_container(ContainerID(container), 2)
    rig.sink.on_event(RuntimeEvent(EventKind.EXITED, container, 0))
    rig.fake.stop_pod_sandbox(SandboxID(sandbox))
    rig.sink.on_event(RuntimeEvent(EventKind.EXITED, sandbox, 137))
    rig.fake.remove_pod_sandbox(SandboxID(sandbox))
    for gone in (container, sandbox):
        rig.sink.on_event(RuntimeEvent(EventKind.DELETED, gone, 0))


def test_a_stopping_pods_events_make_no_relist_and_its_end_makes_one(rig: Rig) -> None:
    sandbox, container = _pod(rig.fake, "u1", "web")
    settled = _connected(rig)
    rig.dispatch.tell(names.PLEG, PodStopping(PodUID("u1"), True), sender="pod/u1")
    _stop_and_remove(rig, sandbox, container)
    rig.timers.advance(sum(RECHECK_DELAYS))
    assert rig.settle() == settled  # no relist, no re-check
    rig.dispatch.tell(names.PLEG, PodStopping(PodUID("u1"), False), sender="pod/u1")
    _after_the_safety_net_delay(rig)
    relisted = _wait_relists(rig, settled + 1)[-1]
    assert PodUID("u1") not in {p.uid for p in relisted.pods}
    assert {(e.type, e.container_id) for e in relisted.events} >= {
        (EventType.CONTAINER_DIED, ContainerID(container)),
        (EventType.CONTAINER_REMOVED, ContainerID(container))}
    rig.timers.advance(sum(RECHECK_DELAYS))
    assert rig.settle() == settled + 1


def test_another_pods_exit_still_relists_at_once(rig: Rig) -> None:
    _pod(rig.fake, "u1", "web")
    _sandbox, other = _pod(rig.fake, "u2", "db")
    settled = _connected(rig)
    rig.dispatch.tell(names.PLEG, PodStopping(PodUID("u1"), True), sender="pod/u1")
    rig.fake.exit_container(ContainerID(other), 1)
    rig.sink.on_event(RuntimeEvent(EventKind.EXITED, other, 1))
    died = _wait_relists(rig, settled + 1)[-1]
    assert (EventType.CONTAINER_DIED, ContainerID(other)) in {
        (e.type, e.container_id) for e in died.events}


def test_stops_ending_together_make_one_relist(rig: Rig) -> None:
    pods = {uid: _pod(rig.fake, uid, "web") for uid in ("u1", "u2", "u3")}
    settled = _connected(rig)
    for uid, (sandbox, container) in pods.items():
        rig.dispatch.tell(names.PLEG, PodStopping(PodUID(uid), True), sender=f"pod/{uid}")
        _stop_and_remove(rig, sandbox, container)
    with rig.fake._lock:  # a relist the runtime holds up while the three ends arrive
        rig.dispatch.tell(names.PLEG, RelistNow("held"), sender="test")
        for uid in pods:
            rig.dispatch.tell(names.PLEG, PodStopping(PodUID(uid), False), sender=f"pod/{uid}")
    _after_the_safety_net_delay(rig)
    _wait_relists(rig, settled + 2)
    assert rig.settle() == settled + 2  # the held one, and one for the three
