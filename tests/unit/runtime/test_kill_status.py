"""A pod stopped to be removed: what is read of it first (kill_status), and the calls the
runtime manager makes to stop and remove it, on the fake runtime (its calls recorded)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from runtime.clock import FakeClock
from runtime.cri.types import (
    Container as CRIContainer,
)
from runtime.cri.types import (
    ContainerMetadata,
    ContainerState,
    ImageSpec,
    PodSandbox,
    PodSandboxMetadata,
    SandboxState,
)
from runtime.ids import ContainerID, PodUID, SandboxID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.kill_status import needs_full_status, status_from_listings
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.podstatus import get_pod_status
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import (
    Container,
    ExecAction,
    Lifecycle,
    LifecycleHandler,
    ObjectMeta,
    Pod,
    PodSpec,
)
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
PRE_STOP = Lifecycle(pre_stop=LifecycleHandler(exec=ExecAction(command=("true",))))


def _ctr(name: str, lifecycle: Lifecycle | None = None, sidecar: bool = False) -> Container:
    return Container(name=name, image=IMAGE, image_pull_policy="IfNotPresent",
                     lifecycle=lifecycle, restart_policy="Always" if sidecar else None)


def _pod(*mains: Container, inits: tuple[Container, ...] = (), uid: str = "uid-1") -> Pod:
    return Pod(metadata=ObjectMeta(name="web", namespace="default", uid=uid),
               spec=PodSpec(containers=mains, init_containers=inits,
                            termination_grace_period_seconds=2))


@pytest.mark.parametrize(("pod", "full"), [
    (None, True),  # an orphan: its hooks are in its containers' annotations
    (_pod(_ctr("c")), False),
    (_pod(_ctr("a"), _ctr("b")), False),
    (_pod(_ctr("a"), _ctr("b", PRE_STOP)), True),  # the hook may need the pod IP
    (_pod(_ctr("main"), inits=(_ctr("sc", PRE_STOP, sidecar=True),)), True),
    (_pod(_ctr("c", Lifecycle())), False),  # a lifecycle without preStop
])
def test_needs_full_status(pod: Pod | None, full: bool) -> None:
    assert needs_full_status(pod) is full


def _sandbox(sid: str, created: float, attempt: int, ready: bool) -> PodSandbox:
    return PodSandbox(SandboxID(sid), PodSandboxMetadata("web", "uid-1", "default", attempt),
                      SandboxState.READY if ready else SandboxState.NOTREADY, created,
                      labels={L.POD_UID: "uid-1"})


def _listed(cid: str, name: str, created: float, restarts: int, running: bool
            ) -> CRIContainer:
    return CRIContainer(
        ContainerID(cid), SandboxID("s2"), ContainerMetadata(name, restarts), ImageSpec(IMAGE),
        "sha256:img", ContainerState.RUNNING if running else ContainerState.EXITED, created,
        labels={L.POD_UID: "uid-1", L.CONTAINER_NAME: name},
        annotations={L.RESTART_COUNT: str(restarts), L.CONTAINER_HASH: "h"})


@pytest.mark.parametrize(("sandboxes", "containers", "want_sandboxes", "want_containers"), [
    ((), (), (), ()),
    # newest first; an equal creation time falls back to the attempt, as get_pod_status
    ((_sandbox("s1", 1.0, 0, False), _sandbox("s3", 2.0, 2, True), _sandbox("s2", 2.0, 1, False)),
     (_listed("c1", "app", 1.0, 0, False), _listed("c2", "app", 3.0, 1, True),
      _listed("c3", "side", 3.0, 0, True)),
     ("s3", "s2", "s1"), (("c2", "app", True, 1), ("c3", "side", True, 0),
                          ("c1", "app", False, 0))),
])
def test_status_from_listings(sandboxes: tuple[PodSandbox, ...],
                              containers: tuple[CRIContainer, ...],
                              want_sandboxes: tuple[str, ...],
                              want_containers: tuple[tuple[str, str, bool, int], ...]) -> None:
    status = status_from_listings(PodUID("uid-1"), "web", "default", sandboxes, containers)
    assert tuple(s.id for s in status.sandbox_statuses) == want_sandboxes
    assert tuple((c.id, c.name, c.is_running, c.restart_count)
                 for c in status.container_statuses) == want_containers
    assert status.ips == ()


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.clock = FakeClock()
        self.fake = ThreadNoting(self.clock)
        settings = NodeSettings("node", root_dir=str(tmp_path / "root"),
                                pod_logs_dir=str(tmp_path / "logs"))
        self.manager = KubeRuntimeManager(self.fake, settings, self.clock)

    def run(self, pod: Pod) -> None:
        status = self.manager.get_pod_status(PodUID(pod.uid), pod.metadata.name,
                                             pod.metadata.namespace)
        assert self.manager.sync_pod(pod, status).ok
        self.fake.clear_calls()

    def remove(self, pod: Pod) -> list[str]:
        """Stop and remove ``pod`` as a pod worker does when its pod is removed."""
        status = self.manager.removal_status(pod)
        assert self.manager.kill_pod(pod, status, None).ok
        self.manager.remove_pod_sandboxes(status)
        return [c.method for c in self.fake.calls]


class ThreadNoting(FakeRuntime):
    """Notes the thread each StopContainer came on."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock, images=[IMAGE])
        self.stop_threads: list[str] = []

    def stop_container(self, container_id: ContainerID, timeout: int) -> None:
        self.stop_threads.append(threading.current_thread().name)
        super().stop_container(container_id, timeout)


