"""What the actors get from outside, recorded: calls' answers and clock reads.

With these in place every input of a handler is in the trace, so a replay can answer the
same way without the outside world and without real time. ``RecordingInterceptor`` is an
interceptor in the sense of runtime.cri.intercept (it matches that protocol by shape, so
the framework needs nothing of runtime but the clock).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from actors.core.hooks import Recorder
from runtime.clock import Clock


class RecordingInterceptor:
    """Records every call it stands around, with its outcome and duration."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def around(self, target: str, method: str, args: tuple[Any, ...],
               proceed: Callable[[], Any]) -> Any:
        started = time.monotonic()
        try:
            result = proceed()
        except Exception as err:
            self._recorder.call(target, method, args, time.monotonic() - started, None, err)
            raise
        self._recorder.call(target, method, args, time.monotonic() - started, result, None)
        return result


class RecordingClock:
    """A clock whose every read is an input of the handler that made it."""

    def __init__(self, inner: Clock, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    def now(self) -> float:
        value = self._inner.now()
        self._recorder.input("clock.now", value)
        return value

    def monotonic(self) -> float:
        value = self._inner.monotonic()
        self._recorder.input("clock.monotonic", value)
        return value

    def sleep(self, seconds: float) -> None:
        self._recorder.input("clock.sleep", seconds)
        self._inner.sleep(seconds)
