"""Each place the runtime manager records an event, on the fake runtime with a ListRecorder:
the reasons, types, messages and references upstream's kubelet records."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.clock import FakeClock
from runtime.cri.types import ExecResult
from runtime.events.node import condition_events, node_event_message
from runtime.events.probes import probe_event
from runtime.events.recorder import ListRecorder, container_ref, field_path, node_ref, pod_ref
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.podstatus import RuntimePodStatus
from runtime.kuberuntime.result import PodSyncResult
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
from runtime.prober.results import ProbeResult
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
PULLED = "localhost:5000/kubelet-actors/other:1.0"


def make_pod(*containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod(metadata=ObjectMeta(name="web", namespace="default", uid="uid-1",
                                   resource_version="42"),
               spec=PodSpec(containers=containers, init_containers=init,
                            termination_grace_period_seconds=30))


def ctr(name: str, image: str = IMAGE, **kw: object) -> Container:
    return Container(name=name, image=image, image_pull_policy="IfNotPresent", **kw)  # type: ignore[arg-type]


class Node:
    def __init__(self, tmp_path: Path) -> None:
        self.clock = FakeClock()
        self.fake = FakeRuntime(self.clock, images=[IMAGE], pullable=[PULLED])
        self.events = ListRecorder()
        settings = NodeSettings(node_name="node", root_dir=str(tmp_path / "root"),
                                pod_logs_dir=str(tmp_path / "logs"))
        self.manager = KubeRuntimeManager(self.fake, settings, self.clock, events=self.events)

    def status(self, pod: Pod) -> RuntimePodStatus:
        return self.manager.get_pod_status(PodUID(pod.uid), pod.metadata.name, "default")

    def sync(self, pod: Pod) -> PodSyncResult:
        return self.manager.sync_pod(pod, self.status(pod))

    def seen(self) -> list[tuple[str, str, str]]:
        return [(e.type, e.reason, e.message) for e in self.events.events]


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def test_a_new_pod_records_pulled_created_started_on_its_container(node: Node) -> None:
    pod = make_pod(ctr("a"))
    assert node.sync(pod).ok
    assert node.seen() == [
        ("Normal", "Pulled", f'Container image "{IMAGE}" already present on machine'),
        ("Normal", "Created", "Created container: a"),
        ("Normal", "Started", "Started container a"),
    ]
    ref = node.events.events[0].ref
    assert (ref.kind, ref.namespace, ref.name, ref.uid, ref.api_version, ref.resource_version,
            ref.field_path) == ("Pod", "default", "web", "uid-1", "v1", "42",
                                "spec.containers{a}")


def test_a_pull_records_pulling_then_pulled_with_its_time_and_size(node: Node) -> None:
    pod = make_pod(ctr("a", PULLED))
    assert node.sync(pod).ok
    (kind, reason, message), *_ = node.seen()[1:]
    assert node.seen()[0] == ("Normal", "Pulling", f'Pulling image "{PULLED}"')
    assert (kind, reason) == ("Normal", "Pulled")
    assert message == (f'Successfully pulled image "{PULLED}" in 0s (0s including waiting). '
                       "Image size: 1000000 bytes.")


def test_a_failed_pull_records_failed_twice_then_back_off(node: Node) -> None:
    missing = "localhost:5000/kubelet-actors/nope:1.0"
    pod = make_pod(ctr("a", missing))
    node.sync(pod)
    (t1, r1, m1), (t2, r2, m2) = node.seen()[1:]
    assert (t1, r1) == ("Warning", "Failed")
    assert m1.startswith(f'Failed to pull image "{missing}": ')
    assert (t2, r2, m2) == ("Warning", "Failed", "Error: ErrImagePull")
    node.events.events.clear()
    node.sync(pod)
    assert node.seen() == [("Normal", "BackOff", f'Back-off pulling image "{missing}"'),
                           ("Warning", "Failed", "Error: ImagePullBackOff")]


def test_never_pull_and_a_bad_name_are_warnings(node: Node) -> None:
    never = Container(name="a", image=PULLED, image_pull_policy="Never")
    node.sync(make_pod(never))
    assert ("Warning", "ErrImageNeverPull",
            f'Container image "{PULLED}" is not present with pull policy of Never') in node.seen()
    assert ("Warning", "Failed", "Error: ErrImageNeverPull") in node.seen()


def test_a_crash_loop_records_back_off_with_upstreams_words(node: Node) -> None:
    pod = make_pod(ctr("a"))
    node.sync(pod)
    cid = node.status(pod).find_container("a")
    assert cid is not None
    node.fake.exit_container(cid.id, 1)
    node.sync(pod)  # restarted at once, the back-off starts
    node.fake.exit_container(node.status(pod).find_container("a").id, 1)  # type: ignore[union-attr]
    node.events.events.clear()
    node.sync(pod)
    assert node.seen() == [("Warning", "BackOff",
                            "Back-off restarting failed container a in pod web_default(uid-1)")]


def test_kills_record_killing_once_per_container_in_the_pods_order(node: Node) -> None:
    pod = make_pod(ctr("a"), ctr("b"))
    node.sync(pod)
    node.events.events.clear()
    assert node.manager.kill_pod(pod, node.status(pod), None).ok
    assert sorted(node.seen()) == [("Normal", "Killing", "Stopping container a"),
                                   ("Normal", "Killing", "Stopping container b")]
    assert {e.ref.field_path for e in node.events.events} == {"spec.containers{a}",
                                                              "spec.containers{b}"}


def test_hook_failures_record_no_output(node: Node) -> None:
    hook = LifecycleHandler(exec=ExecAction(command=("false",)))
    pod = make_pod(ctr("a", lifecycle=Lifecycle(post_start=hook)))
    node.fake.set_exec_result(None, ("false",), ExecResult(b"secret", b"", 1))
    node.sync(pod)
    assert ("Warning", "FailedPostStartHook", "PostStartHook failed") in node.seen()
    assert ("Normal", "Killing", "FailedPostStartHook") in node.seen()
    assert not any("secret" in m for _, _, m in node.seen())


def test_a_lost_sandbox_records_sandbox_changed(node: Node) -> None:
    pod = make_pod(ctr("a"))
    node.sync(pod)
    sandbox = node.status(pod).sandbox_statuses[0].id
    node.fake.stop_pod_sandbox(sandbox)
    node.events.events.clear()
    node.sync(pod)
    assert node.seen()[0] == ("Normal", "SandboxChanged",
                              "Pod sandbox changed, it will be killed and re-created.")
    assert node.events.events[0].ref.field_path == ""


@pytest.mark.parametrize(("kind", "result", "output", "expected"), [
    ("liveness", ProbeResult.FAILURE, "no such file",
     ("Warning", "Unhealthy", "Liveness probe failed: no such file")),
    ("readiness", ProbeResult.UNKNOWN, "rpc error",
     ("Warning", "Unhealthy", "Readiness probe errored: rpc error")),
    ("startup", ProbeResult.SUCCESS, "Probe terminated redirects: x",
     ("Warning", "ProbeWarning", "Startup probe warning: Probe terminated redirects: x")),
    ("liveness", ProbeResult.SUCCESS, "ok", None),
])
def test_probe_events(kind: str, result: ProbeResult, output: str,
                      expected: tuple[str, str, str] | None) -> None:
    assert probe_event(kind, result, output) == expected


@pytest.mark.parametrize(("old", "new", "reasons"), [
    (None, [("MemoryPressure", "False"), ("DiskPressure", "False"), ("PIDPressure", "False"),
            ("Ready", "True")],
     ["NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID",
      "NodeReady"]),
    ([("Ready", "True")], [("Ready", "True")], []),
    ([("Ready", "True")], [("Ready", "False")], ["NodeNotReady"]),
    ([("MemoryPressure", "False")], [("MemoryPressure", "True")],
     ["NodeHasInsufficientMemory"]),
])
def test_node_condition_events(old: list[tuple[str, str]] | None, new: list[tuple[str, str]],
                               reasons: list[str]) -> None:
    def conditions(items: list[tuple[str, str]] | None) -> list[dict[str, str]] | None:
        return None if items is None else [{"type": t, "status": s} for t, s in items]

    assert condition_events(conditions(old), conditions(new) or []) == reasons
    assert node_event_message("n1", "NodeReady") == "Node n1 status is now: NodeReady"


def test_references() -> None:
    pod = make_pod(ctr("a"), init=(ctr("i"),))
    assert field_path(pod, "i") == "spec.initContainers{i}"
    assert container_ref(pod, "a").field_path == "spec.containers{a}"
    assert pod_ref(pod).to_json() == {"kind": "Pod", "namespace": "default", "name": "web",
                                      "uid": "uid-1", "apiVersion": "v1",
                                      "resourceVersion": "42"}
    assert node_ref("n1").to_json() == {"kind": "Node", "name": "n1", "uid": "n1"}