def test_a_removed_pod_is_read_from_its_listings_and_stopped_on_the_callers_thread(
        tmp_path: Path) -> None:
    world = World(tmp_path)
    pod = _pod(_ctr("c"))
    world.run(pod)
    assert world.remove(pod) == ["list_pod_sandbox", "list_containers", "stop_container",
                                 "stop_pod_sandbox", "remove_pod_sandbox"]
    assert world.fake.stop_threads == [threading.current_thread().name]  # no pool
    assert world.fake.list_pod_sandbox() == () and world.fake.list_containers() == ()


def test_several_containers_are_stopped_in_parallel_before_the_sandbox(tmp_path: Path) -> None:
    world = World(tmp_path)
    pod = _pod(_ctr("a"), _ctr("b"), _ctr("c"))
    world.run(pod)
    calls = world.remove(pod)
    assert calls[:2] == ["list_pod_sandbox", "list_containers"]
    assert sorted(calls[2:5]) == ["stop_container"] * 3
    assert calls[5:] == ["stop_pod_sandbox", "remove_pod_sandbox"]
    assert all(name.startswith("kill-container") for name in world.fake.stop_threads)
    assert world.fake.list_containers() == ()


def test_a_pod_with_a_pre_stop_hook_is_read_in_full(tmp_path: Path) -> None:
    world = World(tmp_path)
    pod = _pod(_ctr("c", PRE_STOP))
    world.run(pod)
    calls = world.remove(pod)
    assert calls[:4] == ["list_pod_sandbox", "pod_sandbox_status", "list_containers",
                         "container_status"]
    assert calls[4:] == ["exec_sync", "stop_container", "stop_pod_sandbox",
                         "remove_pod_sandbox"]


def test_the_listings_show_what_a_full_read_shows_of_what_a_kill_needs(tmp_path: Path) -> None:
    world = World(tmp_path)
    pod = _pod(_ctr("a"), _ctr("b"))
    world.run(pod)
    listed = world.manager.removal_status(pod)
    full = get_pod_status(world.fake, PodUID(pod.uid), "web", "default")
    assert [(c.id, c.name, c.state) for c in listed.container_statuses] == [
        (c.id, c.name, c.state) for c in full.container_statuses]
    assert [s.id for s in listed.sandbox_statuses] == [s.id for s in full.sandbox_statuses]
