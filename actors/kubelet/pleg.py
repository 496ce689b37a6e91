"""The PLEG: relists the runtime and turns state changes into pod lifecycle events.

Each relist is two cheap calls (ListPodSandbox, ListContainers). Sandboxes count as
containers, as in upstream's generic PLEG, so a sandbox that dies triggers a sync too.
The result goes to the supervisor as one Relisted message: the events, and every pod the
runtime holds (for orphan clean-up and /runningpods/).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.kubelet import names
from actors.kubelet.messages import (
    EventType,
    PodLifecycleEvent,
    Relisted,
    RelistFailed,
    RuntimeContainer,
    RuntimePod,
)
from runtime.clock import Clock
from runtime.cri.service import RuntimeService
from runtime.cri.types import ContainerState, SandboxState
from runtime.errors import CRIError
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime import labels as L


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


def take_snapshot(runtime: RuntimeService) -> _Snapshot:
    sandboxes = runtime.list_pod_sandbox()
    containers = runtime.list_containers()
    states: dict[PodUID, dict[ContainerID, PlegState]] = {}
    names: dict[PodUID, tuple[str, str]] = {}
    running: dict[PodUID, bool] = {}
    members: dict[PodUID, list[RuntimeContainer]] = {}
    for s in sandboxes:
        uid = PodUID(s.labels.get(L.POD_UID, s.metadata.uid))
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
    return _Snapshot(states, pods, running_containers)


class PLEG(Actor):
    """Relists on every Tick("relist") and reports to the supervisor."""

    def __init__(
        self, dispatch: Dispatch, runtime: RuntimeService, clock: Clock, incarnation: int = 0
    ) -> None:
        super().__init__(names.PLEG, dispatch, incarnation)
        self._runtime = runtime
        self._clock = clock
        self._states: dict[PodUID, dict[ContainerID, PlegState]] | None = None

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind == names.TICK_RELIST:
            self.relist()
            return None
        return super().handle(message)

    def relist(self) -> None:
        started = self._clock.monotonic()
        try:
            snapshot = take_snapshot(self._runtime)
        except CRIError as err:
            logger.warning("PLEG relist failed: {}", err)
            self.send(names.SYNC_LOOP, RelistFailed(str(err)))
            return
        # The first relist after a (re)start has nothing to compare with: every pod gets a
        # sync event, so a new incarnation rebuilds its view from the runtime.
        if self._states is None:
            events = tuple(
                PodLifecycleEvent(uid, EventType.POD_SYNC) for uid in sorted(snapshot.states)
            )
        else:
            events = diff(self._states, snapshot.states)
        self._states = snapshot.states
        self.send(names.SYNC_LOOP, Relisted(
            events=events, pods=snapshot.pods, running_containers=snapshot.running_containers,
            duration=self._clock.monotonic() - started,
        ))
