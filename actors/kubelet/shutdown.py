"""The node shutdown manager (upstream's pkg/kubelet/nodeshutdown managerImpl) as an actor.

Its inputs are messages: ``NodeShutdownEvent`` from the logind watch (a source thread,
actors.kubelet.sources.logind) for each PrepareForShutdown signal, ``ShutdownPods`` (the
active pods) from the sync loop, ``ShutdownPodStopped`` from the sync loop as each pod it
asked to stop is stopped, and its own ``ShutdownGroupTimeout``. As upstream:

- on PrepareForShutdown(true): a ``NodeShutdown`` node event ("Shutdown manager detected
  shutdown event"); the node is shutting down, which the sync loop (admission refuses new
  pods: reason NodeShutdown) and, in cluster mode, the node status actor (Ready false, "node
  is shutting down", posted at once) are told; then the active pods are stopped by priority
  group, lowest first: every pod of a group at once, each with the smaller of its own and
  its group's grace period, through the pod workers (preStop hooks, then Failed with reason
  Terminated and the DisruptionTarget condition), waiting until all of the group stopped or
  the group's grace period passed; after the last group the inhibitor lock is released, and
  logind goes on with the shutdown;
- on PrepareForShutdown(false) (the shutdown was cancelled): "Shutdown manager detected
  shutdown cancellation", the node is no longer shutting down, and the lock is taken again.
  An event that comes while pods are being stopped waits until that is done, as upstream's
  one goroutine handles them in turn.

As a shutdown starts and ends (and when the BasedOnPodPriority gate is on, as upstream's
enableMetrics) it stores upstream's ``graceful_node_shutdown_state`` (a ShutdownStateSink)
and sets ``kubelet_graceful_shutdown_start_time_seconds`` and ``..._end_time_seconds``;
its first incarnation sets them from the state the daemon read at start
(``ShutdownSettings.state``), so they survive the kubelet's restart.

Supervised: it hands its progress (``ShutdownProgress``) to the sync loop as a HandOver
whenever that changes, and an incarnation started from it carries on: still shutting
down, it tells the node status actor again and, when pods were being stopped, asks the
sync loop for the active pods again and resumes at the group it was stopping, with what
was left of that group's period (kills already ordered are not repeated by the sync loop,
it only reports them stopped).

The lock itself is the watch's (``Inhibitor``): this actor only tells it when to release
and take it again. Replay: every input is a recorded delivery (the clock's reads are
recorded too), a successor is built from the recorded hand-over, and no Inhibitor nor
state file is given, so the actor is rebuilt and replayed like the others.
"""

from __future__ import annotations

from typing import Any, Protocol

from loguru import logger
from msgspec import Struct

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import HandOver
from actors.core.timers import Cancellable, Timers
from actors.core.trace.names import message
from actors.kubelet import names
from actors.kubelet.metrics import KubeletMetrics
from runtime.clock import Clock, RealClock
from runtime.errors import ShutdownStateError
from runtime.events import reasons
from runtime.events.recorder import NULL_RECORDER, EventRecorder, node_ref
from runtime.nodeshutdown import (
    ShutdownGracePeriodByPodPriority,
    ShutdownGroup,
    group_by_priority,
    pod_grace_period,
)
from runtime.nodeshutdown_state import ShutdownState, ShutdownStateSink, timestamp
from runtime.pod.model import Pod


@message("NodeShutdownEvent")
class NodeShutdownEvent(Struct, frozen=True):
    """The logind watch -> shutdown manager: PrepareForShutdown(``shutting_down``)."""

    shutting_down: bool


@message("NodeShuttingDown")
class NodeShuttingDown(Struct, frozen=True):
    """Shutdown manager -> sync loop and node status: whether the node is shutting down
    (upstream's ShutdownStatus). True asks the sync loop for the active pods."""

    shutting_down: bool


@message("ShutdownPods")
class ShutdownPods(Struct, frozen=True):
    """Sync loop -> shutdown manager: the active pods (admitted, not terminated)."""

    pods: tuple[Pod, ...]


@message("ShutdownKill")
class ShutdownKill(Struct, frozen=True):
    """Shutdown manager -> sync loop: stop this pod with this grace and fail it (reason
    Terminated); ShutdownPodStopped follows once it is stopped."""

    uid: str
    grace_period: int


@message("ShutdownPodStopped")
class ShutdownPodStopped(Struct, frozen=True):
    """Sync loop -> shutdown manager: a pod ShutdownKill named is stopped (or was gone)."""

    uid: str


@message("ShutdownGroupTimeout")
class ShutdownGroupTimeout(Struct, frozen=True):
    """The shutdown manager's own timer: group ``group`` of shutdown ``shutdown`` had its
    grace period."""

    shutdown: int
    group: int


@message("GetShutdownStatus")
class GetShutdownStatus(Struct, frozen=True):
    """Ask: whether the node is shutting down."""


