"""Start files made while the sandbox is made (runtime.kuberuntime.beside_sandbox and
ContainerLifecycle.prepare_start): which containers' files, that they exist before
RunPodSandbox returns, and that each start then uses them as it would have made them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from runtime.clock import FakeClock
from runtime.cri.intercept import Proceed, intercept
from runtime.cri.service import CRIRuntime
from runtime.ids import PodUID
from runtime.kuberuntime.actions import PodActions
from runtime.kuberuntime.beside_sandbox import first_starts
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.result import PodSyncResult
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import (
    Container,
    EmptyDirVolumeSource,
    ObjectMeta,
    Pod,
    PodSpec,
    Volume,
    VolumeMount,
)
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import wait_for

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
WAIT_S = 5.0  # how long the held RunPodSandbox waits for the files
UID = "uid-1"


def ctr(name: str, **fields: Any) -> Container:
    return Container(name=name, image=IMAGE, image_pull_policy="IfNotPresent", **fields)


def make_pod(*containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod(metadata=ObjectMeta(name="web", namespace="default", uid=UID),
               spec=PodSpec(containers=containers, init_containers=init,
                            termination_grace_period_seconds=30))


# --- the plan ------------------------------------------------------------------------------


@pytest.mark.parametrize(("plan", "names"), [
    # The sandbox exists: nothing to overlap.
    (PodActions(sandbox_id=None, containers_to_start=(0, 1)), ()),
    (PodActions(create_sandbox=True, containers_to_start=(0, 1)), ("a", "b")),
    (PodActions(create_sandbox=True, containers_to_start=(1,)), ("b",)),
    # Only the first init container: the next one waits on it, and it may fail.
    (PodActions(create_sandbox=True, init_containers_to_start=(0, 1)), ("i",)),
])
def test_first_starts(plan: PodActions, names: tuple[str, ...]) -> None:
    pod = make_pod(ctr("a"), ctr("b"), init=(ctr("i"), ctr("j")))
    assert tuple(c.name for c in first_starts(pod, plan)) == names


# --- sync_pod ------------------------------------------------------------------------------


class HoldSandbox:
    """Holds RunPodSandbox until ``wanted`` exist (at most WAIT_S) and notes whether they
    did: only files made beside the sandbox can appear meanwhile."""

    def __init__(self) -> None:
        self.wanted: tuple[Path, ...] = ()
        self.made_during_sandbox: bool | None = None

    def around(self, target: str, method: str, args: tuple[Any, ...],
               proceed: Proceed) -> Any:
        if method == "run_pod_sandbox":
            try:
                wait_for(lambda: all(p.exists() for p in self.wanted), WAIT_S,
                         "the start files", interval=0.005)
                self.made_during_sandbox = True
            except AssertionError:  # (the test asserts on what was noted)
                self.made_during_sandbox = False
        return proceed()


class Node:
    def __init__(self, tmp_path: Path) -> None:
        self.clock = FakeClock()
        self.fake = FakeRuntime(self.clock, images=[IMAGE])
        self.hold = HoldSandbox()
        self.settings = NodeSettings(node_name="node", root_dir=str(tmp_path / "root"),
                                     pod_logs_dir=str(tmp_path / "logs"))
        runtime = intercept(self.fake, CRIRuntime, self.hold)
        self.manager = KubeRuntimeManager(runtime, self.settings, self.clock)

    def sync(self, pod: Pod) -> PodSyncResult:
        status = self.manager.get_pod_status(PodUID(pod.uid), pod.metadata.name, "default")
        return self.manager.sync_pod(pod, status)

    def message_file(self, name: str, restart: int = 0) -> Path:
        return Path(self.settings.pod_dir(UID)) / "containers" / name / f"termination-{restart}"

    def log_dir(self, name: str) -> Path:
        return Path(self.settings.pod_logs_dir) / f"default_web_{UID}" / name

    def config(self, pod: Pod, name: str) -> Any:
        status = self.manager.get_pod_status(PodUID(pod.uid), pod.metadata.name, "default")
        found = status.find_container(name)
        assert found is not None
        return self.fake.container_config(found.id)


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def test_a_new_pods_containers_files_are_made_while_its_sandbox_is(node: Node) -> None:
    node.hold.wanted = (node.message_file("a"), node.message_file("b"),
                        node.log_dir("a"), node.log_dir("b"))
    pod = make_pod(ctr("a"), ctr("b"))
    assert node.sync(pod).ok
    assert node.hold.made_during_sandbox is True
    for name in ("a", "b"):
        config = node.config(pod, name)
        assert config.log_path == f"{name}/0.log"
        assert any(m.host_path == str(node.message_file(name))
                   and m.container_path == "/dev/termination-log" for m in config.mounts)
        assert node.message_file(name).read_bytes() == b""
        assert node.message_file(name).stat().st_mode & 0o777 == 0o666


def test_only_the_first_init_containers_files_are_made_beside_the_sandbox(node: Node) -> None:
    node.hold.wanted = (node.message_file("i"),)
    pod = make_pod(ctr("a"), init=(ctr("i", command=("false",)), ctr("j")))
    node.sync(pod)
    assert node.hold.made_during_sandbox is True
    assert not node.message_file("j").exists()
    assert not node.message_file("a").exists()


def test_logs_of_an_earlier_instance_count_in_the_restart_count(node: Node) -> None:
    # The pod's earlier instance left its logs (a kubelet restarted with its sandbox gone).
    node.log_dir("a").mkdir(parents=True)
    for n in (0, 1):
        (node.log_dir("a") / f"{n}.log").write_text("earlier\n")
    node.hold.wanted = (node.message_file("a", 2),)
    pod = make_pod(ctr("a"))
    assert node.sync(pod).ok
    assert node.hold.made_during_sandbox is True
    config = node.config(pod, "a")
    assert (config.metadata.attempt, config.log_path) == (2, "a/2.log")


def test_a_volume_at_the_termination_message_path_leaves_no_file(node: Node) -> None:
    pod = Pod(metadata=ObjectMeta(name="web", namespace="default", uid=UID),
              spec=PodSpec(containers=(ctr("a", volume_mounts=(
                  VolumeMount(name="v", mount_path="/dev/termination-log"),)),),
                  volumes=(Volume(name="v", empty_dir=EmptyDirVolumeSource()),)))
    assert node.sync(pod).ok
    assert not node.message_file("a").exists()
    mounts = node.config(pod, "a").mounts
    assert [m.container_path for m in mounts].count("/dev/termination-log") == 1


def test_a_container_with_an_instance_gets_no_files_made_ahead(node: Node) -> None:
    pod = make_pod(ctr("a"))
    assert node.sync(pod).ok
    status = node.manager.get_pod_status(PodUID(pod.uid), pod.metadata.name, "default")
    sandbox = node.fake.sandbox_config(status.sandbox_statuses[0].id)
    # Its start counts on from that instance (or removes a never-started one first).
    assert node.manager.containers.prepare_start(pod, pod.spec.containers[0], sandbox,
                                                 status) is None


def test_a_file_that_cannot_be_made_beside_is_left_to_the_start(node: Node) -> None:
    pod = make_pod(ctr("a"))
    status = node.manager.get_pod_status(PodUID(pod.uid), pod.metadata.name, "default")
    sandbox = node.manager.sandbox_config(pod, 0, report=False)
    os.makedirs(node.settings.pod_dir(UID))
    Path(node.settings.pod_dir(UID), "containers").write_text("not a directory")
    assert node.manager.containers.prepare_start(pod, pod.spec.containers[0], sandbox,
                                                 status) is None
