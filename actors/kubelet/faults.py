"""The kubelet's own drill faults: what only a kubelet's CRI calls can go through.

``CrashAfterCreate`` lets a pod worker's CreateContainer through, then makes the worker
fail before its StartContainer, with a DrillFault (not a CRIError, which the worker would
handle): the kubelet must neither lose nor duplicate the container it created.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from actors.core import context
from actors.core.faults import FaultPlan
from actors.kubelet import names


class CrashAfterCreate:
    """An interceptor: the next ``count`` pod-worker CreateContainers crash right after."""

    def __init__(self, plan: FaultPlan, count: int = 0) -> None:
        self.plan = plan
        self.count = count
        self.created: list[str] = []  # the containers each crash left behind
        self._lock = threading.Lock()

    def around(self, target: str, method: str, args: tuple[Any, ...],
               proceed: Callable[[], Any]) -> Any:
        result = proceed()
        if method != "create_container" or not self.plan.armed or self.count <= 0:
            return result
        handling = context.current()
        if handling is None or not names.is_worker(handling.actor):
            return result
        with self._lock:
            if self.count <= 0:
                return result
            self.count -= 1
            self.created.append(str(result))
        self.plan.fire(handling.actor, handling.incarnation, handling.delivery,
                       f"between CreateContainer ({str(result)[:13]}) and StartContainer")
        return result
