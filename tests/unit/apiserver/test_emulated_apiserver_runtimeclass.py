"""RuntimeClass (node.k8s.io/v1) in the emulated API server: served and discovered like
its other cluster-scoped resources, validated as upstream validates it, and the
RuntimeClass admission plug-in on pod creation (missing class, overhead, scheduling)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.apiserver.client import RawClient
from tests.apiserver.kubectl import Kubectl

RUNTIMECLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
PODS = "/api/v1/namespaces/default/pods"


def runtime_class(name: str, handler: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": name}, "handler": handler, **extra}


def pod(name: str, runtime_class_name: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox:1"}], **spec}
    if runtime_class_name is not None:
        body["runtimeClassName"] = runtime_class_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


def test_emulated_apiserver_serves_runtimeclasses(client: RawClient) -> None:
    group = client.get("/apis/node.k8s.io/v1").body
    (entry,) = [r for r in group["resources"] if r["name"] == "runtimeclasses"]
    assert (entry["kind"], entry["namespaced"]) == ("RuntimeClass", False)
    created = client.post(RUNTIMECLASSES, runtime_class("alt", "runc-alt"))
    assert created.status == 201 and created.body["handler"] == "runc-alt"
    assert "namespace" not in created.body["metadata"]
    assert [i["metadata"]["name"] for i in client.get(RUNTIMECLASSES).body["items"]] == ["alt"]
    bad = client.post(RUNTIMECLASSES, runtime_class("bad", "Runc_Alt"))
    assert bad.status == 422
    assert bad.body["message"].startswith(
        'RuntimeClass.node.k8s.io "bad" is invalid: handler: Invalid value: "Runc_Alt": a '
        "lowercase RFC 1123 label must consist of")
    changed = client.put(RUNTIMECLASSES + "/alt", {**created.body, "handler": "runc"})
    assert changed.status == 422
    assert changed.body["message"] == ('RuntimeClass.node.k8s.io "alt" is invalid: handler: '
                                       'Invalid value: "runc": field is immutable')
    assert client.delete(RUNTIMECLASSES + "/alt").status == 200
    assert client.get(RUNTIMECLASSES + "/alt").status == 404


def test_emulated_apiserver_runtimeclass_admission(client: RawClient) -> None:
    missing = client.post(PODS, pod("nowhere", "ghost"))
    assert (missing.status, missing.body["reason"], missing.body["message"]) == (
        403, "Forbidden", 'pods "nowhere" is forbidden: pod rejected: RuntimeClass "ghost" '
                          "not found")
    client.post(RUNTIMECLASSES, runtime_class(
        "alt", "runc-alt", overhead={"podFixed": {"cpu": "250m", "memory": "120Mi"}},
        scheduling={"nodeSelector": {"sandbox": "alt"},
                    "tolerations": [{"key": "sandbox", "operator": "Exists",
                                     "effect": "NoSchedule"}]}))
    admitted = client.post(PODS, pod("web", "alt", nodeSelector={"disk": "ssd"}))
    assert admitted.status == 201
    spec = admitted.body["spec"]
    assert spec["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert spec["nodeSelector"] == {"disk": "ssd", "sandbox": "alt"}
    assert {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    # The same overhead written otherwise is the same overhead.
    assert client.post(PODS, pod("same", "alt", overhead={"cpu": "0.25",
                                                         "memory": "120Mi"})).status == 201
    for name, body, why in (
        ("other", pod("other", "alt", overhead={"cpu": "1"}),
         "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
        ("bare", pod("bare", overhead={"cpu": "1"}),
         "pod rejected: Overhead set without corresponding RuntimeClass defined Overhead"),
        ("clash", pod("clash", "alt", nodeSelector={"sandbox": "runc"}),
         "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = alt; "
         "pod.spec.nodeSelector[sandbox] = runc"),
    ):
        refused = client.post(PODS, body)
        assert (refused.status, refused.body["message"]) == (
            403, f'pods "{name}" is forbidden: {why}')


def test_kubectl_applies_gets_and_deletes_runtimeclasses_on_emulated_apiserver(
        kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "alt.json"
    manifest.write_text(json.dumps(runtime_class("alt", "runc-alt")))
    assert kubectl.run("apply", "-f", str(manifest)).stdout.strip() == (
        "runtimeclass.node.k8s.io/alt created")
    lines = kubectl.run("get", "runtimeclass").stdout.splitlines()
    assert lines[0].split() == ["NAME", "HANDLER", "AGE"]
    assert lines[1].split()[:2] == ["alt", "runc-alt"]
    assert kubectl.run("delete", "runtimeclass", "alt").stdout.strip() == (
        'runtimeclass.node.k8s.io "alt" deleted')
