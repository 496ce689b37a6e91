"""Runtime events from containerd's events service: what the event-driven PLEG listens to.

Upstream's evented PLEG reads CRI ``GetContainerEvents`` (runtime.cri.container_events, used
where the runtime has it: runtime.containerd.event_sources chooses); containerd 1.6 (the
runtime on these machines) does not implement it, but its events service on the same socket
publishes every task's start, exit and OOM kill as it happens. :class:`EventSubscription` holds one
``Subscribe`` stream (CRI's namespace only, task and container topics only, exec processes
dropped) in a thread of its own, turns each envelope into a :class:`RuntimeEvent`, and hands
it to a sink. When the stream breaks it says so (``on_lost``), reconnects with back-off and
says so again (``on_connected``): the listener falls back to relisting meanwhile and relists
once on reconnection, since events may have been missed.
"""

from __future__ import annotations

from typing import Any

from proto import containerd_events_pb2 as pb
from proto import containerd_events_pb2_grpc as pb_grpc
from runtime.cri.runtime_events import (
    PROBE_WINDOW,
    RETRY_FIRST,
    RETRY_MAX,
    EventKind,
    EventSink,
    EventSource,
    ReconnectingStream,
    RuntimeEvent,
    SubscriptionFactory,
)

__all__ = [
    "CRI_NAMESPACE", "FILTERS", "PROBE_WINDOW", "RETRY_FIRST", "RETRY_MAX", "EventKind",
    "EventSink", "EventSubscription", "RuntimeEvent", "SubscriptionFactory",
    "containerd_subscriptions", "decode",
]

CRI_NAMESPACE = "k8s.io"
"""containerd's namespace for everything its CRI plugin makes."""

# Every kind is named by its containerd topic. Not /containers/create: a created container
# is not running yet, a relist would find nothing to report, and during a pod start it cost
# one more relist per container.
_TOPICS = tuple(kind.value for kind in EventKind)
# One filter per topic: filters are ORed, a filter's terms ANDed.
FILTERS = tuple(f'namespace=={CRI_NAMESPACE},topic=="{topic}"' for topic in _TOPICS)


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


class EventSubscription(ReconnectingStream):
    """A thread holding containerd's event stream open, reconnecting when it breaks."""

    stream_name = "event stream"
    call_name = "event stream"

    def _open(self, channel: Any) -> Any:
        return pb_grpc.EventsStub(channel).Subscribe(pb.SubscribeRequest(filters=list(FILTERS)))

    def _decode(self, item: Any) -> RuntimeEvent | None:
        return decode(item)

    def _opened(self) -> bool:
        self._sink.on_connected(EventSource.CONTAINERD.value)
        return True


def containerd_subscriptions(endpoint: str) -> SubscriptionFactory:
    """A factory of subscriptions to the containerd serving ``endpoint`` (its CRI socket)."""
    return lambda sink: EventSubscription(endpoint, sink).start()
