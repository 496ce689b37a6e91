"""Timers that deliver messages: periodic ticks and one-shot messages, through Dispatch.

``Timers`` is what an actor needs of them. TimerService runs them on one thread against
the real clock. ManualTimers fires only when a test calls ``advance``, against a
FakeClock, so actor tests run in virtual time. (A replay's timers never fire: their
firings are recorded deliveries already.)
"""

from __future__ import annotations

import heapq
import itertools
import threading
from dataclasses import dataclass, field
from typing import Protocol

from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from runtime.clock import Clock, FakeClock


@dataclass(order=True)
class _Entry:
    due: float
    seq: int
    to: str = field(compare=False)
    message: object = field(compare=False)  # None for a periodic Tick
    kind: str = field(compare=False, default="")
    period: float | None = field(compare=False, default=None)
    cancelled: bool = field(compare=False, default=False)


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Timers(Protocol):
    """Schedules messages to actors."""

    def every(self, kind: str, to: str, period: float,
              first: float | None = None) -> Cancellable:
        """Send ``Tick(kind)`` to ``to`` every ``period`` seconds, first after ``first``."""
        ...

    def once(self, delay: float, to: str, message: object) -> Cancellable:
        """Send ``message`` to ``to`` after ``delay`` seconds."""
        ...


class TimerHandle:
    def __init__(self, entry: _Entry) -> None:
        self._entry = entry

    def cancel(self) -> None:
        self._entry.cancelled = True


class _TimerHeap:
    """The schedule, shared by the threaded and the manual flavour."""

    def __init__(self, dispatch: Dispatch, clock: Clock) -> None:
        self.dispatch = dispatch
        self.clock = clock
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()

    def _push(self, entry: _Entry) -> TimerHandle:
        with self._lock:
            heapq.heappush(self._heap, entry)
        self._changed()
        return TimerHandle(entry)

    def _changed(self) -> None:
        """Hook: the schedule changed (the threaded flavour wakes its thread)."""

    def every(self, kind: str, to: str, period: float, first: float | None = None) -> TimerHandle:
        """Send ``Tick(kind)`` to ``to`` every ``period`` seconds, first after ``first``."""
        due = self.clock.monotonic() + (period if first is None else first)
        return self._push(_Entry(due, next(self._seq), to, None, kind, period))

    def once(self, delay: float, to: str, message: object) -> TimerHandle:
        """Send ``message`` to ``to`` after ``delay`` seconds."""
        due = self.clock.monotonic() + max(delay, 0.0)
        return self._push(_Entry(due, next(self._seq), to, message))

    def next_due(self) -> float | None:
        with self._lock:
            while self._heap and self._heap[0].cancelled:
                heapq.heappop(self._heap)
            return self._heap[0].due if self._heap else None

    def fire_due(self, now: float) -> int:
        """Deliver every timer due at ``now``; periodic ones are scheduled again."""
        fired = 0
        while True:
            with self._lock:
                if not self._heap or self._heap[0].due > now:
                    return fired
                entry = heapq.heappop(self._heap)
                if entry.cancelled:
                    continue
                if entry.period is not None:
                    # Next due from the previous due time, not from now: no drift.
                    nxt = _Entry(max(entry.due + entry.period, now), next(self._seq),
                                 entry.to, None, entry.kind, entry.period)
                    heapq.heappush(self._heap, nxt)
                    entry.cancelled = False
            message = entry.message if entry.message is not None else Tick(entry.kind, entry.due)
            self.dispatch.tell(entry.to, message, sender="timers")
            fired += 1


class TimerService(_TimerHeap):
    """Timers on a thread of their own, against the real clock."""

    def __init__(self, dispatch: Dispatch, clock: Clock) -> None:
        super().__init__(dispatch, clock)
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="timers", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _changed(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            self.fire_due(self.clock.monotonic())
            due = self.next_due()
            wait = None if due is None else max(due - self.clock.monotonic(), 0.0)
            self._wake.wait(timeout=wait)
            self._wake.clear()


class ManualTimers(_TimerHeap):
    """Timers that fire only when the test advances its FakeClock through them."""

    def __init__(self, dispatch: Dispatch, clock: FakeClock) -> None:
        super().__init__(dispatch, clock)
        self.fake_clock = clock

    def advance(self, seconds: float) -> int:
        """Move the clock forward, firing every timer due on the way, in order."""
        target = self.fake_clock.monotonic() + seconds
        fired = 0
        while True:
            due = self.next_due()
            if due is None or due > target:
                break
            self.fake_clock.step(max(due - self.fake_clock.monotonic(), 0.0))
            fired += self.fire_due(self.fake_clock.monotonic())
        self.fake_clock.step(max(target - self.fake_clock.monotonic(), 0.0))
        return fired

