"""What a container runtime's event stream tells the event-driven PLEG, whichever stream.

Two sources feed the PLEG: CRI ``GetContainerEvents`` (runtime.cri.container_events), where
the runtime implements it, and containerd's events service (runtime.containerd.events),
where it does not. Both turn what they read into a :class:`RuntimeEvent` and report to an
:class:`EventSink` from a thread of their own, under one contract that
:class:`ReconnectingStream` keeps for both: ``on_connected(source)`` when a stream opens,
each event as it comes, ``on_lost(reason)`` when it breaks, then a reconnection after a
back-off doubling from RETRY_FIRST up to RETRY_MAX seconds.
"""

from __future__ import annotations

import abc
import enum
import threading
from collections.abc import Callable
from typing import Any, Protocol

import grpc
from loguru import logger
from msgspec import Struct

from runtime.cri.client import grpc_target

RETRY_FIRST = 0.1
RETRY_MAX = 30.0
"""Back-off between reconnections: doubling from RETRY_FIRST up to RETRY_MAX seconds."""
PROBE_WINDOW = 0.5
"""Seconds a new call must stay unanswered before its stream counts as open. A runtime
without the call answers UNIMPLEMENTED at once; one with it sends nothing at all (not even
headers) until a container changes. Counting the stream open as soon as the call was placed
made a runtime without it flap: connected and lost at every reconnection, with no back-off."""
CONNECT_TIMEOUT = 5.0
"""Seconds a (re)connection waits for the runtime's socket before counting as lost."""


class EventKind(enum.Enum):
    """What happened to a container.

    The values are the words the PLEG's traces record (RuntimeEventSeen.kind). They are
    containerd's event topics, where these events first came from: containerd's subscription
    asks for its topics by these values, so they are also the one place those topics live.
    """

    STARTED = "/tasks/start"
    EXITED = "/tasks/exit"
    OOM = "/tasks/oom"
    REAPED = "/tasks/delete"
    DELETED = "/containers/delete"


class EventSource(enum.Enum):
    """Which stream the events come from (RuntimeEventsConnected.source, the metric label)."""

    CRI = "cri"  # CRI GetContainerEvents
    CONTAINERD = "containerd"  # containerd's events service


class RuntimeEvent(Struct, frozen=True):
    """One change to a container (or a sandbox: its pause container) the runtime reported."""

    kind: EventKind
    container_id: str
    exit_code: int | None = None  # EXITED and REAPED only, where the source says


class EventSink(Protocol):
    """Where a subscription reports: each event, and the stream's state changes."""

    def on_event(self, event: RuntimeEvent) -> None: ...

    def on_connected(self, source: str) -> None: ...

    def on_lost(self, reason: str) -> None: ...


class Subscription(Protocol):
    """A running subscription: its owner stops it (and its thread) when done with it."""

    def stop(self, wait: float = 2.0) -> None: ...


SubscriptionFactory = Callable[[EventSink], Subscription]
"""Starts a subscription that reports to a sink (the PLEG's owner wires one in)."""


def rpc_status(err: grpc.RpcError) -> tuple[str, str]:
    """A failed call's status code name and details (UNKNOWN and the text when it has none)."""
    code_fn = getattr(err, "code", None)
    details_fn = getattr(err, "details", None)
    code = code_fn() if callable(code_fn) else None
    details = details_fn() if callable(details_fn) else None
    return (code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN",
            details if isinstance(details, str) and details else str(err))


_log = logger.bind(pod="", uid="", container="")


