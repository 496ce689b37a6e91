"""Runtime events from CRI GetContainerEvents, and the choice between it and containerd's
events service, against a real in-process gRPC server on a unix socket: a CRI runtime that
implements GetContainerEvents only (the rest UNIMPLEMENTED), or none of it."""

from __future__ import annotations

import queue
import shutil
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from proto import api_pb2 as api
from proto import api_pb2_grpc as api_grpc
from proto import containerd_events_pb2 as ev
from proto import containerd_events_pb2_grpc as ev_grpc
from runtime.containerd.event_sources import EventSourceChooser
from runtime.cri.container_events import CRIEventSubscription, decode
from runtime.cri.runtime_events import EventKind, EventSource, RuntimeEvent
from runtime.testing.event_sink import CollectingSink
from tests.helpers import wait_for

PROBE, RETRY_FIRST, RETRY_MAX = 0.05, 0.01, 0.05
"""Short waits for these tests: a stream counts as open 50 ms after its call."""


REFUSAL_PROBE = 3.0
"""Where a test expects refusals: long enough for a refusal never to count as open."""


def chooser_of(endpoint: str, probe_window: float = PROBE) -> EventSourceChooser:
    return EventSourceChooser(endpoint, probe_window=probe_window, retry_first=RETRY_FIRST,
                              retry_max=RETRY_MAX)


class EventsRuntime(api_grpc.RuntimeServiceServicer):
    """A CRI runtime that implements GetContainerEvents and nothing else: each call is a
    stream the test feeds (a response, or a status code to end it with)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.streams: list[queue.Queue[Any]] = []

    def GetContainerEvents(self, request: Any, context: Any) -> Iterator[Any]:
        feed: queue.Queue[Any] = queue.Queue()
        with self._lock:
            self.streams.append(feed)
        while context.is_active():
            try:
                item = feed.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(item, grpc.StatusCode):
                context.abort(item, "ended by the test")
            yield item

    def calls(self) -> int:
        with self._lock:
            return len(self.streams)

    def send(self, item: Any) -> None:
        """To the newest stream."""
        with self._lock:
            self.streams[-1].put(item)


class ContainerdEvents(ev_grpc.EventsServicer):
    """containerd's events service: each Subscribe stream sends what the test puts."""

    def __init__(self) -> None:
        self.feed: queue.Queue[Any] = queue.Queue()
        self.subscribed = threading.Event()

    def Subscribe(self, request: Any, context: Any) -> Iterator[Any]:
        self.subscribed.set()
        while context.is_active():
            try:
                yield self.feed.get(timeout=0.05)
            except queue.Empty:
                continue


