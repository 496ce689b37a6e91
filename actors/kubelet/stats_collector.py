"""The stats actor: collects the node's and the pods' resource stats on a period, into a
cache the HTTP API reads.

Every ``period`` (10 s: upstream's cAdvisor housekeeping interval, pkg/kubelet/cadvisor
defaultHousekeepingInterval) a Tick starts one collection (runtime.stats.collector) on the
actor's own thread pool, never on the actor's thread; the next Tick starts another only once
it is done, so a slow runtime never piles collections up. Each result replaces the one in
the StatsCache; ``/stats/summary`` and the metrics endpoints read the cache and never wait
on CRI.

Replay: the collector's inputs are measurements (CRI stats, cgroups, /proc, disk usage)
that no other actor acts on; its output goes only to the HTTP API. So it calls the runtime
outside the trace's recording (its own unrecorded interceptor chain), reads the real wall
clock, and a replay does not rebuild it: the trace keeps its Ticks and StatsCollected
notes, which decide nothing.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Executor

from loguru import logger
from msgspec import Struct

from actors.core.dispatch import Dispatch
from actors.core.periodic import PeriodicJob
from actors.core.timers import Timers
from actors.core.trace.names import message
from actors.kubelet import names
from actors.kubelet.eviction import SignalsObserved
from runtime.eviction.signals import observe
from runtime.stats.collector import StatsCollector, StatsSnapshot

PERIOD_S = 10.0
"""upstream's cAdvisor housekeeping interval: how old the served stats may be."""


class StatsCache:
    """The newest StatsSnapshot; read by HTTP threads, replaced by the collection thread
    (one reference swap: readers never block on a collection)."""

    def __init__(self) -> None:
        self._snapshot: StatsSnapshot | None = None
        self._lock = threading.Lock()
        self.collections = 0

    def get(self) -> StatsSnapshot | None:
        return self._snapshot

    def put(self, snapshot: StatsSnapshot) -> None:
        with self._lock:
            self._snapshot = snapshot
            self.collections += 1


class StatsParts(Struct, frozen=True):
    """What the stats actor is made of (None in a replay: it is not rebuilt)."""

    collector: StatsCollector
    cache: StatsCache
    period: float = PERIOD_S
    eviction: bool = False  # each collection's signals go to the eviction manager


@message("StatsCollected")
class StatsCollected(Struct, frozen=True):
    """Internal: a collection ended (how long it took, what failed)."""

    seconds: float
    error: str = ""


class StatsActor(PeriodicJob[StatsCollected]):
    """Runs a collection per Tick, one at a time, and publishes it to the cache."""

    done_type = StatsCollected

    def __init__(self, dispatch: Dispatch, timers: Timers, parts: StatsParts | None,
                 incarnation: int = 0, executor: Executor | None = None) -> None:
        super().__init__(names.STATS, dispatch, timers, names.TICK_STATS,
                         parts.period if parts is not None else None, incarnation, executor,
                         thread_prefix="stats")
        self._parts = parts
        self._log = logger.bind(pod="", uid="", container="")

    def finished(self, done: StatsCollected) -> None:
        if done.error:
            self._log.warning("stats collection incomplete: {}", done.error)

    def job(self) -> StatsCollected:
        assert self._parts is not None  # no Tick starts a job without them
        parts = self._parts
        started = time.monotonic()
        try:
            snapshot = parts.collector.collect()
            parts.cache.put(snapshot)
            error = snapshot.error
            if parts.eviction:
                self.send(names.EVICTION, SignalsObserved(
                    observe(snapshot.summary, snapshot.taken_at)))
        except Exception as err:  # the runtime away, a bug: the cache keeps the last one
            if self.stopping:  # the daemon closed the runtime's channel under it
                self._log.debug("stats collection ended by the stop: {}", err)
            else:
                self._log.opt(exception=err).warning("stats collection failed: {}", err)
            error = f"{type(err).__name__}: {err}"
        return StatsCollected(time.monotonic() - started, error)
