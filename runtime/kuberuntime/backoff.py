"""Per-key exponential back-off with a reset window (upstream flowcontrol.Backoff).

Used for crash loops (key: pod and container, event time: the last exit) and image pulls
(key: pod UID and image). A key that saw no event for twice the maximum starts over. Keys
are values that name their pod, so the runtime manager can drop a removed pod's entries
(``forget``); ``gc`` drops the idle ones, as upstream's housekeeping does.

The tables are shared by every pod worker and the pod killer (one runtime manager), and
outlive a worker's restart: what a read answers depends on other actors' work, so each
read goes through ``observe`` (a kubelet passes its Dispatch's, which records the answer
as an input of the handler that read it, and a replay answers the same).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from runtime.clock import Clock

K = TypeVar("K", bound=Hashable)

Observe = Callable[[str, float], float]
"""(input name, value) -> the value to use: what a read of shared state goes through."""


def unobserved(name: str, value: float) -> float:
    return value


@dataclass(slots=True)
class _Entry:
    backoff: float
    last_update: float


class Backoff(Generic[K]):
    """Exponential back-off per key, ``initial`` doubling to ``maximum`` seconds."""

    def __init__(self, clock: Clock, initial: float, maximum: float, name: str = "backoff",
                 observe: Observe = unobserved) -> None:
        self._clock = clock
        self._name = name  # reads are observed as "<name>.get", "<name>.remaining"
        self._observe = observe
        self._initial = initial
        self._max = maximum
        self._entries: dict[K, _Entry] = {}
        self._lock = threading.Lock()

    def _expired(self, entry: _Entry, event_time: float) -> bool:
        return event_time - entry.last_update > 2 * self._max

    def get(self, key: K) -> float:
        """The current back-off of ``key`` in seconds (0 when it has none)."""
        with self._lock:
            entry = self._entries.get(key)
            value = entry.backoff if entry else 0.0
        return self._observe(f"{self._name}.get", value)

    def next(self, key: K, event_time: float) -> float:
        """Record a failure at ``event_time`` (wall seconds); return the new back-off."""
        with self._lock:
            entry = self._entries.get(key)
            now = self._clock.now()
            if entry is None or self._expired(entry, event_time):
                entry = _Entry(self._initial, now)
                self._entries[key] = entry
            else:
                entry.backoff = min(entry.backoff * 2, self._max)
                entry.last_update = now
            return entry.backoff

    def in_backoff_since(self, key: K, event_time: float) -> float:
        """Seconds still to wait when the last failure was at ``event_time``; 0 if none."""
        with self._lock:
            entry = self._entries.get(key)
            remaining = 0.0
            if entry is not None and not self._expired(entry, event_time):
                remaining = max(entry.backoff - (self._clock.now() - event_time), 0.0)
        return self._observe(f"{self._name}.remaining", remaining)

    def in_backoff_since_update(self, key: K) -> float:
        """Seconds still to wait since the last recorded failure of ``key``; 0 if none."""
        with self._lock:
            entry = self._entries.get(key)
            now = self._clock.now()
            remaining = 0.0
            if entry is not None and not self._expired(entry, now):
                remaining = max(entry.backoff - (now - entry.last_update), 0.0)
        return self._observe(f"{self._name}.remaining", remaining)

    def reset(self, key: K) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def __len__(self) -> int:
        """How many keys have an entry (what must not grow with every pod ever seen)."""
        with self._lock:
            return len(self._entries)

    def forget(self, belongs: Callable[[K], bool]) -> None:
        """Drop every key ``belongs`` picks: the keys of a pod that is gone."""
        with self._lock:
            for key in [k for k in self._entries if belongs(k)]:
                del self._entries[key]

    def gc(self) -> None:
        """Forget keys that saw nothing for twice the maximum back-off."""
        with self._lock:
            now = self._clock.now()
            for key in [k for k, e in self._entries.items() if now - e.last_update > 2 * self._max]:
                del self._entries[key]