@dataclass
class Served:
    endpoint: str
    server: Any


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    # Short: a unix socket's path must fit in 108 bytes.
    path = Path(tempfile.mkdtemp(prefix="crie-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def serve(socket_dir: Path, runtime: Any, events: Any = None) -> Served:
    server = grpc.server(ThreadPoolExecutor(max_workers=8))
    api_grpc.add_RuntimeServiceServicer_to_server(runtime, server)
    if events is not None:
        ev_grpc.add_EventsServicer_to_server(events, server)
    socket = socket_dir / "cri.sock"
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    return Served(f"unix://{socket}", server)


def no_event_threads() -> bool:
    return not [t for t in threading.enumerate() if t.name.startswith("runtime-events")]


def _response(kind: api.ContainerEventType.ValueType, cid: str,
              *statuses: tuple[str, int]) -> api.ContainerEventResponse:
    return api.ContainerEventResponse(
        container_id=cid, container_event_type=kind, created_at=1,
        containers_statuses=[api.ContainerStatus(id=i, exit_code=code) for i, code in statuses])


@pytest.mark.parametrize(("response", "event"), [
    (_response(api.CONTAINER_STARTED_EVENT, "c1"), RuntimeEvent(EventKind.STARTED, "c1")),
    (_response(api.CONTAINER_STOPPED_EVENT, "c2", ("c1", 0), ("c2", 3)),
     RuntimeEvent(EventKind.EXITED, "c2", 3)),
    # A sandbox's stop: its id is none of its containers'.
    (_response(api.CONTAINER_STOPPED_EVENT, "sb", ("c1", 137)),
     RuntimeEvent(EventKind.EXITED, "sb", None)),
    (_response(api.CONTAINER_STOPPED_EVENT, "c3"), RuntimeEvent(EventKind.EXITED, "c3", None)),
    (_response(api.CONTAINER_DELETED_EVENT, "c4"), RuntimeEvent(EventKind.DELETED, "c4")),
    (_response(api.CONTAINER_CREATED_EVENT, "c5"), None),
])
def test_cri_responses_decode_to_runtime_events(
        response: api.ContainerEventResponse, event: RuntimeEvent | None) -> None:
    assert decode(response) == event


def test_a_cri_stream_reports_its_events(socket_dir: Path) -> None:
    runtime = EventsRuntime()  # type: ignore[abstract]  # serves GetContainerEvents only
    served = serve(socket_dir, runtime)
    sink = CollectingSink()
    subscription = CRIEventSubscription(served.endpoint, sink, probe_window=PROBE,
                                        retry_first=RETRY_FIRST).start()
    try:
        wait_for(lambda: sink.seen()[0] == ["connected: cri"], 10.0, "the stream open")
        runtime.send(_response(api.CONTAINER_CREATED_EVENT, "c1"))
        runtime.send(_response(api.CONTAINER_STARTED_EVENT, "c1"))
        runtime.send(_response(api.CONTAINER_STOPPED_EVENT, "c1", ("c1", 3)))
        runtime.send(_response(api.CONTAINER_DELETED_EVENT, "c1"))
        wait_for(lambda: len(sink.seen()[1]) == 3, 10.0, "three events")
    finally:
        subscription.stop()
        served.server.stop(None)
    assert sink.seen() == (["connected: cri"], [
        RuntimeEvent(EventKind.STARTED, "c1"), RuntimeEvent(EventKind.EXITED, "c1", 3),
        RuntimeEvent(EventKind.DELETED, "c1")])
    wait_for(no_event_threads, 5.0, "the stream's thread to end")


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE,
                                  # once a stream has opened, even this is only a break
                                  grpc.StatusCode.UNIMPLEMENTED])
def test_a_broken_cri_stream_is_lost_then_reconnected(
        socket_dir: Path, code: grpc.StatusCode) -> None:
    runtime = EventsRuntime()  # type: ignore[abstract]  # serves GetContainerEvents only
    events = ContainerdEvents()
    served = serve(socket_dir, runtime, events)
    sink = CollectingSink()
    subscription = chooser_of(served.endpoint)(sink)
    try:
        wait_for(lambda: sink.seen()[0] == ["connected: cri"], 10.0, "the stream open")
        runtime.send(_response(api.CONTAINER_STARTED_EVENT, "c1"))
        wait_for(lambda: sink.seen()[1], 10.0, "the first stream's event")
        runtime.send(code)
        wait_for(lambda: len(sink.seen()[0]) == 3, 10.0, "lost and connected again")
        assert runtime.calls() == 2
        runtime.send(_response(api.CONTAINER_STOPPED_EVENT, "c1", ("c1", 0)))
        wait_for(lambda: len(sink.seen()[1]) == 2, 10.0, "the second stream's event")
    finally:
        subscription.stop()
        served.server.stop(None)
    assert sink.seen() == ([
        "connected: cri", f"lost: GetContainerEvents {code.name}: ended by the test",
        "connected: cri"],
        [RuntimeEvent(EventKind.STARTED, "c1"), RuntimeEvent(EventKind.EXITED, "c1", 0)])
    assert not events.subscribed.is_set()  # never fell back to containerd's service
    wait_for(no_event_threads, 5.0, "the stream's thread to end")


