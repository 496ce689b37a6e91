"""The container log manager as an actor: rotates the running containers' logs on a period.

Every ``period`` (containerLogMonitorInterval, 10 s) a Tick starts one pass of
runtime.kuberuntime.log_rotator on the actor's own thread pool, never on the actor's
thread; the next Tick starts another only once it is done. The pass comes back as a
LogsRotated note, and each rotation (or failure) is logged with its pod, uid and
container. Upstream has no metric or event for a rotation; neither has this.

Replay: a pass's inputs are file sizes on the node's disk, which no message carries, and
its only outputs are files on disk and ReopenContainerLog calls: nothing another actor
acts on. So, as the stats actor (actors.kubelet.stats_collector), it calls the runtime
outside the trace's recording, reads the real wall clock for the rotated files' names,
and a replay does not rebuild it: the trace keeps its Ticks and LogsRotated notes, which
decide nothing.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers
from actors.core.trace.names import message
from actors.kubelet import names
from runtime.kuberuntime.log_rotation import DEFAULT_MONITOR_INTERVAL
from runtime.kuberuntime.log_rotator import ContainerLogRotator, RotatedLog


@dataclass(frozen=True, slots=True)
class LogRotationParts:
    """What the log rotation actor is made of (None in a replay: it is not rebuilt)."""

    rotator: ContainerLogRotator
    period: float = DEFAULT_MONITOR_INTERVAL


@message("LogsRotated")
@dataclass(frozen=True, slots=True)
class LogsRotated:
    """Internal: a pass ended (how long it took, what it rotated, what failed)."""

    seconds: float
    containers: int = 0
    rotations: tuple[RotatedLog, ...] = ()
    error: str = ""


class LogRotationActor(Actor):
    """Runs a rotation pass per Tick, one at a time, and logs what it did."""

    def __init__(self, dispatch: Dispatch, timers: Timers, parts: LogRotationParts | None,
                 incarnation: int = 0, executor: Executor | None = None) -> None:
        super().__init__(names.LOG_ROTATION, dispatch, incarnation)
        self._timers = timers
        self._parts = parts
        self._pool: Executor = executor or ThreadPoolExecutor(1, thread_name_prefix="logrot")
        self._busy = False
        self._ticker: Cancellable | None = None
        self._log = logger.bind(pod="", uid="", container="")

    def on_start(self) -> None:
        if self._parts is not None:
            policy = self._parts.rotator.policy
            self._log.info("container log rotation: every {}s, logs over {} bytes, at most "
                           "{} files per container", self._parts.period, policy.max_size,
                           policy.max_files)
            # A pass at once, then every period: upstream's wait.Forever.
            self._ticker = self._timers.every(names.TICK_LOG_ROTATION, self.name,
                                              self._parts.period, first=0.0)

    def on_stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind == names.TICK_LOG_ROTATION:
            if not self._busy and self._parts is not None:
                self._busy = True
                self._pool.submit(self._rotate, self._parts)
        elif isinstance(message, LogsRotated):
            self._busy = False
            self._report(message)
        else:
            return super().handle(message)
        return None

    def _report(self, done: LogsRotated) -> None:
        if done.error:
            self._log.warning("failed to rotate container logs: {}", done.error)
        for r in done.rotations:
            log = logger.bind(pod=r.pod, uid=r.uid, container=r.container)
            if r.error:
                log.warning("failed to rotate log for container {}: {}", r.container_id,
                            r.error)
            else:
                log.info("rotated container log {} ({} bytes) to {}; removed {}, "
                         "compressed {}", r.path, r.size, r.rotated_to, len(r.removed),
                         len(r.compressed))

    def _rotate(self, parts: LogRotationParts) -> None:
        started = time.monotonic()
        try:
            done = parts.rotator.rotate_all()
            note = LogsRotated(time.monotonic() - started, done.containers, done.rotations,
                               done.error)
        except Exception as err:  # a bug: logged, and the next Tick tries again
            self._log.opt(exception=err).warning("container log rotation failed: {}", err)
            note = LogsRotated(time.monotonic() - started, error=f"{type(err).__name__}: {err}")
        self.send(self.name, note)
