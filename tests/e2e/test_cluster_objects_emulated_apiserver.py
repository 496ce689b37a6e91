"""Cluster mode end to end, the objects a pod is made from: ConfigMap and Secret volumes
and env, the kube-api-access token and service links, on containerd with the daemon
joined to the emulated API server and the objects made with kubectl."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.apiserver import EmulatedAPIServer
from tests.e2e.daemon import REPO
from tests.e2e.test_cluster_emulated_apiserver import NODE, SERVE, Cluster, joined
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

TOKEN_LIFE = 20  # the emulator's cap on token lifetimes: a rotation within seconds


@pytest.fixture
def objects_cluster(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Cluster]:
    with joined(containerd, "--sync-frequency", "2s",
                max_token_expiration=TOKEN_LIFE) as c:
        yield c


def volume_dir(cluster: Cluster, uid: str, plugin: str, name: str) -> Path:
    return cluster.workdir / "root" / "pods" / uid / "volumes" / f"kubernetes.io~{plugin}" / name


def test_configmap_volume_secret_env_token_and_service_links_emulated_apiserver(
        objects_cluster: Cluster) -> None:
    cluster = objects_cluster
    kubectl = cluster.kubectl
    # kubectl create configmap/secret send protobuf, which the emulator does not read.
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
                    "data": {"greeting": "hello"}})
    cluster.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"},
                    "data": {"pw": "czNjcmV0"}})
    cluster.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "my-svc"},
                    "spec": {"clusterIP": "10.96.0.20", "ports": [
                        {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}})
    cluster.daemon.start()
    wait_for(lambda: cluster.node_ready() == "True", 30, "the Node Ready",
             ignore=(AssertionError,), interval=0.5)
    cluster.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"}, "spec": {
        "nodeName": NODE, "terminationGracePeriodSeconds": 2,
        "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}],
        "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                        "command": ["sh", "-c", f"env; {SERVE}"],
                        "env": [{"name": "PW", "valueFrom": {"secretKeyRef": {
                            "name": "sec", "key": "pw"}}}],
                        "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}]}]}})
    # A pod whose ConfigMap does not exist yet waits in ContainerCreating (FailedMount).
    cluster.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "later"}, "spec": {
        "nodeName": NODE, "terminationGracePeriodSeconds": 2, "automountServiceAccountToken":
        False, "volumes": [{"name": "v", "configMap": {"name": "later"}}],
        "containers": [{"name": "main", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", SERVE],
                        "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]}})
    # A container whose env names a missing Secret: CreateContainerConfigError.
    cluster.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "noenv"}, "spec": {
        "nodeName": NODE, "terminationGracePeriodSeconds": 2, "automountServiceAccountToken":
        False, "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                               "command": ["sh", "-c", SERVE], "env": [
                                   {"name": "X", "valueFrom": {"secretKeyRef": {
                                       "name": "nope", "key": "k"}}}]}]}})
    pod = wait_for(lambda: cluster.running("app"), 60, "app Running", interval=0.5)
    uid = pod["metadata"]["uid"]

    def config_error() -> Any:
        statuses = (cluster.pod("noenv") or {}).get("status", {}).get("containerStatuses", [])
        waiting = statuses[0]["state"].get("waiting", {}) if statuses else {}
        return waiting if waiting.get("reason") == "CreateContainerConfigError" else None

    waiting = wait_for(config_error, 30, "noenv waiting in CreateContainerConfigError",
                       interval=0.5)
    assert waiting["message"] == 'secret "nope" not found'

    log = cluster.daemon.pod_logs / f"default_app_{uid}" / "main" / "0.log"

    def env_logged() -> str:  # the CRI log file (this kubelet's 10250 is not HTTPS yet)
        out = log.read_text(errors="replace") if log.exists() else ""
        return out if "PW=" in out else ""

    logs = wait_for(env_logged, 30, "app's env in its log", interval=0.5)
    assert "PW=s3cret" in logs
    assert "MY_SVC_SERVICE_HOST=10.96.0.20" in logs and "MY_SVC_PORT_80_TCP_PORT=80" in logs
    assert "KUBERNETES_SERVICE_HOST=10.96.0.1" in logs

    cfg = volume_dir(cluster, uid, "configmap", "cfg")
    assert (cfg / "greeting").read_text() == "hello"
    first = os.readlink(cfg / "..data")
    kubectl.run("patch", "configmap", "cfg", "-p", '{"data":{"greeting":"bye"}}')
    wait_for(lambda: (cfg / "greeting").read_text() == "bye", 30, "the update in the file",
             interval=0.2)
    assert os.readlink(cfg / "..data") != first  # swapped in whole

    (access,) = [v["name"] for v in pod["spec"]["volumes"]
                 if v["name"].startswith("kube-api-access-")]
    projected = volume_dir(cluster, uid, "projected", access)
    token = (projected / "token").read_text()
    assert token.count(".") == 2 and (projected / "namespace").read_text() == "default"
    assert "BEGIN CERTIFICATE" in (projected / "ca.crt").read_text()
    wait_for(lambda: (projected / "token").read_text() != token, 3 * TOKEN_LIFE,
             "the token rotated", interval=0.5)

    later = cluster.pod("later")
    assert later["status"].get("phase", "Pending") == "Pending"
    assert [s["state"]["waiting"]["reason"] for s in later["status"]["containerStatuses"]
            ] == ["ContainerCreating"]
    assert "FailedMount" in cluster.daemon.log_path.read_text(errors="replace")
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later"},
                    "data": {"k": "v"}})
    wait_for(lambda: cluster.running("later"), 60, "later Running once its ConfigMap exists",
             interval=0.5)
    kubectl.run("delete", "pod", "app", "later", "noenv", "--wait=true", timeout=60)


def test_a_recorded_run_with_api_objects_replays_without_divergence_emulated_apiserver(
        containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    """Every ConfigMap, Secret, Service and token answer is an input of the trace: the run
    replays from its trace alone, the ConfigMap's update included."""
    workdir = containerd.base_dir / "cluster" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    with EmulatedAPIServer(bookmark_interval=0.5) as server:
        cluster = Cluster(server, workdir, containerd.endpoint, "--sync-frequency", "2s",
                          "--trace-dir", "TRACE")
        try:
            cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
                            "data": {"greeting": "hello"}})
            cluster.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"},
                            "data": {"pw": "czNjcmV0"}})
            cluster.daemon.start()
            cluster.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"},
                            "spec": {
                "nodeName": NODE, "terminationGracePeriodSeconds": 2,
                "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}],
                "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                                "command": ["sh", "-c", SERVE],
                                "env": [{"name": "PW", "valueFrom": {"secretKeyRef": {
                                    "name": "sec", "key": "pw"}}}],
                                "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}]}]}})
            pod = wait_for(lambda: cluster.running("app"), 60, "app Running", interval=0.5)
            cfg = volume_dir(cluster, pod["metadata"]["uid"], "configmap", "cfg")
            cluster.kubectl.run("patch", "configmap", "cfg", "-p", '{"data":{"greeting":"bye"}}')
            wait_for(lambda: (cfg / "greeting").read_text() == "bye", 30,
                     "the update in the file", interval=0.2)
            cluster.kubectl.run("delete", "pod", "app", "--wait=true", timeout=60)
        finally:
            cluster.daemon.stop()
            if cluster.daemon.log_path.exists():  # shown when the test failed
                print(cluster.daemon.log_path.read_text(errors="replace"))
    replayed = subprocess.run([sys.executable, "-m", "bin.main", "trace", "replay",
                               str(cluster.trace_dir)], cwd=REPO, capture_output=True,
                              text=True, timeout=300, check=False)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence: replayed" in replayed.stdout
