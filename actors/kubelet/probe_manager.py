"""The probe manager: runs every container's liveness, readiness and startup probes.

It learns what runs from the pod workers (PodObserved) and forgets pods on PodForgotten.
Each probed container has one runtime.prober.worker.ProbeWorker per probe kind, keyed by
(pod UID, container name, kind); the workers are pure state machines and the actor owns
the schedule:

- one min-heap of (due time, key) holds the next attempt of every worker, and a single
  periodic Tick("probe") (every ``tick`` seconds, only while there are workers) pops what is
  due, so 110 pods x 3 probes cost one heap operation per attempt and ten cheap ticks a
  second, and nothing waits;
- an attempt runs on a small ThreadPoolExecutor (``workers`` threads, whatever the number
  of pods), never on the actor thread; its answer comes back as a ProbeOutcome message
  through Dispatch, so a trace holds it and a replay can feed it again;
- an answer whose worker is gone, or whose container or attempt number no longer matches,
  is dropped;
- when a worker's result flips, ProbeVerdict goes to "supervisor" (liveness and startup
  failures restart containers) and "status" (readiness and started). A new readiness
  worker announces its initial Failure, so the status shows the container not ready;
- across a kubelet restart (this project's own, see runtime.prober.state): the results a
  previous run reached come in ``restored`` (read by the daemon before the actors start,
  and recorded with the trace's start config); a new worker continues from its entry
  when the entry names the same container id and that container runs, else it starts
  from the initial result. After each message the workers it touched are compared with
  what was last saved, and ``state`` is given the whole set only when one changed;
- across its own restart by the sync loop: that same set also goes to
  the sync loop as a HandOver (actors.core.messages) whenever it changes, and the sync
  loop starts the next incarnation with it as ``restored`` (actors.kubelet.tree
  successors), checked against the container ids as above, so a ready pod stays ready
  through a crash of the probe manager.
"""

from __future__ import annotations

import heapq
import itertools
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import HandOver, Tick
from actors.core.timers import Cancellable, Timers
from actors.core.trace.names import message
from actors.kubelet import names
from actors.kubelet.messages import PodForgotten, PodObserved, ProbeKind, ProbeVerdict, WorkerState
from actors.kubelet.probe_metrics import ProbeMetrics
from runtime.clock import Clock
from runtime.cri.service import RuntimeService
from runtime.events.probes import probe_event
from runtime.events.recorder import NULL_RECORDER, EventRecorder, ObjectRef, container_ref
from runtime.ids import ContainerID, PodUID
from runtime.pod.model import Container, Pod, Probe
from runtime.prober.handlers import attempt_probe
from runtime.prober.results import ProbeResult
from runtime.prober.state import ProbeStateSink, SavedProbe, resume_probe, saved_probe
from runtime.prober.worker import EPSILON, INITIAL_RESULT, ProbeWorker

if TYPE_CHECKING:
    from loguru import Logger

TICK_KIND = names.TICK_PROBE
DEFAULT_TICK = 0.1
"""Seconds between schedule checks: the lateness a probe may have, at most."""

Key = tuple[PodUID, str, ProbeKind]
"""A worker's key: pod UID, container name, probe kind."""

_ORDER = (ProbeKind.STARTUP, ProbeKind.LIVENESS, ProbeKind.READINESS)


@message("ProbeOutcome")
@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """Internal: one probe attempt finished on the pool (``seq`` is the attempt number)."""

    uid: PodUID
    container_name: str
    kind: ProbeKind
    container_id: ContainerID
    seq: int
    result: ProbeResult
    output: str
    started_at: float  # monotonic
    finished_at: float  # monotonic
    # The exec command's exit code or the HTTP status; None when the attempt has none (a
    # tcpSocket or grpc probe) and in traces recorded before it was kept.
    code: int | None = None


@message("ProbeQuery")
@dataclass(frozen=True, slots=True)
class ProbeQuery:
    """Ask (pykka ``ask``) for a ProbeSnapshot: what the manager runs, for tests and views."""


@dataclass(frozen=True, slots=True)
class WorkerView:
    uid: PodUID
    container_name: str
    kind: ProbeKind
    container_id: ContainerID
    result: ProbeResult
    in_flight: bool
    on_hold: bool
    next_due: float | None


@dataclass(frozen=True, slots=True)
class ProbeSnapshot:
    workers: tuple[WorkerView, ...]
    in_flight: int
    scheduled: int  # heap entries, live and stale