class ReconnectingStream(abc.ABC):
    """A thread holding one server stream to the runtime open, reconnecting when it breaks.

    A subclass opens the stream and feeds the sink in :meth:`_stream`; this class keeps the
    contract: one thread, ``on_lost`` on every break, back-off, ``stop`` cancelling the call.
    """

    thread_name = "runtime-events"

    def __init__(self, endpoint: str, sink: EventSink, *, probe_window: float = PROBE_WINDOW,
                 retry_first: float = RETRY_FIRST, retry_max: float = RETRY_MAX) -> None:
        self._endpoint = endpoint
        self._sink = sink
        self._probe_window = probe_window
        self._retry_first = retry_first
        self._retry_max = retry_max
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._call: Any = None
        self._channel: Any = None
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)

    def start(self) -> ReconnectingStream:
        self._thread.start()
        return self

    def stop(self, wait: float = 2.0) -> None:
        """Cancel the stream and end the thread."""
        self._stop.set()
        with self._lock:
            if self._call is not None:
                self._call.cancel()
        if threading.current_thread() is not self._thread:
            self._thread.join(wait)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _run(self) -> None:
        delay = self._retry_first
        while not self._stop.is_set():
            opened, reason = self._stream()
            if self._stop.is_set() or not self._carry_on(opened, reason):
                break
            self._sink.on_lost(reason)
            delay = self._retry_first if opened else min(delay * 2, self._retry_max)
            self._stop.wait(delay)
        self._close_channel()

    stream_name = "runtime event stream"
    call_name = "runtime event stream"
    """What the stream, and its call in a status, are called in the reasons of breaks."""

    @abc.abstractmethod
    def _open(self, channel: Any) -> Any:
        """Start the streaming call on ``channel``."""

    @abc.abstractmethod
    def _decode(self, item: Any) -> RuntimeEvent | None:
        """The event one streamed item reports (None: one the kubelet does not follow)."""

    @abc.abstractmethod
    def _opened(self) -> bool:
        """Tell the sink the stream is open (with its source); True."""

    def _received(self) -> None:  # noqa: B027 (a hook: nothing by default)
        """An item came (the runtime has the call)."""

    def _ended(self, code: str, details: str) -> None:  # noqa: B027 (a hook: nothing by default)
        """The call ended with status ``code``."""

    def _stream(self) -> tuple[bool, str]:
        """Hold one stream until it ends: (whether it opened, why it ended)."""
        opened = False
        try:
            channel = self._connect()
            call: Any = self._place(lambda: self._open(channel))
            if call is None:
                return opened, ""
            if self._unanswered(call):
                opened = self._opened()
            for item in call:
                self._received()
                if not opened:
                    opened = self._opened()
                event = self._decode(item)
                if event is not None:
                    self._sink.on_event(event)
            return opened, f"the runtime ended the {self.stream_name}"
        except grpc.FutureTimeoutError:
            return opened, f"cannot reach {self._endpoint} for events"
        except grpc.RpcError as err:
            name, details = rpc_status(err)
            self._ended(name, details)
            _log.debug("{} ended: {} {}", self.stream_name, name, details)
            return opened, f"{self.call_name} {name}: {details}"
        finally:
            self._stream_over(opened)
            self._clear_call()

    def _stream_over(self, opened: bool) -> None:  # noqa: B027 (a hook: nothing by default)
        """One stream is over; ``opened``: it had counted as open."""

    def _carry_on(self, opened: bool, reason: str) -> bool:
        """Whether to report the break and reconnect (False: this thread's work is over)."""
        return True

    def _connect(self) -> Any:
        """A fresh channel to the runtime, once its socket answers (FutureTimeoutError if
        it does not within CONNECT_TIMEOUT)."""
        self._close_channel()
        self._channel = grpc.insecure_channel(grpc_target(self._endpoint))
        grpc.channel_ready_future(self._channel).result(timeout=CONNECT_TIMEOUT)
        return self._channel

    def _place(self, make_call: Callable[[], Any]) -> Any:
        """Make the streaming call where stop() can cancel it; None when already stopping."""
        with self._lock:
            if self._stop.is_set():
                return None
            self._call = make_call()
            return self._call

    def _unanswered(self, call: Any) -> bool:
        """Whether the call is still going PROBE_WINDOW after it was placed (then its stream
        counts as open; otherwise it does when its first message comes, if one does)."""
        ended = threading.Event()
        call.add_done_callback(lambda _call: ended.set())
        return not ended.wait(self._probe_window)

    def _clear_call(self) -> None:
        with self._lock:
            self._call = None

    def _close_channel(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