class Inhibitor(Protocol):
    """The delay inhibitor lock the logind watch holds."""

    def release(self) -> None:
        """Let the shutdown go on (close the lock's file descriptor)."""

    def acquire(self) -> None:
        """Take the lock again (after a cancelled shutdown)."""


class ShutdownSettings(Struct, frozen=True):
    """The groups (sorted by priority, lowest first), who else hears of a shutdown, and
    the last shutdown's state as the daemon read it at start (an input: in the header)."""

    periods: tuple[ShutdownGracePeriodByPodPriority, ...]
    node_status: bool = False  # cluster mode: the node status actor reports NotReady
    # upstream's enableMetrics (the GracefulNodeShutdownBasedOnPodPriority gate): the state
    # file is stored and the start/end metrics are set.
    record_state: bool = True
    state: ShutdownState = ShutdownState()


class ShutdownProgress(Struct, frozen=True):
    """What an incarnation hands its successor: where the shutdown it handles stands."""

    shutting_down: bool = False
    processing: bool = False  # stopping pods (the lock is not released yet)
    shutdowns: int = 0
    group: int = -1  # the group being stopped; -1: waiting for the active pods
    group_deadline: float = 0.0  # that group's period ends (the clock's monotonic time)
    start_time: float = 0.0  # the shutdown's start (seconds since the epoch)
    pending: tuple[bool, ...] = ()  # events that came while stopping pods


