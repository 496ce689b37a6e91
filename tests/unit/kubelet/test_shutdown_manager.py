"""The node shutdown manager actor with a fake logind lock, manual time and the sync loop's
address held by an inbox: PrepareForShutdown(true) makes the node shutting down (the sync
loop and node status are told), the pods are stopped group by group, lowest priority first,
each with the smaller of its own and its group's grace period; a group goes on when all of
it stopped or its period passed; the lock is released after the last group; a cancellation
takes the lock again, and one that comes while pods are stopped waits for the end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from msgspec.structs import replace

from actors.core.dispatch import Dispatch
from actors.core.testing import Inbox
from actors.core.timers import ManualTimers
from actors.kubelet import names
from actors.kubelet.shutdown import (
    GetShutdownStatus,
    NodeShutdownEvent,
    NodeShuttingDown,
    ShutdownKill,
    ShutdownManager,
    ShutdownPods,
    ShutdownPodStopped,
    ShutdownSettings,
)
from runtime.clock import FakeClock
from runtime.events.recorder import ListRecorder
from runtime.nodeshutdown import ShutdownGracePeriodByPodPriority as Period
from runtime.nodeshutdown import shutdown_periods
from runtime.pod.model import Pod
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


class Shutdown:
    def __init__(self, periods: tuple[Period, ...]) -> None:
        self.clock = FakeClock()
        self.dispatch = Dispatch()
        self.timers = ManualTimers(self.dispatch, self.clock)
        self.lock = FakeLock()
        self.events = ListRecorder()
        self.inbox = Inbox(self.dispatch, names.SYNC_LOOP, names.NODE_STATUS)
        self.ref = ShutdownManager.start(
            self.dispatch, self.timers, ShutdownSettings(periods, node_status=True), "node",
            inhibitor=self.lock, events=self.events)
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
