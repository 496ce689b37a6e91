"""spec.runtimeClassName in cluster mode, end to end: the daemon joined to the emulated API
server reads the RuntimeClass objects (node.k8s.io/v1) through its informer, runs a pod on
its class's handler (the embedded containerd's runc-alt, as PodSandboxStatus reports), sees
the class's overhead in spec.overhead (set by the API server's admission) and hands it to
the runtime with the pod's resources in the sandbox config (what containerd says it got:
its verbose PodSandboxStatus), and fails the sandbox of a pod whose class is gone with
upstream's FailedCreatePodSandBox Event, until the class is back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.config import ALT_RUNTIME_HANDLER
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import PodSandbox, SandboxFilter
from runtime.kuberuntime.labels import POD_UID
from tests.e2e.test_cluster_emulated_apiserver import NODE, SERVE, Cluster, joined
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

MI = 2**20
# The annotations containerd's CRI plugin puts on the pause container's spec from the
# sandbox config's linux.resources, for runtimes that size the sandbox (kata).
SANDBOX_SIZING = ("io.kubernetes.cri.sandbox-cpu-period", "io.kubernetes.cri.sandbox-cpu-quota",
                  "io.kubernetes.cri.sandbox-cpu-shares", "io.kubernetes.cri.sandbox-memory")


@pytest.fixture
def rc_cluster(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Cluster]:
    with joined(containerd) as c:
        yield c


def runtime_class(name: str, handler: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": name}, "handler": handler, **extra}


def pod(name: str, runtime_class_name: str, node: str = NODE,
        resources: dict[str, Any] | None = None) -> dict[str, Any]:
    main: dict[str, Any] = {"name": "main", "image": BUSYBOX_IMAGE,
                            "command": ["sh", "-c", SERVE]}
    if resources is not None:
        main["resources"] = resources
    spec: dict[str, Any] = {
        "runtimeClassName": runtime_class_name, "terminationGracePeriodSeconds": 1,
        "automountServiceAccountToken": False, "containers": [main]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def sandboxes(cri: CRIClient, uid: str) -> tuple[PodSandbox, ...]:
    return cri.list_pod_sandbox(SandboxFilter(label_selector={POD_UID: uid}))


def test_runtime_class_objects_pick_the_handler_emulated_apiserver(
        rc_cluster: Cluster, cri: CRIClient) -> None:
    cluster = rc_cluster
    cluster.apply(runtime_class("alt", ALT_RUNTIME_HANDLER,
                                 overhead={"podFixed": {"cpu": "100m", "memory": "16Mi"}}))
    cluster.daemon.start()
    wait_for(lambda: cluster.node_ready() == "True", 30, "the Node Ready",
             ignore=(AssertionError,), interval=0.5)

    cluster.apply(pod("on-alt", "alt", resources={
        "requests": {"cpu": "200m", "memory": "32Mi"},
        "limits": {"cpu": "500m", "memory": "64Mi"}}))
    running = wait_for(lambda: cluster.running("on-alt"), 60, "on-alt Running", interval=0.5)
    assert running["spec"]["overhead"] == {"cpu": "100m", "memory": "16Mi"}
    (sandbox,) = sandboxes(cri, running["metadata"]["uid"])
    assert cri.pod_sandbox_status(sandbox.id).handler == ALT_RUNTIME_HANDLER

    # The class's overhead and the pod's resources reached the runtime in the sandbox
    # config (LinuxPodSandboxConfig overhead and resources), as containerd kept it; the
    # resources, without the overhead, became its sandbox sizing annotations.
    info = json.loads(cri.pod_sandbox_info(sandbox.id)["info"])
    linux = info["config"]["linux"]
    assert linux["overhead"] == {"cpu_period": 100_000, "cpu_quota": 10_000,
                                 "cpu_shares": 102, "memory_limit_in_bytes": 16 * MI}
    assert linux["resources"] == {"cpu_period": 100_000, "cpu_quota": 50_000,
                                  "cpu_shares": 204, "memory_limit_in_bytes": 64 * MI}
    annotations = info["runtimeSpec"]["annotations"]
    assert {k: annotations.get(k) for k in SANDBOX_SIZING} == {
        "io.kubernetes.cri.sandbox-cpu-period": "100000",
        "io.kubernetes.cri.sandbox-cpu-quota": "50000",
        "io.kubernetes.cri.sandbox-cpu-shares": "204",
        "io.kubernetes.cri.sandbox-memory": str(64 * MI)}

    # A pod admitted while its class existed, bound once the class is gone: the kubelet's
    # informer no longer has it, so the sandbox fails as upstream's does.
    cluster.apply(runtime_class("gone", "runc"))
    cluster.apply(pod("lost", "gone", node=""))  # no scheduler here: it stays unbound
    cluster.kubectl.run("delete", "runtimeclass", "gone")
    cluster.server.registry.bind("default", "lost", {"target": {"kind": "Node", "name": NODE}})

    def failed_event() -> Any:
        events = cluster.get("events", "--field-selector", "involvedObject.name=lost")["items"]
        return next((e for e in events if e["reason"] == "FailedCreatePodSandBox"), None)

    event = wait_for(failed_event, 60, "lost's FailedCreatePodSandBox Event", interval=0.5)
    assert event["type"] == "Warning"
    assert event["message"] == ('Failed to create pod sandbox: runtimeclass.node.k8s.io '
                                '"gone" not found')
    assert event["source"] == {"component": "kubelet", "host": NODE}

    def container_creating() -> Any:
        lost = cluster.pod("lost")
        statuses = lost.get("status", {}).get("containerStatuses", [])
        return lost if [s["state"].get("waiting", {}).get("reason") for s in statuses] == [
            "ContainerCreating"] else None

    lost = wait_for(container_creating, 30, "lost's status written", interval=0.5)
    assert lost["status"]["phase"] == "Pending"
    assert sandboxes(cri, lost["metadata"]["uid"]) == ()

    # The class back: the worker's next try runs the pod on it.
    cluster.apply(runtime_class("gone", ALT_RUNTIME_HANDLER))
    back = wait_for(lambda: cluster.running("lost"), 60, "lost Running once its class is back",
                    interval=0.5)
    (sandbox,) = sandboxes(cri, back["metadata"]["uid"])
    assert sandbox.runtime_handler == ALT_RUNTIME_HANDLER
