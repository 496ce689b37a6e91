"""Runtime events from containerd's events service: what the event-driven PLEG listens to.

Upstream's evented PLEG reads CRI ``GetContainerEvents``; containerd 1.6 (the runtime on
these machines) does not implement it, but its events service on the same socket publishes
every task's start, exit and OOM kill as it happens. :class:`EventSubscription` holds one
``Subscribe`` stream (CRI's namespace only, task and container topics only, exec processes
dropped) in a thread of its own, turns each envelope into a :class:`RuntimeEvent`, and hands
it to a sink. When the stream breaks it says so (``on_lost``), reconnects with back-off and
says so again (``on_connected``): the listener falls back to relisting meanwhile and relists
once on reconnection, since events may have been missed.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
from loguru import logger

from proto import containerd_events_pb2 as pb
from proto import containerd_events_pb2_grpc as pb_grpc
from runtime.cri.client import grpc_target

CRI_NAMESPACE = "k8s.io"
"""containerd's namespace for everything its CRI plugin makes."""

# Not /containers/create: a created container is not running yet, a relist would find
# nothing to report, and during a pod start it cost one more relist per container.
_TOPICS = ("/tasks/start", "/tasks/exit", "/tasks/oom", "/tasks/delete", "/containers/delete")
# One filter per topic: filters are ORed, a filter's terms ANDed.
FILTERS = tuple(f'namespace=={CRI_NAMESPACE},topic=="{topic}"' for topic in _TOPICS)

RETRY_FIRST = 0.1
RETRY_MAX = 30.0
"""Back-off between reconnections: doubling from RETRY_FIRST up to RETRY_MAX seconds."""

_log = logger.bind(pod="", uid="", container="")


class EventKind(enum.Enum):
    """What happened to a container, by containerd topic."""

    STARTED = "/tasks/start"
    EXITED = "/tasks/exit"
    OOM = "/tasks/oom"
    REAPED = "/tasks/delete"
    DELETED = "/containers/delete"


@dataclass(frozen=True, slots=True)
class RuntimeEvent:
    """One change to a container (or a sandbox: its pause container) the runtime reported."""

    kind: EventKind
    container_id: str
    exit_code: int | None = None  # EXITED and REAPED only


_PAYLOADS: dict[EventKind, Any] = {
    EventKind.STARTED: pb.TaskStart,
    EventKind.EXITED: pb.TaskExit,
    EventKind.OOM: pb.TaskOOM,
    EventKind.REAPED: pb.TaskDelete,
    EventKind.DELETED: pb.ContainerDelete,
}


def decode(envelope: pb.Envelope) -> RuntimeEvent | None:
    """The event an envelope carries; None for what the PLEG has no use for.

    An exec's exit (an exec probe, ``kubectl exec``) is dropped: it says nothing about the
    container, and exec probes would otherwise wake the PLEG every period per container.
    """
    try:
        kind = EventKind(envelope.topic)
    except ValueError:
        return None
    payload = _PAYLOADS[kind]()
    payload.ParseFromString(envelope.event.value)
    if kind == EventKind.DELETED:
        return RuntimeEvent(kind, payload.id)
    if kind in (EventKind.EXITED, EventKind.REAPED):
        if payload.id and payload.id != payload.container_id:
            return None
        return RuntimeEvent(kind, payload.container_id, payload.exit_status)
    return RuntimeEvent(kind, payload.container_id)


class EventSink(Protocol):
    """Where a subscription reports: each event, and the stream's state changes."""

    def on_event(self, event: RuntimeEvent) -> None: ...

    def on_connected(self) -> None: ...

    def on_lost(self, reason: str) -> None: ...


SubscriptionFactory = Callable[[EventSink], "EventSubscription"]
"""Starts a subscription that reports to a sink (the PLEG's owner wires one in)."""


class EventSubscription:
    """A thread holding containerd's event stream open, reconnecting when it breaks."""

    def __init__(self, endpoint: str, sink: EventSink, *,
                 retry_first: float = RETRY_FIRST, retry_max: float = RETRY_MAX) -> None:
        self._endpoint = endpoint
        self._sink = sink
        self._retry_first = retry_first
        self._retry_max = retry_max
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._call: Any = None
        self._channel: Any = None
        self._thread = threading.Thread(target=self._run, name="runtime-events", daemon=True)

    def start(self) -> EventSubscription:
        self._thread.start()
        return self

    def stop(self, wait: float = 2.0) -> None:
        """Cancel the stream and end the thread."""
        self._stop.set()
        with self._lock:
            if self._call is not None:
                self._call.cancel()
        self._thread.join(wait)

    def _run(self) -> None:
        delay = self._retry_first
        while not self._stop.is_set():
            opened, reason = self._stream()
            if self._stop.is_set():
                break
            self._sink.on_lost(reason)
            delay = self._retry_first if opened else min(delay * 2, self._retry_max)
            self._stop.wait(delay)
        self._close_channel()

    def _stream(self) -> tuple[bool, str]:
        """Hold one Subscribe stream until it ends: (whether it opened, why it ended)."""
        self._close_channel()
        self._channel = grpc.insecure_channel(grpc_target(self._endpoint))
        stub = pb_grpc.EventsStub(self._channel)
        opened = False
        try:
            # containerd sends nothing until an event happens: the stream counts as open
            # once the channel is connected and the call is in place.
            grpc.channel_ready_future(self._channel).result(timeout=5.0)
            with self._lock:
                if self._stop.is_set():
                    return opened, ""
                self._call = stub.Subscribe(pb.SubscribeRequest(filters=list(FILTERS)))
            opened = True
            self._sink.on_connected()
            for envelope in self._call:
                event = decode(envelope)
                if event is not None:
                    self._sink.on_event(event)
            return opened, "the runtime ended the event stream"
        except grpc.FutureTimeoutError:
            return opened, f"cannot reach {self._endpoint} for events"
        except grpc.RpcError as err:
            code = err.code() if hasattr(err, "code") else None
            name = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
            details = err.details() if hasattr(err, "details") else str(err)
            _log.debug("runtime event stream ended: {} {}", name, details)
            return opened, f"event stream {name}: {details}"
        finally:
            with self._lock:
                self._call = None

    def _close_channel(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None


def containerd_subscriptions(endpoint: str) -> SubscriptionFactory:
    """A factory of subscriptions to the containerd serving ``endpoint`` (its CRI socket)."""
    return lambda sink: EventSubscription(endpoint, sink).start()