@dataclass(slots=True)
class _Probed:
    """A worker and what an attempt needs: the pod's name and IP, the container spec."""

    worker: ProbeWorker
    pod: str  # the pod name, for logs
    container: Container
    pod_ip: str
    ref: ObjectRef  # the container, as its events name it
    scheduled: float | None = None  # due time of this worker's live heap entry
    namespace: str = ""  # for /metrics/probes


def _probes(container: Container) -> tuple[tuple[ProbeKind, Probe], ...]:
    found = {
        ProbeKind.STARTUP: container.startup_probe,
        ProbeKind.LIVENESS: container.liveness_probe,
        ProbeKind.READINESS: container.readiness_probe,
    }
    return tuple((kind, probe) for kind in _ORDER if (probe := found[kind]) is not None)


def _probed_containers(pod: Pod) -> tuple[Container, ...]:
    """Regular containers and sidecars (restartable init containers) are probed."""
    sidecars = tuple(c for c in pod.spec.init_containers if c.is_restartable_init)
    return sidecars + pod.spec.containers


class ProbeManager(Actor):
    """Schedules probe attempts, runs them on a pool and publishes verdicts that flip."""

    def __init__(
        self,
        dispatch: Dispatch,
        timers: Timers,
        runtime: RuntimeService,
        clock: Clock,
        incarnation: int = 0,
        workers: int = 8,
        tick: float = DEFAULT_TICK,
        executor: Executor | None = None,
        events: EventRecorder = NULL_RECORDER,
        probe_metrics: ProbeMetrics | None = None,
        restored: tuple[SavedProbe, ...] = (),
        state: ProbeStateSink | None = None,
    ) -> None:
        super().__init__(names.PROBES, dispatch, incarnation)
        self._events = events
        self._probe_metrics = probe_metrics
        self._timers = timers
        self._runtime = runtime
        self._clock = clock
        self._tick = tick
        # A replay passes an executor that runs nothing: the outcomes are in the trace.
        self._pool: Executor = executor or ThreadPoolExecutor(
            max(workers, 1), thread_name_prefix="probe")
        self._workers: dict[Key, _Probed] = {}
        self._by_pod: dict[PodUID, set[Key]] = {}
        self._heap: list[tuple[float, int, Key]] = []
        self._seq = itertools.count()
        self._ticker: Cancellable | None = None
        # Kept across restarts: entries of the previous run not yet offered to a worker,
        # what was last saved per worker, and the workers the current message touched.
        self._restored: dict[tuple[PodUID, str, str], SavedProbe] = {
            saved.key: saved for saved in restored}
        self._state = state
        self._saved: dict[Key, SavedProbe] = {}
        self._touched: set[Key] = set()
        self._state_changed = False

    # --- messages ------------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        try:
            return self._handle(message)
        finally:
            if self._touched or self._state_changed:
                self._save_state()

    def _handle(self, message: Any) -> Any:
        if isinstance(message, Tick):
            if message.kind == TICK_KIND:
                self._run_due(message.at)
        elif isinstance(message, ProbeOutcome):
            self._outcome(message)
        elif isinstance(message, PodObserved):
            self._observed(message)
        elif isinstance(message, PodForgotten):
            self._drop_pod(message.uid)
        elif isinstance(message, ProbeQuery):
            return self._snapshot()
        else:
            return super().handle(message)
        return None

    def on_stop(self) -> None:
        self._stop_ticking()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # --- pods ----------------------------------------------------------------------------

    def _observed(self, message: PodObserved) -> None:
        pod, status = message.pod, message.runtime
        uid = PodUID(pod.uid or status.uid)
        if message.state == WorkerState.TERMINATED:
            self._drop_pod(uid)
            return
        # A pod on its way out is not probed: readiness fails, liveness stays quiet.
        stopping = (message.state == WorkerState.TERMINATING
                    or pod.metadata.deletion_timestamp is not None)
        pod_name = pod.metadata.name  # as every actor logs it
        pod_ip = status.ips[0] if status.ips else ""
        mono, wall = self._clock.monotonic(), self._clock.now()
        wanted: set[Key] = set()
        for container in _probed_containers(pod):
            instance = status.find_container(container.name)
            for kind, probe in _probes(container):
                key = (uid, container.name, kind)
                entry = self._workers.get(key)
                if instance is None:  # not created yet, or removed: keep what we have
                    if entry is not None:
                        wanted.add(key)
                    continue
                wanted.add(key)
                running = instance.is_running and not stopping
                started_at = instance.started_at or wall
                not_before = mono + (started_at + probe.initial_delay_seconds - wall)
                if entry is None or entry.worker.probe != probe:
                    worker = ProbeWorker(kind.value, probe, instance.id, not_before, running)
                    entry = _Probed(worker, pod_name, container, pod_ip,
                                    container_ref(pod, container),
                                    namespace=pod.metadata.namespace)
                    self._workers[key] = entry
                    self._by_pod.setdefault(uid, set()).add(key)
                    self._log(key, entry).debug("{} probe worker created", kind.value)
                    resumed = self._resume(key, entry, running)
                    verdict = worker.observe(instance.id, running, not_before)
                    if kind == ProbeKind.READINESS:
                        verdict = worker.result  # the initial Failure (or the restored result)
                    elif resumed and worker.result != INITIAL_RESULT[kind.value]:
                        verdict = worker.result  # a restored startup Success, liveness Failure
                else:
                    entry.container, entry.pod_ip, entry.pod = container, pod_ip, pod_name
                    entry.ref = container_ref(pod, container)
                    verdict = entry.worker.observe(instance.id, running, not_before)
                if verdict is not None:
                    self._publish(key, entry, verdict)
                self._schedule(key, entry)
                self._touched.add(key)
            self._gate(uid, container.name)
        for key in self._by_pod.get(uid, set()) - wanted:
            self._drop(key)
        self._forget_restored(uid)
        self._update_ticker()

    # --- kept across restarts ------------------------------------------------------------

    def _resume(self, key: Key, entry: _Probed, running: bool) -> bool:
        """Continue a new worker from the previous run's entry for it, if that entry is of
        this very container and the container runs; either way the entry is used up."""
        saved = self._restored.pop((key[0], key[1], key[2].value), None)
        if saved is None:
            return False
        worker, log = entry.worker, self._log(key, entry)
        if not running:
            log.info("{} probe result {} of the previous run not used: container {} does "
                     "not run", key[2].value, saved.result, saved.container_id)
        elif saved.container_id != worker.container_id:
            log.info("{} probe result {} of the previous run not used: it was container {}, "
                     "now {}", key[2].value, saved.result, saved.container_id,
                     worker.container_id)
        elif resume_probe(worker, saved):
            log.info("{} probe result {} continued from the previous run", key[2].value,
                     saved.result)
            return True
        return False

    def _forget_restored(self, uid: PodUID) -> None:
        """Once a pod is observed, its entries that found no worker will never be used."""
        stale = [k for k in self._restored if k[0] == uid]
        for k in stale:
            del self._restored[k]
        self._state_changed |= bool(stale)

    def _save_state(self) -> None:
        """Give the file and the successor what the workers reached, if it changed."""
        changed = self._state_changed
        for key in self._touched:
            entry = self._workers.get(key)
            if entry is None:
                changed |= self._saved.pop(key, None) is not None
                continue
            view = saved_probe(key[0], key[1], entry.worker)
            if self._saved.get(key) != view:
                self._saved[key] = view
                changed = True
        self._touched.clear()
        self._state_changed = False
        if not changed:
            return
        probes = tuple(sorted((*self._saved.values(), *self._restored.values()),
                              key=lambda saved: saved.key))
        self.send(names.SYNC_LOOP, HandOver(self.name, self.incarnation, probes))
        if self._state is None:
            return
        try:
            self._state.save(probes)
        except OSError as err:  # a full disk must not stop probing; the next change retries
            logger.bind(pod="", uid="", container="").warning(
                "cannot save the probe results: {}", err)

    def _gate(self, uid: PodUID, name: str) -> None:
        """Liveness and readiness wait until the startup probe succeeded (if there is one)."""
        startup = self._workers.get((uid, name, ProbeKind.STARTUP))
        started = startup is None or startup.worker.result == ProbeResult.SUCCESS
        for kind in (ProbeKind.LIVENESS, ProbeKind.READINESS):
            key = (uid, name, kind)
            entry = self._workers.get(key)
            if entry is not None and entry.worker.started != started:
                entry.worker.started = started
                self._schedule(key, entry)

    def _drop(self, key: Key) -> None:
        entry = self._workers.pop(key, None)
        keys = self._by_pod.get(key[0])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_pod[key[0]]
        self._touched.add(key)
        if entry is not None:
            self._log(key, entry).debug("{} probe worker dropped", key[2].value)
            if self._probe_metrics is not None:
                self._probe_metrics.forget(key[2], key[1], entry.pod, entry.namespace, key[0])

    def _drop_pod(self, uid: PodUID) -> None:
        for key in list(self._by_pod.get(uid, ())):
            self._drop(key)
        self._forget_restored(uid)
        self._update_ticker()

    # --- schedule ------------------------------------------------------------------------

    def _schedule(self, key: Key, entry: _Probed) -> None:
        """Put the worker's next attempt on the heap, unless it is already there."""
        due = entry.worker.next_due
        if due == entry.scheduled:
            return
        entry.scheduled = due  # an older heap entry becomes stale and is skipped
        if due is not None:
            heapq.heappush(self._heap, (due, next(self._seq), key))
            if len(self._heap) > 4 * len(self._workers) + 64:
                self._compact()

    def _compact(self) -> None:
        self._heap = [(due, seq, key) for due, seq, key in self._heap
                      if (entry := self._workers.get(key)) is not None
                      and entry.scheduled == due]
        heapq.heapify(self._heap)

    def _update_ticker(self) -> None:
        if self._workers and self._ticker is None:
            self._ticker = self._timers.every(TICK_KIND, self.name, self._tick)
        elif not self._workers:
            self._stop_ticking()
            self._heap.clear()

    def _stop_ticking(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None

    def _run_due(self, now: float) -> None:
        while self._heap and self._heap[0][0] <= now + EPSILON:
            due, _, key = heapq.heappop(self._heap)
            entry = self._workers.get(key)
            if entry is None or entry.scheduled != due:
                continue  # stale: dropped or rescheduled since
            entry.scheduled = None
            if entry.worker.due(now):
                self._launch(key, entry, now)
            else:
                self._schedule(key, entry)

    def _launch(self, key: Key, entry: _Probed, now: float) -> None:
        worker = entry.worker
        seq = worker.begin(now)
        uid, name, kind = key
        cid, probe = worker.container_id, worker.probe
        container, pod_ip = entry.container, entry.pod_ip

        def attempt() -> None:
            try:
                result, output, code = attempt_probe(probe, container, cid, pod_ip,
                                                     self._runtime)
            except Exception as err:  # attempt_probe never raises; this guards the guard
                result, output, code = ProbeResult.UNKNOWN, repr(err), None
            self.dispatch.tell(self.name, ProbeOutcome(
                uid, name, kind, cid, seq, result, output, now, self._clock.monotonic(),
                code), sender=self.name)

        try:
            self._pool.submit(attempt)
        except RuntimeError:  # the pool is shut down: the actor is stopping
            worker.abandon()

    # --- results -------------------------------------------------------------------------

    def _outcome(self, outcome: ProbeOutcome) -> None:
        key = (outcome.uid, outcome.container_name, outcome.kind)
        entry = self._workers.get(key)
        if (entry is None or entry.worker.container_id != outcome.container_id
                or entry.worker.in_flight != outcome.seq):
            logger.bind(pod="", uid=outcome.uid, container=outcome.container_name).debug(
                "{} probe answer for a container no longer probed dropped", outcome.kind.value)
            return
        log = self._log(key, entry)
        event = probe_event(outcome.kind.value, outcome.result, outcome.output)
        if event is not None:  # upstream's prober records every attempt that fails
            self._events.event(entry.ref, *event)
        if self._probe_metrics is not None:
            self._probe_metrics.observe(outcome.kind, outcome.result, outcome.container_name,
                                        entry.pod, entry.namespace, outcome.uid)
        if outcome.result != ProbeResult.SUCCESS:
            log.debug("{} probe {}: {}", outcome.kind.value, outcome.result.value,
                      outcome.output[:256])
        verdict = entry.worker.step(outcome.finished_at, outcome.result)
        self._touched.add(key)
        if verdict is not None:
            if verdict != ProbeResult.SUCCESS:
                log.info("{} probe failed: {}", outcome.kind.value, outcome.output[:256])
            self._publish(key, entry, verdict)
            if outcome.kind == ProbeKind.STARTUP:
                self._gate(outcome.uid, outcome.container_name)
        self._schedule(key, entry)

    def _publish(self, key: Key, entry: _Probed, result: ProbeResult) -> None:
        uid, name, kind = key
        self._log(key, entry).info("{} probe result now {}", kind.value, result.value)
        verdict = ProbeVerdict(uid, name, entry.worker.container_id, kind, result)
        self.send(names.SYNC_LOOP, verdict)
        self.send(names.STATUS, verdict)

    # --- views ---------------------------------------------------------------------------

    def _log(self, key: Key, entry: _Probed) -> Logger:
        return logger.bind(pod=entry.pod, uid=key[0], container=key[1])

    def _snapshot(self) -> ProbeSnapshot:
        views = tuple(
            WorkerView(uid, name, kind, e.worker.container_id, e.worker.result,
                       e.worker.in_flight is not None, e.worker.on_hold, e.worker.next_due)
            for (uid, name, kind), e in self._workers.items()
        )
        return ProbeSnapshot(views, sum(v.in_flight for v in views), len(self._heap))
