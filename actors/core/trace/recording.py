"""Wrappers that record what the actors get from outside: runtime answers, clock reads.

With these in place every input of a handler is in the trace, so a replay can answer the
same way without containerd and without real time.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from actors.core.trace.writer import TraceWriter
from runtime.clock import Clock
from runtime.cri.service import CRIRuntime

_RUNTIME_METHODS = frozenset(n for n in dir(CRIRuntime) if not n.startswith("_"))


class RecordingProxy:
    """Delegates ``methods`` of ``inner`` and records each call with its outcome."""

    def __init__(self, inner: Any, writer: TraceWriter, target: str,
                 methods: frozenset[str]) -> None:
        self._inner = inner
        self._writer = writer
        self._target = target
        self._methods = methods

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name not in self._methods or not callable(attribute):
            return attribute

        @functools.wraps(attribute)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                result = attribute(*args, **kwargs)
            except Exception as err:
                self._writer.call(self._target, name, args + tuple(kwargs.values()),
                                  time.monotonic() - started, None, err)
                raise
            self._writer.call(self._target, name, args + tuple(kwargs.values()),
                              time.monotonic() - started, result, None)
            return result

        setattr(self, name, recorded)
        return recorded


def recording_runtime(inner: CRIRuntime, writer: TraceWriter) -> CRIRuntime:
    proxy: Any = RecordingProxy(inner, writer, "runtime", _RUNTIME_METHODS)
    runtime: CRIRuntime = proxy
    return runtime


CONTAINERD_METHODS = frozenset({"poll", "start", "log_tail"})


class RecordingClock:
    """A clock whose every read is an input of the handler that made it."""

    def __init__(self, inner: Clock, writer: TraceWriter) -> None:
        self._inner = inner
        self._writer = writer

    def now(self) -> float:
        value = self._inner.now()
        self._writer.input("clock.now", value)
        return value

    def monotonic(self) -> float:
        value = self._inner.monotonic()
        self._writer.input("clock.monotonic", value)
        return value

    def sleep(self, seconds: float) -> None:
        self._writer.input("clock.sleep", seconds)
        self._inner.sleep(seconds)
