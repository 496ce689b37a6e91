"""Pod workers: one sync at a time, newest update wins, kills are never overwritten."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.core.dispatch import Dispatch
from actors.core.testing import Inbox
from actors.kubelet.messages import PodObserved, PodWorkerDone, UpdateKind, UpdatePod, WorkerState
from actors.kubelet.pod_stopping import PodStopping
from actors.kubelet.pod_worker import PodWorker, WorkerTiming
from runtime.clock import FakeClock
from runtime.cri.types import PodSandboxConfig
from runtime.ids import PodUID, SandboxID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import wait_for

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"


class GatedRuntime(FakeRuntime):
    """A fake runtime whose RunPodSandbox can be held, to keep a sync in flight."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock, images=[IMAGE])
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def run_pod_sandbox(self, config: PodSandboxConfig, runtime_handler: str = "") -> SandboxID:
        self.entered.set()
        assert self.gate.wait(10), "the test never opened the gate"
        return super().run_pod_sandbox(config, runtime_handler)


def pod(args: tuple[str, ...] = (), grace: int = 30) -> Pod:
    return Pod(
        metadata=ObjectMeta(name="web", namespace="default", uid="uid-1"),
        spec=PodSpec(containers=(Container(name="c", image=IMAGE, args=args,
                                           image_pull_policy="IfNotPresent"),),
                     termination_grace_period_seconds=grace),
    )


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.clock = FakeClock()
        self.fake = GatedRuntime(self.clock)
        self.dispatch = Dispatch()
        self.inbox = Inbox(self.dispatch, "supervisor", "status", "probes", "pleg")
        settings = NodeSettings("node", root_dir=str(tmp_path / "root"),
                                pod_logs_dir=str(tmp_path / "logs"))
        self.manager = KubeRuntimeManager(self.fake, settings, self.clock)
        self.cancel = threading.Event()
        self.ref = PodWorker.start(PodUID("uid-1"), self.dispatch, self.manager, self.clock,
                                   timing=WorkerTiming(resync_interval=60.0),
                                   cancel=self.cancel)
        self.dispatch.register("pod/uid-1", self.ref)

    def send(self, update: UpdatePod) -> None:
        self.dispatch.tell("pod/uid-1", update, sender="test")

    def done(self, n: int) -> list[PodWorkerDone]:
        return wait_for(lambda: (d := self.inbox.all(PodWorkerDone)) and len(d) >= n and d,
                        10.0, f"{n} PodWorkerDone messages") or []


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    w.fake.gate.set()
    w.ref.stop()
    w.inbox.stop()


def test_create_syncs_and_reports_status_and_requeue(world: World) -> None:
    world.send(UpdatePod(pod(), UpdateKind.CREATE))
    (done,) = world.done(1)
    assert done.state == WorkerState.SYNCING and not done.error
    assert done.requeue_after is not None and 60.0 <= done.requeue_after <= 90.0
    observed = world.inbox.wait(PodObserved)
    assert [c.name for c in observed.runtime.container_statuses] == ["c"]
    assert world.fake.called("create_container") == 1


def test_updates_during_a_sync_coalesce_to_the_newest(world: World) -> None:
    world.fake.gate.clear()
    world.send(UpdatePod(pod(("v1",)), UpdateKind.CREATE))
    assert world.fake.entered.wait(10)
    for version in ("v2", "v3", "v4"):
        world.send(UpdatePod(pod((version,)), UpdateKind.UPDATE))
    world.fake.gate.set()
    world.done(2)
    # v1 was created by the first sync; of v2..v4 only v4 was synced (one kill, one start).
    configs = [c.args[1].args for c in world.fake.calls_to("create_container")]
    assert configs == [("v1",), ("v4",)]


