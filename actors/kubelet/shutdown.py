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

The lock itself is the watch's (``Inhibitor``): this actor only tells it when to release
and take it again. Replay: every input is a recorded delivery and no Inhibitor is given, so
the actor is rebuilt and replayed like the others.
"""

from __future__ import annotations

from typing import Any, Protocol

from loguru import logger
from msgspec import Struct

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.timers import Cancellable, Timers
from actors.core.trace.names import message
from actors.kubelet import names
from runtime.events import reasons
from runtime.events.recorder import NULL_RECORDER, EventRecorder, node_ref
from runtime.nodeshutdown import (
    ShutdownGracePeriodByPodPriority,
    ShutdownGroup,
    group_by_priority,
    pod_grace_period,
)
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
    """The groups (sorted by priority, lowest first) and who else hears of a shutdown."""

    periods: tuple[ShutdownGracePeriodByPodPriority, ...]
    node_status: bool = False  # cluster mode: the node status actor reports NotReady


class ShutdownManager(Actor):
    """Stops the node's pods by priority when logind says the node shuts down."""

    def __init__(self, dispatch: Dispatch, timers: Timers, settings: ShutdownSettings,
                 node_name: str, incarnation: int = 0, inhibitor: Inhibitor | None = None,
                 events: EventRecorder = NULL_RECORDER) -> None:
        super().__init__(names.SHUTDOWN, dispatch, incarnation)
        self._timers = timers
        self._settings = settings
        self._node_name = node_name
        self._inhibitor = inhibitor
        self._events = events
        self._shutting_down = False
        self._processing = False  # stopping pods; later events wait in _pending
        self._pending: list[bool] = []
        self._shutdowns = 0  # numbers each shutdown, so an old group's timer is ignored
        self._groups: tuple[ShutdownGroup, ...] = ()
        self._group = -1
        self._waiting: set[str] = set()
        self._timer: Cancellable | None = None
        self._log = logger.bind(pod="", uid="", container="")

    def on_stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def handle(self, message: Any) -> Any:
        if isinstance(message, NodeShutdownEvent):
            if self._processing:
                self._pending.append(message.shutting_down)
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
        if self._settings.node_status:
            self.send(names.NODE_STATUS, NodeShuttingDown(shutting_down))
        if shutting_down:
            self._processing = True
            self._shutdowns += 1
            self._groups, self._group = (), -1
        # True also asks the sync loop for the active pods (ShutdownPods).
        self.send(names.SYNC_LOOP, NodeShuttingDown(shutting_down))
        if not shutting_down and self._inhibitor is not None:
            self._inhibitor.acquire()

    def _kill_pods(self, pods: tuple[Pod, ...]) -> None:
        self._log.info("Shutdown manager processing shutdown event")
        self._groups = group_by_priority(self._settings.periods, pods)
        self._next_group()

    def _next_group(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting.clear()
        self._group += 1
        # A group with no pods is not waited for.
        while self._group < len(self._groups) and not self._groups[self._group].pods:
            self._group += 1
        if self._group >= len(self._groups):
            self._done()
            return
        group = self._groups[self._group]
        self._waiting = {pod.uid for pod in group.pods}
        for pod in group.pods:
            grace = pod_grace_period(pod, group.period)
            logger.bind(pod=pod.metadata.name, uid=pod.uid, container="").info(
                "Shutdown manager killing pod with gracePeriod: gracePeriod={}", grace)
            self.send(names.SYNC_LOOP, ShutdownKill(pod.uid, grace))
        self._timer = self._timers.once(
            float(group.period.shutdown_grace_period_seconds), self.name,
            ShutdownGroupTimeout(self._shutdowns, self._group))

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
        if self._inhibitor is not None:
            self._inhibitor.release()
        self._log.info("Shutdown manager completed processing shutdown event, node will "
                       "shutdown shortly")
        self._processing = False
        pending, self._pending = self._pending, []
        for index, shutting_down in enumerate(pending):
            self._event(shutting_down)
            if self._processing:  # a new shutdown: the rest wait for it again
                self._pending = pending[index + 1:]
                return
