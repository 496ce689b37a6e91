"""spec.runtimeClassName -> the sandbox's runtime handler (upstream's runtimeclass.Manager
and createPodSandbox): the node's table standalone, the API's RuntimeClass in cluster mode,
and a missing class failing the sandbox in upstream's words, nothing of it made."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import msgspec
import pytest

from runtime.clock import FakeClock
from runtime.events.recorder import ListRecorder
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.object_source import Answer, ObjectSource, found, not_found
from runtime.kuberuntime.runtime_class import RuntimeClassError, lookup_runtime_handler
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.defaults import apply_defaults
from runtime.pod.model import Pod
from runtime.status.generate import generate_pod_status
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
TABLE = {"alt": "runc-alt", "other": "runc"}


class _Classes:
    """The API server's RuntimeClasses as the informer answers (ObjectSource.runtime_class),
    and no Service; the other reads a pod of one container and no volume never makes are
    left out."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def runtime_class(self, name: str) -> Answer:
        self.asked.append(name)
        return self.answers.get(name, not_found())

    def register_pod(self, *args: Any) -> None:
        """Runtime classes need no pod registered."""

    def services(self) -> Answer:
        return {"items": []}


def _api(answers: dict[str, Answer]) -> ObjectSource:
    return cast(ObjectSource, _Classes(answers))


def _class(handler: str) -> Answer:
    return found({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                  "metadata": {"name": "x"}, "handler": handler})


@pytest.mark.parametrize(("name", "objects", "handler"), [
    (None, None, ""),
    ("", None, ""),
    ("alt", None, "runc-alt"),
    ("other", None, "runc"),
    (None, {}, ""),
    ("gvisor", {"gvisor": _class("runsc")}, "runsc"),
    # Cluster mode reads the API's classes only: the node's table is not consulted.
    ("alt", {"alt": _class("kata")}, "kata"),
])
def test_a_class_resolves_to_its_handler(name: str | None, objects: dict[str, Answer] | None,
                                         handler: str) -> None:
    source = None if objects is None else _api(objects)
    assert lookup_runtime_handler(name, TABLE, source) == handler


@pytest.mark.parametrize(("name", "objects", "message"), [
    ("fast", None, 'runtimeclass.node.k8s.io "fast" not found'),
    ("alt", {}, 'runtimeclass.node.k8s.io "alt" not found'),
    ("alt", {"alt": {"error": "failed to sync runtimeclass cache: timed out waiting for the "
                              "condition"}},
     "failed to lookup RuntimeClass alt: failed to sync runtimeclass cache: timed out waiting "
     "for the condition"),
])
def test_a_class_that_cannot_be_had_is_upstream_s_error(
        name: str, objects: dict[str, Answer] | None, message: str) -> None:
    source = None if objects is None else _api(objects)
    with pytest.raises(RuntimeClassError) as caught:
        lookup_runtime_handler(name, TABLE, source)
    assert str(caught.value) == message


def _pod(runtime_class: str | None, uid: str = "uid-1") -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": IMAGE,
                                            "imagePullPolicy": "IfNotPresent"}]}
    if runtime_class is not None:
        spec["runtimeClassName"] = runtime_class
    raw = {"metadata": {"name": "web", "namespace": "default", "uid": uid}, "spec": spec}
    return apply_defaults(msgspec.convert(raw, Pod))


def _manager(tmp_path: Path, objects: ObjectSource | None = None
             ) -> tuple[KubeRuntimeManager, FakeRuntime, ListRecorder]:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=[IMAGE])
    settings = NodeSettings(node_name="node", root_dir=str(tmp_path / "root"),
                            pod_logs_dir=str(tmp_path / "logs"), resolv_conf="",
                            runtime_classes=tuple(TABLE.items()))
    events = ListRecorder()
    manager = KubeRuntimeManager(fake, settings, clock, objects=objects, events=events)
    return manager, fake, events


def _sync(manager: KubeRuntimeManager, pod: Pod) -> Any:
    status = manager.get_pod_status(PodUID(pod.uid), pod.metadata.name, "default")
    return manager.sync_pod(pod, status)


@pytest.mark.parametrize(("runtime_class", "handler"), [(None, ""), ("alt", "runc-alt")])
def test_standalone_the_sandbox_runs_on_the_table_s_handler(
        tmp_path: Path, runtime_class: str | None, handler: str) -> None:
    manager, fake, _ = _manager(tmp_path)
    pod = _pod(runtime_class)
    assert _sync(manager, pod).ok
    (call,) = fake.calls_to("run_pod_sandbox")
    assert call.args[1] == handler
    status = manager.get_pod_status(PodUID(pod.uid), "web", "default")
    assert status.sandbox_statuses[0].handler == handler


def test_cluster_mode_the_sandbox_runs_on_the_api_s_class(tmp_path: Path) -> None:
    api = _Classes({"gvisor": _class("runsc")})
    manager, fake, _ = _manager(tmp_path, cast(ObjectSource, api))
    assert _sync(manager, _pod("gvisor")).ok
    (call,) = fake.calls_to("run_pod_sandbox")
    assert call.args[1] == "runsc"
    assert api.asked == ["gvisor"]


@pytest.mark.parametrize("cluster", [False, True])
def test_a_missing_class_fails_the_sandbox_in_upstream_s_words(tmp_path: Path,
                                                                cluster: bool) -> None:
    manager, fake, events = _manager(tmp_path, _api({}) if cluster else None)
    pod = _pod("fast")
    result = _sync(manager, pod)
    (step,) = result.steps
    assert (step.action, step.error, step.message) == (
        "CreatePodSandbox", "CreatePodSandboxError", 'runtimeclass.node.k8s.io "fast" not found')
    assert [(e.ref.name, e.type, e.reason, e.message) for e in events.events] == [
        ("web", "Warning", "FailedCreatePodSandBox",
         'Failed to create pod sandbox: runtimeclass.node.k8s.io "fast" not found')]
    # Nothing of the sandbox is made: no RunPodSandbox, no log directory, no container.
    assert fake.called("run_pod_sandbox") == fake.called("create_container") == 0
    assert not (tmp_path / "logs").exists() or not any((tmp_path / "logs").iterdir())
    runtime = manager.get_pod_status(PodUID(pod.uid), "web", "default")
    status = generate_pod_status(pod, runtime, result)
    assert status.phase == "Pending"
    assert [(c.name, c.state.waiting.reason if c.state.waiting else None)
            for c in status.container_statuses] == [("c", "ContainerCreating")]
