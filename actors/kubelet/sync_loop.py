"""The sync loop: upstream's syncLoop as an actor, and the owner of every other actor.

It takes what the select loop took (source snapshots, PLEG relists, the sync and
housekeeping ticks, probe verdicts, runtime health), keeps the desired pods, admits them,
and dispatches updates to pod workers. Its children are supervised as OTP does it
(actors.core.supervision; KUBELET_SUPERVISION below says why the tree is ordered as it is,
and actors.kubelet.tree wires it), and stop when it stops: nothing outlives it.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from loguru import logger

from actors.core.dispatch import ActorRef, Dispatch
from actors.core.messages import Stop, Tick
from actors.core.supervision import ChildSpec, StartChild, SupervisorActor, SupervisorSpec
from actors.core.timers import Cancellable, Timers
from actors.core.trace.names import message
from actors.core.values import replace
from actors.kubelet import names
from actors.kubelet.cluster.messages import HealthReport, ReportHealth, StaticPodsWanted
from actors.kubelet.eviction import ActivePods, EvictPod, NodePressure
from actors.kubelet.messages import (
    DesiredPods,
    EventType,
    GCPods,
    GetGCPods,
    KillRuntimePod,
    PodForgotten,
    PodLifecycleEvent,
    PodRejected,
    PodWorkerDone,
    ProbeKind,
    ProbeVerdict,
    Relisted,
    RelistFailed,
    RuntimeHealth,
    RuntimePod,
    RuntimePodKilled,
    SourceSnapshot,
    UpdateKind,
    UpdatePod,
    WorkerState,
)
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.pod_config import PodConfig
from actors.kubelet.pod_worker import RunPending
from actors.kubelet.shutdown import (
    NodeShuttingDown,
    ShutdownKill,
    ShutdownPods,
    ShutdownPodStopped,
)
from runtime.clock import Clock
from runtime.events import reasons
from runtime.events.recorder import NULL_RECORDER, EventRecorder, pod_ref
from runtime.eviction.admit import admit_under_pressure
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime.container_gc import PodsForGC
from runtime.kuberuntime.podstatus import PodListing
from runtime.nodeshutdown import (
    NODE_SHUTDOWN_MESSAGE,
    NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE,
    NODE_SHUTDOWN_NOT_ADMITTED_REASON,
    NODE_SHUTDOWN_REASON,
)
from runtime.pod.admission import Node, admit
from runtime.pod.model import Pod
from runtime.pod.static import CONFIG_HASH, CONFIG_SOURCE
from runtime.prober.results import ProbeResult

WorkerFactory = Callable[[PodUID, int, threading.Event], ActorRef]
"""(pod UID, incarnation, the cancel flag of its syncs) -> a started pod worker."""

PLEG_UNHEALTHY_AFTER = 180.0
PLEG_EVENTED_UNHEALTHY_AFTER = 600.0  # upstream's evented PLEG relist threshold
SYNC_LOOP_UNHEALTHY_AFTER = 60.0
CHILD_SHUTDOWN_TIMEOUT = 10.0

KUBELET_SUPERVISION = SupervisorSpec(
    strategy="rest_for_one", max_restarts=10, within=60.0, backoff_initial=0.1,
    backoff_max=10.0, backoff_jitter=0.2, reset_after=60.0)
"""How the sync loop supervises: the order puts the consumers of state before its
producers (status, probes, killer, PLEG, runtime monitor, sources), so rest_for_one
rebuilds state by itself: a new status or probe manager is followed by a new PLEG, whose
first relist (against an empty snapshot) makes every pod worker sync and report again,
and by new sources, whose first snapshot sends every wanted pod again. Pod workers are
dynamic transient children, replaced on their own; a PLEG restart does not restart them,
since the new PLEG's first relist makes each of them sync anyway. A replaced worker gets
what rebuilds it from the sync loop (its pod's newest update, or the kill in flight,
issued again), so its queued updates are redundant and dropped. Every restart, workers'
included, counts towards one intensity for the whole kubelet."""


def kubelet_child(child: ChildSpec | tuple[str, StartChild]) -> ChildSpec:
    """A (name, start) pair as the kubelet declares it: a permanent child."""
    if isinstance(child, ChildSpec):
        return child
    return ChildSpec(child[0], child[1], "permanent", CHILD_SHUTDOWN_TIMEOUT)


def pod_worker_redundant(message: object) -> bool:
    """A replaced worker's queued updates are superseded by the sync loop's rebuild (the
    newest update or the kill in flight); RunPending only scheduled the old one's run."""
    return isinstance(message, UpdatePod | RunPending)


