"""A runtime event sink for tests: keeps what an event subscription tells it."""

from __future__ import annotations

import threading

from runtime.cri.runtime_events import RuntimeEvent


class CollectingSink:
    """An EventSink that keeps every event and every connection state it is told."""

    def __init__(self) -> None:
        self.events: list[RuntimeEvent] = []
        self.states: list[str] = []
        self._lock = threading.Lock()

    def on_event(self, event: RuntimeEvent) -> None:
        with self._lock:
            self.events.append(event)

    def on_connected(self, source: str) -> None:
        with self._lock:
            self.states.append(f"connected: {source}")

    def on_lost(self, reason: str) -> None:
        with self._lock:
            self.states.append(f"lost: {reason}")

    def seen(self) -> tuple[list[str], list[RuntimeEvent]]:
        """The states and the events so far."""
        with self._lock:
            return list(self.states), list(self.events)

    def of(self, container_id: str) -> list[RuntimeEvent]:
        """The events of one container so far."""
        with self._lock:
            return [e for e in self.events if e.container_id == container_id]
