"""One actor per pod UID: syncs its pod, one sync at a time (upstream podWorkers).

Updates are coalesced: each UpdatePod only replaces the pending one and, if no run is
scheduled, schedules one (a RunPending message to itself, behind every update already in
the mailbox), so when a sync ends only the newest update is synced. A kill is never
overwritten by a later update, and its grace period only shrinks. The worker goes
syncing -> terminating -> terminated; a terminated worker ignores updates until the
supervisor forgets it.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Any

from loguru import logger
from msgspec.structs import replace

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.trace.names import message
from actors.kubelet import names
from actors.kubelet.messages import (
    PodObserved,
    PodWorkerDone,
    SyncChangedRuntime,
    UpdateKind,
    UpdatePod,
    WorkerState,
)
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.pleg import observed_states
from actors.kubelet.pod_stopping import PodStopping
from runtime.clock import Clock
from runtime.errors import CRIError, CRIUnavailable
from runtime.events import reasons
from runtime.events.recorder import NULL_RECORDER, EventRecorder, pod_ref
from runtime.ids import PodUID
from runtime.kuberuntime.made import MadeBySync
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.podstatus import PodListing, RuntimePodStatus
from runtime.kuberuntime.result import PodSyncResult
from runtime.kuberuntime.subpath import has_sub_paths
from runtime.kuberuntime.volumes import tear_down_empty_dirs
from runtime.mounts import remove_unmounted_tree
from runtime.pod import active_deadline
from runtime.pod.model import Pod
from runtime.status.generate import TERMINAL_PHASES, generate_pod_status

SYNC_ERROR_BACKOFF = 10.0
RESYNC_JITTER = 0.5
TERMINATE_RETRY = 1.0


@message("RunPending")
@dataclass(frozen=True, slots=True)
class RunPending:
    """Internal: sync the newest pending update now."""


@dataclass(frozen=True, slots=True)
class WorkerTiming:
    resync_interval: float = 60.0
    error_backoff: float = SYNC_ERROR_BACKOFF


class PodWorker(Actor):
    """Keeps one pod converged with its spec, then stops it when told."""

    def __init__(
        self,
        uid: PodUID,
        dispatch: Dispatch,
        manager: KubeRuntimeManager,
        clock: Clock,
        metrics: KubeletMetrics | None = None,
        timing: WorkerTiming | None = None,
        cancel: threading.Event | None = None,
        rng: random.Random | None = None,
        incarnation: int = 0,
        events: EventRecorder = NULL_RECORDER,
    ) -> None:
        """How the worker reads its pod's status, as upstream's reads the PLEG's cache:

        - A sync that made things reads the pod's status at once from what it made
          (MadeBySync: no listing, no second sandbox status) and reports it, and tells the
          PLEG what it read (SyncChangedRuntime.observed), so the PLEG's relist (still
          asked for: the safety net) brings no second sync when it shows just that. A
          sync that failed reads nothing: it asks the PLEG to relist, whose event brings
          the next sync (upstream's SyncPod reads none either).
        - Each read notes when it began; an update the PLEG's events brought is synced
          on the last read when that began after the relist's lists were back
          (UpdatePod.relisted_at): the relist saw nothing the read did not.
        - A pod stopped to be removed is read from the status the last sync found
          nothing to do with when nothing was made since, else from its listings
          (KubeRuntimeManager.removal_status)."""
        super().__init__(names.worker_name(uid), dispatch, incarnation)
        self._stop_told = False  # the PLEG was told this worker is stopping its pod
        self._events = events
        self.uid = uid
        self._manager = manager
        self._clock = clock
        self._metrics = metrics
        self._timing = timing or WorkerTiming()
        self.cancel = cancel or threading.Event()
        # Seeded by UID: jitter still spreads pods apart, and a replay draws the same.
        self._rng = rng or random.Random(str(uid))
        self.state = WorkerState.SYNCING
        self._pending: UpdatePod | None = None
        self._scheduled = False
        self._pod: Pod | None = None
        self._kill: UpdatePod | None = None  # the kill that started termination, if any
        self._grace: int | None = None
        self._remove = False
        self._last_phase = ""
        # When this worker first synced its pod: the start its active deadline counts
        # from (upstream: status.startTime, set at the pod's first status update).
        self._active_since: float | None = None
        # The runtime status the last sync read and found nothing to do with (ok, no
        # step); a periodic resync syncs on it without asking the runtime again, until
        # any other update (a PLEG event, a probe verdict, a spec change) says the pod
        # may have changed. Upstream's worker reads the PLEG's cache the same way: an
        # idle pod's resync costs no runtime call.
        self._idle_status: RuntimePodStatus | None = None
        self._idle_at: float | None = None  # when its read began
        # The runtime status as it stands since this worker last changed the runtime:
        # read after its last change (or by a sync that changed nothing), None when a sync
        # made something no read has shown since. Only this worker makes anything of its
        # pod, so a pod being removed is stopped from it with no read (upstream's
        # SyncTerminatingPod reads the PLEG's cache, newer than the last sync, the same
        # way). What exited since is stopped again (a no-op); what was removed since is
        # NotFound, which counts as stopped.
        self._known_status: RuntimePodStatus | None = None
        self._known_at: float | None = None  # when its read began

    # --- mailbox ---------------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        if isinstance(message, UpdatePod):
            self._accept(message)
        elif isinstance(message, RunPending):
            self._scheduled = False
            self._run()
        else:
            return super().handle(message)
        return None

    def _accept(self, update: UpdatePod) -> None:
        if not update.resync:
            self._idle_status = None
        if self.state == WorkerState.TERMINATED:
            # Finished: ignore updates until forgotten, but a pod that ended on its own
            # (terminal phase) may still be asked to be removed.
            if update.remove and not self._remove:
                self._remove = True
                self._pending = update
                self._schedule()
            return
        self._pod = update.pod
        if update.kind == UpdateKind.KILL or update.pod.metadata.deletion_timestamp:
            self._start_termination(update)
        pending = self._pending
        if update.listing is None and pending is not None and pending.listing is not None:
            # The first sync's listing survives the update that supersedes it: nothing
            # of the pod has been made since (this worker has not synced yet).
            update = replace(update, listing=pending.listing)
        self._pending = update
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            self.send(self.name, RunPending())

    def _start_termination(self, update: UpdatePod) -> None:
        grace = update.grace_override
        if grace is None:
            grace = update.pod.metadata.deletion_grace_period_seconds
        if self._grace is None or (grace is not None and grace < self._grace):
            self._grace = grace  # grace only shrinks
        self._remove = self._remove or update.remove
        if self._kill is None:
            self._kill = update
        self.state = WorkerState.TERMINATING

    # --- work ------------------------------------------------------------------------------

    def _run(self) -> None:
        update, self._pending = self._pending, None
        if update is None or self._pod is None:
            return
        log = logger.bind(pod=self._pod.metadata.name, uid=self.uid, container="")
        started = self._clock.monotonic()
        try:
            if self.state == WorkerState.TERMINATED:
                # Removed: nothing left to report; the supervisor forgets the pod next.
                self._begin_stop()
                self._remove_pod(self._removal_status(self._pod), log)
                self._done(None)
            elif self.state == WorkerState.TERMINATING:
                self._begin_stop()
                self._terminate(self._pod, log)
            else:
                self.cancel.clear()
                self._sync(self._pod, update)
        except CRIError as err:
            log.warning("{} failed: {}", self.state.value, err)
            self._done(self._timing.error_backoff, str(err), isinstance(err, CRIUnavailable))
        finally:
            if self._metrics is not None:
                self._metrics.pod_worker_duration.labels(update.kind.value).observe(
                    self._clock.monotonic() - started
                )

    def _begin_stop(self) -> None:
        """Tell the PLEG this worker is stopping (or removing) its pod, so that pod's
        events make no relist until _done tells it the stop ended, however it ended
        (actors.kubelet.pod_stopping)."""
        if not self._stop_told:
            self._stop_told = True
            self.send(names.PLEG, PodStopping(self.uid, True))

    def _cancelled(self) -> bool:
        """Whether the supervisor cancelled this sync (set from its thread: an input)."""
        return bool(self.dispatch.observe("cancelled", self.cancel.is_set()))

    def _status(self, pod: Pod, listing: PodListing | None = None) -> RuntimePodStatus:
        return self._manager.get_pod_status(self.uid, pod.metadata.name, pod.metadata.namespace,
                                            listing)

    def _first_status(self, pod: Pod, update: UpdatePod) -> RuntimePodStatus:
        """The status of this worker's first sync: from what the PLEG's first relist
        listed of the pod when the update carries it (nothing of the pod's can have been
        made since: only its worker makes things, and this one has not synced yet)."""
        fresh = self._active_since is None and self.incarnation == 0
        return self._status(pod, update.listing if fresh else None)

    def _read_begins(self) -> float:
        """When a read of the pod's status begins (a later relist update is checked
        against it: _known_since)."""
        return self._clock.monotonic()

    def _known_since(self, update: UpdatePod) -> RuntimePodStatus | None:
        """The status this worker read last, when ``update`` came from a relist whose lists
        were back before that read began: nothing the relist saw is newer, so the sync it
        brings reads nothing. None: read afresh. Strictly before: on a
        virtual clock a relist and a read at the same instant are in no known order."""
        known, at, listed = self._known_status, self._known_at, update.relisted_at
        if known is None or at is None or listed is None or at <= listed:
            return None
        return known

    def _observe(self, pod: Pod, status: RuntimePodStatus, result: PodSyncResult | None,
                 failed_reason: str = "", failed_message: str = "",
                 failed_disruption: bool = True) -> None:
        observed = PodObserved(pod, status, result, self.state, failed_reason, failed_message,
                               failed_disruption)
        self.send(names.STATUS, observed)
        self.send(names.PROBES, observed)

    def _sync(self, pod: Pod, update: UpdatePod) -> None:
        idle, self._idle_status = self._idle_status, None
        known = self._known_since(update)
        if update.resync and idle is not None:
            status, read_at = idle, self._idle_at
        elif known is not None:
            status, read_at = known, self._known_at
        else:
            read_at = self._read_begins()
            status = self._first_status(pod, update)
        phase = generate_pod_status(pod, status).phase
        now = self._clock.now()
        if self._active_since is None:
            self._active_since = now
        left = active_deadline.remaining(pod, self._active_since, now)
        if phase not in TERMINAL_PHASES and left is not None and left <= 0:
            # Failed, then stopped as any terminal pod (upstream ShouldEvict, syncPod).
            logger.bind(pod=pod.metadata.name, uid=self.uid, container="").info(
                "{}: {}", active_deadline.REASON, active_deadline.MESSAGE)
            self._observe(pod, status, None, active_deadline.REASON, active_deadline.MESSAGE)
            self.state = WorkerState.TERMINATING
            self._pending = update
            self._run()
            return
        if phase in TERMINAL_PHASES:
            # Upstream: a pod that reached a terminal phase is terminated (its sandbox
            # stopped) but stays, with its statuses, until its source removes it.
            self._observe(pod, status, None)
            self.state = WorkerState.TERMINATING
            self._pending = update
            self._run()
            return
        if update.network_error and not pod.spec.host_network:
            self._network_not_ready(pod, status, update.network_error)
            return
        # Unknown until this sync ends: it may make something, or fail.
        self._known_status, self._known_at = None, None
        made = MadeBySync()
        result = self._manager.sync_pod(
            pod, status, dict(update.liveness), dict(update.startup), self._cancelled, made
        )
        after = status
        if result.ok and made.anything:
            # (A sync with a failure goes the PLEG's way: its relist's event brings the
            # next sync, which shows the failure's back-off, as upstream's.)
            after_at = self._read_begins()
            after = self._manager.get_pod_status(
                self.uid, pod.metadata.name, pod.metadata.namespace, made.listing(status),
                made.known_sandboxes())
            self._known_status, self._known_at = after, after_at  # read after all it made
            self._observe(pod, after, result)
            self.send(names.PLEG, SyncChangedRuntime(self.uid, observed_states(after)))
            # The relist showing just this brings no sync, so the next step (the next
            # sidecar once this one started, the containers once the sidecars did) is
            # taken now, as the sync upstream's ContainerStarted event brings would.
            next_step = self._manager.more_to_do(pod, after, dict(update.liveness),
                                                 dict(update.startup))
        else:
            next_step = False
            if changed_runtime(result) and (result.ok or made.sandboxes):
                # A failed sync that made no sandbox asks for no relist: the relist's
                # event would sync it again at once, and a start that keeps failing (a
                # created container removed and made again each time) would loop with
                # no wait; it is retried after its back-off, and the PLEG's own relists
                # show what it left (as upstream's, once a period).
                self.send(names.PLEG, SyncChangedRuntime(self.uid))
            # Known unless this sync changed the runtime and nothing was read after it.
            if after is not status or not changed_runtime(result):
                self._known_status, self._known_at = after, read_at
            self._observe(pod, after, result)
        new_phase = generate_pod_status(pod, after, result).phase
        changed = new_phase != self._last_phase
        self._last_phase = new_phase
        # Wake at the active deadline at the latest (upstream's ShouldSync).
        deadline_in = None if left is None else max(left - (self._clock.now() - now), 0.0)
        if not result.ok:
            self._done(_sooner(_retry_after(result, self._timing.error_backoff), deadline_in),
                       str(result))
        elif (changed and new_phase in TERMINAL_PHASES) or next_step:
            self._done(0.0)  # a phase change (or a next step) is acted on right away
        else:
            if not result.steps:
                self._idle_status, self._idle_at = after, read_at
            jitter = self._rng.uniform(0, RESYNC_JITTER) * self._timing.resync_interval
            self._done(_sooner(self._timing.resync_interval + jitter, deadline_in))

    def _network_not_ready(self, pod: Pod, status: RuntimePodStatus, error: str) -> None:
        """Upstream's SyncPod with the runtime's network not ready: a pod outside the
        node's network starts nothing (its status still reported); tried again once the
        network is ready (the sync loop syncs every pod then) or after the back-off."""
        message = f"network is not ready: {error}"
        self._events.event(pod_ref(pod), reasons.WARNING, reasons.NETWORK_NOT_READY, message)
        logger.bind(pod=pod.metadata.name, uid=self.uid, container="").warning(
            "Error syncing pod, skipping: {}", message)
        self._observe(pod, status, None)
        self._done(self._timing.error_backoff, message)

    def _terminate(self, pod: Pod, log: Any) -> None:
        # A pod that goes shows no status again: what the kill needs is read, no more.
        status = self._removal_status(pod) if self._remove else self._status(pod)
        kill = self._kill
        # A kill that fails the pod (an eviction): Failed once its containers stopped, as
        # upstream's status manager delays a terminal phase until nothing can run.
        failed = ((kill.failed_reason, kill.failed_message, kill.failed_disruption)
                  if kill is not None else ("", "", True))
        result = self._manager.kill_pod(pod, status, self._grace)
        if not result.ok:
            log.warning("stopping the pod failed, will retry: {}", result)
            self._events.event(pod_ref(pod), reasons.WARNING, reasons.FAILED_TO_KILL_POD,
                               f"error killing pod: {result}")
            self._done(TERMINATE_RETRY, str(result))
            return
        self.state = WorkerState.TERMINATED
        # A pod that goes loses its sandboxes first and its cgroup after: the cgroup is
        # empty once StopPodSandbox returned, and its removal (a walk of the node's pod
        # cgroups, under a lock all workers share) need not hold up the sandbox's.
        if not self._remove:
            self._manager.destroy_pod_cgroup(self.uid)
        # Its subPath binds go, and its tmpfs and hugetlbfs volumes give their memory back,
        # once nothing of it runs (upstream's SyncTerminatedPod waits for the volume
        # manager to unmount them).
        unmounted = self._manager.unmount_volumes(self.uid, pod.metadata.name,
                                                  sub_paths=has_sub_paths(pod))
        if failed[0] == reasons.EVICTED:
            tear_down_empty_dirs(pod, self._manager.settings)  # the reclaimed disk
        if self._remove:
            # Removed: an empty runtime status would read as Pending; the supervisor
            # forgets the pod (and its status) once it hears this worker is done.
            self._remove_pod(status, log, unmounted)
            self._manager.destroy_pod_cgroup(self.uid)
        else:
            if any(c.is_running for c in status.container_statuses):
                # What it stopped shows as terminated (upstream reads the status again
                # after killing, in SyncTerminatingPod).
                status = self._status(pod)
            self._known_status = status  # read after the kill: what a removal stops
            self._known_at = None  # (a terminated worker syncs no more)
            self._observe(pod, status, result, *failed)
        log.info("pod terminated{}", " and removed" if self._remove else "")
        self._done(None)

    def _removal_status(self, pod: Pod) -> RuntimePodStatus:
        """What stopping and removing the pod starts from (see _known_status)."""
        known, self._known_status = self._known_status, None
        return known if known is not None else self._manager.removal_status(pod)

    def _remove_pod(self, status: RuntimePodStatus, log: Any, unmounted: bool = True) -> None:
        """Remove the pod's sandboxes (and with them its containers), then its dirs: its
        pod directory only once no volume is mounted in it (a removal would reach into
        the mount; upstream's cleanupOrphanedPodDirs keeps such a directory too)."""
        self._manager.remove_pod_sandboxes(status)
        pod = self._pod
        if pod is None:
            return
        settings = self._manager.settings
        for path in (
            *((settings.pod_dir(pod.uid),) if unmounted else ()),
            settings.pod_log_dir(pod.metadata.namespace, pod.metadata.name, pod.uid),
        ):
            mounted = remove_unmounted_tree(path)
            if mounted:
                log.error("not removing {}: still mounted there: {}", path, ", ".join(mounted))
        log.debug("removed the pod's sandboxes and directories")

    def _done(self, requeue_after: float | None, error: str = "", runtime_error: bool = False
              ) -> None:
        if self._stop_told:
            # Before the sync loop hears of it: a terminated worker is forgotten then, and
            # nothing of it may be sent after (the dispatch would count it again).
            self._stop_told = False
            self.send(names.PLEG, PodStopping(self.uid, False))
        self.send(names.SYNC_LOOP, PodWorkerDone(
            self.uid, self.state, requeue_after, error, runtime_error
        ))


def _retry_after(result: PodSyncResult, error_backoff: float) -> float:
    """When to sync a pod whose sync failed: after the error back-off, or sooner when
    every failure is a back-off wait (CrashLoopBackOff, ImagePullBackOff) that ends
    sooner (a crashLoopBackOff.maxContainerRestartPeriod under 10 s): upstream's SyncPod
    does not count those waits as errors, and retries when they end."""
    waits = [s.backoff_seconds for s in result.failures]
    if waits and all(w is not None for w in waits):
        return min(error_backoff, *(w for w in waits if w is not None))
    return error_backoff


def changed_runtime(result: PodSyncResult) -> bool:
    """Whether a sync may have changed what the runtime holds: a step other than a
    back-off wait or a volume that could not be mounted (those call nothing)."""
    return any(s.backoff_seconds is None and s.action != "MountVolumes" for s in result.steps)


def _sooner(delay: float, deadline_in: float | None) -> float:
    return delay if deadline_in is None else min(delay, deadline_in)
