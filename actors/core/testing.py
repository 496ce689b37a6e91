"""Helpers for actor tests, shipped with the package: a collecting stand-in actor, and
the virtual-time pair (ManualTimers, FakeClock) actor tests drive.

Register an Inbox under the names an actor sends to and assert on what arrives, waiting
with a deadline instead of sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pykka

from actors.core.dispatch import Dispatch
from actors.core.envelope import Envelope
from actors.core.timers import ManualTimers
from runtime.clock import FakeClock

T = TypeVar("T")

__all__ = ["FakeClock", "Inbox", "ManualTimers", "Received"]


class Received:
    """The messages a Collector got, shared with the test thread under a lock."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)


class _Barrier:
    """Asked of a Collector: answered after every message told before it was recorded."""


class Collector(pykka.ThreadingActor):
    """Records every message it receives, in order."""

    def __init__(self, received: Received) -> None:
        super().__init__()
        self.received = received

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, _Barrier):
            with self.received.lock:
                return len(self.received.messages)
        if isinstance(message, Envelope):
            message = message.message
        with self.received.arrived:
            self.received.messages.append(message)
            self.received.arrived.notify_all()
        return None


class Inbox:
    """A started Collector registered under one or more names, with waiting helpers."""

    def __init__(self, dispatch: Dispatch, *names: str) -> None:
        self._actor = Received()
        self.ref = Collector.start(self._actor)
        for name in names:
            dispatch.register(name, self.ref)

    def all(self, kind: type[T] | None = None) -> list[T]:
        with self._actor.lock:
            return [m for m in self._actor.messages if kind is None or isinstance(m, kind)]

    def wait(self, kind: type[T], predicate: Callable[[T], bool] = lambda _: True,
             timeout: float = 10.0) -> T:
        """The first message of ``kind`` matching ``predicate``, waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._actor.arrived:
            while True:
                for message in self._actor.messages:
                    if isinstance(message, kind) and predicate(message):
                        return message
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    seen = [type(m).__name__ for m in self._actor.messages]
                    raise AssertionError(
                        f"no {kind.__name__} matching within {timeout}s; got {seen}")
                self._actor.arrived.wait(remaining)

    def count(self, timeout: float = 10.0) -> int:
        """How many messages arrived, once everything already sent to it has arrived."""
        answer: Any = self.ref.ask(_Barrier(), block=True, timeout=timeout)
        return int(answer)

    def clear(self) -> None:
        with self._actor.lock:
            self._actor.messages.clear()

    def stop(self) -> None:
        self.ref.stop()