def test_a_kill_is_never_overwritten_and_grace_only_shrinks(world: World) -> None:
    world.fake.gate.clear()
    world.send(UpdatePod(pod(), UpdateKind.CREATE))
    assert world.fake.entered.wait(10)
    world.send(UpdatePod(pod(), UpdateKind.KILL, grace_override=20))
    world.send(UpdatePod(pod(("newer",)), UpdateKind.UPDATE))  # must not revive the pod
    world.send(UpdatePod(pod(), UpdateKind.KILL, grace_override=40))  # must not lengthen
    world.fake.gate.set()
    done = wait_for(lambda: next((d for d in world.inbox.all(PodWorkerDone)
                                  if d.state == WorkerState.TERMINATED), None), 10.0,
                    "the worker to terminate")
    assert done is not None and done.requeue_after is None
    assert [c.args[1] for c in world.fake.calls_to("stop_container")] == [20]
    assert world.fake.called("stop_pod_sandbox") == 1
    assert world.fake.called("create_container") == 1  # the "newer" update never ran


def test_a_kill_cancels_the_rest_of_a_sync_in_flight(world: World) -> None:
    world.fake.gate.clear()
    world.send(UpdatePod(pod(), UpdateKind.CREATE))
    assert world.fake.entered.wait(10)
    world.cancel.set()  # what the supervisor does when it sends a kill
    world.send(UpdatePod(pod(), UpdateKind.KILL))
    world.fake.gate.set()
    wait_for(lambda: any(d.state == WorkerState.TERMINATED
                         for d in world.inbox.all(PodWorkerDone)), 10.0, "termination")
    assert world.fake.called("create_container") == 0


def test_a_kill_before_the_first_sync_creates_nothing(world: World) -> None:
    world.fake.gate.clear()  # hold the worker so both updates are queued together
    world.send(UpdatePod(pod(("held",)), UpdateKind.CREATE))
    assert world.fake.entered.wait(10)
    world.send(UpdatePod(pod(), UpdateKind.SYNC))
    world.send(UpdatePod(pod(), UpdateKind.KILL))
    world.fake.gate.set()
    wait_for(lambda: any(d.state == WorkerState.TERMINATED
                         for d in world.inbox.all(PodWorkerDone)), 10.0, "termination")
    assert world.fake.called("create_container") == 1  # only the sync already in flight


def test_terminated_worker_ignores_updates_but_removes_when_asked(world: World) -> None:
    world.send(UpdatePod(pod(), UpdateKind.CREATE))
    world.done(1)
    world.send(UpdatePod(pod(), UpdateKind.KILL))
    wait_for(lambda: any(d.state == WorkerState.TERMINATED
                         for d in world.inbox.all(PodWorkerDone)), 10.0, "termination")
    world.send(UpdatePod(pod(), UpdateKind.SYNC))
    world.send(UpdatePod(pod(), UpdateKind.KILL, remove=True))
    wait_for(lambda: world.fake.called("remove_pod_sandbox") == 1, 10.0, "the removal")
    assert world.fake.called("create_container") == 1
    assert world.fake.list_pod_sandbox() == ()


def test_removed_pod_loses_sandbox_containers_and_dirs(world: World, tmp_path: Path) -> None:
    world.send(UpdatePod(pod(), UpdateKind.CREATE))
    world.done(1)
    logs = tmp_path / "logs" / "default_web_uid-1"
    assert logs.is_dir()
    world.send(UpdatePod(pod(), UpdateKind.KILL, remove=True, reason="removed"))
    wait_for(lambda: world.fake.list_pod_sandbox() == () and world.fake.list_containers() == (),
             10.0, "the pod to be removed")
    wait_for(lambda: not logs.exists(), 10.0, "the log dir to be removed")


def test_active_deadline_wakes_the_worker_then_fails_and_stops_the_pod(world: World) -> None:
    spec = pod()
    deadline = Pod(metadata=spec.metadata,
                   spec=PodSpec(containers=spec.spec.containers, active_deadline_seconds=5))
    world.send(UpdatePod(deadline, UpdateKind.CREATE))
    (done,) = world.done(1)
    assert done.state == WorkerState.SYNCING
    assert done.requeue_after == 5.0  # woken at the deadline, not at the 60 s resync
    world.clock.step(5.0)
    world.send(UpdatePod(deadline, UpdateKind.SYNC))
    final = wait_for(lambda: next((d for d in world.inbox.all(PodWorkerDone)
                                   if d.state == WorkerState.TERMINATED), None), 10.0,
                     "the worker to terminate")
    assert final is not None
    failed = [o for o in world.inbox.all(PodObserved) if o.failed_reason]
    assert failed and failed[0].failed_reason == "DeadlineExceeded"
    assert failed[0].failed_message == (
        "Pod was active on the node longer than the specified deadline")
    assert world.fake.called("stop_container") == 1
    assert world.fake.called("stop_pod_sandbox") == 1


