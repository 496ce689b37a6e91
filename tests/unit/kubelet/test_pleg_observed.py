"""The PLEG and what workers read: a worker that read its pod's status right after its sync
tells the PLEG what it read (SyncChangedRuntime.observed); the relist the sync asks for
makes no events of the pod when it shows just that, and the usual ones when it does not
(the pod changed since, or the worker's read missed something)."""

from __future__ import annotations

import pytest

from actors.kubelet.messages import EventType, PodLifecycleEvent
from actors.kubelet.pleg import PlegState, observed_states, unobserved_events
from runtime.cri.types import ContainerState, PodSandboxMetadata, PodSandboxStatus, SandboxState
from runtime.ids import ContainerID, PodUID, SandboxID
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus, RuntimePodStatus

A, B = PodUID("a"), PodUID("b")
SB, C1, C2 = ContainerID("sb"), ContainerID("c1"), ContainerID("c2")


def status(sandbox: SandboxState, *containers: tuple[ContainerID, ContainerState]
           ) -> RuntimePodStatus:
    return RuntimePodStatus(A, "web", "default", sandbox_statuses=(PodSandboxStatus(
        SandboxID(SB), PodSandboxMetadata("web", "a", "default"), sandbox, 1.0),),
        container_statuses=tuple(ContainerRuntimeStatus(cid, "c", state, 1.0)
                                 for cid, state in containers))


@pytest.mark.parametrize(("read", "want"), [
    (status(SandboxState.READY, (C1, ContainerState.RUNNING)),
     ((C1, "running"), (SB, "running"))),
    (status(SandboxState.NOTREADY, (C1, ContainerState.EXITED), (C2, ContainerState.CREATED)),
     ((C1, "exited"), (C2, "unknown"), (SB, "exited"))),
])
def test_a_read_status_is_told_as_a_relist_shows_states(read: RuntimePodStatus,
                                                        want: tuple[tuple[str, str], ...]
                                                        ) -> None:
    assert observed_states(read) == want


EVENTS = (PodLifecycleEvent(A, EventType.CONTAINER_STARTED, C1),
          PodLifecycleEvent(A, EventType.CONTAINER_STARTED, SB),
          PodLifecycleEvent(B, EventType.CONTAINER_DIED, ContainerID("x")))
RUNNING = {SB: PlegState.RUNNING, C1: PlegState.RUNNING}
TOLD = ((C1, "running"), (SB, "running"))


@pytest.mark.parametrize(("states", "observed", "kept"), [
    # The relist shows what the worker read: its pod's events go; another pod's stay.
    ({A: RUNNING}, {A: TOLD}, EVENTS[2:]),
    # The container exited since the read: the pod syncs on the relist's events.
    ({A: {SB: PlegState.RUNNING, C1: PlegState.EXITED}}, {A: TOLD}, EVENTS),
    # A container the read did not show (its start failed after its creation).
    ({A: {**RUNNING, C2: PlegState.UNKNOWN}}, {A: TOLD}, EVENTS),
    ({A: RUNNING}, {}, EVENTS),  # nothing told (a sync that read nothing): every event
])
def test_a_relist_drops_only_the_events_of_pods_it_shows_as_observed(
        states: dict[PodUID, dict[ContainerID, PlegState]],
        observed: dict[PodUID, tuple[tuple[ContainerID, str], ...]],
        kept: tuple[PodLifecycleEvent, ...]) -> None:
    assert unobserved_events(EVENTS, states, observed) == kept
