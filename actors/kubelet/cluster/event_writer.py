"""The event writer: the kubelet's events to the API server (cluster mode).

Upstream's StartRecordingToSink with its recordToSink: each event goes through its own
EventCorrelator (runtime.events.correlator); a skipped one is dropped, a repeat is a
strategic merge PATCH of count, lastTimestamp and message (a create when the API no
longer has it), a new one a POST to /api/v1/namespaces/NS/events; the server's answer
updates the correlator. A failure to reach the server is tried again, after a random part
of 10 s the first time and 10 s after that, 12 tries in all, then the event is dropped; an
answer that refuses it (any Status, 5xx included, as upstream) is not tried again. Events
are written one at a time in order, as upstream's single sink goroutine does; those
waiting behind a retry queue up to 1000 (upstream's broadcaster queue), newer ones are
dropped. Waiting is a timer message, never a sleep: this actor never blocks anything else.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers
from actors.kubelet import names
from actors.kubelet.cluster.context import Cluster
from actors.kubelet.events import SinkEvent
from runtime import errors
from runtime.clock import Clock
from runtime.events.correlator import CorrelateResult, EventCorrelator
from runtime.events.v1 import CoreEvent
from runtime.kubeapi.client import EVENTS

MAX_TRIES = 12
SLEEP = 10.0
QUEUE = 1000

_RETRYABLE = (errors.APIUnreachable,)
"""No answer from the server: try again. Any answer (a Status, 5xx included) is final, as
upstream's recordEvent gives up on every StatusError."""


@dataclass(slots=True)
class _Pending:
    result: CorrelateResult
    tries: int = 0


def retry_delay(tries: int, rng: random.Random) -> float:
    """recordToSink's sleep after ``tries`` failed tries: a random part of it first."""
    return SLEEP * rng.random() if tries == 1 else SLEEP


class EventWriter(Actor):
    """Writes events to the API server, in order, with upstream's retries."""

    def __init__(self, dispatch: Dispatch, timers: Timers, clock: Clock, cluster: Cluster,
                 incarnation: int = 0, rng: random.Random | None = None) -> None:
        super().__init__(names.EVENT_WRITER, dispatch, incarnation)
        self._timers = timers
        self._client = cluster.client
        self._correlator = EventCorrelator(clock.now)
        self._queue: deque[_Pending] = deque()
        self._waiting: Cancellable | None = None
        self._rng = rng or random.Random()
        self._clock = clock
        self.written = 0
        self.dropped = 0
        self._log = logger.bind(pod="", uid="", container="")

    def on_stop(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()

    def handle(self, message: Any) -> Any:
        if isinstance(message, SinkEvent):
            self._accept(message.event)
        elif isinstance(message, Tick) and message.kind == names.TICK_EVENT_RETRY:
            self._waiting = None
            self._drain()
        else:
            return super().handle(message)
        return None

    def _accept(self, event: CoreEvent) -> None:
        result = self._correlator.correlate(event)
        if result.skip or result.event is None:
            return
        if len(self._queue) >= QUEUE:
            self.dropped += 1
            self._log.warning("event queue full: dropped {} {}", event.reason, event.message)
            return
        self._queue.append(_Pending(result))
        self._drain()

    def _drain(self) -> None:
        while self._queue and self._waiting is None:
            pending = self._queue[0]
            if self._write(pending.result):
                self._queue.popleft()
                continue
            pending.tries += 1
            if pending.tries >= MAX_TRIES:
                self._queue.popleft()
                self.dropped += 1
                self._log.error("unable to write event (retry limit exceeded!): {} {}",
                                pending.result.event and pending.result.event.reason,
                                pending.result.event and pending.result.event.message)
                continue
            self._waiting = self._timers.once(
                retry_delay(pending.tries, self._rng), self.name,
                Tick(names.TICK_EVENT_RETRY, self._clock.monotonic()))

    def _write(self, result: CorrelateResult) -> bool:
        """recordEvent: True when done with the event (written, or refused for good)."""
        event = result.event
        assert event is not None
        try:
            written: dict[str, Any] | None = None
            if event.count > 1 and result.patch is not None:
                try:
                    written = self._client.patch(EVENTS, event.name, result.patch,
                                                 namespace=event.namespace)
                except errors.APINotFound:
                    written = None  # gone (expired): created again below
            if written is None:
                body = event.replace(resource_version="").to_json()
                written = self._client.create(EVENTS, body, namespace=event.namespace)
        except _RETRYABLE as err:
            self._log.warning("unable to write event (may retry after sleeping): {}", err)
            return False
        except errors.APIError as err:
            # Refused (AlreadyExists, a terminating namespace, invalid...): never retried.
            level = "DEBUG" if isinstance(err, errors.APIAlreadyExists) else "ERROR"
            self._log.log(level, "server rejected event (will not retry!): {}", err)
            return True
        self._correlator.update_state(CoreEvent.from_json(written))
        self.written += 1
        return True
