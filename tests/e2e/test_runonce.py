"""kubelet-actors --runonce on a real containerd, as a user runs it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE, HeldLock, cleanup_runtime_dir, new_embedded
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerFilter, ContainerState, SandboxFilter
from runtime.kuberuntime import labels as L
from tests.e2e.conftest import REPO
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

KUBELET = [sys.executable, "-m", "bin.main"]


def run_kubelet(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KUBELET, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def run_once(endpoint: str, manifests: Path, logs: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = run_kubelet(
        "--runonce", "--pod-manifest-path", str(manifests), "--container-runtime-endpoint",
        endpoint, "--pod-logs-dir", str(logs), "--node-name", "e2e-node",
        "--runonce-timeout", "60s", "-o", "json", *extra,
    )
    assert proc.stdout, f"no output; stderr:\n{proc.stderr}"
    return proc.returncode, json.loads(proc.stdout)


def pod_manifest(name: str, containers: str, init: str = "", extra_spec: str = "") -> str:
    text = f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: {name}}}
spec:
  restartPolicy: Always
{extra_spec}  containers:
{containers}"""
    if init:
        text += f"  initContainers:\n{init}"
    return text


def busybox(name: str, script: str, policy: str = "IfNotPresent") -> str:
    return f"""  - name: {name}
    image: {BUSYBOX_IMAGE}
    imagePullPolicy: {policy}
    command: ["sh", "-c", {json.dumps(script)}]
"""


@pytest.fixture
def workdir(containerd: EmbeddedContainerd, cri: CRIClient) -> Path:
    """Manifests and logs for one test, inside the e2e containerd's directory."""
    path = containerd.base_dir / "runonce" / uuid.uuid4().hex[:8]
    (path / "manifests").mkdir(parents=True)
    (path / "logs").mkdir()
    return path


def pods_by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["pod"]["metadata"]["name"]: p for p in report["pods"]}


def test_init_container_and_two_containers_run_with_upstream_labels(
    containerd: EmbeddedContainerd, cri: CRIClient, workdir: Path
) -> None:
    manifest = pod_manifest(
        "trio",
        busybox("one", "echo one is up; sleep 3600") + busybox("two", "sleep 3600"),
        init=busybox("setup", "echo initialized"),
    )
    (workdir / "manifests" / "trio.yaml").write_text(manifest)
    code, report = run_once(containerd.endpoint, workdir / "manifests", workdir / "logs")
    assert code == 0, report
    pod = pods_by_name(report)["trio-e2e-node"]
    assert pod["ok"] and pod["pod"]["status"]["phase"] == "Running"
    uid = pod["pod"]["metadata"]["uid"]

    (sandbox,) = cri.list_pod_sandbox(SandboxFilter(label_selector={L.POD_UID: uid}))
    assert sandbox.labels[L.POD_NAME] == "trio-e2e-node"
    assert sandbox.labels[L.POD_NAMESPACE] == "default"
    assert sandbox.labels["app"] == "trio"
    containers = cri.list_containers(ContainerFilter(label_selector={L.POD_UID: uid}))
    by_name = {c.labels[L.CONTAINER_NAME]: c for c in containers}
    assert sorted(by_name) == ["one", "setup", "two"]
    assert by_name["setup"].state == ContainerState.EXITED
    assert by_name["one"].state == by_name["two"].state == ContainerState.RUNNING
    for c in containers:
        assert c.labels[L.POD_NAME] == "trio-e2e-node" and c.labels[L.POD_UID] == uid
        assert c.annotations[L.RESTART_COUNT] == "0"
        assert c.annotations[L.CONTAINER_HASH]
    log = workdir / "logs" / f"default_trio-e2e-node_{uid}" / "setup" / "0.log"
    assert "initialized" in log.read_text()


def test_good_manifest_runs_and_each_bad_file_is_named(
    containerd: EmbeddedContainerd, workdir: Path
) -> None:
    manifests = workdir / "manifests"
    (manifests / "good.yaml").write_text(pod_manifest("good", busybox("c", "sleep 3600")))
    (manifests / "broken.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: [\n")
    (manifests / "noimage.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: c\n")
    (manifests / "wrongtype.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers:\n"
        f"  - name: c\n    image: {BUSYBOX_IMAGE}\n    ports: [{{containerPort: eighty}}]\n")
    (manifests / "unknown.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: d}\nspec:\n  containers:\n"
        f"  - name: c\n    image: {BUSYBOX_IMAGE}\n    imagee: x\n")
    (manifests / "empty.yaml").write_text("")
    (manifests / "binary.yaml").write_bytes(b"\x00\x01\x02\xff")
    (manifests / ".hidden.yaml").write_text("not even yaml: [")
    code, report = run_once(containerd.endpoint, manifests, workdir / "logs")
    assert code == 1  # not everything runs: the bad files did not
    assert pods_by_name(report)["good-e2e-node"]["ok"]
    errors = {Path(e["file"]).name: e for e in report["errors"]}
    assert sorted(errors) == ["binary.yaml", "broken.yaml", "empty.yaml", "noimage.yaml",
                              "unknown.yaml", "wrongtype.yaml"]
    assert "invalid YAML at line" in errors["broken.yaml"]["error"]
    assert errors["noimage.yaml"]["field"] == "spec.containers[0].image"
    assert errors["wrongtype.yaml"]["field"] == "spec.containers[0].ports[0].containerPort"
    assert errors["unknown.yaml"]["field"] == "spec.containers[0].imagee"
    assert "no pod" in errors["empty.yaml"]["error"]
    assert "not a text file" in errors["binary.yaml"]["error"]


