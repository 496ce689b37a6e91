"""What the emulated API server was asked, in order: for drills that count requests.

Each API request that reached the fault rules (authenticated, routed, authorized) is one
:class:`Request`: when (wall-clock seconds), the verb and resource, the name, the
resourceVersion asked for, and the status code of the fault that answered it (0: served).
A drill reads it to check that a client backs off, honours Retry-After and does not relist
in a tight loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

MAX_KEPT = 100_000
"""The log keeps this many requests (the oldest go first): a long run stays bounded."""


@dataclass(frozen=True, slots=True)
class Request:
    at: float
    verb: str
    resource: str
    name: str
    resource_version: str | None
    fault_code: int  # 0: served by the registry; else the code an injected fault answered

    def json(self) -> dict[str, Any]:
        return asdict(self)


class RequestLog:
    """A thread-safe, bounded log of requests."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._requests: list[Request] = []

    def record(self, verb: str, resource: str, name: str, query: dict[str, str],
               fault_code: int) -> None:
        entry = Request(self._clock(), verb, resource, name, query.get("resourceVersion"),
                        fault_code)
        with self._lock:
            self._requests.append(entry)
            if len(self._requests) > MAX_KEPT:
                del self._requests[: len(self._requests) - MAX_KEPT]

    def since(self, at: float = 0.0) -> list[Request]:
        with self._lock:
            return [r for r in self._requests if r.at >= at]
