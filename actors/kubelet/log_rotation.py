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
from concurrent.futures import Executor

from loguru import logger
from msgspec import Struct

from actors.core.dispatch import Dispatch
from actors.core.periodic import PeriodicJob
from actors.core.timers import Timers
from actors.core.trace.names import message
from actors.kubelet import names
from runtime.kuberuntime.log_rotation import DEFAULT_MONITOR_INTERVAL
from runtime.kuberuntime.log_rotator import ContainerLogRotator, RotatedLog


class LogRotationParts(Struct, frozen=True):
    """What the log rotation actor is made of (None in a replay: it is not rebuilt)."""

    rotator: ContainerLogRotator
    period: float = DEFAULT_MONITOR_INTERVAL


@message("LogsRotated")
class LogsRotated(Struct, frozen=True):
    """Internal: a pass ended (how long it took, what it rotated, what failed)."""

    seconds: float
    containers: int = 0
    rotations: tuple[RotatedLog, ...] = ()
    error: str = ""


class LogRotationActor(PeriodicJob[LogsRotated]):
    """Runs a rotation pass per Tick, one at a time, and logs what it did."""

    done_type = LogsRotated

    def __init__(self, dispatch: Dispatch, timers: Timers, parts: LogRotationParts | None,
                 incarnation: int = 0, executor: Executor | None = None) -> None:
        # A pass at once, then every period: upstream's wait.Forever.
        super().__init__(names.LOG_ROTATION, dispatch, timers, names.TICK_LOG_ROTATION,
                         parts.period if parts is not None else None, incarnation, executor,
                         thread_prefix="logrot")
        self._parts = parts
        self._log = logger.bind(pod="", uid="", container="")

    def on_start(self) -> None:
        if self._parts is not None:
            policy = self._parts.rotator.policy
            self._log.info("container log rotation: every {}s, logs over {} bytes, at most "
                           "{} files per container", self._parts.period, policy.max_size,
                           policy.max_files)
        super().on_start()

    def finished(self, done: LogsRotated) -> None:
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

    def job(self) -> LogsRotated:
        assert self._parts is not None  # no Tick starts a job without them
        started = time.monotonic()
        try:
            done = self._parts.rotator.rotate_all()
            return LogsRotated(time.monotonic() - started, done.containers, done.rotations,
                               done.error)
        except Exception as err:  # a bug: logged, and the next Tick tries again
            self._log.opt(exception=err).warning("container log rotation failed: {}", err)
            return LogsRotated(time.monotonic() - started, error=f"{type(err).__name__}: {err}")
