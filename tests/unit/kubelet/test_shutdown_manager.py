"""The node shutdown manager actor with a fake logind lock, manual time and the sync loop's
address held by an inbox: PrepareForShutdown(true) makes the node shutting down (the sync
loop and node status are told), the pods are stopped group by group, lowest priority first,
each with the smaller of its own and its group's grace period; a group goes on when all of
it stopped or its period passed; the lock is released after the last group; a cancellation
takes the lock again, and one that comes while pods are stopped waits for the end. The
state (upstream's graceful_node_shutdown_state) is stored as a shutdown starts and ends,
with the start/end metrics; the metrics start from the state read at start; an incarnation
started from a hand-over carries on the shutdown its predecessor was doing; a restarted node
status actor is told the node is still shutting down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from msgspec.structs import replace

from actors.core.dispatch import Dispatch
from actors.core.messages import HandOver
from actors.core.testing import Inbox
from actors.core.timers import ManualTimers
from actors.kubelet import names
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.shutdown import (
    GetShutdownStatus,
    NodeShutdownEvent,
    NodeShuttingDown,
    ShutdownKill,
    ShutdownManager,
    ShutdownPods,
    ShutdownPodStopped,
    ShutdownProgress,
    ShutdownSettings,
)
from actors.kubelet.sync_loop import SyncLoop
from runtime.clock import FakeClock
from runtime.errors import ShutdownStateError
from runtime.events.recorder import ListRecorder
from runtime.nodeshutdown import ShutdownGracePeriodByPodPriority as Period
from runtime.nodeshutdown import shutdown_periods
from runtime.nodeshutdown_state import ShutdownState
from runtime.pod.model import Pod
from tests.helpers import wait_for
from tests.unit.kubelet.test_sync_loop import pod


class FakeLock:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def release(self) -> None:
        self.calls.append("release")

    def acquire(self) -> None:
        self.calls.append("acquire")


def prioritized(uid: str, priority: int | None, grace: int | None = 30) -> Pod:
    p = pod(uid, uid)
    return replace(p, spec=replace(p.spec, priority=priority,
                                   termination_grace_period_seconds=grace))


class StateSink:
    """Keeps what the manager stores; ``fail`` makes the store fail."""

    def __init__(self) -> None:
        self.stored: list[ShutdownState] = []
        self.fail = False

    def store(self, state: ShutdownState) -> None:
        if self.fail:
            raise ShutdownStateError("/root/graceful_node_shutdown_state: cannot write: full")
        self.stored.append(state)


def metric(metrics: KubeletMetrics, name: str) -> float | None:
    value: float | None = metrics.registry.get_sample_value(name)
    return value


START, END = "kubelet_graceful_shutdown_start_time_seconds", \
    "kubelet_graceful_shutdown_end_time_seconds"


NO_STATE = ShutdownState()


class Shutdown:
    def __init__(self, periods: tuple[Period, ...], state: ShutdownState = NO_STATE,
                 resumed: ShutdownProgress | None = None, record_state: bool = True,
                 clock: FakeClock | None = None) -> None:
        self.clock = clock or FakeClock()
        self.dispatch = Dispatch()
        self.timers = ManualTimers(self.dispatch, self.clock)
        self.lock = FakeLock()
        self.events = ListRecorder()
        self.metrics = KubeletMetrics()
        self.state = StateSink()
        self.inbox = Inbox(self.dispatch, names.SYNC_LOOP, names.NODE_STATUS)
        settings = ShutdownSettings(periods, node_status=True, record_state=record_state,
                                    state=state)
        self.ref = ShutdownManager.start(
            self.dispatch, self.timers, settings, "node", 1 if resumed else 0,
            inhibitor=self.lock, events=self.events, clock=self.clock, metrics=self.metrics,
            state=self.state, resumed=resumed)
        self.dispatch.register(names.SHUTDOWN, self.ref)

    def tell(self, message: object) -> None:
        self.dispatch.tell(names.SHUTDOWN, message)

    def settled(self) -> None:
        """Everything told so far is handled (an ask queues behind it)."""
        self.ref.ask(GetShutdownStatus(), block=True, timeout=10)

    def kills(self) -> list[tuple[str, int]]:
        self.settled()
        self.inbox.count()
        return [(k.uid, k.grace_period) for k in self.inbox.all(ShutdownKill)]

    def stop(self) -> None:
        self.ref.stop()
        self.inbox.stop()


@pytest.fixture
def by_priority() -> Iterator[Shutdown]:
    node = Shutdown(shutdown_periods(0, 0, (Period(2000000000, 5), Period(0, 10),
                                            Period(100000, 20))))
    yield node
    node.stop()


def test_groups_stop_in_priority_order_with_their_grace(by_priority: Shutdown) -> None:
    node = by_priority
    node.tell(NodeShutdownEvent(True))
    node.settled()
    node.inbox.count()
    # Both the node status actor and the sync loop (one inbox here) are told.
    assert [m.shutting_down for m in node.inbox.all(NodeShuttingDown)] == [True, True]
    assert node.ref.ask(GetShutdownStatus(), block=True, timeout=10) is True
    pods = (prioritized("critical", 2000001000, 30), prioritized("low", None, 3),
            prioritized("mid", 150000, 60), prioritized("mid-2", 100000, None))
    node.tell(ShutdownPods(pods))
    # Lowest first: the priority-0 group (10 s), the pod's own 3 s being less.
    assert node.kills() == [("low", 3)]
    node.tell(ShutdownPodStopped("low"))
    # All of it stopped: the 100000 group goes at once, each at most 20 s.
    assert sorted(node.kills()[1:]) == [("mid", 20), ("mid-2", 20)]
    node.tell(ShutdownPodStopped("mid"))
    assert len(node.kills()) == 3  # mid-2 still stopping: no later group yet
    node.timers.advance(19.9)
    assert len(node.kills()) == 3
    node.timers.advance(0.2)  # the group's 20 s passed: the critical group goes
    assert node.kills()[3:] == [("critical", 5)]
    assert node.lock.calls == []
    node.tell(ShutdownPodStopped("critical"))
    node.settled()
    assert node.lock.calls == ["release"]
    assert [e.reason for e in node.events.events] == ["NodeShutdown"]
    assert node.events.events[0].message == "Shutdown manager detected shutdown event"


def test_cancellation_takes_the_lock_again_after_the_stopping(by_priority: Shutdown) -> None:
    node = by_priority
    node.tell(NodeShutdownEvent(True))
    node.tell(ShutdownPods((prioritized("low", None),)))
    assert node.kills() == [("low", 10)]
    node.tell(NodeShutdownEvent(False))  # comes while pods are being stopped: waits
    node.settled()
    assert node.lock.calls == []
    assert node.ref.ask(GetShutdownStatus(), block=True, timeout=10) is True
    node.tell(ShutdownPodStopped("low"))
    node.settled()
    assert node.lock.calls == ["release", "acquire"]
    assert node.ref.ask(GetShutdownStatus(), block=True, timeout=10) is False
    node.inbox.count()
    assert [m.shutting_down for m in node.inbox.all(NodeShuttingDown)][-1] is False
    assert [e.message for e in node.events.events] == [
        "Shutdown manager detected shutdown event",
        "Shutdown manager detected shutdown cancellation"]


def test_no_pods_releases_the_lock_at_once(by_priority: Shutdown) -> None:
    node = by_priority
    node.tell(NodeShutdownEvent(True))
    node.tell(ShutdownPods(()))
    node.settled()
    assert node.lock.calls == ["release"]
    assert node.kills() == []


PERIODS = (Period(2000000000, 5), Period(0, 10), Period(100000, 20))


def test_the_state_is_stored_and_the_metrics_set_as_the_shutdown_starts_and_ends(
        by_priority: Shutdown) -> None:
    node = by_priority
    assert metric(node.metrics, START) == 0 and metric(node.metrics, END) == 0
    node.clock.step(0.75)
    started = node.clock.now()
    node.tell(NodeShutdownEvent(True))
    node.settled()
    # Stored at once, the end still the zero time; the metrics in whole seconds.
    assert node.state.stored == [ShutdownState(started)]
    assert metric(node.metrics, START) == float(int(started)) and metric(node.metrics,
                                                                          END) == 0
    node.tell(ShutdownPods((prioritized("low", None),)))
    assert node.kills() == [("low", 10)]
    node.timers.advance(4.5)
    node.tell(ShutdownPodStopped("low"))
    node.settled()
    ended = node.clock.now()
    assert ended - started == 4.5
    assert node.state.stored == [ShutdownState(started), ShutdownState(started, ended)]
    assert metric(node.metrics, START) == float(int(started))
    assert metric(node.metrics, END) == float(int(ended))
    assert node.lock.calls == ["release"]


def test_the_metrics_start_from_the_state_read_at_start() -> None:
    node = Shutdown(shutdown_periods(0, 0, PERIODS), state=ShutdownState(1000.9, 1030.2))
    try:
        node.settled()
        assert (metric(node.metrics, START), metric(node.metrics, END)) == (1000.0, 1030.0)
        assert node.state.stored == []
    finally:
        node.stop()


def test_without_the_priority_gate_nothing_is_stored_nor_set() -> None:
    node = Shutdown(shutdown_periods(0, 0, PERIODS), state=ShutdownState(1000.0, 1030.0),
                    record_state=False)
    try:
        node.tell(NodeShutdownEvent(True))
        node.tell(ShutdownPods(()))
        node.settled()
        assert node.lock.calls == ["release"]
        assert node.state.stored == []
        assert (metric(node.metrics, START), metric(node.metrics, END)) == (0, 0)
    finally:
        node.stop()


def test_a_store_that_fails_is_logged_and_the_shutdown_goes_on(by_priority: Shutdown) -> None:
    node = by_priority
    node.state.fail = True
    node.tell(NodeShutdownEvent(True))
    node.tell(ShutdownPods(()))
    node.settled()
    assert node.lock.calls == ["release"]
    assert metric(node.metrics, START) == float(int(node.clock.now()))


def test_progress_is_handed_over_as_it_changes(by_priority: Shutdown) -> None:
    node = by_priority
    node.tell(NodeShutdownEvent(True))
    node.tell(ShutdownPods((prioritized("low", None), prioritized("mid", 100000))))
    node.kills()
    given = [h.state for h in node.inbox.all(HandOver)]
    assert all(isinstance(g, ShutdownProgress) for g in given)
    last = given[-1]
    assert isinstance(last, ShutdownProgress)
    assert (last.shutting_down, last.processing, last.shutdowns, last.group) == (
        True, True, 1, 0)
    assert last.group_deadline == node.clock.monotonic() + 10
    node.tell(ShutdownPodStopped("low"))
    node.kills()
    last = node.inbox.all(HandOver)[-1].state
    assert isinstance(last, ShutdownProgress) and last.group == 1


def test_a_successor_resumes_the_group_being_stopped_with_what_was_left() -> None:
    clock = FakeClock()
    progress = ShutdownProgress(shutting_down=True, processing=True, shutdowns=1, group=1,
                                group_deadline=clock.monotonic() + 5.0,
                                start_time=clock.now() - 12.0)
    node = Shutdown(shutdown_periods(0, 0, PERIODS), resumed=progress, clock=clock)
    try:
        node.settled()
        node.inbox.count()
        # Node status told again; the sync loop asked for the active pods again.
        assert [m.shutting_down for m in node.inbox.all(NodeShuttingDown)] == [True, True]
        assert node.ref.ask(GetShutdownStatus(), block=True, timeout=10) is True
        # A pod of the first group still stopping is left to its kill; group 1 goes on.
        node.tell(ShutdownPods((prioritized("low", None), prioritized("mid", 100000, 60),
                                prioritized("critical", 2000000000))))
        assert node.kills() == [("mid", 20)]
        node.timers.advance(4.9)
        assert len(node.kills()) == 1
        node.timers.advance(0.2)  # the 5 s left of group 1's period passed
        assert node.kills()[1:] == [("critical", 5)]
        node.tell(ShutdownPodStopped("critical"))
        node.settled()
        assert node.lock.calls == ["release"]
        # The predecessor's start time is the one stored with the end.
        assert node.state.stored == [ShutdownState(progress.start_time, clock.now())]
        assert node.events.events == []  # the event was the predecessor's to record
    finally:
        node.stop()


def test_a_successor_of_a_finished_shutdown_only_reports_it() -> None:
    progress = ShutdownProgress(shutting_down=True, processing=False, shutdowns=1)
    node = Shutdown(shutdown_periods(0, 0, PERIODS), resumed=progress)
    try:
        node.settled()
        node.inbox.count()
        # The node status actor hears it again; the sync loop is not asked for pods.
        assert [m.shutting_down for m in node.inbox.all(NodeShuttingDown)] == [True]
        assert node.ref.ask(GetShutdownStatus(), block=True, timeout=10) is True
        assert node.lock.calls == [] and node.kills() == []
    finally:
        node.stop()


def test_a_restarted_node_status_actor_hears_the_node_is_shutting_down() -> None:
    clock = FakeClock()
    dispatch = Dispatch()
    inbox = Inbox(dispatch, names.NODE_STATUS, names.SHUTDOWN)
    try:
        loop = SyncLoop(dispatch, ManualTimers(dispatch, clock), clock, [],
                        lambda uid, n, cancel: inbox.ref)
        loop.child_restarted(names.NODE_STATUS, 1)
        loop.handle(NodeShuttingDown(True))
        loop.child_restarted(names.NODE_STATUS, 2)
        wait_for(lambda: inbox.all(NodeShuttingDown), 5, "NodeShuttingDown")
        inbox.count()
        assert [m.shutting_down for m in inbox.all(NodeShuttingDown)] == [True]
        loop.handle(NodeShuttingDown(False))
        loop.child_restarted(names.NODE_STATUS, 3)
        inbox.count()
        assert len(inbox.all(NodeShuttingDown)) == 1
    finally:
        inbox.ref.stop()
