"""Call recording and fault injection shared by the in-memory CRI fakes.

``CallRecorder`` is the base of runtime.testing.fake_runtime.FakeRuntime: each protocol
method calls ``_enter(name, *args)`` under the lock, which records a ``Call`` and raises the
next injected failure that is due for that method.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from runtime.cri.service import CRIRuntime

METHODS = frozenset(name for name in dir(CRIRuntime) if not name.startswith("_"))
"""The CRI protocol methods: what ``fail``, ``called`` and ``calls_to`` take as names."""


@dataclass(frozen=True, slots=True)
class Call:
    """One recorded protocol call: the method name and its arguments, in signature order."""

    method: str
    args: tuple[Any, ...]


@dataclass(slots=True)
class _Failure:
    error: Exception
    remaining: int | None  # None: always


class CallRecorder:
    """Records calls and raises injected errors; holds the lock its subclasses share."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._calls: list[Call] = []
        self._failures: dict[str, list[_Failure]] = {}

    @property
    def calls(self) -> list[Call]:
        """A copy of every protocol call so far, oldest first."""
        with self._lock:
            return list(self._calls)

    def called(self, method: str) -> int:
        """How many times ``method`` (a protocol method name) was called."""
        with self._lock:
            return sum(1 for c in self._calls if c.method == method)

    def calls_to(self, method: str) -> list[Call]:
        """The recorded calls of ``method``, oldest first."""
        with self._lock:
            return [c for c in self._calls if c.method == method]

    def clear_calls(self) -> None:
        """Forget the recorded calls."""
        with self._lock:
            self._calls.clear()

    def fail(self, method: str, error: Exception, times: int = 1) -> None:
        """Make the next ``times`` calls of ``method`` raise ``error`` (and change nothing)."""
        self._add_failure(method, _Failure(error, times))

    def fail_always(self, method: str, error: Exception) -> None:
        """Make every call of ``method`` raise ``error`` until ``clear_failures``."""
        self._add_failure(method, _Failure(error, None))

    def clear_failures(self, method: str | None = None) -> None:
        """Drop the injected failures of ``method``, or of every method."""
        with self._lock:
            if method is None:
                self._failures.clear()
            else:
                self._failures.pop(method, None)

    def _add_failure(self, method: str, failure: _Failure) -> None:
        if method not in METHODS:
            raise ValueError(f"{method!r} is not a CRI service method: {sorted(METHODS)}")
        with self._lock:
            self._failures.setdefault(method, []).append(failure)

    def _enter(self, method: str, *args: Any) -> None:
        """Record the call, then raise the first injected failure that is due."""
        self._calls.append(Call(method, args))
        queue = self._failures.get(method)
        if not queue:
            return
        failure = queue[0]
        if failure.remaining is not None:
            failure.remaining -= 1
            if failure.remaining <= 0:
                queue.pop(0)
        raise failure.error
