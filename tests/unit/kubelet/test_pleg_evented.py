"""The event-driven PLEG: relists on runtime events, re-checks a runtime that trails its
events, slows its ticks while events flow, and falls back to every tick when they stop."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import msgspec
import pytest

from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.testing import Inbox
from actors.core.timers import ManualTimers
from actors.core.trace.names import MESSAGES
from actors.kubelet import names
from actors.kubelet.messages import EventType, Relisted, RuntimeEventsConnected
from actors.kubelet.metric_text import prometheus_text
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.pleg import (
    EVENTED_RELIST_PERIOD,
    PLEG,
    RECHECK_DELAYS,
    SETTLE_DELAY,
    caught_up,
)
from actors.kubelet.pleg import PlegState as S
from proto import containerd_events_pb2 as pb
from runtime.clock import FakeClock
from runtime.containerd.events import EventKind, EventSink, RuntimeEvent, decode
from runtime.ids import ContainerID
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import wait_for
from tests.unit.kubelet.test_pleg import _pod


class FakeSubscription:
    """Stands for the stream's thread: the test calls the sink it was given."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.stopped = False

    def stop(self, wait: float = 2.0) -> None:
        self.stopped = True


@dataclass
class Rig:
    clock: FakeClock
    dispatch: Dispatch
    timers: ManualTimers
    fake: FakeRuntime
    sync_loop: Inbox
    subscriptions: list[FakeSubscription]
    metrics: KubeletMetrics

    @property
    def sink(self) -> EventSink:
        return self.subscriptions[-1].sink

    def relists(self) -> list[Relisted]:
        self.sync_loop.count()
        return self.sync_loop.all(Relisted)

    def settle(self) -> int:
        """How many Relisted messages have arrived once the PLEG is idle."""
        return len(self.relists())

    def tick(self) -> None:
        self.dispatch.tell(names.PLEG, Tick(names.TICK_RELIST, self.clock.monotonic()))


def pleg_rig() -> Iterator[Rig]:
    """A PLEG on a fake runtime and a fake event stream, its sync loop an inbox."""
    clock = FakeClock()
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, clock)
    fake = FakeRuntime(clock, images=["img"])
    sync_loop = Inbox(dispatch, names.SYNC_LOOP)
    subscriptions: list[FakeSubscription] = []

    def subscribe(sink: EventSink) -> FakeSubscription:
        subscriptions.append(FakeSubscription(sink))
        return subscriptions[-1]

    metrics = KubeletMetrics()
    pleg = PLEG.start(dispatch, fake, clock, 0, timers=timers, runtime_events=subscribe,
                      metrics=metrics)
    dispatch.register(names.PLEG, pleg)
    r = Rig(clock, dispatch, timers, fake, sync_loop, subscriptions, metrics)
    try:
        yield r
    finally:
        pleg.stop()
        sync_loop.stop()
    assert all(s.stopped for s in subscriptions)


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield from pleg_rig()


def _connected(rig: Rig) -> int:
    """Open the stream and let its settle relist pass; how many relists that made."""
    rig.sink.on_connected("containerd")
    first = _wait_relists(rig, 1)[0]
    assert first.evented and [e.type for e in first.events] == [EventType.POD_SYNC] * len(
        first.pods)
    assert rig.timers.advance(SETTLE_DELAY) == 1
    return len(_wait_relists(rig, 2))


def _wait_relists(rig: Rig, n: int) -> list[Relisted]:
    wait_for(lambda: len(rig.sync_loop.all(Relisted)) >= n, 10.0, f"{n} relists")
    return rig.relists()


def test_an_exit_event_relists_at_once_without_a_tick(rig: Rig) -> None:
    _sandbox, container = _pod(rig.fake, "u1", "web")
    _connected(rig)
    rig.fake.exit_container(ContainerID(container), 3)
    rig.sink.on_event(RuntimeEvent(EventKind.EXITED, container, 3))
    died = rig.sync_loop.wait(Relisted, lambda m: any(
        e.type == EventType.CONTAINER_DIED for e in m.events))
    assert died.evented


def test_a_runtime_that_trails_its_event_is_rechecked_until_it_shows_it(rig: Rig) -> None:
    _sandbox, container = _pod(rig.fake, "u1", "web")
    settled = _connected(rig)
    # The event arrives before the runtime's own view has the exit.
    rig.sink.on_event(RuntimeEvent(EventKind.EXITED, container, 3))
    before = len(_wait_relists(rig, settled + 1))
    assert not any(e.type == EventType.CONTAINER_DIED for m in rig.relists() for e in m.events)
    rig.fake.exit_container(ContainerID(container), 3)
    assert rig.timers.advance(RECHECK_DELAYS[0]) == 1
    died = rig.sync_loop.wait(Relisted, lambda m: any(
        e.type == EventType.CONTAINER_DIED for e in m.events))
    assert died in rig.relists()[before:]
    # Shown now: no further re-check is scheduled.
    rig.settle()
    assert rig.timers.advance(sum(RECHECK_DELAYS)) == 0


