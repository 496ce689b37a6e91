"""Cluster mode end to end: the daemon on a real containerd, joined with --kubeconfig to
the emulated API server (tests/apiserver), read and driven by real kubectl.

Each test starts its own emulated API server and daemon and stops both; the ``cri``
fixture removes the containers they leave.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE, PAUSE_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerFilter, ContainerState, ImageSpec
from runtime.kuberuntime import labels as L
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.kubectl import Kubectl
from tests.e2e.daemon import REPO, Daemon
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NODE = "e2e-node"
SERVE = "trap 'exit 0' TERM; while true; do sleep 1; done"


def pod_manifest(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": NODE, "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 5,
                     "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                                     "command": ["sh", "-c", SERVE]}]}}


STATIC = f"""apiVersion: v1
kind: Pod
metadata:
  name: static
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(SERVE)}]
"""


class Cluster:
    """An emulated API server, kubectl as its admin, and a daemon joined to it."""

    def __init__(self, server: EmulatedAPIServer, workdir: Path, endpoint: str,
                 *extra: str) -> None:
        self.server = server
        self.workdir = workdir
        self.kubectl = Kubectl(server.write_kubeconfig(workdir / "admin.kubeconfig"))
        kubeconfig = server.write_kubeconfig(workdir / "kubelet.kubeconfig",
                                             f"system:node:{NODE}", groups=("system:nodes",))
        self.trace_dir = workdir / "trace"
        extra = tuple(str(self.trace_dir) if e == "TRACE" else e for e in extra)
        config = workdir / "config.yaml"
        # A 4 s lease renews every second: the tests need not wait 10 s for a renewal.
        config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\n"
                          "kind: KubeletConfiguration\nnodeLeaseDurationSeconds: 4\n")
        self.daemon = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
                             endpoint, "--kubeconfig", str(kubeconfig), "--config", str(config),
                             "--node-status-update-frequency", "1s", *extra)

    def log_size(self) -> int:
        return self.daemon.log_path.stat().st_size

    def log_since(self, offset: int) -> str:
        with self.daemon.log_path.open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")

    def get(self, *args: str) -> Any:
        return self.kubectl.json("get", *args)

    def node_ready(self) -> str | None:
        node = self.get("node", NODE)
        ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
        return ready[0]["status"] if ready else None

    def renew_time(self) -> str:
        lease = self.get("lease", NODE, "-n", "kube-node-lease")
        return str(lease["spec"]["renewTime"])

    def pod(self, name: str) -> Any:
        result = self.kubectl.run("get", "pod", name, "-o", "json", check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None

    def running(self, name: str) -> Any:
        pod = self.pod(name)
        if pod is None or pod.get("status", {}).get("phase") != "Running":
            return None
        statuses = pod["status"].get("containerStatuses", [])
        return pod if statuses and all("running" in s["state"] for s in statuses) else None

    def apply(self, obj: dict[str, Any]) -> None:
        """``kubectl apply`` of one object, as an admin would."""
        path = self.workdir / f"{uuid.uuid4().hex[:6]}.json"
        path.write_text(json.dumps(obj))
        self.kubectl.run("apply", "-f", str(path))


@contextlib.contextmanager
def joined(containerd: EmbeddedContainerd, *extra: str,
           max_token_expiration: int | None = None) -> Iterator[Cluster]:
    """A daemon (with ``extra`` flags) joined to a fresh emulated API server, its dirs in
    ``<containerd's dir>/cluster/<id>``; at the end the daemon stops and its log is printed
    (pytest shows it when the test failed)."""
    workdir = containerd.base_dir / "cluster" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    with EmulatedAPIServer(bookmark_interval=0.5) as server:
        if max_token_expiration is not None:
            server.registry.max_token_expiration = max_token_expiration
        c = Cluster(server, workdir, containerd.endpoint, *extra)
        try:
            yield c
        finally:
            c.daemon.stop()
            if c.daemon.log_path.exists():
                print(c.daemon.log_path.read_text(errors="replace"))


@pytest.fixture
def cluster(containerd: EmbeddedContainerd, cri: CRIClient,
            request: pytest.FixtureRequest) -> Iterator[Cluster]:
    workdir = containerd.base_dir / "cluster" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    extra = getattr(request, "param", ())
    with EmulatedAPIServer(bookmark_interval=0.5) as server:
        c = Cluster(server, workdir, containerd.endpoint, *extra)
        try:
            yield c
        finally:
            c.daemon.stop()
            print(c.daemon.log_path.read_text(errors="replace"))  # shown when the test failed


def containers_of(cri: CRIClient, uid: str) -> tuple[Any, ...]:
    return cri.list_containers(ContainerFilter(label_selector={L.POD_UID: uid}))


def test_node_registers_turns_ready_and_its_lease_renews_emulated_apiserver(
        cluster: Cluster) -> None:
    cluster.daemon.start()
    wait_for(lambda: cluster.node_ready() == "True", 30, "the Node Ready", ignore=(
        AssertionError,), interval=0.5)
    node = cluster.get("node", NODE)
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == NODE
    assert node["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.")
    first = wait_for(cluster.renew_time, 20, "the node lease", ignore=(AssertionError,),
                     interval=0.5)
    lease = cluster.get("lease", NODE, "-n", "kube-node-lease")
    assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    assert lease["spec"]["leaseDurationSeconds"] == 4
    wait_for(lambda: cluster.renew_time() != first, 20, "the lease renewed", interval=0.5)


def test_the_node_lists_its_images_with_sizes_and_is_ready_emulated_apiserver(
        cluster: Cluster, cri: CRIClient) -> None:
    for image in (BUSYBOX_IMAGE, PAUSE_IMAGE):  # on the node before the kubelet starts
        cri.pull_image(ImageSpec(image))
    cluster.daemon.start()
    wait_for(lambda: cluster.node_ready() == "True", 30, "the Node Ready", ignore=(
        AssertionError,), interval=0.5)
    table = cluster.kubectl.run("get", "node", NODE).stdout
    assert " Ready " in table.splitlines()[1], table

    def images() -> dict[str, int] | None:
        listed = cluster.get("node", NODE)["status"].get("images") or []
        sizes = {name: int(i["sizeBytes"]) for i in listed for name in i["names"]}
        return sizes if {BUSYBOX_IMAGE, PAUSE_IMAGE} <= set(sizes) else None

    sizes = wait_for(images, 30, "busybox and pause in status.images", interval=0.5)
    assert sizes is not None and sizes[BUSYBOX_IMAGE] > 0 and sizes[PAUSE_IMAGE] > 0
    listed = cluster.get("node", NODE)["status"]["images"]
    assert [i["sizeBytes"] for i in listed] == sorted((i["sizeBytes"] for i in listed),
                                                      reverse=True)


def test_a_pod_bound_to_the_node_runs_reports_and_is_deleted_emulated_apiserver(
        cluster: Cluster, cri: CRIClient) -> None:
    cluster.daemon.start()
    wait_for(lambda: cluster.node_ready() == "True", 30, "the Node Ready", ignore=(
        AssertionError,), interval=0.5)
    path = cluster.workdir / "web.json"
    path.write_text(json.dumps(pod_manifest("web")))
    cluster.kubectl.run("apply", "-f", str(path))
    pod = wait_for(lambda: cluster.running("web"), 60, "web Running in the API",
                   interval=0.5)
    uid = pod["metadata"]["uid"]
    assert pod["status"]["podIP"] and pod["status"]["hostIP"]
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"
    (container,) = containers_of(cri, uid)  # the API's UID is the pod's UID on the node
    assert container.state == ContainerState.RUNNING

    cluster.kubectl.run("delete", "pod", "web", "--wait=true", timeout=60)
    assert cluster.pod("web") is None  # gone, not stuck Terminating
    wait_for(lambda: all(c.state != ContainerState.RUNNING for c in containers_of(cri, uid)),
             30, "web's container stopped")


def test_static_pod_mirror_and_an_api_server_outage_emulated_apiserver(
        cluster: Cluster, cri: CRIClient) -> None:
    (cluster.daemon.manifests / "static.yaml").write_text(STATIC)
    cluster.daemon.start()
    name = f"static-{NODE}"
    mirror = wait_for(lambda: cluster.running(name), 60, "the mirror pod Running",
                      interval=0.5)
    meta = mirror["metadata"]
    static_uid = meta["annotations"]["kubernetes.io/config.hash"]
    assert meta["annotations"]["kubernetes.io/config.mirror"] == static_uid
    assert meta["uid"] != static_uid
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Node", NODE, True)
    (before,) = containers_of(cri, static_uid)

    # A deleted mirror pod comes back.
    cluster.kubectl.run("delete", "pod", name, "--wait=false")

    def recreated() -> Any:
        pod = cluster.running(name)
        return pod if pod is not None and pod["metadata"]["uid"] != meta["uid"] else None

    again = wait_for(recreated, 30, "the mirror pod recreated", interval=0.5)
    assert again["metadata"]["annotations"]["kubernetes.io/config.mirror"] == static_uid

    # The API server goes away: the static pod keeps running, untouched.
    renewed = cluster.renew_time()
    seen = cluster.log_size()
    cluster.server.partition()
    try:
        wait_for(lambda: "failed to update lease" in cluster.log_since(seen)
                 and "error updating node status" in cluster.log_since(seen), 30,
                 "the kubelet noticing the outage")
        assert cluster.daemon.pod(name) is not None
        assert [(c.id, c.state) for c in containers_of(cri, static_uid)] == [
            (before.id, ContainerState.RUNNING)]
    finally:
        cluster.server.heal()
    wait_for(lambda: cluster.renew_time() != renewed, 30, "heartbeats resumed", interval=0.5)
    assert cluster.node_ready() == "True"
    assert [c.id for c in containers_of(cri, static_uid)] == [before.id]


def test_a_kubelet_restart_restarts_no_container_emulated_apiserver(
        cluster: Cluster, cri: CRIClient) -> None:
    cluster.daemon.start()
    wait_for(lambda: cluster.node_ready() == "True", 30, "the Node Ready", ignore=(
        AssertionError,), interval=0.5)
    path = cluster.workdir / "keep.json"
    path.write_text(json.dumps(pod_manifest("keep")))
    cluster.kubectl.run("apply", "-f", str(path))
    pod = wait_for(lambda: cluster.running("keep"), 60, "keep Running", interval=0.5)
    uid = pod["metadata"]["uid"]
    (before,) = containers_of(cri, uid)

    assert cluster.daemon.signal(signal.SIGKILL) == -signal.SIGKILL
    seen = cluster.log_size()
    cluster.daemon.start()
    ready_seen: set[str] = set()

    def synced_again() -> bool:
        # Meanwhile, the API must never show the pod as not ready.
        pod = cluster.pod("keep")
        conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        ready_seen.add(f'{pod["status"]["phase"]}/{conditions.get("Ready")}')
        return "watching its pods" in cluster.log_since(seen) and \
            cluster.daemon.pod("keep") is not None and \
            cluster.daemon.phase("keep") == "Running"

    wait_for(synced_again, 30, "the restarted kubelet running keep again", interval=0.3)
    assert ready_seen == {"Running/True"}
    after = cluster.running("keep")
    assert after is not None
    (status,) = after["status"]["containerStatuses"]
    assert status["restartCount"] == 0
    assert status["containerID"] == f"containerd://{before.id}"
    assert [c.id for c in containers_of(cri, uid)] == [before.id]


@pytest.mark.parametrize("cluster", [("--trace-dir", "TRACE")], indirect=True)
def test_a_recorded_cluster_run_replays_without_divergence_emulated_apiserver(
        cluster: Cluster) -> None:
    """What the API told the kubelet reached the deciding actors as recorded messages:
    the run replays from its trace alone, with no API server."""
    (cluster.daemon.manifests / "static.yaml").write_text(STATIC)
    cluster.daemon.start()
    wait_for(lambda: cluster.running(f"static-{NODE}"), 60, "the mirror pod Running",
             interval=0.5)
    path = cluster.workdir / "web.json"
    path.write_text(json.dumps(pod_manifest("web")))
    cluster.kubectl.run("apply", "-f", str(path))
    wait_for(lambda: cluster.running("web"), 60, "web Running in the API", interval=0.5)
    cluster.kubectl.run("delete", "pod", "web", "--wait=true", timeout=60)
    cluster.daemon.stop()
    replayed = subprocess.run([sys.executable, "-m", "bin.main", "trace", "replay",
                               str(cluster.trace_dir)], cwd=REPO, capture_output=True,
                              text=True, timeout=300, check=False)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence: replayed" in replayed.stdout


def test_started_while_the_api_server_is_away_static_pods_run_emulated_apiserver(
        cluster: Cluster) -> None:
    """No API server at start: the static pod runs anyway; when the server comes, the
    Node registers and the mirror pod appears."""
    (cluster.daemon.manifests / "static.yaml").write_text(STATIC)
    cluster.server.partition()
    try:
        cluster.daemon.start()
        cluster.daemon.wait_running(f"static-{NODE}")
        assert "successfully registered node" not in cluster.daemon.log()
    finally:
        cluster.server.heal()
    wait_for(lambda: cluster.running(f"static-{NODE}"), 60, "the mirror pod Running",
             interval=0.5)
    assert cluster.node_ready() == "True"
