"""Timing of every runtime call (upstream instrumented_services.go), as an interceptor.

The observer gets the method name, the seconds it took and whether it succeeded; the
daemon feeds that to kubelet_runtime_operations_* metrics.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from runtime.cri.intercept import Proceed

Observer = Callable[[str, float, bool], None]


class Timing:
    """An interceptor (runtime.cri.intercept) that reports each call's duration."""

    def __init__(self, observe: Observer) -> None:
        self._observe = observe

    def around(self, target: str, method: str, args: tuple[Any, ...], proceed: Proceed) -> Any:
        started = time.monotonic()
        ok = False
        try:
            result = proceed()
            ok = True
            return result
        finally:
            self._observe(method, time.monotonic() - started, ok)
