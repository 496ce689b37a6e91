"""Which stream the event-driven PLEG reads: CRI ``GetContainerEvents`` where the runtime
has it, containerd's events service where it answers that call with UNIMPLEMENTED.

:class:`EventSourceChooser` is the subscription factory the daemon wires into the PLEG. Each
subscription it starts first holds a GetContainerEvents stream (runtime.cri.container_events);
if the runtime's first answer is UNIMPLEMENTED (containerd 1.6), the subscription switches
to containerd's events service on the same socket (runtime.containerd.events), and the
chooser remembers that for the subscriptions after it (a restarted PLEG's). Which source a
stream comes from reaches the PLEG as ``on_connected(source)``. A runtime with neither
(another CRI runtime without the call) leaves the second stream failing with back-off:
the PLEG relists on every tick meanwhile, as without events.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from loguru import logger

from runtime.containerd.events import EventSubscription
from runtime.cri.container_events import CRIEventSubscription
from runtime.cri.runtime_events import (
    PROBE_WINDOW,
    RETRY_FIRST,
    RETRY_MAX,
    EventSink,
    EventSource,
    Subscription,
)

_log = logger.bind(pod="", uid="", container="")


class EventSourceChooser:
    """Starts subscriptions to the runtime at ``endpoint``, from the source it has."""

    def __init__(self, endpoint: str, *, probe_window: float = PROBE_WINDOW,
                 retry_first: float = RETRY_FIRST, retry_max: float = RETRY_MAX) -> None:
        self.endpoint = endpoint
        self._probe_window = probe_window
        self._retry_first = retry_first
        self._retry_max = retry_max
        self._lock = threading.Lock()
        self._refusal: str | None = None  # the runtime's answer to GetContainerEvents

    def __call__(self, sink: EventSink) -> Subscription:
        return _ChosenSubscription(self, sink).start()

    @property
    def known_source(self) -> EventSource | None:
        """The source found to be the one (None: not known yet, CRI is tried first)."""
        with self._lock:
            return None if self._refusal is None else EventSource.CONTAINERD

    def cri(self, sink: EventSink, on_unimplemented: Callable[[str], None]
            ) -> CRIEventSubscription:
        sub = CRIEventSubscription(self.endpoint, sink, on_unimplemented=on_unimplemented,
                                   probe_window=self._probe_window,
                                   retry_first=self._retry_first, retry_max=self._retry_max)
        sub.start()
        return sub

    def containerd(self, sink: EventSink) -> EventSubscription:
        sub = EventSubscription(self.endpoint, sink, probe_window=self._probe_window,
                                retry_first=self._retry_first, retry_max=self._retry_max)
        sub.start()
        return sub

    def refused(self, details: str) -> None:
        """The runtime answered GetContainerEvents with UNIMPLEMENTED: say so once."""
        with self._lock:
            first, self._refusal = self._refusal is None, details
        if first:
            _log.info("runtime events: {} answered CRI GetContainerEvents with UNIMPLEMENTED "
                      "({}); reading containerd's events service instead", self.endpoint,
                      details)


class _ChosenSubscription:
    """One subscription of the chooser's: CRI's stream, or containerd's once CRI refused."""

    def __init__(self, chooser: EventSourceChooser, sink: EventSink) -> None:
        self._chooser = chooser
        self._sink = sink
        self._lock = threading.Lock()
        self._stopped = False
        self._current: Subscription | None = None

    def start(self) -> _ChosenSubscription:
        with self._lock:
            if self._chooser.known_source == EventSource.CONTAINERD:
                self._current = self._chooser.containerd(self._sink)
            else:
                self._current = self._chooser.cri(self._sink, self.fall_back)
        return self

    def fall_back(self, details: str) -> None:
        """Runs on the CRI stream's thread, which ends after it."""
        self._chooser.refused(details)
        with self._lock:
            if not self._stopped:
                self._current = self._chooser.containerd(self._sink)

    def stop(self, wait: float = 2.0) -> None:
        with self._lock:
            self._stopped = True
            current = self._current
        if current is not None:
            current.stop(wait)
