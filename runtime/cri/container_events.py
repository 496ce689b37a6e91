"""Runtime events from CRI ``GetContainerEvents``: upstream's evented PLEG's own source.

A runtime that implements the call (containerd 1.7 and later, CRI-O) streams one
``ContainerEventResponse`` per container (or sandbox) change. :class:`CRIEventSubscription`
holds that stream in a thread of its own and turns each response into the same
:class:`RuntimeEvent` the containerd events service gives, under the same contract
(runtime.cri.runtime_events): ``on_connected("cri")``, events, ``on_lost`` and reconnection
with back-off. A runtime that answers the first call it takes with UNIMPLEMENTED (containerd
1.6) has no such stream: the subscription hands over to whoever asked
(``on_unimplemented``; runtime.containerd.event_sources then reads containerd's events
service) and ends. UNIMPLEMENTED after a stream has opened is a break like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from loguru import logger

from proto import api_pb2 as api
from proto import api_pb2_grpc as api_grpc
from runtime.cri.runtime_events import (
    PROBE_WINDOW,
    RETRY_FIRST,
    RETRY_MAX,
    EventKind,
    EventSink,
    EventSource,
    ReconnectingStream,
    RuntimeEvent,
)

# No CONTAINER_CREATED_EVENT, as the containerd path asks for no /containers/create: a
# created container is not running yet, the kubelet's own sync that created it asks the
# PLEG for a relist once its calls are done, and the start that follows is an event of its
# own; relisting on each create cost one more relist per container during a pod start.
_KINDS = {
    api.CONTAINER_STARTED_EVENT: EventKind.STARTED,
    api.CONTAINER_STOPPED_EVENT: EventKind.EXITED,
    api.CONTAINER_DELETED_EVENT: EventKind.DELETED,
}

_log = logger.bind(pod="", uid="", container="")


def decode(response: api.ContainerEventResponse) -> RuntimeEvent | None:
    """The event a response carries; None for what the PLEG has no use for (creates).

    A stop's exit code is the one in the response's statuses for that container; a
    sandbox's stop (its id is no container's) has none.
    """
    kind = _KINDS.get(response.container_event_type)
    if kind is None:
        return None
    exit_code = None
    if kind == EventKind.EXITED:
        exit_code = next((s.exit_code for s in response.containers_statuses
                          if s.id == response.container_id), None)
    return RuntimeEvent(kind, response.container_id, exit_code)


class CRIEventSubscription(ReconnectingStream):
    """A thread holding the runtime's GetContainerEvents stream open, reconnecting when it
    breaks; on a first answer of UNIMPLEMENTED it calls ``on_unimplemented`` and ends."""

    thread_name = "runtime-events-cri"

    def __init__(self, endpoint: str, sink: EventSink, *,
                 on_unimplemented: Callable[[str], None] | None = None,
                 probe_window: float = PROBE_WINDOW,
                 retry_first: float = RETRY_FIRST, retry_max: float = RETRY_MAX) -> None:
        """``on_unimplemented`` gets the runtime's words; None: UNIMPLEMENTED is a break."""
        super().__init__(endpoint, sink, probe_window=probe_window,
                         retry_first=retry_first, retry_max=retry_max)
        self._on_unimplemented = on_unimplemented
        self._logged = False
        # The runtime has shown it has the call: a response came, or an open stream ended
        # otherwise than UNIMPLEMENTED. Until then UNIMPLEMENTED means it has not.
        self._proven = False
        self._unimplemented: str | None = None

    stream_name = "GetContainerEvents stream"
    call_name = "GetContainerEvents"

    def _open(self, channel: Any) -> Any:
        return api_grpc.RuntimeServiceStub(channel).GetContainerEvents(api.GetEventsRequest())

    def _decode(self, item: Any) -> RuntimeEvent | None:
        return decode(item)

    def _received(self) -> None:
        self._proven = True

    def _ended(self, code: str, details: str) -> None:
        if code == grpc.StatusCode.UNIMPLEMENTED.name and not self._proven:
            self._unimplemented = details

    def _stream_over(self, opened: bool) -> None:
        self._proven = self._proven or opened

    def _opened(self) -> bool:
        if not self._logged:
            self._logged = True
            _log.info("runtime events: reading CRI GetContainerEvents on {}", self._endpoint)
        self._sink.on_connected(EventSource.CRI.value)
        return True

    def _carry_on(self, opened: bool, reason: str) -> bool:
        if self._unimplemented is None or self._on_unimplemented is None:
            return True
        if opened:  # it had counted as open (a slow answer): take that back
            self._sink.on_lost(reason)
        self._on_unimplemented(self._unimplemented)
        return False
