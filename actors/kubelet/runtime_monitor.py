"""Watches the CRI runtime: answers or not, and (embedded mode) restarts containerd.

On every Tick("runtime-check") it asks the runtime for its status with a short timeout.
While the runtime does not answer it checks again after 100 ms, doubling to 5 s (upstream's
syncLoop back-off), and tells the supervisor only when health changes: whether it answers,
and whether its network is ready (NetworkReady, as upstream's updateRuntimeUp reads it). An embedded
containerd that exited is started again, with back-off 1 s doubling to 30 s.
"""

from __future__ import annotations

from typing import Any

from loguru import logger
from msgspec import Struct

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Timers
from actors.core.trace.names import message
from actors.kubelet import names
from actors.kubelet.messages import RuntimeHealth
from actors.kubelet.metrics import KubeletMetrics
from runtime.clock import Clock
from runtime.containerd.managed import ManagedContainerd
from runtime.cri.conditions import condition_errors
from runtime.cri.service import RuntimeService
from runtime.errors import CRIError, KubeletError

CHECK_MIN, CHECK_MAX = 0.1, 5.0
RESTART_MIN, RESTART_MAX = 1.0, 30.0


@message("Recheck")
class Recheck(Struct, frozen=True):
    """Internal: check again now (a back-off timer fired)."""


class RuntimeMonitor(Actor):
    """Reports RuntimeHealth changes to the supervisor and keeps containerd running."""

    def __init__(
        self,
        dispatch: Dispatch,
        timers: Timers,
        runtime: RuntimeService,
        clock: Clock,
        containerd: ManagedContainerd | None = None,
        metrics: KubeletMetrics | None = None,
        incarnation: int = 0,
    ) -> None:
        super().__init__(names.RUNTIME_MONITOR, dispatch, incarnation)
        self._timers = timers
        self._runtime = runtime
        self._clock = clock
        self._containerd = containerd
        self._metrics = metrics
        self._healthy: bool | None = None
        self._network_error = ""  # kept while the runtime does not answer, as upstream
        self._reported_network = ""
        self._check_delay = CHECK_MIN
        self._restart_delay = RESTART_MIN
        self._next_restart = 0.0
        self._recheck_pending = False

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind == names.TICK_RUNTIME_CHECK:
            if not self._recheck_pending:
                self.check()
        elif isinstance(message, Recheck):
            self._recheck_pending = False
            self.check()
        else:
            return super().handle(message)
        return None

    def check(self) -> None:
        reason = self._containerd_reason()
        if reason is None:
            try:
                status = self._runtime.status()
                cond = status.condition("RuntimeReady")
                if cond is not None and not cond.status:
                    reason = f"runtime not ready: {cond.reason} {cond.message}".strip()
                self._network_error = condition_errors(status)[1] or ""
            except CRIError as err:
                reason = f"container runtime is down: {err.detail}"
        self._report(reason)

    def _containerd_reason(self) -> str | None:
        """None if containerd runs (or is not ours); else why not, restarting it if due."""
        if self._containerd is None:
            return None
        code = self._containerd.poll()
        if code is None:
            return None
        now = self._clock.monotonic()
        reason = f"embedded containerd exited with code {code}"
        if now < self._next_restart:
            return reason
        logger.warning("{}; restarting it", reason)
        try:
            self._containerd.start()
            if self._metrics is not None:
                self._metrics.containerd_restarts.inc()
            self._restart_delay = RESTART_MIN
            return None
        except KubeletError as err:
            self._next_restart = now + self._restart_delay
            self._restart_delay = min(self._restart_delay * 2, RESTART_MAX)
            return f"{reason}; restart failed: {err}"

    def _report(self, reason: str | None) -> None:
        healthy = reason is None
        network = self._network_error
        if healthy != self._healthy or network != self._reported_network:
            if healthy != self._healthy and healthy:
                logger.info("container runtime is healthy")
            elif healthy != self._healthy:
                logger.warning("{}", reason)
            if network != self._reported_network:
                logger.info("container runtime network: {}", network or "ready")
            self.send(names.SYNC_LOOP, RuntimeHealth(healthy, reason or "", network))
        self._healthy = healthy
        self._reported_network = network
        if healthy:
            self._check_delay = CHECK_MIN
            return
        self._recheck_pending = True
        self._timers.once(self._check_delay, self.name, Recheck())
        self._check_delay = min(self._check_delay * 2, CHECK_MAX)