def test_missing_image_is_err_image_pull_and_other_pods_still_run(
    containerd: EmbeddedContainerd, workdir: Path
) -> None:
    manifests = workdir / "manifests"
    (manifests / "ok.yaml").write_text(pod_manifest("fine", busybox("c", "sleep 3600")))
    (manifests / "missing.yaml").write_text(pod_manifest("ghost", """  - name: c
    image: localhost:5000/kubelet-actors/does-not-exist:1.0
"""))
    (manifests / "never.yaml").write_text(pod_manifest("never", """  - name: c
    image: localhost:5000/kubelet-actors/not-here:2.0
    imagePullPolicy: Never
"""))
    code, report = run_once(containerd.endpoint, manifests, workdir / "logs")
    assert code == 1
    pods = pods_by_name(report)
    assert pods["fine-e2e-node"]["ok"]
    ghost = pods["ghost-e2e-node"]["pod"]["status"]["containerStatuses"][0]
    assert ghost["state"]["waiting"]["reason"] == "ErrImagePull"
    assert "does-not-exist" in ghost["state"]["waiting"]["message"]
    never = pods["never-e2e-node"]["pod"]["status"]["containerStatuses"][0]
    assert never["state"]["waiting"]["reason"] == "ErrImageNeverPull"


def test_always_policy_pulls_and_table_output_is_readable(
    containerd: EmbeddedContainerd, workdir: Path
) -> None:
    manifests = workdir / "manifests"
    (manifests / "p.yaml").write_text(pod_manifest("puller", busybox("c", "sleep 3600", "Always")))
    proc = run_kubelet(
        "--runonce", "--pod-manifest-path", str(manifests), "--container-runtime-endpoint",
        containerd.endpoint, "--pod-logs-dir", str(workdir / "logs"), "--node-name", "e2e-node",
    )
    assert proc.returncode == 0, proc.stderr
    assert "puller-e2e-node" in proc.stdout and "Running" in proc.stdout
    assert "pulled image" in proc.stderr  # Always pulls even when the image is present


def test_runtime_that_is_down_gives_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(pod_manifest("x", busybox("c", "true")))
    proc = run_kubelet("--runonce", "--pod-manifest-path", str(tmp_path),
                       "--container-runtime-endpoint", f"unix://{tmp_path}/none.sock")
    assert proc.returncode == 3
    assert f"the container runtime at unix://{tmp_path}/none.sock does not answer" in proc.stderr


def test_embedded_containerd_runs_the_pods_and_leaves_them_running(
    registry: object, e2e_lock: HeldLock, tmp_path: Path
) -> None:
    base = Path("/var/tmp") / f"kat-e2e-runonce-{uuid.uuid4().hex[:6]}"
    bridge, subnet = "kat1", "10.89.1.0/24"
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "p.yaml").write_text(pod_manifest("emb", busybox("c", "sleep 3600")))
    emb: EmbeddedContainerd | None = None
    try:
        proc = run_kubelet(
            "--runonce", "--pod-manifest-path", str(manifests), "--root-dir", str(base),
            "--pod-logs-dir", str(base / "logs"), "--node-name", "e2e-node",
            "--cni-bridge-name", bridge, "--pod-cidr", subnet, "-o", "json",
        )
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert report["pods"][0]["pod"]["status"]["podIP"].startswith("10.89.1.")
        # The kubelet stopped its containerd on exit; the container kept running.
        emb = new_embedded(base, bridge, subnet)
        emb.start()
        with CRIClient(emb.endpoint) as client:
            (c,) = client.list_containers()
            assert c.state == ContainerState.RUNNING
    finally:
        cleanup_runtime_dir(base, bridge, emb)


def test_host_port_reaches_the_container_over_loopback(
    containerd: EmbeddedContainerd, workdir: Path
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (workdir / "manifests" / "hp.yaml").write_text(pod_manifest("hostport", f"""  - name: web
    image: {BUSYBOX_IMAGE}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www; echo via-host-port > /www/index.html;
              exec httpd -f -p 8080 -h /www"]
    ports: [{{containerPort: 8080, hostPort: {port}}}]
"""))
    code, report = run_once(containerd.endpoint, workdir / "manifests", workdir / "logs")
    assert code == 0, report

    def answer() -> str | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                return str(response.read().decode())
        except OSError:
            return None

    body = wait_for(answer, 20.0, "the host port to answer")
    assert body is not None and "via-host-port" in body
