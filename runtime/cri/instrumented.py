"""A CRI runtime wrapper that times every call (upstream instrumented_services.go).

The observer gets the method name, the seconds it took and whether it succeeded; the
daemon feeds that to kubelet_runtime_operations_* metrics. Wrapping by attribute keeps
this free of per-method boilerplate while still satisfying the CRIRuntime protocol.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from runtime.cri.service import CRIRuntime
from runtime.errors import CRIError

Observer = Callable[[str, float, bool], None]

_METHODS = frozenset(n for n in dir(CRIRuntime) if not n.startswith("_"))


class InstrumentedRuntime:
    """Delegates every CRIRuntime method to ``inner`` and reports each call's duration."""

    def __init__(self, inner: CRIRuntime, observe: Observer) -> None:
        self._inner = inner
        self._observe = observe

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if name not in _METHODS or not callable(target):
            return target

        @functools.wraps(target)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            ok = False
            try:
                result = target(*args, **kwargs)
                ok = True
                return result
            except CRIError:
                raise
            finally:
                self._observe(name, time.monotonic() - started, ok)

        setattr(self, name, timed)  # cache: the next call skips __getattr__
        return timed


def instrument(inner: CRIRuntime, observe: Observer) -> CRIRuntime:
    """``inner`` with every call observed, typed as the protocol it implements."""
    wrapped: Any = InstrumentedRuntime(inner, observe)
    result: CRIRuntime = wrapped
    return result
