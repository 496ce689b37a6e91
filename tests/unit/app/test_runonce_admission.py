"""Run-once admits its pods as upstream's runOnce does: one by one against those admitted
before, a refused pod Failed with upstream's reason, the others brought up."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from actors.app.runonce import RunOnce
from runtime.clock import FakeClock
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.admission import Node, node_labels
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"


def pod(name: str, **spec: object) -> Pod:
    base = Pod(metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"),
               spec=PodSpec(containers=(Container(name="c", image=IMAGE,
                                                  image_pull_policy="IfNotPresent"),)))
    return replace(base, spec=replace(base.spec, **spec))


def test_refused_pods_fail_with_their_reason_and_the_rest_run(tmp_path: Path) -> None:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=[IMAGE])
    manager = KubeRuntimeManager(fake, NodeSettings("node", root_dir=str(tmp_path / "root"),
                                                    pod_logs_dir=str(tmp_path / "logs")), clock)
    node = Node(name="node", labels=node_labels("node", "linux", "amd64"),
                allocatable={"pods": "2"})
    pods = (pod("a"), pod("elsewhere", node_selector={"disk": "ssd"}), pod("b"), pod("c"))
    outcomes = RunOnce(manager, clock, 30.0, node=node).run(pods)
    assert [(o.pod.metadata.name, o.ok, o.status.phase, o.status.reason) for o in outcomes] == [
        ("a", True, "Running", ""),
        ("elsewhere", False, "Failed", "NodeAffinity"),
        ("b", True, "Running", ""),
        ("c", False, "Failed", "OutOfpods"),
    ]
    assert outcomes[3].status.message == (
        "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, "
        "capacity: 2")
    assert {s.metadata.name for s in fake.list_pod_sandbox()} == {"a", "b"}
