"""The kubelet's events: the recorder its parts call, and the actor that receives them.

Upstream's kubelet records events through a record.EventRecorder whose broadcaster logs
each one (StartStructuredLogging) and hands it to the API sink (StartRecordingToSink).
Here:

- ``DispatchRecorder`` is the EventRecorder (runtime.events.recorder) every part gets: it
  tells the ``events`` actor a ``RecordEvent`` and returns; nothing on the path of a pod's
  start waits for an event to be logged or written. The message is what a trace records
  and what a replay compares (the events actor itself is not replayed: it only logs and
  keeps);
- ``EventsActor`` stamps each event (upstream's makeEvent: name, namespace, source
  ``kubelet`` on this node, reportingComponent/Instance), logs it with the pod, uid and
  container fields, keeps the newest ``RING`` of them de-duplicated by client-go's
  EventCorrelator (a count, as ``kubectl describe`` would show; ``GetEvents`` answers
  them; no HTTP route serves them yet), and in cluster mode hands each to the event writer
  (actors.kubelet.cluster.event_writer), which correlates and writes it to the API.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from loguru import logger
from msgspec import UNSET, Struct, UnsetType

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.trace.names import message
from actors.kubelet import names
from runtime.clock import Clock
from runtime.events import reasons
from runtime.events.correlator import EventCorrelator
from runtime.events.recorder import HookOutput, ObjectRef, node_ref
from runtime.events.v1 import CoreEvent, make_event

COMPONENT = "kubelet"
"""source.component and reportingComponent of every event the kubelet records."""
RING = 1000
"""How many of the newest events the events actor keeps for ``/events``."""


@message("RecordEvent")
class RecordEvent(Struct, frozen=True):
    """Record one event about ``ref`` (its time is when the events actor gets it).

    ``hook``: a failed lifecycle hook's output (runtime.events.recorder.HookOutput), kept
    out of the event as upstream keeps it, in the node's trace only. UNSET on every other
    event, so that those encode as before the field existed and recorded traces still
    compare equal on replay (an old trace reads with it UNSET).
    """

    ref: ObjectRef
    type: str
    reason: str
    message: str
    hook: HookOutput | UnsetType = UNSET

    @property
    def hook_output(self) -> HookOutput | None:
        """The failed hook's output; None on any other event (and in older traces)."""
        return None if isinstance(self.hook, UnsetType) else self.hook


@message("SinkEvent")
class SinkEvent(Struct, frozen=True):
    """Cluster mode: write this event (as made, before correlation) to the API server."""

    event: CoreEvent


@message("GetEvents")
class GetEvents(Struct, frozen=True):
    """Ask: the kept events as v1 Event JSON, oldest first."""


class DispatchRecorder:
    """The EventRecorder the kubelet's parts hold: one message, no wait."""

    def __init__(self, dispatch: Dispatch) -> None:
        self._dispatch = dispatch

    def event(self, ref: ObjectRef, type: str, reason: str, message: str,
              hook: HookOutput | None = None) -> None:
        self._dispatch.tell(names.EVENTS, RecordEvent(
            ref, type, reason, message, UNSET if hook is None else hook))


def container_of(ref: ObjectRef) -> str:
    """The container a field path names (``spec.containers{web}`` -> ``web``), else ""."""
    path = ref.field_path
    if path.endswith("}") and "{" in path:
        return path[path.index("{") + 1:-1]
    return ""


class EventsActor(Actor):
    """Logs, keeps and (in cluster mode) hands on the kubelet's events."""

    def __init__(self, dispatch: Dispatch, clock: Clock, node_name: str,
                 incarnation: int = 0, cluster: bool = False, ring: int = RING) -> None:
        super().__init__(names.EVENTS, dispatch, incarnation)
        self._clock = clock
        self._node = node_name
        self._cluster = cluster
        self._ring = ring
        self._correlator = EventCorrelator(clock.now)
        self._kept: OrderedDict[tuple[str, str], CoreEvent] = OrderedDict()
        self.recorded = 0

    def on_start(self) -> None:
        if self.incarnation == 0:
            # Upstream's kubelet, once its modules are up.
            self.handle(RecordEvent(node_ref(self._node), reasons.NORMAL,
                                    reasons.STARTING_KUBELET, "Starting kubelet."))

    def handle(self, message: Any) -> Any:
        if isinstance(message, RecordEvent):
            self._record(message)
        elif isinstance(message, GetEvents):
            return tuple(e.to_json() for e in self._kept.values())
        else:
            return super().handle(message)
        return None

    def _record(self, m: RecordEvent) -> None:
        ref = m.ref
        log = logger.bind(pod=ref.name if ref.kind == "Pod" else "", uid=ref.uid,
                          container=container_of(ref))
        if m.type not in reasons.EVENT_TYPES:
            # As upstream's recorder: an event of another type is refused.
            log.error("unsupported event type: {!r} (reason {})", m.type, m.reason)
            return
        self.recorded += 1
        made = make_event(ref, m.type, m.reason, m.message, self._clock.now(), COMPONENT,
                          self._node)
        log.info("event {} {} {}/{}{}: {}", m.type, m.reason, ref.kind, ref.name,
                 f" {ref.field_path}" if ref.field_path else "", m.message)
        if self._cluster:
            self.send(names.EVENT_WRITER, SinkEvent(made))
        result = self._correlator.correlate(made)
        if result.skip or result.event is None:
            return
        event = result.event
        self._correlator.update_state(event)  # what we keep is our "server"
        key = (event.namespace, event.name)
        self._kept.pop(key, None)
        self._kept[key] = event
        while len(self._kept) > self._ring:
            self._kept.popitem(last=False)