class ShutdownManager(Actor):
    """Stops the node's pods by priority when logind says the node shuts down."""

    def __init__(self, dispatch: Dispatch, timers: Timers, settings: ShutdownSettings,
                 node_name: str, incarnation: int = 0, inhibitor: Inhibitor | None = None,
                 events: EventRecorder = NULL_RECORDER, clock: Clock | None = None,
                 metrics: KubeletMetrics | None = None, state: ShutdownStateSink | None = None,
                 resumed: ShutdownProgress | None = None) -> None:
        super().__init__(names.SHUTDOWN, dispatch, incarnation)
        self._timers = timers
        self._settings = settings
        self._node_name = node_name
        self._inhibitor = inhibitor
        self._events = events
        self._clock: Clock = clock if clock is not None else RealClock()
        self._metrics = metrics
        self._state = state
        self._resumed = resumed
        self._shutting_down = False
        self._processing = False  # stopping pods; later events wait in _pending
        self._pending: list[bool] = []
        self._shutdowns = 0  # numbers each shutdown, so an old group's timer is ignored
        self._groups: tuple[ShutdownGroup, ...] = ()
        self._group = -1
        self._group_deadline = 0.0
        self._resume_at: tuple[int, float] | None = None  # (group, deadline) to carry on
        self._start_time = 0.0
        self._waiting: set[str] = set()
        self._timer: Cancellable | None = None
        self._log = logger.bind(pod="", uid="", container="")
        if resumed is not None:
            # Here, not in on_start: a replay builds the successor without starting it.
            self._shutting_down = resumed.shutting_down
            self._processing = resumed.processing
            self._shutdowns = resumed.shutdowns
            self._start_time = resumed.start_time
            self._pending = list(resumed.pending)
            if resumed.processing and resumed.group >= 0:
                self._resume_at = (resumed.group, resumed.group_deadline)

    def on_start(self) -> None:
        resumed = self._resumed
        if resumed is None:
            if self.incarnation == 0:
                self._set_metrics(self._settings.state)  # upstream's setMetrics at Start
            return
        if not resumed.shutting_down:
            return
        self._log.info("Shutdown manager resuming the node shutdown in progress: group={}",
                       resumed.group)
        if self._settings.node_status:
            self.send(names.NODE_STATUS, NodeShuttingDown(True))
        if resumed.processing:
            # The active pods again (ShutdownPods): the ones stopped meanwhile are not.
            self.send(names.SYNC_LOOP, NodeShuttingDown(True))

    def on_stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _hand_over(self) -> None:
        """Leave the successor where the shutdown stands (the supervisor keeps the newest)."""
        self.send(names.SYNC_LOOP, HandOver(self.name, self.incarnation, ShutdownProgress(
            self._shutting_down, self._processing, self._shutdowns, self._group,
            self._group_deadline, self._start_time, tuple(self._pending))))

    def handle(self, message: Any) -> Any:
        if isinstance(message, NodeShutdownEvent):
            if self._processing:
                self._pending.append(message.shutting_down)
                self._hand_over()
            else:
                self._event(message.shutting_down)
        elif isinstance(message, ShutdownPods):
            if self._processing and self._group < 0:
                self._kill_pods(message.pods)
        elif isinstance(message, ShutdownPodStopped):
            self._stopped(message.uid)
        elif isinstance(message, ShutdownGroupTimeout):
            if self._processing and (message.shutdown, message.group) == (
                    self._shutdowns, self._group):
                period = self._groups[self._group].period
                self._log.info("Shutdown manager pod killing time out: gracePeriod={} "
                               "priority={}", period.shutdown_grace_period_seconds,
                               period.priority)
                self._next_group()
        elif isinstance(message, GetShutdownStatus):
            return self._shutting_down
        else:
            return super().handle(message)
        return None

    def _event(self, shutting_down: bool) -> None:
        kind = "shutdown" if shutting_down else "cancelled"
        self._log.info("Shutdown manager detected new shutdown event: event={}", kind)
        self._events.event(node_ref(self._node_name), reasons.NORMAL, reasons.NODE_SHUTDOWN,
                           "Shutdown manager detected shutdown event" if shutting_down
                           else "Shutdown manager detected shutdown cancellation")
        self._shutting_down = shutting_down
        if shutting_down:
            self._processing = True
            self._shutdowns += 1
            self._groups, self._group, self._group_deadline = (), -1, 0.0
            self._resume_at = None
            self._started()
        self._hand_over()
        if self._settings.node_status:
            self.send(names.NODE_STATUS, NodeShuttingDown(shutting_down))
        # True also asks the sync loop for the active pods (ShutdownPods).
        self.send(names.SYNC_LOOP, NodeShuttingDown(shutting_down))
        if not shutting_down and self._inhibitor is not None:
            self._inhibitor.acquire()

    def _started(self) -> None:
        """Upstream's processShutdownEvent start: the state stored, the metrics set."""
        if not self._settings.record_state:
            return
        self._start_time = self._clock.now()
        self._store(ShutdownState(self._start_time))
        if self._metrics is not None:
            self._metrics.graceful_shutdown_start_time.set(timestamp(self._start_time))
            self._metrics.graceful_shutdown_end_time.set(0)

    def _ended(self) -> None:
        if not self._settings.record_state:
            return
        end_time = self._clock.now()
        self._store(ShutdownState(self._start_time, end_time))
        if self._metrics is not None:
            self._metrics.graceful_shutdown_end_time.set(timestamp(end_time))

    def _store(self, state: ShutdownState) -> None:
        if self._state is None:
            return
        try:
            self._state.store(state)
        except ShutdownStateError as err:
            self._log.error("Failed to store graceful shutdown state: {}", err)

    def _set_metrics(self, state: ShutdownState) -> None:
        if self._metrics is None or not self._settings.record_state:
            return
        if state.start_time:
            self._metrics.graceful_shutdown_start_time.set(timestamp(state.start_time))
        if state.end_time:
            self._metrics.graceful_shutdown_end_time.set(timestamp(state.end_time))

    def _kill_pods(self, pods: tuple[Pod, ...]) -> None:
        self._groups = group_by_priority(self._settings.periods, pods)
        resume, self._resume_at = self._resume_at, None
        if resume is None:
            self._log.info("Shutdown manager processing shutdown event")
            self._next_group()
            return
        # A successor: the groups before the one being stopped are done (their kills
        # run on in the sync loop); that one goes on for what is left of its period.
        group, deadline = resume
        self._group = group - 1
        self._next_group(max(deadline - self._clock.monotonic(), 0.0))

    def _next_group(self, left: float | None = None) -> None:
        """Stop the next group with pods; ``left``: the seconds its period has left (a
        successor resuming it), else the whole period."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting.clear()
        first = self._group + 1
        self._group += 1
        # A group with no pods is not waited for.
        while self._group < len(self._groups) and not self._groups[self._group].pods:
            self._group += 1
        if self._group >= len(self._groups):
            self._done()
            return
        group = self._groups[self._group]
        if left is None or self._group != first:
            left = float(group.period.shutdown_grace_period_seconds)
        self._group_deadline = self._clock.monotonic() + left
        self._hand_over()
        self._waiting = {pod.uid for pod in group.pods}
        for pod in group.pods:
            grace = pod_grace_period(pod, group.period)
            logger.bind(pod=pod.metadata.name, uid=pod.uid, container="").info(
                "Shutdown manager killing pod with gracePeriod: gracePeriod={}", grace)
            self.send(names.SYNC_LOOP, ShutdownKill(pod.uid, grace))
        self._timer = self._timers.once(
            left, self.name, ShutdownGroupTimeout(self._shutdowns, self._group))

    def _stopped(self, uid: str) -> None:
        if uid not in self._waiting:
            return
        self._waiting.discard(uid)
        pod = next(p for p in self._groups[self._group].pods if p.uid == uid)
        logger.bind(pod=pod.metadata.name, uid=uid, container="").info(
            "Shutdown manager finished killing pod")
        if not self._waiting:
            period = self._groups[self._group].period
            self._log.info("Done waiting for all pods in group to terminate: gracePeriod={} "
                           "priority={}", period.shutdown_grace_period_seconds,
                           period.priority)
            self._next_group()

    def _done(self) -> None:
        self._ended()
        if self._inhibitor is not None:
            self._inhibitor.release()
        self._log.info("Shutdown manager completed processing shutdown event, node will "
                       "shutdown shortly")
        self._processing = False
        self._group_deadline = 0.0
        self._hand_over()
        # Each event _event takes hands over the rest; a new shutdown makes them wait again.
        while self._pending and not self._processing:
            self._event(self._pending.pop(0))
