"""The events actor and the event writer: events logged and kept de-duplicated, written to
the emulated API server as one Event whose count a PATCH raises, retried while the server
is away (upstream's recordToSink), never blocking."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.core.dispatch import Dispatch
from actors.core.testing import Inbox
from actors.core.timers import ManualTimers
from actors.kubelet import names
from actors.kubelet.cluster import event_writer as ew
from actors.kubelet.cluster.context import Cluster
from actors.kubelet.events import EventsActor, GetEvents, RecordEvent, SinkEvent
from runtime import errors
from runtime.clock import FakeClock
from runtime.events.recorder import ObjectRef
from runtime.events.v1 import make_event
from runtime.kubeapi.client import EVENTS, KubeClient
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.nodestatus import NodeConfig
from runtime.kubeapi.transport import Transport
from tests.apiserver import EmulatedAPIServer

NODE = "n1"
POD = ObjectRef("Pod", "default", "crash", "uid-1", "v1", "7", "spec.containers{main}")


@pytest.fixture
def server() -> Iterator[EmulatedAPIServer]:
    with EmulatedAPIServer(bookmark_interval=0.2) as srv:
        yield srv


@pytest.fixture
def cluster(server: EmulatedAPIServer, tmp_path: Path) -> Iterator[Cluster]:
    rest = load_kubeconfig(server.write_kubeconfig(
        tmp_path / "kubelet", f"system:node:{NODE}", groups=("system:nodes",)))
    transport = Transport(rest)
    yield Cluster(KubeClient(transport), KubeClient(transport),
                  NodeConfig(node_name=NODE, hostname=NODE, node_ip="10.0.0.1",
                             architecture="amd64"))
    transport.close()


def test_the_events_actor_stamps_keeps_counted_and_hands_on_in_cluster_mode() -> None:
    clock = FakeClock()
    dispatch = Dispatch()
    writer = Inbox(dispatch, names.EVENT_WRITER)
    try:
        actor = EventsActor(dispatch, clock, NODE, cluster=True)
        for _ in range(3):
            actor.handle(RecordEvent(POD, "Warning", "BackOff", "Back-off restarting"))
            clock.step(5)
        actor.handle(RecordEvent(POD, "Bogus", "X", "refused: not Normal or Warning"))
        (kept,) = actor.handle(GetEvents())
        assert kept["count"] == 3 and kept["reason"] == "BackOff"
        assert kept["source"] == {"component": "kubelet", "host": NODE}
        assert kept["involvedObject"]["fieldPath"] == "spec.containers{main}"
        assert writer.count() == 3
        sunk = writer.all(SinkEvent)
        assert len(sunk) == 3 and sunk[0].event.count == 1
    finally:
        writer.stop()


def test_repeats_are_one_event_with_a_count_emulated_apiserver(cluster: Cluster) -> None:
    clock = FakeClock()
    dispatch = Dispatch()
    w = ew.EventWriter(dispatch, ManualTimers(dispatch, clock), clock, cluster)
    for _ in range(3):
        w.handle(SinkEvent(make_event(POD, "Warning", "BackOff", "m", clock.now(),
                                      "kubelet", NODE)))
        clock.step(10)
    (event,) = cluster.client.list(EVENTS, "default").items
    assert event["count"] == 3 and event["reason"] == "BackOff"
    assert event["firstTimestamp"] < event["lastTimestamp"]
    assert w.written == 3


class _Away:
    """A client whose server does not answer ``fail`` times."""

    def __init__(self, inner: KubeClient, fail: int) -> None:
        self.inner, self.fail, self.calls = inner, fail, 0

    def create(self, *args: object, **kw: object) -> object:
        self.calls += 1
        if self.fail:
            self.fail -= 1
            raise errors.APIUnreachable("connection refused")
        return self.inner.create(*args, **kw)  # type: ignore[arg-type]


def test_an_unreachable_server_is_retried_on_a_timer_then_given_up_emulated_apiserver(
        cluster: Cluster) -> None:
    clock = FakeClock()
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, clock)
    w = ew.EventWriter(dispatch, timers, clock, cluster, rng=random.Random(1))
    away = _Away(cluster.client, 2)
    w._client = away  # type: ignore[assignment]
    w.handle(SinkEvent(make_event(POD, "Normal", "Pulled", "a", clock.now(), "kubelet", NODE)))
    assert away.calls == 1 and w.written == 0  # returned at once: a timer will retry
    assert ew.retry_delay(1, random.Random(1)) < ew.SLEEP == ew.retry_delay(2, random.Random(1))
    inbox = Inbox(dispatch, names.EVENT_WRITER)

    def fire() -> None:
        seen = inbox.count()
        timers.advance(ew.SLEEP)
        assert inbox.count() == seen + 1
        w.handle(inbox.all()[-1])

    try:
        for _ in range(2):
            fire()
        assert w.written == 1 and away.calls == 3
        away.fail = ew.MAX_TRIES
        w.handle(SinkEvent(make_event(POD, "Normal", "Pulled", "b", clock.now(), "kubelet",
                                      NODE)))
        for _ in range(ew.MAX_TRIES - 1):
            fire()
        assert w.dropped == 1 and away.calls == 3 + ew.MAX_TRIES
    finally:
        inbox.stop()