def pod_worker_spec(name: str, start: StartChild) -> ChildSpec:
    return ChildSpec(name, start, "transient", CHILD_SHUTDOWN_TIMEOUT, pod_worker_redundant)


@message("GetHealth")
@dataclass(frozen=True, slots=True)
class GetHealth:
    """Ask: each health check by name, None when healthy, else why not."""


@message("GetRunningPods")
@dataclass(frozen=True, slots=True)
class GetRunningPods:
    """Ask: the runtime pods of the last relist."""


@dataclass(frozen=True, slots=True)
class SyncLoopSettings:
    """How the sync loop runs: its periods, and the node it admits pods to.

    ``node`` is what admission checks a new pod against (its name, labels and
    allocatable resources, read by the daemon at start); its ``pods`` allocatable is
    ``max_pods`` whatever ``node`` says. ``allowed_unsafe_sysctls`` is upstream's
    ``--allowed-unsafe-sysctls``.
    """

    max_pods: int = 110
    sync_tick: float = 1.0
    housekeeping_period: float = 2.0
    relist_period: float = 1.0
    # upstream's updateRuntimeUp period: a CRI Status every 5 s (a runtime error a sync
    # meets asks for a check at once; the monitor rechecks faster while it is down).
    runtime_check_period: float = 5.0
    file_check_frequency: float = 20.0
    http_check_frequency: float = 20.0
    expected_sources: frozenset[str] = frozenset({"file"})
    supervision: SupervisorSpec = KUBELET_SUPERVISION
    node: Node = field(default_factory=lambda: Node(name=""))
    allowed_unsafe_sysctls: tuple[str, ...] = ()
    eviction: bool = False  # the eviction manager runs: tell it the active pods

    def admission_node(self) -> Node:
        """The node admission sees: ``node``, with ``max_pods`` as its pods."""
        return replace(self.node, allocatable={**self.node.allocatable,
                                               "pods": str(self.max_pods)})


@dataclass(slots=True)
class _Worker:
    ref: ActorRef | None
    cancel: threading.Event
    pod: Pod
    state: WorkerState = WorkerState.SYNCING
    incarnation: int = 0
    kill: UpdatePod | None = None  # the kill in flight, issued again to a replacement


@dataclass(slots=True)
class _Verdicts:
    liveness: dict[ContainerID, ProbeResult] = field(default_factory=dict)
    startup: dict[ContainerID, ProbeResult] = field(default_factory=dict)


