"""Pods using objects this node cannot have (ConfigMaps, Secrets, claims) are accepted and
reported as upstream's kubelet reports them: a volume that cannot be set up keeps the pod
Pending with no sandbox (containers ContainerCreating, a FailedMount line naming the
volume); env from a missing object is CreateContainerConfigError with upstream's
message; optional references are skipped and the pod runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from loguru import logger

from runtime.pod.model import Pod
from runtime.status.types import PodStatus
from tests.unit.kubelet.test_sync_loop import IMAGE, Node


def make_pod(uid: str, volumes: tuple[dict[str, object], ...] = (),
             container: dict[str, object] | None = None) -> Pod:
    return msgspec.convert({
        "metadata": {"name": uid, "namespace": "default", "uid": uid,
                     "annotations": {"kubernetes.io/config.source": "file"}},
        "spec": {"volumes": list(volumes), "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                                 "volumeMounts": [{"name": v["name"], "mountPath": f"/{i}"}
                                                  for i, v in enumerate(volumes)],
                                 **(container or {})}]},
    }, Pod)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.stop()


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING", format="{message}")
    yield lines
    logger.remove(sink)


def waiting(status: PodStatus) -> tuple[str, str, str]:
    (c,) = status.container_statuses
    assert c.state.waiting is not None
    return status.phase, c.state.waiting.reason, c.state.waiting.message


def test_a_missing_config_map_volume_keeps_the_pod_pending_without_a_sandbox(
        node: Node, warnings: list[str]) -> None:
    node.snapshot(make_pod("cm", ({"name": "config", "configMap": {"name": "app-config"}},)),
                  make_pod("ok", ({"name": "scratch", "emptyDir": {}},)))
    node.until("the other pod to run", lambda: node.running("ok") == ["c"])
    node.until("the FailedMount line", lambda: any(
        'FailedMount: MountVolume.SetUp failed for volume "config" : configmap "app-config" '
        "not found" in line for line in warnings))
    assert waiting(node.statuses()["cm"]) == ("Pending", "ContainerCreating", "")
    assert [s.metadata.uid for s in node.fake.list_pod_sandbox()] == ["ok"]


def test_a_missing_claim_is_named_in_the_failed_mount_line(node: Node,
                                                           warnings: list[str]) -> None:
    node.snapshot(make_pod("pvc", ({"name": "data",
                                    "persistentVolumeClaim": {"claimName": "db"}},)))
    node.until("the FailedMount line", lambda: any(
        'volume "data" : error processing PVC default/db' in line for line in warnings))
    assert waiting(node.statuses()["pvc"]) == ("Pending", "ContainerCreating", "")
    assert node.fake.list_pod_sandbox() == ()


@pytest.mark.parametrize(("container", "message"), [
    ({"envFrom": [{"configMapRef": {"name": "settings"}}]}, 'configmap "settings" not found'),
    ({"env": [{"name": "PASSWORD", "valueFrom": {
        "secretKeyRef": {"name": "db", "key": "password"}}}]}, 'secret "db" not found'),
])
def test_env_from_a_missing_object_is_create_container_config_error(
        node: Node, container: dict[str, object], message: str) -> None:
    node.snapshot(make_pod("env", container=container))
    node.until("the config error", lambda: "env" in node.statuses() and waiting(
        node.statuses()["env"])[1] == "CreateContainerConfigError")
    assert waiting(node.statuses()["env"]) == ("Pending", "CreateContainerConfigError", message)
    assert node.running("env") == []


def test_optional_references_are_skipped_and_the_pod_runs(node: Node) -> None:
    node.snapshot(make_pod(
        "opt", ({"name": "config", "configMap": {"name": "app-config", "optional": True}},
                {"name": "creds", "secret": {"secretName": "creds", "optional": True}}),
        container={"envFrom": [{"configMapRef": {"name": "settings", "optional": True}}],
                   "env": [{"name": "A", "valueFrom": {"secretKeyRef": {
                       "name": "db", "key": "a", "optional": True}}}]}))
    node.until("the pod to run", lambda: node.running("opt") == ["c"])