def test_unimplemented_at_the_first_call_chooses_containerds_events(socket_dir: Path) -> None:
    # The generated servicer answers every method, GetContainerEvents included, with
    # UNIMPLEMENTED, as containerd 1.6 does.
    events = ContainerdEvents()
    served = serve(socket_dir, api_grpc.RuntimeServiceServicer(), events)  # type: ignore[abstract]
    chooser = chooser_of(served.endpoint, REFUSAL_PROBE)
    first, second = CollectingSink(), CollectingSink()
    subscriptions = [chooser(first)]
    try:
        wait_for(lambda: first.seen()[0] == ["connected: containerd"], 10.0, "the fallback")
        assert chooser.known_source == EventSource.CONTAINERD
        exit_ = ev.TaskExit(container_id="c1", id="c1", exit_status=3)
        envelope = ev.Envelope(namespace="k8s.io", topic="/tasks/exit")
        envelope.event.Pack(exit_)
        events.feed.put(envelope)
        wait_for(lambda: first.seen()[1], 10.0, "the exit through containerd's service")
        assert first.seen()[1] == [RuntimeEvent(EventKind.EXITED, "c1", 3)]
        # A later subscription (a restarted PLEG's) goes to containerd's service at once.
        subscriptions.append(chooser(second))
        wait_for(lambda: second.seen()[0] == ["connected: containerd"], 10.0, "the second")
    finally:
        for subscription in subscriptions:
            subscription.stop()
        served.server.stop(None)
    assert first.seen()[0] == ["connected: containerd"]  # no CRI connection came and went
    wait_for(no_event_threads, 5.0, "the streams' threads to end")


def test_a_late_unimplemented_on_the_first_call_still_chooses_containerd(
        socket_dir: Path) -> None:
    # A slow runtime's refusal may come after the call counted as open: the connection is
    # taken back before containerd's service is read.
    runtime = EventsRuntime()  # type: ignore[abstract]  # serves GetContainerEvents only
    events = ContainerdEvents()
    served = serve(socket_dir, runtime, events)
    chooser = chooser_of(served.endpoint)
    sink = CollectingSink()
    subscription = chooser(sink)
    try:
        wait_for(lambda: sink.seen()[0] == ["connected: cri"], 10.0, "the call counted open")
        runtime.send(grpc.StatusCode.UNIMPLEMENTED)
        wait_for(lambda: len(sink.seen()[0]) == 3, 10.0, "the switch to containerd")
    finally:
        subscription.stop()
        served.server.stop(None)
    assert sink.seen()[0] == [
        "connected: cri", "lost: GetContainerEvents UNIMPLEMENTED: ended by the test",
        "connected: containerd"]
    assert chooser.known_source == EventSource.CONTAINERD
    assert runtime.calls() == 1
    wait_for(no_event_threads, 5.0, "the streams' threads to end")


def test_a_runtime_with_neither_stream_stays_lost(socket_dir: Path) -> None:
    served = serve(socket_dir, api_grpc.RuntimeServiceServicer())  # type: ignore[abstract]
    chooser = chooser_of(served.endpoint, REFUSAL_PROBE)
    sink = CollectingSink()
    subscription = chooser(sink)
    try:
        wait_for(lambda: len(sink.seen()[0]) >= 2, 10.0, "two failed subscriptions")
    finally:
        subscription.stop()
        served.server.stop(None)
    states, events = sink.seen()
    assert chooser.known_source == EventSource.CONTAINERD
    assert events == []
    # A refused call never counts as open: no connected/lost flapping (the PLEG relists
    # every tick throughout), and the back-off grows.
    assert states and all(s.startswith("lost: event stream UNIMPLEMENTED") for s in states)
    wait_for(no_event_threads, 5.0, "the stream's thread to end")