class SyncLoop(SupervisorActor):
    """Owns the kubelet's actors and decides what each pod worker does next."""

    def __init__(
        self,
        dispatch: Dispatch,
        timers: Timers,
        clock: Clock,
        children: Sequence[ChildSpec | tuple[str, StartChild]],
        worker_factory: WorkerFactory,
        settings: SyncLoopSettings | None = None,
        metrics: KubeletMetrics | None = None,
        rng: random.Random | None = None,
        events: EventRecorder = NULL_RECORDER,
    ) -> None:
        """As upstream's workers read a pod cache newer than their start: no pod's first
        sync runs before the PLEG's first relist, and a pod no relist has shown and no
        worker has had syncs first on an empty listing. A pod whose worker was forgotten
        is no orphan of the runtime's until a relist begun after its removal is in (two
        relists, as for its listing): the relist a stop's end asks for waits a little
        (pleg.SAFETY_NET_DELAY), and meanwhile the last relist may still show what the
        worker removed."""
        self.settings = settings or SyncLoopSettings()
        self._events = events
        super().__init__(names.SYNC_LOOP, dispatch, timers, clock, self.settings.supervision,
                         [kubelet_child(c) for c in children], rng or random.Random(0))
        self._timers = timers
        self._clock = clock
        self._worker_factory = worker_factory
        self._metrics = metrics
        self._config = PodConfig(clock)
        self._node = self.settings.admission_node()
        self._desired: dict[PodUID, Pod] = {}
        self._rejected: set[PodUID] = set()
        self._workers: dict[PodUID, _Worker] = {}
        self._requeue_at: dict[PodUID, float] = {}
        self._verdicts: dict[PodUID, _Verdicts] = {}
        self._waiting: dict[str, list[Pod]] = {}  # static pods waiting on a full name
        # Pods re-added under the UID of one still being stopped (a static manifest removed
        # and put back): started afresh once that one is terminated (upstream's
        # restartRequested in pod_workers.go).
        self._restart: dict[PodUID, Pod] = {}
        self._killing: set[PodUID] = set()
        self._runtime_pods: tuple[RuntimePod, ...] = ()
        self._runtime_ok = True
        self._network_error = ""  # the runtime's NetworkReady false (RuntimeHealth)
        self._runtime_reason = ""
        self._last_relist = clock.monotonic()
        self._relist_error = ""
        self._relist_evented = False
        self._last_sync_tick = clock.monotonic()
        self._timer_handles: list[Cancellable] = []
        self._problems: dict[str, set[tuple[str, str, str]]] = {}
        self._static_told: tuple[str, ...] | None = None
        self._pressure: tuple[str, ...] = ()  # node conditions from the eviction manager
        self._active_told: tuple[str, ...] | None = None
        # What the PLEG's first relist listed of each pod, until every source has spoken
        # (the pods to adopt then have their workers): the first update of a pod's first
        # worker carries it (see PodListing), except for pods that had a worker when it
        # came (theirs may have made things since) or have had one. Only a pod's worker
        # makes things of it, so it cannot miss anything; what went since is not found.
        self._listings: dict[PodUID, PodListing] | None = None
        self._listed_had_worker: set[PodUID] = set()
        self._held: list[tuple[str, object]] | None = None  # see _holding_sends
        # The pods admitted before the PLEG's first relist, in admission
        # order; their first updates go out when it comes, each with its listing.
        self._before_relist: dict[PodUID, None] = {}
        self._relists = 0  # Relisted messages handled
        self._runtime_uids: frozenset[PodUID] = frozenset()  # the last relist's pods
        # Pods whose worker was forgotten, with the relist count then: until two more
        # relists are in, one may have listed the runtime before the worker's last call.
        self._forgotten: dict[PodUID, int] = {}
        # Graceful node shutdown: the node is shutting down (admission refuses pods), and
        # the pods the shutdown manager asked to stop that have not stopped yet.
        self._shutting_down = False
        self._shutdown_kills: set[PodUID] = set()

    # --- lifecycle ---------------------------------------------------------------------

    def on_start(self) -> None:
        super().on_start()
        s = self.settings
        every = self._timers.every
        self._timer_handles = [
            every(names.TICK_SYNC, self.name, s.sync_tick),
            every(names.TICK_HOUSEKEEPING, self.name, s.housekeeping_period),
            every(names.TICK_RELIST, names.PLEG, s.relist_period, first=0.0),
            every(names.TICK_RUNTIME_CHECK, names.RUNTIME_MONITOR,
                  s.runtime_check_period, first=0.0),
        ]
        if "file" in s.expected_sources:
            self._timer_handles.append(every(
                names.TICK_FILE_RELIST, names.SOURCE_FILE, s.file_check_frequency))
        if "http" in s.expected_sources:
            self._timer_handles.append(every(
                names.TICK_HTTP_POLL, names.SOURCE_HTTP, s.http_check_frequency))
        logger.info("kubelet supervisor started {} actors", len(self._child_specs))

    def on_stop(self) -> None:
        for handle in self._timer_handles:
            handle.cancel()
        super().on_stop()

    # --- the select loop ---------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        if isinstance(message, SourceSnapshot):
            self._source(message)
        elif isinstance(message, Relisted):
            self._relisted(message)
        elif isinstance(message, Tick):
            if message.kind == names.TICK_SYNC:
                self._sync_tick()
            elif message.kind == names.TICK_HOUSEKEEPING:
                self._housekeeping()
        elif isinstance(message, PodWorkerDone):
            self._worker_done(message)
        elif isinstance(message, ProbeVerdict):
            self._probe(message)
        elif isinstance(message, RuntimeHealth):
            self._health(message)
        elif isinstance(message, RelistFailed):
            self._relist_error = message.error
        elif isinstance(message, RuntimePodKilled):
            self._killing.discard(message.uid)
        elif isinstance(message, EvictPod):
            self._evict(message)
        elif isinstance(message, NodePressure):
            self._pressure = message.conditions
        elif isinstance(message, NodeShuttingDown):
            self._node_shutting_down(message.shutting_down)
        elif isinstance(message, ShutdownKill):
            self._shutdown_kill(message)
        elif isinstance(message, GetHealth):
            return self.health()
        elif isinstance(message, ReportHealth):
            self.send(message.reply_to, HealthReport(tuple(self.health().items())))
        elif isinstance(message, GetRunningPods):
            return self._runtime_pods
        elif isinstance(message, GetGCPods):
            self.send(names.GC, GCPods(self._pods_for_gc()))
        elif isinstance(message, Stop):
            logger.info("stopping: {}", message.reason)
            self.actor_ref.stop(block=False)
        else:
            return super().handle(message)
        return None

    # --- sources and admission ---------------------------------------------------------

    def send(self, to: str, message: object) -> bool:
        if self._held is not None:
            self._held.append((to, message))
            return True
        return super().send(to, message)

    @contextlib.contextmanager
    def _holding_sends(self) -> Iterator[None]:
        """What the handler sends goes out when it is done, in the order it was sent: a
        snapshot of many new pods starts all their workers first, so each worker's thread
        starts while the others are still idle rather than busy syncing (the starts are
        serial, on this thread; a started worker's sync holds the interpreter from it)."""
        self._held = []
        try:
            yield
        finally:
            held, self._held = self._held, None
            for to, message in held:
                super().send(to, message)

    def _source(self, snapshot: SourceSnapshot) -> None:
        with self._holding_sends():
            self._source_changes(snapshot)

    def _source_changes(self, snapshot: SourceSnapshot) -> None:
        self._note_problems(snapshot)
        changes = self._config.apply(snapshot)
        for conflict in changes.conflicts:
            logger.warning("{}", conflict)
        for pod in changes.removes:
            self._terminate(PodUID(pod.uid), remove=True, reason="removed from its source")
        for pod in changes.adds:
            self._admit(pod)
            if pod.metadata.deletion_timestamp is not None:
                # Seen first while being deleted (a kubelet restarted mid-deletion): what
                # runs of it is stopped with its grace, as a DELETE would.
                self._terminate(PodUID(pod.uid), remove=True, reason="deleted",
                                grace=pod.metadata.deletion_grace_period_seconds)
        for pod in changes.updates + changes.reconciles:
            self._update(pod)
        for pod in changes.deletes:
            self._terminate(PodUID(pod.uid), remove=True, reason="deleted",
                            grace=pod.metadata.deletion_grace_period_seconds)
        self.send(names.STATUS, DesiredPods(tuple(self._desired.values())))

    def _note_problems(self, snapshot: SourceSnapshot) -> None:
        current = {(p.source, p.path, p.cause) for p in snapshot.problems}
        previous = self._problems.get(snapshot.source, set())
        self._problems[snapshot.source] = current
        if self._metrics is not None:
            self._metrics.manifest_errors_current.labels(snapshot.source).set(len(current))
            self._metrics.manifest_errors.labels(snapshot.source).inc(len(current - previous))

    def _admit(self, pod: Pod) -> None:
        uid = PodUID(pod.uid)
        if uid in self._desired:
            self._update(pod)
            return
        if uid in self._workers and self._workers[uid].state == WorkerState.TERMINATED:
            self._forget_worker(uid)  # stopped already: start afresh now
        if uid in self._workers:
            self._restart[uid] = pod
            logger.bind(pod=pod.metadata.name, uid=uid, container="").info(
                "pod was terminated, but has been re-added with the same UID: it starts "
                "again once stopped")
            return
        blocker = next((w for u, w in self._workers.items()
                        if w.pod.full_name == pod.full_name and u != uid), None)
        if blocker is not None:
            # Upstream: static pods with the same full name start one at a time.
            self._waiting.setdefault(pod.full_name, []).append(pod)
            logger.bind(pod=pod.metadata.name, uid=uid, container="").info(
                "waiting for the previous pod named {} to terminate", pod.full_name)
            return
        # Upstream's canAdmitPod: against the pods admitted and not yet terminated.
        admitted = [w.pod for w in self._workers.values() if w.state != WorkerState.TERMINATED]
        rejection = (admit(pod, self._node, admitted, self.settings.allowed_unsafe_sysctls)
                     or admit_under_pressure(pod, self._pressure)
                     or ((NODE_SHUTDOWN_NOT_ADMITTED_REASON, NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE)
                         if self._shutting_down else None))
        if rejection is not None:
            reason, why = rejection
            self._rejected.add(uid)
            self.send(names.STATUS, PodRejected(pod, reason, why))
            logger.bind(pod=pod.metadata.name, uid=uid, container="").warning(
                "rejected: {}: {}", reason, why)
            self._events.event(pod_ref(pod), reasons.WARNING, reason, why)  # rejectPod
            return
        self._desired[uid] = pod
        self._start_worker(uid, pod)
        if self._relists == 0:
            # Upstream's worker waits for a pod cache newer than its start: the first
            # sync goes out with the first relist's listing of the pod (_relisted).
            self._before_relist[uid] = None
            return
        self._dispatch_work(uid, UpdateKind.CREATE, listing=self._first_listing(uid))

    def _update(self, pod: Pod) -> None:
        uid = PodUID(pod.uid)
        if uid not in self._desired:
            return
        self._desired[uid] = pod
        worker = self._workers.get(uid)
        if worker is not None:
            worker.pod = pod
        self._dispatch_work(uid, UpdateKind.UPDATE)

    def _terminate(self, uid: PodUID, remove: bool, reason: str, grace: int | None = None
                   ) -> None:
        pod = self._desired.pop(uid, None)
        self._restart.pop(uid, None)
        self._before_relist.pop(uid, None)
        if uid in self._rejected:
            self._rejected.discard(uid)
            self.send(names.STATUS, PodForgotten(uid))  # its Failed status goes with it
            return
        self._requeue_at.pop(uid, None)
        self._verdicts.pop(uid, None)
        for waiting in self._waiting.values():
            waiting[:] = [p for p in waiting if p.uid != uid]
        worker = self._workers.get(uid)
        if worker is None:
            if pod is not None:
                self.send(names.STATUS, PodForgotten(uid))
            return
        worker.cancel.set()  # stop a sync in flight from starting more containers
        logger.bind(pod=worker.pod.metadata.name, uid=uid, container="").info(
            "stopping pod: {}", reason)
        kill = UpdatePod(pod or worker.pod, UpdateKind.KILL, grace_override=grace,
                         reason=reason, remove=remove)
        if worker.kill is not None:  # as the worker merges them: grace only shrinks
            old = worker.kill.grace_override
            kill = replace(kill, remove=remove or worker.kill.remove, grace_override=(
                old if old is not None and (grace is None or old < grace) else grace))
        worker.kill = kill
        self.send(names.worker_name(uid), kill)

    # --- pod workers -------------------------------------------------------------------

    def _start_worker(self, uid: PodUID, pod: Pod) -> None:
        self._workers[uid] = _Worker(None, threading.Event(), pod)
        self.supervision.add(pod_worker_spec(names.worker_name(uid),
                                             lambda n: self._worker_incarnation(uid, n)))

    def _worker_incarnation(self, uid: PodUID, incarnation: int) -> ActorRef:
        worker = self._workers[uid]
        worker.cancel, worker.incarnation = threading.Event(), incarnation
        ref = worker.ref = self._worker_factory(uid, incarnation, worker.cancel)
        return ref

    def _first_listing(self, uid: PodUID) -> PodListing | None:
        """What the PLEG's first relist listed of ``uid``, for its first worker; once.
        Once that listing is gone: an empty one for a pod no worker of
        which the last relists may have missed and that the last relist did not show."""
        if self._listings is None:
            return PodListing(uid) if self._unseen(uid) else None
        if uid in self._listed_had_worker:
            return None
        self._listed_had_worker.add(uid)
        return self._listings.pop(uid, PodListing(uid))

    def _unseen(self, uid: PodUID) -> bool:
        """Whether the runtime holds nothing of ``uid``: the last relist showed nothing of
        it, and only a worker of the pod makes things of it, of which none has been since
        before that relist listed the runtime (a worker forgotten since the relist before
        last may have made things after it)."""
        return (self._relists > 0 and uid not in self._forgotten
                and uid not in self._runtime_uids)

    def _dispatch_work(self, uid: PodUID, kind: UpdateKind, resync: bool = False,
                       listing: PodListing | None = None,
                       relisted_at: float | None = None) -> None:
        worker = self._workers.get(uid)
        pod = self._desired.get(uid)
        if worker is None or worker.state == WorkerState.TERMINATED:
            return
        if pod is None:
            # Gone from its source and not stopped yet (its stop failed and the worker asked
            # to be run again): the kill again, as upstream's pod workers retry a terminating
            # pod until it is terminated. Without it such a pod ran on for ever.
            if worker.kill is not None:
                self._requeue_at.pop(uid, None)
                self.send(names.worker_name(uid), worker.kill)
            return
        if uid in self._before_relist:
            return  # its first update goes out with the first relist (_relisted)
        verdicts = self._verdicts.get(uid, _Verdicts())
        self._requeue_at.pop(uid, None)
        self.send(names.worker_name(uid), UpdatePod(
            pod, kind, tuple(verdicts.liveness.items()), tuple(verdicts.startup.items()),
            resync=resync, listing=listing, relisted_at=relisted_at,
            network_error=self._network_error))

    def _forget_worker(self, uid: PodUID) -> None:
        worker = self._workers.pop(uid, None)
        if worker is None:
            return
        self.supervision.remove(names.worker_name(uid), "its pod is gone")
        self._forgotten[uid] = self._relists
        self.send(names.STATUS, PodForgotten(uid))
        self.send(names.PROBES, PodForgotten(uid))
        again = self._restart.pop(uid, None)
        if again is not None:  # re-added while it stopped: a new worker, new containers
            self._admit(again)
            self.send(names.STATUS, DesiredPods(tuple(self._desired.values())))
        waiting = self._waiting.pop(worker.pod.full_name, [])
        if waiting:
            first, rest = waiting[0], waiting[1:]
            if rest:
                self._waiting[worker.pod.full_name] = rest
            self._admit(first)

    def _worker_done(self, done: PodWorkerDone) -> None:
        worker = self._workers.get(done.uid)
        if worker is None:
            return
        worker.state = done.state
        if done.state == WorkerState.TERMINATED:
            self._requeue_at.pop(done.uid, None)
            if done.uid in self._shutdown_kills:
                self._shutdown_kills.discard(done.uid)
                self.send(names.SHUTDOWN, ShutdownPodStopped(done.uid))
            if done.uid not in self._desired:
                self._forget_worker(done.uid)
        elif done.requeue_after is not None:
            self._requeue_at[done.uid] = self._clock.monotonic() + done.requeue_after
        if done.runtime_error:
            self.send(names.RUNTIME_MONITOR,
                      Tick(names.TICK_RUNTIME_CHECK, self._clock.monotonic()))

    def _sync_tick(self) -> None:
        now = self._last_sync_tick = self._clock.monotonic()
        if not self._runtime_ok:
            return  # upstream's syncLoop backs off while the runtime reports errors
        for uid in [u for u, due in self._requeue_at.items() if due <= now]:
            self._dispatch_work(uid, UpdateKind.SYNC, resync=True)

    # --- PLEG, probes, runtime ---------------------------------------------------------

    def _relisted(self, relist: Relisted) -> None:
        self._last_relist = self._clock.monotonic()
        self._relist_evented = relist.evented
        self._relist_error = ""
        self._runtime_pods = relist.pods
        self._relists += 1
        self._runtime_uids = frozenset(p.uid for p in relist.pods)
        # A relist that began after the worker's last call is in once two more are: the
        # second was listed after the first was sent, which was after the worker was
        # done (its PodWorkerDone was here before the first).
        self._forgotten = {u: n for u, n in self._forgotten.items()
                           if self._relists - n < 2}
        held, self._before_relist = tuple(self._before_relist), {}
        if relist.listings is not None:
            self._listings = {listing.uid: listing for listing in relist.listings}
            # Workers waiting for this relist have synced nothing: theirs is the listing.
            self._listed_had_worker = set(self._workers) - set(held)
        for uid in held:
            self._dispatch_work(uid, UpdateKind.CREATE, listing=self._first_listing(uid))
        if self._metrics is not None:
            self._metrics.pleg_relist_duration.observe(relist.duration)
            self._metrics.pleg_last_seen.set(self._clock.now())
            self._metrics.running_containers.labels("running").set(relist.running_containers)
            self._metrics.running_pods.set(sum(1 for p in relist.pods if p.running))
        self._forget_removed_verdicts(relist.events)
        if not self._runtime_ok:
            return
        for uid in dict.fromkeys(e.uid for e in relist.events
                                 if e.type != EventType.CONTAINER_REMOVED):
            if uid not in held:  # just sent its first update, which this would replace
                self._dispatch_work(uid, UpdateKind.SYNC, relisted_at=relist.listed_at)

    def _forget_removed_verdicts(self, events: tuple[PodLifecycleEvent, ...]) -> None:
        """A removed container is never probed again: its verdicts go, or a crash-looping
        pod would keep one per container it ever ran (upstream's prober removes a
        container's results when its worker moves on)."""
        for event in events:
            entry = self._verdicts.get(event.uid)
            if entry is None or event.type != EventType.CONTAINER_REMOVED \
                    or event.container_id is None:
                continue
            entry.liveness.pop(event.container_id, None)
            entry.startup.pop(event.container_id, None)

    def _probe(self, verdict: ProbeVerdict) -> None:
        if verdict.uid not in self._desired or verdict.kind == ProbeKind.READINESS:
            return
        entry = self._verdicts.setdefault(verdict.uid, _Verdicts())
        table = entry.liveness if verdict.kind == ProbeKind.LIVENESS else entry.startup
        table[verdict.container_id] = verdict.result
        if verdict.result != ProbeResult.UNKNOWN:
            self._dispatch_work(verdict.uid, UpdateKind.SYNC)

    @property
    def network_error(self) -> str:
        """The runtime's network error, as the runtime monitor last reported it ("": ready);
        what a pod outside the node's network waits on."""
        return self._network_error

    def _health(self, health: RuntimeHealth) -> None:
        was_ok, self._runtime_ok = self._runtime_ok, health.ok
        self._runtime_reason = health.reason
        network_was = self._network_error
        self._network_error = health.network_error
        # Back up, or its network ready again: every pod syncs now, not after its back-off.
        if health.ok and (not was_ok or (network_was and not health.network_error)):
            for uid in list(self._desired):
                self._dispatch_work(uid, UpdateKind.SYNC)

    def _housekeeping(self) -> None:
        if not self._config.sources_ready(self.settings.expected_sources):
            return  # never kill what a source that has not spoken yet may still want
        self._listings = None
        self._listed_had_worker.clear()
        if "api" in self.settings.expected_sources:
            self._tell_static_pods()
        if self.settings.eviction:
            self._tell_active_pods()
        for uid in [u for u, w in self._workers.items()
                    if w.state == WorkerState.TERMINATED and u not in self._desired]:
            self._forget_worker(uid)
        if not self._runtime_ok:
            return
        for rp in self._runtime_pods:
            if rp.uid in self._desired or rp.uid in self._workers or rp.uid in self._killing:
                continue
            if rp.uid in self._forgotten:
                continue  # removed by its worker after the relist that shows it
            self._killing.add(rp.uid)
            self.send(names.KILLER, KillRuntimePod(rp.uid, rp.name, rp.namespace))

    def _pods_for_gc(self) -> PodsForGC:
        """What the garbage collector may take (upstream's ShouldPodContentBeRemoved and
        ShouldPodRuntimeBeRemoved): a wanted pod keeps its content, a pod not yet
        terminated (or being killed as an orphan) its runtime objects too."""
        running = {u for u, w in self._workers.items() if w.state != WorkerState.TERMINATED}
        running |= self._killing
        return PodsForGC(keep_content=tuple(sorted(running | set(self._desired))),
                         keep_runtime=tuple(sorted(running)),
                         sources_ready=self._config.sources_ready(self.settings.expected_sources))

    def _tell_static_pods(self) -> None:
        """Cluster mode: the pod writer deletes mirror pods of no wanted static pod."""
        hashes = tuple(sorted(
            p.metadata.annotations.get(CONFIG_HASH) or p.uid for p in self._desired.values()
            if p.metadata.annotations.get(CONFIG_SOURCE) in ("file", "http")))
        if hashes != self._static_told:
            self._static_told = hashes
            self.send(names.POD_WRITER, StaticPodsWanted(hashes))

    def _tell_active_pods(self) -> None:
        """The eviction manager's candidates (upstream's activePods): admitted pods whose
        worker still syncs them."""
        active = [w.pod for u, w in self._workers.items() if u in self._desired
                  and w.state == WorkerState.SYNCING and w.kill is None]
        told = tuple(f"{p.uid}/{p.metadata.resource_version}" for p in active)
        if told != self._active_told:
            self._active_told = told
            self.send(names.EVICTION, ActivePods(tuple(active)))

    def _evict(self, order: EvictPod) -> None:
        """Upstream's killPodFunc for an eviction: the pod's worker kills it with the
        eviction's grace and fails it; the pod stays (Failed) until its source drops it."""
        uid = PodUID(order.uid)
        worker = self._workers.get(uid)
        pod = self._desired.get(uid)
        if worker is None or pod is None or worker.kill is not None \
                or worker.state != WorkerState.SYNCING:
            return
        worker.cancel.set()
        self._requeue_at.pop(uid, None)
        kill = UpdatePod(pod, UpdateKind.KILL, grace_override=order.grace_period,
                         reason=order.reason, failed_reason=order.reason,
                         failed_message=order.message, failed_disruption=order.disruption)
        worker.kill = kill
        worker.state = WorkerState.TERMINATING
        self.send(names.worker_name(uid), kill)
        if self.settings.eviction:
            self._tell_active_pods()

    def _node_shutting_down(self, shutting_down: bool) -> None:
        """The shutdown manager's ShutdownStatus: while it holds, admission refuses pods;
        its start asks for the active pods (upstream's GetActivePods) to stop."""
        self._shutting_down = shutting_down
        if shutting_down:
            self.send(names.SHUTDOWN, ShutdownPods(tuple(
                w.pod for u, w in self._workers.items()
                if u in self._desired and w.state != WorkerState.TERMINATED)))

    def _shutdown_kill(self, order: ShutdownKill) -> None:
        """Upstream's killPodFunc for a node shutdown: stopped by its worker (hooks, the
        grace given) and failed with reason Terminated; ShutdownPodStopped once it is."""
        uid = PodUID(order.uid)
        worker = self._workers.get(uid)
        if worker is None or worker.state == WorkerState.TERMINATED:
            self.send(names.SHUTDOWN, ShutdownPodStopped(order.uid))
            return
        self._shutdown_kills.add(uid)
        self._evict(EvictPod(order.uid, order.grace_period, NODE_SHUTDOWN_REASON,
                             NODE_SHUTDOWN_MESSAGE))

    def health(self) -> dict[str, str | None]:
        now = self._clock.monotonic()
        pleg: str | None = None
        limit = PLEG_EVENTED_UNHEALTHY_AFTER if self._relist_evented else PLEG_UNHEALTHY_AFTER
        if now - self._last_relist > limit:
            pleg = (f"PLEG has not relisted successfully for {now - self._last_relist:.0f}s"
                    + (f": {self._relist_error}" if self._relist_error else ""))
        syncloop: str | None = None
        if now - self._last_sync_tick > SYNC_LOOP_UNHEALTHY_AFTER:
            syncloop = f"sync loop last ran {now - self._last_sync_tick:.0f}s ago"
        runtime = None if self._runtime_ok else (self._runtime_reason or "runtime is down")
        return {names.HEALTH_PING: None, names.HEALTH_SYNC_LOOP: syncloop,
                names.HEALTH_PLEG: pleg, names.HEALTH_RUNTIME: runtime}

    # --- supervision -------------------------------------------------------------------

    def child_restarted(self, name: str, incarnation: int) -> None:
        """Give a replaced child what rebuilds its state."""
        if self._metrics is not None:
            self._metrics.actor_restarts.labels(names.actor_group(name)).inc()
        if names.is_worker(name):
            self._rebuild_worker(names.worker_uid(name))
        elif name == names.STATUS:
            self.send(names.STATUS, DesiredPods(tuple(self._desired.values())))
        elif name == names.KILLER:
            # Kills the old killer held died with it: housekeeping orders them again.
            self._killing.clear()
        elif name == names.NODE_STATUS and self._shutting_down:
            # A new node status actor still reports "node is shutting down".
            self.send(names.NODE_STATUS, NodeShuttingDown(True))

    def _rebuild_worker(self, uid: PodUID) -> None:
        """A replaced worker syncs its pod from the runtime, or issues its kill again."""
        worker = self._workers.get(uid)
        if worker is None:
            return
        if worker.kill is None and uid not in self._desired:
            worker.kill = UpdatePod(worker.pod, UpdateKind.KILL, remove=True, reason="removed")
        if worker.kill is None:
            worker.state = WorkerState.SYNCING
            self._dispatch_work(uid, UpdateKind.SYNC)
            return
        worker.state = WorkerState.TERMINATING
        worker.cancel.set()
        logger.bind(pod=worker.pod.metadata.name, uid=uid, container="").info(
            "issuing the kill in flight again: {}", worker.kill.reason)
        self.send(names.worker_name(uid), worker.kill)
