"""The status manager computes a pod's status again only when what it is computed from
changed: a resync or a relist's sync that observes the same thing costs no computation."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from actors.core.dispatch import Dispatch
from actors.kubelet import status_manager
from actors.kubelet.messages import DesiredPods, GetPods, PodObserved, WorkerState
from actors.kubelet.status_manager import StatusManager
from runtime.clock import FakeClock
from runtime.ids import PodUID
from runtime.kuberuntime.podstatus import RuntimePodStatus
from runtime.kuberuntime.result import PodSyncResult, StepResult
from runtime.pod.model import Pod
from runtime.status.generate import generate_pod_status
from tests.traces.scenarios import pod


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the status manager generated a status."""
    calls = [0]
    real = generate_pod_status

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(status_manager, "generate_pod_status", counting)
    return calls


def observed(p: Pod, sync: PodSyncResult | None = None, reason: str = "") -> PodObserved:
    runtime = RuntimePodStatus(PodUID(p.uid), p.metadata.name, p.metadata.namespace)
    return PodObserved(p, runtime, sync, WorkerState.SYNCING, reason, "deadline" if reason else "")


def test_the_same_observation_again_is_not_computed_again(computed: list[int]) -> None:
    clock = FakeClock()
    manager = StatusManager(Dispatch(), clock)
    web = pod("u1", "web")
    manager.handle(observed(web, PodSyncResult((StepResult("StartContainer", "c"),))))
    (before,) = manager.handle(GetPods())
    first = computed[0]
    clock.step(30.0)
    manager.handle(observed(web))  # a resync: no sync result, the same runtime
    manager.handle(observed(web, PodSyncResult((StepResult("StartContainer", "c"),))))
    assert computed == [first]
    assert manager.handle(GetPods()) == (before,)


@pytest.mark.parametrize("change", ["pod", "sync", "verdict"])
def test_a_changed_input_is_computed_again(computed: list[int], change: str) -> None:
    manager = StatusManager(Dispatch(), FakeClock())
    web = pod("u1", "web")
    manager.handle(observed(web))
    first = computed[0]
    if change == "pod":
        # The source's update reaches the status manager first (DesiredPods), then the sync.
        edited = msgspec.structs.replace(web, metadata=msgspec.structs.replace(
            web.metadata, labels={"rev": "2"}))
        manager.handle(DesiredPods((edited,)))
        manager.handle(observed(edited))
    elif change == "sync":
        manager.handle(observed(web, PodSyncResult((StepResult(
            "StartContainer", "c", "ErrImagePull", "no"),))))
    else:
        manager.handle(observed(web, reason="DeadlineExceeded"))
        ((_, status),) = manager.handle(GetPods())
        assert status.reason == "DeadlineExceeded"
    assert computed == [first + 1]


def test_a_node_shutdown_leaves_a_succeeded_pod_succeeded() -> None:
    """Upstream's shutdown status function: Failed unless already Succeeded; the reason,
    message and DisruptionTarget condition either way."""
    from runtime.cri.types import ContainerState as CRIState
    from tests.unit.runtime.test_pod_status import inst, make_pod, runtime_status

    manager = StatusManager(Dispatch(), FakeClock())
    done = make_pod(policy="Never")
    exited = runtime_status(inst("app", CRIState.EXITED, exit_code=0), ready=False)
    manager.handle(PodObserved(done, exited, None, WorkerState.SYNCING))
    ((_, before),) = manager.handle(GetPods())
    assert before.phase == "Succeeded"
    message = "Pod was terminated in response to imminent node shutdown."
    manager.handle(PodObserved(done, exited, None, WorkerState.TERMINATED, "Terminated",
                               message))
    ((_, after),) = manager.handle(GetPods())
    assert (after.phase, after.reason, after.message) == ("Succeeded", "Terminated", message)
    disruption = after.condition("DisruptionTarget")
    assert disruption is not None and disruption.reason == "TerminationByKubelet"
    # A pod still running when the shutdown stops it ends Failed, and stays so.
    running = runtime_status(inst("app", CRIState.RUNNING))
    web = msgspec.structs.replace(make_pod(policy="Never"), metadata=msgspec.structs.replace(
        done.metadata, uid="uid-2", name="web-2"))
    manager.handle(PodObserved(web, running, None, WorkerState.SYNCING))
    manager.handle(PodObserved(web, running, None, WorkerState.TERMINATING, "Terminated",
                               message))
    manager.handle(PodObserved(web, exited, None, WorkerState.TERMINATED, "Terminated",
                               message))
    phases = {p.uid: s.phase for p, s in manager.handle(GetPods())}
    assert phases == {"uid-1": "Succeeded", "uid-2": "Failed"}
