"""Images checked while the sandbox is made (runtime.kuberuntime.image_checks): the plan's
table, and sync_pod on the fake runtime: the ImageStatus call made before RunPodSandbox
returns, everything it decides still after the sandbox, in upstream's order."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from runtime.clock import FakeClock
from runtime.cri.intercept import Proceed, intercept
from runtime.cri.service import CRIRuntime
from runtime.errors import CRIError
from runtime.events.recorder import ListRecorder
from runtime.ids import PodUID
from runtime.kuberuntime.actions import PodActions
from runtime.kuberuntime.image_checks import images_to_check
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.result import PodSyncResult
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Container, EphemeralContainer, ObjectMeta, Pod, PodSpec
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
PULLED = "localhost:5000/kubelet-actors/other:1.0"
OTHER = "localhost:5000/kubelet-actors/third:2.0"
WAIT_S = 5.0  # how long the held RunPodSandbox waits for the image check


def make_pod(*containers: Container, init: tuple[Container, ...] = (),
             ephemeral: tuple[EphemeralContainer, ...] = ()) -> Pod:
    return Pod(metadata=ObjectMeta(name="web", namespace="default", uid="uid-1"),
               spec=PodSpec(containers=containers, init_containers=init,
                            ephemeral_containers=ephemeral,
                            termination_grace_period_seconds=30))


def ctr(name: str, image: str = IMAGE, policy: str = "IfNotPresent") -> Container:
    return Container(name=name, image=image, image_pull_policy=policy)


# --- the plan ------------------------------------------------------------------------------

NEW = PodActions(create_sandbox=True, containers_to_start=(0, 1))


@pytest.mark.parametrize(("pod", "plan", "images"), [
    # Nothing to overlap: the sandbox exists.
    (make_pod(ctr("a")), PodActions(sandbox_id=None, containers_to_start=(0,)), ()),
    (make_pod(ctr("a"), ctr("b", OTHER)), NEW, (IMAGE, OTHER)),
    # One image for two containers is asked for once.
    (make_pod(ctr("a"), ctr("b")), NEW, (IMAGE,)),
    # Only the containers this sync starts: the first init container, not the regular ones.
    (make_pod(ctr("a", OTHER), init=(ctr("i", PULLED), ctr("j"))),
     PodActions(create_sandbox=True, init_containers_to_start=(0,)), (PULLED,)),
    # Ephemeral first, in the order the sync starts them.
    (make_pod(ctr("a"), ephemeral=(EphemeralContainer(name="debug", image=OTHER),)),
     PodActions(create_sandbox=True, ephemeral_containers_to_start=(0,),
                containers_to_start=(0,)), (OTHER, IMAGE)),
    # A name the image check rejects (InvalidImageName) is not asked for.
    (make_pod(ctr("a", "Not A Name"), ctr("b")), NEW, (IMAGE,)),
])
def test_images_to_check(pod: Pod, plan: PodActions, images: tuple[str, ...]) -> None:
    assert images_to_check(pod, plan) == images


# --- sync_pod ------------------------------------------------------------------------------


class HoldSandbox:
    """Holds RunPodSandbox until an ImageStatus call has begun (at most WAIT_S), and
    notes whether one had: only a check made beside the sandbox can begin meanwhile."""

    def __init__(self) -> None:
        self.image_asked = threading.Event()
        self.asked_during_sandbox: bool | None = None

    def around(self, target: str, method: str, args: tuple[Any, ...],
               proceed: Proceed) -> Any:
        if method == "image_status":
            self.image_asked.set()
        elif method == "run_pod_sandbox":
            self.asked_during_sandbox = self.image_asked.wait(WAIT_S)
        return proceed()


class Node:
    def __init__(self, tmp_path: Path) -> None:
        self.clock = FakeClock()
        self.fake = FakeRuntime(self.clock, images=[IMAGE], pullable=[PULLED])
        self.hold = HoldSandbox()
        self.events = ListRecorder()
        settings = NodeSettings(node_name="node", root_dir=str(tmp_path / "root"),
                                pod_logs_dir=str(tmp_path / "logs"))
        runtime = intercept(self.fake, CRIRuntime, self.hold)
        self.manager = KubeRuntimeManager(runtime, settings, self.clock, events=self.events)

    def sync(self, pod: Pod) -> PodSyncResult:
        status = self.manager.get_pod_status(PodUID(pod.uid), pod.metadata.name, "default")
        self.fake.clear_calls()
        return self.manager.sync_pod(pod, status)

    def methods(self) -> list[str]:
        return [c.method for c in self.fake.calls]

    def seen(self) -> list[tuple[str, str]]:
        return [(e.reason, e.message) for e in self.events.events]


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def test_the_image_is_asked_for_while_the_sandbox_is_made_and_not_again(node: Node) -> None:
    assert node.sync(make_pod(ctr("a"))).ok
    assert node.hold.asked_during_sandbox is True
    assert node.methods().count("image_status") == 1
    assert node.methods()[-2:] == ["create_container", "start_container"]
    assert node.seen() == [
        ("Pulled", f'Container image "{IMAGE}" already present on machine'),
        ("Created", "Created container: a"),
        ("Started", "Started container a"),
    ]


def test_an_absent_image_is_asked_again_and_pulled_after_the_sandbox(node: Node) -> None:
    assert node.sync(make_pod(ctr("a", PULLED))).ok
    calls = node.methods()
    # The check beside the sandbox found it absent; the start asks again (a container
    # started before may have pulled it), pulls, and asks for the size (Pulled).
    assert calls.count("image_status") == 3
    assert calls.index("run_pod_sandbox") < calls.index("pull_image")
    assert [reason for reason, _ in node.seen()] == ["Pulling", "Pulled", "Created", "Started"]


def test_pull_policy_always_still_pulls_after_the_sandbox(node: Node) -> None:
    assert node.sync(make_pod(ctr("a", IMAGE, policy="Always"))).ok
    calls = node.methods()
    assert node.hold.asked_during_sandbox is True
    assert calls.index("run_pod_sandbox") < calls.index("pull_image") < calls.index(
        "create_container")
    assert [reason for reason, _ in node.seen()] == ["Pulling", "Pulled", "Created", "Started"]


def test_a_failed_sandbox_records_no_image_event_and_ends_its_checks(node: Node) -> None:
    node.fake.fail("run_pod_sandbox", CRIError("RunPodSandbox", "no network"))
    result = node.sync(make_pod(ctr("a")))
    assert not result.ok
    assert [s.error for s in result.failures] == ["CreatePodSandboxError"]
    assert node.methods().count("image_status") == 1  # made, and ended, within the sync
    assert [reason for reason, _ in node.seen()] == ["FailedCreatePodSandBox"]


def test_a_failed_check_is_asked_again_by_the_start(node: Node) -> None:
    node.fake.fail("image_status", CRIError("ImageStatus", "busy"))
    assert node.sync(make_pod(ctr("a"))).ok
    assert node.methods().count("image_status") == 2
    assert node.seen()[0] == ("Pulled", f'Container image "{IMAGE}" already present on machine')