def test_rechecks_give_up_after_the_last_delay(rig: Rig) -> None:
    _sandbox, container = _pod(rig.fake, "u1", "web")
    settled = _connected(rig)
    rig.sink.on_event(RuntimeEvent(EventKind.EXITED, container, 3))
    _wait_relists(rig, settled + 1)
    for n, delay in enumerate(RECHECK_DELAYS):
        _wait_relists(rig, settled + 1 + n)
        assert rig.timers.advance(delay) == 1
    _wait_relists(rig, settled + 1 + len(RECHECK_DELAYS))
    assert rig.timers.advance(10.0) == 0


def test_ticks_relist_only_every_evented_period_while_events_flow(rig: Rig) -> None:
    settled = _connected(rig)
    for _ in range(5):
        rig.clock.step(1.0)
        rig.tick()
    assert rig.settle() == settled
    rig.clock.step(EVENTED_RELIST_PERIOD)
    rig.tick()
    assert len(_wait_relists(rig, settled + 1)) == settled + 1


def test_a_lost_stream_falls_back_to_relisting_every_tick(rig: Rig) -> None:
    settled = _connected(rig)
    exposed = prometheus_text(rig.metrics.registry).decode()
    assert 'kubelet_actors_runtime_events_source{source="containerd"} 1.0' in exposed
    rig.sink.on_lost("event stream UNAVAILABLE: gone")
    lost = _wait_relists(rig, settled + 1)[-1]
    assert not lost.evented
    exposed = prometheus_text(rig.metrics.registry).decode()
    assert "kubelet_evented_pleg_connection_success_count 1.0" in exposed
    assert "kubelet_evented_pleg_connection_error_count 1.0" in exposed
    assert 'kubelet_actors_runtime_events_source{source="containerd"} 0.0' in exposed
    for n in range(3):
        rig.tick()
        _wait_relists(rig, settled + 2 + n)


def test_an_exec_exit_or_an_unknown_container_schedules_no_recheck(rig: Rig) -> None:
    settled = _connected(rig)
    rig.sink.on_event(RuntimeEvent(EventKind.EXITED, "not-ours", 0))
    _wait_relists(rig, settled + 1)
    rig.settle()
    assert rig.timers.advance(RECHECK_DELAYS[0]) == 0


@pytest.mark.parametrize(("want", "have", "shown"), [
    (S.EXITED, S.EXITED, True),
    (S.EXITED, S.RUNNING, False),
    (S.RUNNING, S.RUNNING, True),
    (S.RUNNING, S.EXITED, True),  # started and already exited
    (S.RUNNING, S.UNKNOWN, False),
    (S.NON_EXISTENT, S.EXITED, False),
    (S.NON_EXISTENT, S.NON_EXISTENT, True),
])
def test_what_counts_as_the_runtime_having_caught_up(want: S, have: S, shown: bool) -> None:
    assert caught_up(want, have) is shown


def _envelope(topic: str, payload: object) -> pb.Envelope:
    envelope = pb.Envelope(namespace="k8s.io", topic=topic)
    envelope.event.Pack(payload)  # type: ignore[arg-type]
    return envelope


@pytest.mark.parametrize(("envelope", "event"), [
    (_envelope("/tasks/exit", pb.TaskExit(container_id="c1", id="c1", exit_status=137)),
     RuntimeEvent(EventKind.EXITED, "c1", 137)),
    (_envelope("/tasks/exit", pb.TaskExit(container_id="c1", id="exec-7", exit_status=1)),
     None),  # an exec's process, not the container
    (_envelope("/tasks/start", pb.TaskStart(container_id="c2", pid=42)),
     RuntimeEvent(EventKind.STARTED, "c2")),
    (_envelope("/tasks/oom", pb.TaskOOM(container_id="c3")), RuntimeEvent(EventKind.OOM, "c3")),
    (_envelope("/tasks/delete", pb.TaskDelete(container_id="c4", exit_status=0)),
     RuntimeEvent(EventKind.REAPED, "c4", 0)),
    (_envelope("/containers/delete", pb.ContainerDelete(id="c5")),
     RuntimeEvent(EventKind.DELETED, "c5")),
    (_envelope("/images/create", pb.ContainerDelete(id="x")), None),
])
def test_containerd_envelopes_decode_to_runtime_events(
        envelope: pb.Envelope, event: RuntimeEvent | None) -> None:
    assert decode(envelope) == event


def test_an_older_trace_s_connection_message_rebuilds_without_a_source() -> None:
    # Traces recorded before the PLEG learnt its events' source have an empty body.
    rebuilt: object = msgspec.convert({}, MESSAGES.resolve("RuntimeEventsConnected"))
    assert rebuilt == RuntimeEventsConnected("")
    assert msgspec.convert({"source": "cri"}, RuntimeEventsConnected).source == "cri"
