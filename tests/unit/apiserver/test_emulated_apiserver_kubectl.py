"""Real kubectl against the emulated API server: upstream's client pins the wire semantics.

Each test runs kubectl subprocesses with a kubeconfig the server wrote (client certificate or
token over HTTPS): get (tables), apply, run, get -w, delete --grace-period, wait, patch,
logs, and every kubectl minor version this machine carries for get.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path

from tests.apiserver import EmulatedAPIServer
from tests.apiserver.client import RawClient
from tests.apiserver.kubectl import SDK, Kubectl, kubectl_binary
from tests.helpers import wait_for

PODS = "/api/v1/namespaces/default/pods"


def _ready_node(client: RawClient, name: str = "n1") -> None:
    node = client.post("/api/v1/nodes", {"metadata": {"name": name, "labels": {
        "node-role.kubernetes.io/worker": ""}}}).body
    node["status"] = {"conditions": [{"type": "Ready", "status": "True"}],
                      "nodeInfo": {"kubeletVersion": "v1.32.0-actors"}}
    assert client.put(f"/api/v1/nodes/{name}/status", node).status == 200


def test_kubectl_get_nodes_on_emulated_apiserver(server: EmulatedAPIServer, client: RawClient,
                                                 kubectl: Kubectl) -> None:
    assert kubectl.run("get", "nodes").stderr.strip() == "No resources found"
    _ready_node(client)
    lines = kubectl.run("get", "nodes").stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert lines[1].split()[:3] == ["n1", "Ready", "worker"]
    assert lines[1].split()[-1] == "v1.32.0-actors"
    listed = kubectl.json("get", "no")
    assert [n["metadata"]["name"] for n in listed["items"]] == ["n1"]
    assert "Server Version: v1.32.0-emulated" in kubectl.run("version").stdout


def test_every_kubectl_version_reads_the_emulated_apiserver(
        server: EmulatedAPIServer, client: RawClient, tmp_path: Path) -> None:
    _ready_node(client)
    binaries = sorted({kubectl_binary(), *(str(p) for p in SDK.glob("kubectl.1.*"))})
    config = server.write_kubeconfig(tmp_path / "kc", use_token=True)
    for binary in binaries:
        k = Kubectl(config, binary)
        assert k.run("get", "nodes").stdout.split()[5:7] == ["n1", "Ready"], binary
        assert k.json("get", "ns", "kube-node-lease")["status"]["phase"] == "Active", binary


def test_kubectl_is_refused_without_credentials_by_emulated_apiserver(
        server: EmulatedAPIServer, tmp_path: Path) -> None:
    config = server.write_kubeconfig(tmp_path / "kc", use_token=True)
    text = config.read_text().replace(
        next(line.split("token: ")[1] for line in config.read_text().splitlines()
             if "token: " in line), "not-a-token")
    config.write_text(text)
    result = Kubectl(config).run("get", "pods", check=False)
    assert result.returncode != 0
    assert "Unauthorized" in result.stderr or "must be logged in" in result.stderr


def test_kubectl_apply_run_and_patch_on_emulated_apiserver(
        server: EmulatedAPIServer, client: RawClient, kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
                        "data:\n  mode: one\n  keep: yes\n")
    assert kubectl.run("apply", "-f", str(manifest)).stdout.strip() == \
        "configmap/settings created"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
                        "data:\n  mode: two\n")
    assert kubectl.run("apply", "-f", str(manifest)).stdout.strip() == \
        "configmap/settings configured"
    # kubectl's three-way patch removed the key the manifest dropped.
    assert kubectl.json("get", "cm", "settings")["data"] == {"mode": "two"}
    assert kubectl.run("run", "web", "--image=busybox:1", "--labels=app=web").stdout.strip() \
        == "pod/web created"
    kubectl.run("patch", "pod", "web", "--type", "strategic", "-p",
                json.dumps({"metadata": {"labels": {"tier": "front"}}}))
    kubectl.run("patch", "pod", "web", "--subresource=status", "--type", "strategic", "-p",
                json.dumps({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}))
    pod = client.get(PODS + "/web").body
    assert pod["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert pod["status"]["conditions"] == [{"type": "Ready", "status": "False"}]
    table = kubectl.run("get", "pods", "-o", "wide").stdout.splitlines()
    assert table[0].split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert table[1].split()[:4] == ["web", "0/1", "Pending", "0"]


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_kubectl_get_watch_and_graceful_delete_on_emulated_apiserver(
        server: EmulatedAPIServer, client: RawClient, kubectl: Kubectl) -> None:
    client.post(PODS, {"metadata": {"name": "first"}, "spec": {
        "nodeName": "n1", "containers": [{"name": "app", "image": "busybox:1"}]}})
    proc = kubectl.popen("get", "pods", "-w", "--output-watch-events")
    try:
        lines = _lines(proc)
        seen: list[str] = []

        def saw(*words: str) -> bool:
            while not lines.empty():
                seen.append(lines.get())
            return any(all(w in line.split() for w in words) for line in seen)

        wait_for(lambda: saw("ADDED", "first"), 15, "kubectl -w to list the first pod")
        deleted = kubectl.run("delete", "pod", "first", "--grace-period=5", "--wait=false")
        assert deleted.stdout.strip() == 'pod "first" deleted'
        wait_for(lambda: saw("MODIFIED", "first", "Terminating"), 15,
                 "kubectl -w to show the pod terminating")
        meta = kubectl.json("get", "pod", "first")["metadata"]
        assert meta["deletionGracePeriodSeconds"] == 5 and meta["deletionTimestamp"]
        # The kubelet's confirmation: grace 0 with the uid as precondition.
        assert client.delete(PODS + "/first", {"gracePeriodSeconds": 0, "preconditions": {
            "uid": meta["uid"]}}).status == 200
        wait_for(lambda: saw("DELETED", "first"), 15, "kubectl -w to show the deletion")
        assert seen[0].split()[:2] == ["EVENT", "NAME"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_kubectl_wait_for_ready_on_emulated_apiserver(server: EmulatedAPIServer,
                                                      client: RawClient,
                                                      kubectl: Kubectl) -> None:
    client.post(PODS, {"metadata": {"name": "web"}, "spec": {
        "nodeName": "n1", "containers": [{"name": "app", "image": "busybox:1"}]}})
    proc = kubectl.popen("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    try:
        wait_for(lambda: server.open_watches("pods") >= 1, 15, "kubectl wait to watch")
        assert proc.poll() is None  # not ready yet: still waiting
        client.patch(PODS + "/web/status", {"status": {"conditions": [
            {"type": "Ready", "status": "True"}]}})
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.strip() == "pod/web condition met"


def test_kubectl_logs_through_emulated_apiserver(server: EmulatedAPIServer, client: RawClient,
                                                kubectl: Kubectl,
                                                fake_kubelet: list[str]) -> None:
    client.post(PODS, {"metadata": {"name": "web"}, "spec": {
        "nodeName": "n1", "containers": [{"name": "app", "image": "busybox:1"}]}})
    out = kubectl.run("logs", "web", "--tail=2").stdout
    assert out == "log line 1\nlog line 2 for kube-apiserver-kubelet-client\n"
    assert fake_kubelet == ["/containerLogs/default/web/app?tailLines=2"]


def test_kubectl_create_sends_protobuf_that_the_emulated_apiserver_reads(
        server: EmulatedAPIServer, kubectl: Kubectl, tmp_path: Path) -> None:
    """kubectl's typed clients write protobuf; each object stored equals kubectl's own JSON.

    The oracle is kubectl itself: ``--dry-run=client -o json`` prints the object it would
    send, which must be what the server decoded from the protobuf body (less what the server
    sets: uid, resourceVersion, creationTimestamp, generation, status).
    """
    (tmp_path / "blob").write_bytes(bytes(range(256)))  # not UTF-8: goes to binaryData
    (tmp_path / "text").write_text("line one\nline two\n")
    commands = [
        ("configmap", "settings", ("create", "configmap", "settings", "--from-literal=mode=on",
                                   "--from-literal=empty=", f"--from-file={tmp_path / 'text'}",
                                   f"--from-file={tmp_path / 'blob'}")),
        ("secret", "creds", ("create", "secret", "generic", "creds", "--from-literal=user=me",
                             "--type=example.com/basic")),
        ("secret", "pull", ("create", "secret", "docker-registry", "pull",
                            "--docker-server=127.0.0.1:5000", "--docker-username=u",
                            "--docker-password=p")),
        ("namespace", "team-a", ("create", "namespace", "team-a")),
        ("serviceaccount", "robot", ("create", "serviceaccount", "robot")),
    ]
    server_set = {"uid", "resourceVersion", "creationTimestamp", "generation", "namespace"}
    for kind, name, args in commands:
        wanted = kubectl.json(*args, "--dry-run=client", "-o", "json")
        assert kubectl.run(*args).stdout.strip() == f"{kind}/{name} created"
        stored = kubectl.json("get", kind, name, "-o", "json")
        for key in ("data", "binaryData", "type", "secrets"):
            assert stored.get(key) == wanted.get(key), (kind, key)
        meta = {k: v for k, v in stored["metadata"].items() if k not in server_set}
        # The server labels every namespace with its own name (upstream's, since 1.21).
        labels = {k: v for k, v in meta.pop("labels", {}).items()
                  if k != "kubernetes.io/metadata.name"}
        meta.update({"labels": labels} if labels else {})
        assert meta == {k: v for k, v in wanted["metadata"].items()
                        if k not in server_set and v is not None}, kind


def test_secret_string_data_is_merged_into_data_by_emulated_apiserver(
        client: RawClient) -> None:
    """stringData is write-only: merged into data as base64, its keys winning, never kept."""
    created = client.post("/api/v1/namespaces/default/secrets", {
        "metadata": {"name": "s"}, "data": {"a": "b2xk", "b": "Yg=="},
        "stringData": {"a": "new", "c": "see"}}).body
    assert created["data"] == {"a": "bmV3", "b": "Yg==", "c": "c2Vl"}
    assert "stringData" not in created
    patched = client.patch("/api/v1/namespaces/default/secrets/s",
                           {"stringData": {"b": "bee"}},
                           "application/merge-patch+json").body
    assert patched["data"]["b"] == "YmVl" and "stringData" not in patched
