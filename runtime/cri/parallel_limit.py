"""A bound on the CRI calls that make or unmake pods running at the same moment.

Each pod worker syncs its pod on its own thread, so when hundreds of pods arrive at once
(a node started with 500 manifests) hundreds of RunPodSandbox, CreateContainer and
StartContainer calls reach containerd together. Each runs processes of its own (the shim,
``runc create``/``runc init``, the CNI plugins), and on a small node hundreds of them at
once do not finish sooner than a few at a time: they share the CPUs, and each call then
takes longer than the CRI deadline (2 minutes). Measured here with 500 pods on 2 CPUs:
470 ``runc`` and 350 ``runc init`` processes at once, 272 StartContainer calls past their
deadline, and the kubelet failing to remove the half-made containers ("container is in
starting state") and trying again, where 8 callers at a time start the same 500 in about a
minute.

The same holds for stopping: 500 StopContainer calls at once (every manifest removed)
each make the shim run ``runc kill``, publish the exit through a ``containerd publish``
process and run ``runc delete``; containerd's own state queries to the shims then time
out and StopContainer calls ran past their deadline too ("KillContainerError: Deadline
Exceeded").

``ParallelLimit`` is an interceptor (runtime.cri.intercept) holding those calls to a
number at a time; the others wait for a slot before their call, and their deadline starts
when they make it. StopContainer has slots of its own, twice as many: it waits out the
container's grace period, and pods waiting out theirs must not hold up other pods' starts.
Reads (lists, statuses) are not held: they are cheap for the runtime, and the PLEG must
see the node while it fills or empties.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Final

from runtime.cri.intercept import Proceed

HEAVY_CALLS: Final = frozenset({
    "run_pod_sandbox",
    "stop_pod_sandbox",
    "remove_pod_sandbox",
    "create_container",
    "start_container",
    "remove_container",
})
"""The CRI calls that run processes on the node (shims, runc, CNI plugins) and are held."""

STOP_CALLS: Final = frozenset({"stop_container"})
"""Held too, in slots of their own (they may wait out a grace period)."""

CALLS_PER_CPU: Final = 4
"""Heavy calls at once per CPU: on 2 CPUs, 8, the raw-CRI callers of bench.scale_bench,
which start 500 pods in about 100 ms each."""

STOPS_PER_CPU: Final = 8
"""StopContainer calls at once per CPU."""

MIN_CALLS: Final = 4


def default_limit(cpus: int | None = None, per_cpu: int = CALLS_PER_CPU) -> int:
    """How many heavy calls run at once on a node of ``cpus`` CPUs (default: this one)."""
    count = os.cpu_count() if cpus is None else cpus
    return max(MIN_CALLS, per_cpu * (count or 1))


class ParallelLimit:
    """An interceptor letting at most ``limit`` of ``methods`` and ``stop_limit`` of
    ``stop_methods`` run at once; other calls pass."""

    def __init__(self, limit: int | None = None, methods: frozenset[str] = HEAVY_CALLS,
                 stop_limit: int | None = None, stop_methods: frozenset[str] = STOP_CALLS
                 ) -> None:
        self.limit = default_limit() if limit is None else limit
        self.stop_limit = (default_limit(per_cpu=STOPS_PER_CPU) if stop_limit is None
                           else stop_limit)
        for value in (self.limit, self.stop_limit):
            if value < 1:
                raise ValueError(f"a parallel limit of {value}: it must be at least 1")
        slots = threading.BoundedSemaphore(self.limit)
        stops = threading.BoundedSemaphore(self.stop_limit)
        self._slots = {**dict.fromkeys(methods, slots), **dict.fromkeys(stop_methods, stops)}

    def around(self, target: str, method: str, args: tuple[Any, ...], proceed: Proceed) -> Any:
        slots = self._slots.get(method)
        if slots is None:
            return proceed()
        with slots:
            return proceed()