def removal_calls(world: World) -> list[str]:
    world.fake.clear_calls()
    world.send(UpdatePod(pod(), UpdateKind.KILL, remove=True, reason="removed"))
    wait_for(lambda: any(d.state == WorkerState.TERMINATED
                         for d in world.inbox.all(PodWorkerDone)), 10.0, "termination")
    calls = [c.method for c in world.fake.calls]
    assert world.fake.list_pod_sandbox() == () and world.fake.list_containers() == ()
    return calls


def test_a_pod_removed_right_after_its_start_is_stopped_from_the_read_after_it(
        world: World) -> None:
    world.send(UpdatePod(pod(), UpdateKind.CREATE))
    world.done(1)  # created and started, and read from what the sync made
    assert removal_calls(world) == ["stop_container", "stop_pod_sandbox",
                                    "remove_pod_sandbox"]


def test_a_pod_removed_after_a_sync_that_changed_nothing_is_stopped_with_no_read(
        world: World) -> None:
    world.send(UpdatePod(pod(), UpdateKind.CREATE))
    world.done(1)
    world.send(UpdatePod(pod(), UpdateKind.SYNC))  # the PLEG's event: read, no change
    world.done(2)
    assert removal_calls(world) == ["stop_container", "stop_pod_sandbox",
                                    "remove_pod_sandbox"]


def test_a_container_started_by_the_last_sync_is_stopped_too(world: World) -> None:
    world.send(UpdatePod(pod(), UpdateKind.CREATE))
    world.done(1)
    world.send(UpdatePod(pod(), UpdateKind.SYNC))
    world.done(2)
    (container,) = world.fake.list_containers()
    world.fake.stop_container(container.id, 0)  # it exits: the next sync restarts it
    world.send(UpdatePod(pod(), UpdateKind.SYNC))
    world.done(3)
    calls = removal_calls(world)
    assert "list_pod_sandbox" not in calls  # the restart was read right after it
    stopped = [c.args[0] for c in world.fake.calls_to("stop_container")]
    assert len(stopped) == 1 and stopped[0] != container.id  # the running one, once


def test_a_pod_stopped_but_kept_is_read_in_full_and_shows_terminated(world: World) -> None:
    world.send(UpdatePod(pod(), UpdateKind.CREATE))
    world.done(1)
    world.fake.clear_calls()
    world.send(UpdatePod(pod(), UpdateKind.KILL))
    wait_for(lambda: any(d.state == WorkerState.TERMINATED
                         for d in world.inbox.all(PodWorkerDone)), 10.0, "termination")
    methods = [c.method for c in world.fake.calls]
    assert methods[:4] == ["list_pod_sandbox", "pod_sandbox_status", "list_containers",
                           "container_status"]
    assert methods[4:6] == ["stop_container", "stop_pod_sandbox"]
    assert "remove_pod_sandbox" not in methods
    last = world.inbox.all(PodObserved)[-1]
    assert [c.state.name for c in last.runtime.container_statuses] == ["EXITED"]


def test_the_pleg_is_told_when_the_stop_begins_and_ends(world: World) -> None:
    world.send(UpdatePod(pod(), UpdateKind.CREATE))
    world.done(1)
    assert world.inbox.all(PodStopping) == []
    removal_calls(world)  # waits for PodWorkerDone: the PLEG was told before it
    told = world.inbox.all(PodStopping)
    assert told == [PodStopping(PodUID("uid-1"), True), PodStopping(PodUID("uid-1"), False)]
