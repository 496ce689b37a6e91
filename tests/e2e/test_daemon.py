"""The kubelet-actors daemon on a real containerd: sources, convergence, API, restarts."""

from __future__ import annotations

import http.server
import json
import signal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.testbed import BUSYBOX_IMAGE, HeldLock
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerFilter, ContainerState, SandboxFilter
from runtime.kuberuntime import labels as L
from tests.e2e.daemon import Daemon
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

# sh as PID 1 ignores SIGTERM unless it traps it: exit at once so pods stop quickly.
SERVE = "trap 'exit 0' TERM; while true; do sleep 1; done"


def manifest(name: str, script: str = SERVE, extra: str = "", init: str = "",
             policy: str = "Always") -> str:
    text = f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: {policy}
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(script)}]
{extra}"""
    if init:
        text += f"""  initContainers:
  - name: init
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(init)}]
"""
    return text


@pytest.fixture
def workdir(containerd: EmbeddedContainerd) -> Path:
    path = containerd.base_dir / "daemon" / uuid.uuid4().hex[:8]
    (path / "manifests").mkdir(parents=True)
    return path


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient, workdir: Path) -> Iterator[Daemon]:
    d = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
               containerd.endpoint)
    yield d
    d.stop()


def sandboxes_of(cri: CRIClient, uid: str) -> list[str]:
    return [s.id for s in cri.list_pod_sandbox(SandboxFilter(label_selector={L.POD_UID: uid}))]


def test_manifests_added_edited_and_deleted(daemon: Daemon, cri: CRIClient) -> None:
    path = daemon.manifests / "web.yaml"
    path.write_text(manifest("web"))
    daemon.start()
    first = daemon.wait_running("web-e2e-node")
    old_uid = first["metadata"]["uid"]
    assert first["metadata"]["annotations"]["kubernetes.io/config.source"] == "file"

    path.write_text(manifest("web", SERVE.replace("sleep 1", "sleep 2")))
    def replaced() -> bool:
        pod = daemon.pod("web-e2e-node")
        return bool(pod) and pod["metadata"]["uid"] != old_uid  # type: ignore[index]
    wait_for(replaced, 30.0, "the edited manifest to replace the pod")
    new = daemon.wait_running("web-e2e-node")
    wait_for(lambda: sandboxes_of(cri, old_uid) == [], 30.0, "the old pod to be removed")

    path.unlink()
    wait_for(lambda: daemon.pods() == {}, 30.0, "the pod to leave /pods")
    wait_for(lambda: sandboxes_of(cri, new["metadata"]["uid"]) == [], 30.0,
             "the pod to be removed from the runtime")


def test_init_container_then_running_and_a_crash_loop(daemon: Daemon) -> None:
    (daemon.manifests / "init.yaml").write_text(manifest("init", init="echo ready"))
    (daemon.manifests / "crash.yaml").write_text(manifest("crash", "echo bye; exit 3"))
    daemon.start()
    pod = daemon.wait_running("init-e2e-node")
    (init,) = pod["status"]["initContainerStatuses"]
    assert init["state"]["terminated"]["reason"] == "Completed"
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Initialized"] == "True"

    def crash_looping() -> dict[str, object] | None:
        pod = daemon.pod("crash-e2e-node")
        if not pod:
            return None
        (status,) = pod["status"].get("containerStatuses", [{}])
        waiting = status.get("state", {}).get("waiting", {})
        return status if waiting.get("reason") == "CrashLoopBackOff" else None

    status = wait_for(crash_looping, 30.0, "CrashLoopBackOff in /pods")
    assert status is not None
    assert status["restartCount"] >= 1  # type: ignore[operator]
    assert status["lastState"]["terminated"]["exitCode"] == 3  # type: ignore[index]


def test_probes_over_http_tcp_and_exec(daemon: Daemon) -> None:
    web = """    ports: [{containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /index.html, port: 8080}
      periodSeconds: 1
    livenessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
"""
    script = "mkdir -p /www; echo hi > /www/index.html; exec httpd -f -p 8080 -h /www"
    (daemon.manifests / "web.yaml").write_text(manifest("probed", script, web))
    dead = """    livenessProbe:
      tcpSocket: {port: 9999}
      periodSeconds: 1
      failureThreshold: 2
    readinessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
"""
    (daemon.manifests / "dead.yaml").write_text(manifest("unlive", SERVE, dead))
    daemon.start()

    def ready(name: str) -> bool:
        pod = daemon.pod(name)
        conds = {c["type"]: c["status"] for c in (pod or {}).get("status", {})
                 .get("conditions", [])}
        return conds.get("Ready") == "True"

    wait_for(lambda: ready("probed-e2e-node"), 30.0, "the HTTP readiness probe to pass")
    (status,) = daemon.pod("probed-e2e-node")["status"]["containerStatuses"]  # type: ignore[index]
    assert status["ready"] is True and status["restartCount"] == 0

    def restarted() -> bool:
        pod = daemon.pod("unlive-e2e-node")
        statuses = (pod or {}).get("status", {}).get("containerStatuses", [])
        return bool(statuses) and statuses[0]["restartCount"] >= 1
    wait_for(restarted, 30.0, "the failing TCP liveness probe to restart the container")
    assert not ready("unlive-e2e-node")  # exec readiness probe keeps failing


def test_http_api_pods_runningpods_healthz_metrics(daemon: Daemon) -> None:
    (daemon.manifests / "api.yaml").write_text(manifest("api"))
    daemon.start()
    pod = daemon.wait_running("api-e2e-node")
    assert pod["status"]["podIP"].startswith("10.89.")
    # /runningpods/ is what the last relist saw: at most a relist period behind.
    wait_for(lambda: "api-e2e-node" in daemon.get("/runningpods/")[1], 10.0,
             "the pod in /runningpods/")
    assert daemon.get("/healthz")[0] == 200
    assert daemon.get("/healthz", port=daemon.healthz_port) == (200, "ok")
    code, metrics = daemon.get("/metrics", port=daemon.port)
    assert code == 200
    assert "kubelet_running_pods 1.0" in metrics
    assert "kubelet_pod_start_duration_seconds_count 1.0" in metrics
    assert 'kubelet_runtime_operations_total{operation_type="run_pod_sandbox"}' in metrics
    assert "kubelet_pleg_relist_duration_seconds_count" in metrics
    code, logs = daemon.get("/containerLogs/default/api-e2e-node/main")
    assert code == 200, logs


def test_bad_manifests_never_crash_the_daemon(daemon: Daemon) -> None:
    (daemon.manifests / "good.yaml").write_text(manifest("good"))
    (daemon.manifests / "bad.yaml").write_text("apiVersion: v1\nkind: Pod\nspec: [\n")
    daemon.start()
    daemon.wait_running("good-e2e-node")
    code, metrics = daemon.get("/metrics", port=daemon.port)
    assert code == 200
    assert 'kubelet_actors_manifest_errors_current{source="file"} 1.0' in metrics
    (daemon.manifests / "worse.yaml").write_text(manifest("worse").replace("image:", "imagee:"))
    wait_for(lambda: "worse.yaml" in daemon.log() and "imagee" in daemon.log(), 30.0,
             "the bad edit to be logged with its file and field")
    assert daemon.proc is not None and daemon.proc.poll() is None
    uid = daemon.wait_running("good-e2e-node")["metadata"]["uid"]

    # An edit that breaks the running pod's own manifest: reported, the pod keeps running.
    (daemon.manifests / "good.yaml").write_text(manifest("good").replace("containers:", "cont:"))
    wait_for(lambda: "keeping its last good version" in daemon.log(), 30.0,
             "the broken edit to be reported")
    assert daemon.wait_running("good-e2e-node")["metadata"]["uid"] == uid


def test_sigterm_leaves_pods_and_sigkill_restart_adopts_them(
    daemon: Daemon, cri: CRIClient
) -> None:
    (daemon.manifests / "keep.yaml").write_text(manifest("keep"))
    daemon.start()
    uid = daemon.wait_running("keep-e2e-node")["metadata"]["uid"]
    selector = ContainerFilter(label_selector={L.POD_UID: uid})
    (before,) = cri.list_containers(selector)

    assert daemon.signal(signal.SIGTERM) == 0
    (after_term,) = cri.list_containers(selector)
    assert after_term.id == before.id and after_term.state == ContainerState.RUNNING

    daemon.start()
    daemon.wait_running("keep-e2e-node")
    assert daemon.signal(signal.SIGKILL) == -signal.SIGKILL
    daemon.start()
    pod = daemon.wait_running("keep-e2e-node")
    (status,) = pod["status"]["containerStatuses"]
    assert status["containerID"] == f"containerd://{before.id}"
    assert status["restartCount"] == 0
    assert [c.id for c in cri.list_containers(selector)] == [before.id]


def test_runtime_going_away_kills_nothing_and_pods_converge_after(
    daemon: Daemon, cri: CRIClient, containerd: EmbeddedContainerd
) -> None:
    (daemon.manifests / "steady.yaml").write_text(manifest("steady"))
    daemon.start()
    uid = daemon.wait_running("steady-e2e-node")["metadata"]["uid"]
    (before,) = cri.list_containers(ContainerFilter(label_selector={L.POD_UID: uid}))
    containerd.stop()
    try:
        def unhealthy() -> str | None:
            code, body = daemon.get("/healthz?verbose")
            return body if code == 500 and "runtime failed" in body else None
        body = wait_for(unhealthy, 30.0, "/healthz to report the runtime")
        assert body is not None and ("does not answer" in body or "down" in body)
    finally:
        containerd.start()
    wait_for(lambda: daemon.get("/healthz")[0] == 200, 30.0, "/healthz to recover")
    daemon.wait_running("steady-e2e-node")
    (after,) = cri.list_containers(ContainerFilter(label_selector={L.POD_UID: uid}))
    assert after.id == before.id and after.state == ContainerState.RUNNING


def runtime_operations(daemon: Daemon) -> dict[str, float]:
    """The daemon's CRI calls so far by operation (kubelet_runtime_operations_total)."""
    code, text = daemon.get("/metrics", port=daemon.port)
    assert code == 200
    prefix = 'kubelet_runtime_operations_total{operation_type="'
    return {line[len(prefix):].partition('"')[0]: float(line.rpartition(" ")[2])
            for line in text.splitlines() if line.startswith(prefix)}


def test_thirty_pods_at_once(daemon: Daemon, cri: CRIClient) -> None:
    daemon.start()
    for i in range(30):
        (daemon.manifests / f"p{i:02}.yaml").write_text(manifest(f"p{i:02}"))
    wait_for(lambda: sum(1 for p in daemon.pods().values()
                         if p["status"].get("phase") == "Running") == 30, 90.0,
             "30 pods Running")
    uids = {p["metadata"]["uid"] for p in daemon.pods().values()}
    before = runtime_operations(daemon)
    for path in daemon.manifests.iterdir():
        path.unlink()
    wait_for(lambda: daemon.pods() == {}, 60.0, "every pod to leave /pods")

    def left() -> list[str]:
        return ([s.id for s in cri.list_pod_sandbox() if s.labels.get(L.POD_UID) in uids]
                + [c.id for c in cri.list_containers() if c.labels.get(L.POD_UID) in uids])
    wait_for(lambda: left() == [], 60.0, "every sandbox and container of the pods removed")
    after = runtime_operations(daemon)
    calls = {op: after.get(op, 0.0) - before.get(op, 0.0) for op in after}
    # Each pod: its one container stopped once, its sandbox stopped and removed once.
    assert (calls.get("stop_container"), calls.get("stop_pod_sandbox"),
            calls.get("remove_pod_sandbox")) == (30.0, 30.0, 30.0), calls
    # Read from its two listings alone before it is stopped: no status calls per pod (a
    # full read would make 60); a sync in flight when the manifests went may make a few.
    assert calls.get("container_status", 0.0) + calls.get("pod_sandbox_status", 0.0) < 30, calls
    # The PLEG relists once per pod at most (its worker's end of the stop; ends coalesce),
    # not on each of the pod's four events (about 4 relists per pod before).
    assert calls.get("list_pod_sandbox", 0.0) < 2 * 30, calls


def test_manifest_url_source(containerd: EmbeddedContainerd, cri: CRIClient,
                             workdir: Path) -> None:
    body = manifest("fromurl").encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/pods.yaml"
    d = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
               containerd.endpoint, "--manifest-url", url)
    try:
        d.start()
        pod = d.wait_running("fromurl-e2e-node")
        assert pod["metadata"]["annotations"]["kubernetes.io/config.source"] == "http"
    finally:
        d.stop()
        server.shutdown()
        server.server_close()


