"""The PLEG and task starts: the kubelet's own make no relist; a pod worker's sync that
changed the runtime does, once for a burst; exits still relist and are re-checked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.kubelet import names
from actors.kubelet.messages import EventType, Relisted, RelistNow, SyncChangedRuntime
from actors.kubelet.pleg import RECHECK_DELAYS, UNKNOWN_START_DELAY
from runtime.containerd.events import EventKind, RuntimeEvent
from runtime.ids import ContainerID, PodUID
from tests.helpers import wait_for
from tests.unit.kubelet.test_pleg import _pod
from tests.unit.kubelet.test_pleg_evented import Rig, _connected, _wait_relists, pleg_rig


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield from pleg_rig()


def test_a_task_start_the_sync_relists_for_makes_no_relist_and_no_recheck(rig: Rig) -> None:
    settled = _connected(rig)
    _sandbox, container = _pod(rig.fake, "u1", "web")
    rig.sink.on_event(RuntimeEvent(EventKind.STARTED, container, 0))
    assert rig.settle() == settled
    rig.dispatch.tell(names.PLEG, SyncChangedRuntime(PodUID("u1")), sender="pod/u1")
    _wait_relists(rig, settled + 1)
    rig.timers.advance(max(sum(RECHECK_DELAYS), UNKNOWN_START_DELAY))
    assert rig.settle() == settled + 1  # the sync's relist showed it: nothing more


def test_a_task_start_no_sync_made_is_relisted_after_a_while(rig: Rig) -> None:
    """A container run behind the kubelet's back (an orphan to kill) is seen within
    UNKNOWN_START_DELAY, as the generic PLEG's 1 s relist would see it."""
    settled = _connected(rig)
    _sandbox, container = _pod(rig.fake, "stray", "web")
    rig.sink.on_event(RuntimeEvent(EventKind.STARTED, container, 0))
    # The event reaches the PLEG through its mailbox: the clock may move only once the PLEG
    # has set its check (under load it may not have yet when the call above returns).
    due = rig.clock.monotonic() + UNKNOWN_START_DELAY
    wait_for(lambda: rig.timers.next_due() == due, 10.0, "the PLEG's check of the start")
    assert rig.settle() == settled
    rig.timers.advance(UNKNOWN_START_DELAY)
    relisted = _wait_relists(rig, settled + 1)[-1]
    assert PodUID("stray") in {p.uid for p in relisted.pods}
    rig.timers.advance(UNKNOWN_START_DELAY)
    assert rig.settle() == settled + 1


def test_a_sync_that_changed_the_runtime_relists(rig: Rig) -> None:
    settled = _connected(rig)
    _sandbox, container = _pod(rig.fake, "u1", "web")
    rig.dispatch.tell(names.PLEG, SyncChangedRuntime(PodUID("u1")), sender="pod/u1")
    started = _wait_relists(rig, settled + 1)[-1]
    assert (EventType.CONTAINER_STARTED, ContainerID(container)) in {
        (e.type, e.container_id) for e in started.events}


def test_sync_requests_waiting_together_make_one_relist(rig: Rig) -> None:
    settled = _connected(rig)
    for uid in ("u1", "u2", "u3"):
        _pod(rig.fake, uid, "web")
    # A relist the runtime holds up (its lock is ours) while three syncs ask for one.
    with rig.fake._lock:
        rig.dispatch.tell(names.PLEG, RelistNow("held"), sender="test")
        for uid in ("u1", "u2", "u3"):
            rig.dispatch.tell(names.PLEG, SyncChangedRuntime(PodUID(uid)), sender=f"pod/{uid}")
    _wait_relists(rig, settled + 2)
    assert rig.settle() == settled + 2  # the held one, and one for the three


def test_an_exit_is_still_rechecked(rig: Rig) -> None:
    _sandbox, container = _pod(rig.fake, "u1", "web")
    settled = _connected(rig)
    rig.sink.on_event(RuntimeEvent(EventKind.EXITED, container, 3))
    _wait_relists(rig, settled + 1)
    rig.fake.exit_container(ContainerID(container), 3)
    assert rig.timers.advance(RECHECK_DELAYS[0]) == 1
    rig.sync_loop.wait(Relisted, lambda m: any(
        e.type == EventType.CONTAINER_DIED for e in m.events))
