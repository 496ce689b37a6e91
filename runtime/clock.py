"""Time as an injected dependency, so tests and replays can run in virtual time."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """What the kubelet needs of time: a wall clock, a monotonic clock, and sleeping."""

    def now(self) -> float:
        """Seconds since the epoch (wall time, for timestamps shown to users)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for durations and deadlines)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for ``seconds`` of this clock's time."""
        ...


class RealClock:
    """The system clock."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to; ``sleep`` advances it instead of blocking."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._wall = start
        self._mono = 1000.0
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._wall

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def sleep(self, seconds: float) -> None:
        self.step(seconds)

    def step(self, seconds: float) -> None:
        """Move both clocks forward by ``seconds``."""
        if seconds < 0:
            raise ValueError("a clock never goes back: step() takes seconds >= 0")
        with self._lock:
            self._wall += seconds
            self._mono += seconds