def test_embedded_containerd_killed_is_restarted_and_pods_untouched(
    registry: object, e2e_lock: HeldLock, tmp_path: Path
) -> None:
    import os

    from actors.app.testbed import cleanup_runtime_dir, new_embedded

    base = Path("/var/tmp") / f"kat-e2e-daemon-{uuid.uuid4().hex[:6]}"
    bridge, subnet = "kat3", "10.89.3.0/24"
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "emb.yaml").write_text(manifest("emb"))
    d = Daemon(base, manifests, "--cni-bridge-name", bridge, "--pod-cidr", subnet)
    emb: EmbeddedContainerd | None = None
    try:
        d.start()
        before = d.wait_running("emb-e2e-node")["status"]["containerStatuses"][0]
        pid_file = base / "root" / "containerd" / "containerd.pid"
        old_pid = int(pid_file.read_text())
        os.kill(old_pid, signal.SIGKILL)

        def restarted() -> bool:
            try:
                pid = int(pid_file.read_text())
            except (OSError, ValueError):
                return False
            return pid != old_pid and Path(f"/proc/{pid}").exists()

        wait_for(restarted, 30.0, "the kubelet to restart its containerd")
        wait_for(lambda: "kubelet_actors_containerd_restarts_total 1.0"
                 in d.get("/metrics", port=d.port)[1], 30.0, "the restart to be counted")
        wait_for(lambda: d.get("/healthz")[0] == 200, 30.0, "/healthz to recover")
        after = d.wait_running("emb-e2e-node")["status"]["containerStatuses"][0]
        assert after["containerID"] == before["containerID"]
        assert after["restartCount"] == 0
    finally:
        d.stop()
        # The daemon stopped its containerd; start one to remove the pods, then clean up.
        emb = new_embedded(base / "root", bridge, subnet)
        emb.start()
        cleanup_runtime_dir(base / "root", bridge, emb)
        import shutil

        shutil.rmtree(base, ignore_errors=True)
