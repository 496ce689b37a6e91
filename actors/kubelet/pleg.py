"""The PLEG: relists the runtime and turns state changes into pod lifecycle events.

Each relist is two cheap calls (ListPodSandbox, ListContainers). Sandboxes count as
containers, as in upstream's generic PLEG, so a sandbox that dies triggers a sync too.
The result goes to the supervisor as one Relisted message: the events, and every pod the
runtime holds (for orphan clean-up and /runningpods/).

Event-driven, as upstream's evented PLEG: while the runtime's event stream is up
(CRI GetContainerEvents, or containerd's events service where the runtime lacks it:
runtime.containerd.event_sources; its thread tells this actor RuntimeEventSeen), each event
makes a relist at once, so an exit reaches the sync loop in milliseconds rather than at
the next 1 s tick; the ticks then relist only every EVENTED_RELIST_PERIOD as a safety net.
The runtime's own view may trail its event by a little (containerd's CRI plugin handles the
same exit asynchronously), so an event the relist does not show yet is re-checked after
RECHECK_DELAYS. A task start makes no relist at once: the kubelet's own starts are
relisted when the pod worker whose sync made them asks (SyncChangedRuntime, once its
runtime calls are done); a start that no relist has shown UNKNOWN_START_DELAY later was not
the kubelet's (a container run behind its back, an orphan to kill) and makes a relist
then. The events of a pod whose worker is stopping it make no relist either; the worker's
end of the stop does (actors.kubelet.pod_stopping). When the stream breaks the PLEG
relists on every tick again. Relisting on
an event, rather than building lifecycle events from it, keeps the events exactly those of
the relist, and replay answers the relist's runtime calls as it always has.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers
from actors.kubelet import names
from actors.kubelet.messages import (
    EventType,
    PodLifecycleEvent,
    Relisted,
    RelistFailed,
    RelistNow,
    RuntimeContainer,
    RuntimeEventsConnected,
    RuntimeEventSeen,
    RuntimeEventsLost,
    RuntimePod,
    SyncChangedRuntime,
)
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.pod_stopping import PodStopping
from runtime.clock import Clock
from runtime.cri.runtime_events import (
    EventKind,
    RuntimeEvent,
    Subscription,
    SubscriptionFactory,
)
from runtime.cri.service import RuntimeService
from runtime.cri.types import ContainerState, SandboxState
from runtime.errors import CRIError
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.podstatus import ListedSandbox, PodListing, RuntimePodStatus

EVENTED_RELIST_PERIOD = 300.0
"""Seconds between safety-net relists while events flow (upstream's evented PLEG: 300 s)."""
RECHECK_DELAYS = (0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64)
"""Waits before relisting again when a relist does not yet show what an event said."""
UNKNOWN_START_DELAY = 1.0
"""How long a task start no relist has shown may wait for the relist of the sync that made
it before the PLEG relists for it (the generic PLEG's period: an orphan is seen as soon)."""
UNKNOWN_START = "unknown start"
"""The RelistNow reason of that deferred relist."""
SAFETY_NET_DELAY = 0.5
"""How long the relist a worker's sync or stop asks for waits, so the syncs
and stops of a burst share one (and any relist meanwhile stands in for it). The worker
has read and reported what it made already; the relist is the safety net, and shows the
task starts well before UNKNOWN_START_DELAY."""
SAFETY_NET = "safety net"
"""The RelistNow reason of that delayed relist."""
SETTLE_DELAY = 1.0
"""A second relist this long after the stream (re)opens: an event published while the
subscription was being set up may have been missed by the first."""

_log = logger.bind(pod="", uid="", container="")


class PlegState(enum.Enum):
    """Upstream plegContainerState: Created counts as unknown."""

    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"
    NON_EXISTENT = "non-existent"


_FROM_CRI = {
    ContainerState.RUNNING: PlegState.RUNNING,
    ContainerState.EXITED: PlegState.EXITED,
    ContainerState.CREATED: PlegState.UNKNOWN,
    ContainerState.UNKNOWN: PlegState.UNKNOWN,
}


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """One relist: each pod's containers (and sandboxes) with their state."""

    states: dict[PodUID, dict[ContainerID, PlegState]]
    pods: tuple[RuntimePod, ...]
    running_containers: int
    # Each pod's sandboxes and containers as a label-filtered listing would show them.
    listings: tuple[PodListing, ...] = ()


def events_for(
    uid: PodUID, cid: ContainerID, old: PlegState, new: PlegState
) -> list[PodLifecycleEvent]:
    """Upstream generateEvents: what a container's state change means."""
    if old == new:
        return []
    if new == PlegState.RUNNING:
        return [PodLifecycleEvent(uid, EventType.CONTAINER_STARTED, cid)]
    if new == PlegState.EXITED:
        return [PodLifecycleEvent(uid, EventType.CONTAINER_DIED, cid)]
    if new == PlegState.UNKNOWN:
        return [PodLifecycleEvent(uid, EventType.CONTAINER_CHANGED, cid)]
    if old == PlegState.EXITED:
        return [PodLifecycleEvent(uid, EventType.CONTAINER_REMOVED, cid)]
    return [
        PodLifecycleEvent(uid, EventType.CONTAINER_DIED, cid),
        PodLifecycleEvent(uid, EventType.CONTAINER_REMOVED, cid),
    ]


def diff(
    old: dict[PodUID, dict[ContainerID, PlegState]],
    new: dict[PodUID, dict[ContainerID, PlegState]],
) -> tuple[PodLifecycleEvent, ...]:
    """Every event between two relists, pod by pod, container by container."""
    events: list[PodLifecycleEvent] = []
    for uid in sorted(set(old) | set(new)):
        before, after = old.get(uid, {}), new.get(uid, {})
        for cid in sorted(set(before) | set(after)):
            events.extend(events_for(
                uid, cid,
                before.get(cid, PlegState.NON_EXISTENT),
                after.get(cid, PlegState.NON_EXISTENT),
            ))
    return tuple(events)


def observed_states(status: RuntimePodStatus) -> tuple[tuple[ContainerID, str], ...]:
    """A pod's status as a relist would show its states (SyncChangedRuntime.observed):
    sandboxes count as containers, running when ready, as take_snapshot has them."""
    sandboxes = ((ContainerID(s.id), PlegState.RUNNING if s.state == SandboxState.READY
                  else PlegState.EXITED) for s in status.sandbox_statuses)
    containers = ((c.id, _FROM_CRI[c.state]) for c in status.container_statuses)
    return tuple(sorted((cid, state.value) for cid, state in (*sandboxes, *containers)))


def unobserved_events(events: tuple[PodLifecycleEvent, ...],
                      states: dict[PodUID, dict[ContainerID, PlegState]],
                      observed: dict[PodUID, tuple[tuple[ContainerID, str], ...]]
                      ) -> tuple[PodLifecycleEvent, ...]:
    """The events of a relist less those of pods it shows exactly as their workers
    observed them after their syncs: those workers have nothing new to see."""
    seen = {uid for uid, told in observed.items()
            if tuple(sorted((cid, s.value) for cid, s in states.get(uid, {}).items())) == told}
    return tuple(e for e in events if e.uid not in seen)


def expected_state(kind: EventKind) -> PlegState | None:
    """What a relist should show for the container once the runtime has caught up."""
    return {
        EventKind.STARTED: PlegState.RUNNING,
        EventKind.EXITED: PlegState.EXITED,
        EventKind.REAPED: PlegState.EXITED,
        EventKind.DELETED: PlegState.NON_EXISTENT,
    }.get(kind)


def caught_up(want: PlegState, have: PlegState) -> bool:
    """Whether a relist shows an event: a start already followed by an exit counts."""
    return have == want or (want == PlegState.RUNNING and have == PlegState.EXITED)


def take_snapshot(runtime: RuntimeService, with_listings: bool = False) -> _Snapshot:
    """One relist; ``with_listings``: with each pod's listing too (a first relist)."""
    sandboxes = runtime.list_pod_sandbox()
    containers = runtime.list_containers()
    states: dict[PodUID, dict[ContainerID, PlegState]] = {}
    names: dict[PodUID, tuple[str, str]] = {}
    running: dict[PodUID, bool] = {}
    members: dict[PodUID, list[RuntimeContainer]] = {}
    listed: dict[PodUID, list[ListedSandbox]] = {}
    for s in sandboxes:
        uid = PodUID(s.labels.get(L.POD_UID, s.metadata.uid))
        if with_listings and L.POD_UID in s.labels:  # as get_pod_status's filter finds them
            listed.setdefault(uid, []).append(ListedSandbox(s.id, s.created_at,
                                                            s.metadata.attempt))
        ready = s.state == SandboxState.READY
        states.setdefault(uid, {})[ContainerID(s.id)] = (
            PlegState.RUNNING if ready else PlegState.EXITED
        )
        names.setdefault(uid, (s.metadata.name, s.metadata.namespace))
        running[uid] = running.get(uid, False) or ready
    running_containers = 0
    for c in containers:
        uid = PodUID(c.labels.get(L.POD_UID, ""))
        if not uid:
            continue  # not made by a kubelet: not ours to track
        states.setdefault(uid, {})[c.id] = _FROM_CRI[c.state]
        is_running = c.state == ContainerState.RUNNING
        running_containers += is_running
        running[uid] = running.get(uid, False) or is_running
        names.setdefault(uid, (c.labels.get(L.POD_NAME, ""), c.labels.get(L.POD_NAMESPACE, "")))
        members.setdefault(uid, []).append(RuntimeContainer(
            c.id, c.labels.get(L.CONTAINER_NAME, c.metadata.name), c.image.image,
            c.state.name.lower(),
        ))
    pods = tuple(
        RuntimePod(uid, names[uid][0], names[uid][1], running.get(uid, False),
                   tuple(members.get(uid, ())))
        for uid in sorted(states)
    )
    listings = tuple(
        PodListing(uid, tuple(listed.get(uid, ())), tuple(c.id for c in members.get(uid, ())))
        for uid in sorted(states) if uid in listed or uid in members
    ) if with_listings else ()
    return _Snapshot(states, pods, running_containers, listings)


class _TellPLEG:
    """The event subscription's sink: every report becomes a message to the PLEG."""

    def __init__(self, dispatch: Dispatch) -> None:
        self._dispatch = dispatch

    def _tell(self, message: object) -> None:
        self._dispatch.tell(names.PLEG, message, sender=f"{names.PLEG}/events")

    def on_event(self, event: RuntimeEvent) -> None:
        self._tell(RuntimeEventSeen(event.kind.value, event.container_id))

    def on_connected(self, source: str) -> None:
        self._tell(RuntimeEventsConnected(source))

    def on_lost(self, reason: str) -> None:
        self._tell(RuntimeEventsLost(reason))


class PLEG(Actor):
    """Relists on Tick("relist") (every tick, or only every EVENTED_RELIST_PERIOD while the
    runtime's events flow) and on each runtime event, and reports to the supervisor."""

    def __init__(
        self, dispatch: Dispatch, runtime: RuntimeService, clock: Clock, incarnation: int = 0,
        *, timers: Timers | None = None, runtime_events: SubscriptionFactory | None = None,
        metrics: KubeletMetrics | None = None,
    ) -> None:
        """What each relist tells besides its events: the first also each pod's sandboxes
        and containers (Relisted.listings), which the first sync of each pod reads its
        status from, as upstream's pod workers read the cache the PLEG's relist filled;
        every one when its lists were back (Relisted.listed_at), so a worker that read
        its pod after that need not read it again for the relist's events. The relist a
        sync that read what it made asks for (SyncChangedRuntime.observed), and the one a
        worker's end of a stop asks for, wait SAFETY_NET_DELAY, shared by all asked
        meanwhile, and any relist before then stands in for it."""
        super().__init__(names.PLEG, dispatch, incarnation)
        self._stopping: set[PodUID] = set()  # pods whose workers are stopping them
        self._safety_net: Cancellable | None = None  # the delayed relist, when one waits
        self._runtime = runtime
        self._clock = clock
        self._timers = timers
        self._events = runtime_events  # None: no stream (a replay, or none configured)
        self._metrics = metrics
        self._subscription: Subscription | None = None
        self._source = ""  # where the open stream's events come from
        self._states: dict[PodUID, dict[ContainerID, PlegState]] | None = None
        self._evented = False
        self._last_relist: float | None = None
        self._relist_queued = False
        self._expected: dict[ContainerID, PlegState] = {}
        self._rechecks = 0
        self._recheck: Cancellable | None = None
        self._unknown_starts: set[ContainerID] = set()  # started, shown by no relist yet
        self._unknown_check: Cancellable | None = None
        # What workers read of their pods after their syncs, until the next relist
        # (SyncChangedRuntime.observed).
        self._observed: dict[PodUID, tuple[tuple[ContainerID, str], ...]] = {}

    # --- lifecycle ------------------------------------------------------------------------

    def on_start(self) -> None:
        if self._events is None:
            return
        # The stream's thread tells this actor by name: make sure the name points here.
        if self.dispatch.ref(self.name) is not self.actor_ref:
            self.dispatch.register(self.name, self.actor_ref, self.incarnation)
        self._subscription = self._events(_TellPLEG(self.dispatch))

    def on_stop(self) -> None:
        self._close()

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        self._close()
        super().on_failure(exception_type, exception_value, traceback)

    def _close(self) -> None:
        if self._subscription is not None:
            self._subscription.stop()
            self._subscription = None
        for pending in (self._recheck, self._unknown_check, self._safety_net):
            if pending is not None:
                pending.cancel()
        self._recheck = self._unknown_check = self._safety_net = None

    # --- messages -------------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind == names.TICK_RELIST:
            if not self._evented or self._due():
                self.relist()
        elif isinstance(message, RuntimeEventSeen):
            self._event(message)
        elif isinstance(message, SyncChangedRuntime):
            if message.observed is not None:
                self._observed[message.uid] = message.observed
                self._relist_later("sync")
            else:
                self._queue_relist("sync")
        elif isinstance(message, PodStopping):
            if message.stopping:
                self._stopping.add(message.uid)
            else:
                self._stopping.discard(message.uid)
                self._relist_later("pod stopped")
        elif isinstance(message, RelistNow) and message.reason == SAFETY_NET:
            if self._safety_net is not None:  # else a relist stood in since it fired
                self._safety_net = None
                self.relist()
        elif isinstance(message, RelistNow) and message.reason == UNKNOWN_START:
            self._unknown_check = None
            if self._forget_shown_starts():
                self.relist()
                self._unknown_starts.clear()
        elif isinstance(message, RelistNow):
            self._relist_queued = False
            if message.reason == "recheck":
                self._recheck = None
            self.relist()
            self._check_expected()
        elif isinstance(message, RuntimeEventsConnected):
            _log.info("PLEG: runtime events flowing (from {}); relisting every {:.0f}s as a "
                      "safety net", message.source or "the runtime", EVENTED_RELIST_PERIOD)
            self._evented = True
            self._source = message.source
            if self._metrics is not None:
                self._metrics.evented_pleg_connection_success.inc()
                if message.source:
                    self._metrics.runtime_events_source.labels(message.source).set(1)
            self._queue_relist("events connected")
            if self._timers is not None:
                self._timers.once(SETTLE_DELAY, self.name, RelistNow("settle"))
        elif isinstance(message, RuntimeEventsLost):
            if self._evented:
                _log.warning("PLEG: runtime event stream lost ({}); relisting every tick",
                             message.reason)
            self._evented = False
            if self._metrics is not None:
                self._metrics.evented_pleg_connection_error.inc()
                if self._source:
                    self._metrics.runtime_events_source.labels(self._source).set(0)
            self._queue_relist("events lost")
        else:
            return super().handle(message)
        return None

    def _due(self) -> bool:
        last = self._last_relist
        return last is None or self._clock.monotonic() - last >= EVENTED_RELIST_PERIOD

    def _queue_relist(self, reason: str) -> None:
        """One relist for however many events are waiting in the mailbox before it."""
        if not self._relist_queued:
            self._relist_queued = True
            self.send(self.name, RelistNow(reason))

    def _relist_later(self, reason: str) -> None:
        """A safety-net relist: after SAFETY_NET_DELAY (queued now with no timers)."""
        if self._timers is None:
            self._queue_relist(reason)
        elif self._safety_net is None:
            self._safety_net = self._timers.once(SAFETY_NET_DELAY, self.name,
                                                 RelistNow(SAFETY_NET))

    def _event(self, seen: RuntimeEventSeen) -> None:
        try:
            kind = EventKind(seen.kind)
        except ValueError:
            return
        if kind == EventKind.STARTED:
            # The sync that caused it asks for the relist once its calls are done; a start
            # no sync caused is relisted for UNKNOWN_START_DELAY later.
            self._unknown_starts.add(ContainerID(seen.container_id))
            if self._forget_shown_starts() and self._unknown_check is None and self._timers:
                self._unknown_check = self._timers.once(UNKNOWN_START_DELAY, self.name,
                                                        RelistNow(UNKNOWN_START))
            return
        if self._stopping and self._of_stopping_pod(ContainerID(seen.container_id)):
            return  # its worker's end of the stop relists (pod_stopping)
        want = expected_state(kind)
        if want is not None:
            self._expected[ContainerID(seen.container_id)] = want
        self._queue_relist("event")

    def _of_stopping_pod(self, cid: ContainerID) -> bool:
        """Whether the last relist showed ``cid`` (a container or sandbox) in a pod whose
        worker is stopping it."""
        states = self._states or {}
        return any(cid in states.get(uid, {}) for uid in self._stopping)

    def _forget_shown_starts(self) -> bool:
        """Drop the task starts a relist has shown; whether any is left."""
        shown = {cid for pod in (self._states or {}).values() for cid in pod}
        self._unknown_starts -= shown
        return bool(self._unknown_starts)

    def _check_expected(self) -> None:
        """Re-check soon when the runtime does not yet show what its events said."""
        states = self._states or {}
        current = {cid: state for pod in states.values() for cid, state in pod.items()}
        self._expected = {
            cid: want for cid, want in self._expected.items()
            if not caught_up(want, current.get(cid, PlegState.NON_EXISTENT))
            # a start or exit of a container no relist has ever shown: not one of ours
            and (cid in current or want == PlegState.NON_EXISTENT)
        }
        if not self._expected:
            self._rechecks = 0
            return
        if self._recheck is not None or self._timers is None:
            return
        if self._rechecks >= len(RECHECK_DELAYS):
            _log.warning("PLEG: the runtime still does not show {} container event(s) after "
                         "{:.1f}s; the next relist will", len(self._expected),
                         sum(RECHECK_DELAYS))
            self._expected, self._rechecks = {}, 0
            return
        delay = RECHECK_DELAYS[self._rechecks]
        self._rechecks += 1
        self._recheck = self._timers.once(delay, self.name, RelistNow("recheck"))

    def relist(self) -> None:
        started = self._clock.monotonic()
        listing = self._states is None
        try:
            snapshot = take_snapshot(self._runtime, with_listings=listing)
        except CRIError as err:
            logger.warning("PLEG relist failed: {}", err)
            self.send(names.SYNC_LOOP, RelistFailed(str(err)))
            return
        self._last_relist = started
        if self._safety_net is not None:  # this relist is the one it waited for
            self._safety_net.cancel()
            self._safety_net = None
        # The first relist after a (re)start has nothing to compare with: every pod gets a
        # sync event, so a new incarnation rebuilds its view from the runtime.
        if self._states is None:
            events = tuple(
                PodLifecycleEvent(uid, EventType.POD_SYNC) for uid in sorted(snapshot.states)
            )
        else:
            events = diff(self._states, snapshot.states)
        if self._observed:
            events = unobserved_events(events, snapshot.states, self._observed)
            self._observed = {}
        self._states = snapshot.states
        # (Read after the lists and the diff: later than the lists returned, which is the
        # safe side for the workers' comparison.)
        ended = self._clock.monotonic()
        self.send(names.SYNC_LOOP, Relisted(
            events=events, pods=snapshot.pods, running_containers=snapshot.running_containers,
            duration=ended - started, evented=self._evented,
            listings=snapshot.listings if listing else None,
            listed_at=ended,
        ))
