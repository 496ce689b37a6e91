"""TLS bootstrap and certificate rotation end to end, on a real containerd, against the
emulated API server (its CSR API, csrapproving and csrsigning controllers, bootstrap
tokens): the daemon is given only a bootstrap kubeconfig (a token), asks for its client
certificate, writes its kubeconfig, registers, and serves port 10250 with a serving
certificate an admin approved (the API server checks it against the cluster CA when it
proxies ``kubectl logs``). With two-minute certificates both certificates rotate within the
run while the node stays Ready, the pod watch stays alive (a pod created after the rotation
starts) and a ``kubectl logs -f`` opened before the serving rotation keeps streaming."""

from __future__ import annotations

import datetime
import json
import os
import socket
import ssl
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.csr import CSRS, KUBELET_SERVING_SIGNER
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.transport import Transport
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.auth import Rules
from tests.apiserver.kubectl import Kubectl, kubectl_binary
from tests.e2e.daemon import Daemon
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NODE = "e2e-node"  # tests.e2e.daemon names its node so
SIGNING_DURATION = 120.0
"""Two-minute certificates (the signer backdates NotBefore 5 minutes, as upstream's: the
rotation deadline falls 0 to 78 s after each issuance)."""
TICKER = "i=0; while true; do echo line-$i; i=$((i+1)); sleep 1; done"


def _pod(name: str, command: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": NODE, "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                                     "command": ["sh", "-c", command]}]}}


class ServingApprover:
    """An admin approving each kubelet-serving CSR as it comes (what `kubectl certificate
    approve` does; upstream never auto-approves serving requests)."""

    def __init__(self, server: EmulatedAPIServer, admin: KubeClient) -> None:
        self._server = server
        self._admin = admin
        self._stop = threading.Event()
        self.approved: list[str] = []
        self._thread = threading.Thread(target=self._run, name="serving approver",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                listed = self._admin.list(CSRS)
                self._approve(listed.items)
                with self._admin.watch(CSRS, resource_version=listed.resource_version,
                                       timeout_seconds=5, read_timeout=15) as stream:
                    for event in stream:
                        self._approve((event.object,))
                        if self._stop.is_set():
                            return
            except Exception:  # the server stopping under it, or a cut watch: list again
                if self._stop.wait(0.2):
                    return

    def _approve(self, items: Any) -> None:
        for csr in items:
            name = csr["metadata"]["name"]
            conditions = (csr.get("status") or {}).get("conditions") or []
            if csr["spec"].get("signerName") == KUBELET_SERVING_SIGNER and not conditions \
                    and name not in self.approved:
                self._server.approve_csr(name, "the node's addresses checked by the admin")
                self.approved.append(name)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


class Joined:
    def __init__(self, server: EmulatedAPIServer, daemon: Daemon, workdir: Path,
                 admin: KubeClient) -> None:
        self.server = server
        self.daemon = daemon
        self.workdir = workdir
        self.admin = admin
        self.kubectl = Kubectl(server.write_kubeconfig(workdir / "admin.kubeconfig"))
        self.kubeconfig = workdir / "kubelet.kubeconfig"
        self.pki = workdir / "root" / "pki"

    def csrs(self) -> list[dict[str, Any]]:
        return list(self.admin.list(CSRS).items)

    def client_serial(self) -> int:
        return _serial_of(self.pki / "kubelet-client-current.pem")

    def serving_serial(self) -> int:
        """The serial of the certificate port 10250 hands a new connection."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cadata=self.server.ca.cert_pem.decode())
        ctx.check_hostname = False  # checked by the API server on the node's InternalIP
        with socket.create_connection(("127.0.0.1", self.daemon.port), timeout=10) as raw, \
                ctx.wrap_socket(raw) as conn:
            der = conn.getpeercert(binary_form=True)
        assert der is not None
        return x509.load_der_x509_certificate(der).serial_number

    def node_ready(self) -> bool:
        node = self.kubectl.json("get", "node", NODE)
        return any(c["type"] == "Ready" and c["status"] == "True"
                   for c in node["status"].get("conditions") or [])

    def lease_renewed_after(self, when: datetime.datetime) -> bool:
        lease = self.kubectl.json("get", "lease", "-n", "kube-node-lease", NODE)
        renewed = datetime.datetime.fromisoformat(
            lease["spec"]["renewTime"].replace("Z", "+00:00"))
        return renewed > when

    def running(self, name: str) -> bool:
        result = self.kubectl.run("get", "pod", name, "-o", "json", check=False)
        if result.returncode != 0:
            return False
        statuses = json.loads(result.stdout).get("status", {}).get("containerStatuses", [])
        return bool(statuses) and all("running" in s["state"] for s in statuses)

    def apply(self, pod: dict[str, Any]) -> None:
        path = self.workdir / f"{pod['metadata']['name']}.json"
        path.write_text(json.dumps(pod))
        self.kubectl.run("apply", "-f", str(path))


def _serial_of(path: Path) -> int:
    return x509.load_pem_x509_certificates(path.read_bytes())[0].serial_number


@pytest.fixture(scope="module")
def joined(containerd: EmbeddedContainerd) -> Iterator[Joined]:
    workdir = containerd.base_dir / "tls-bootstrap" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    rules = Rules().allow("kube-apiserver-kubelet-client", verbs=("get", "create"),
                          subresources=("*",), name=NODE)
    with EmulatedAPIServer(sar_policy=rules, csr_auto_approve=True,
                           cluster_signing_duration=SIGNING_DURATION) as server:
        # The API server checks the kubelet's serving certificate against the cluster CA,
        # at the Node's InternalIP (as kube-apiserver with --kubelet-certificate-authority).
        server.kubelet_ca = server.ca.cert_pem
        bootstrap = server.write_bootstrap_kubeconfig(workdir / "bootstrap.kubeconfig")
        ca = workdir / "ca.crt"
        ca.write_bytes(server.ca.cert_pem)
        daemon = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
                        containerd.endpoint, "--kubeconfig",
                        str(workdir / "kubelet.kubeconfig"), "--bootstrap-kubeconfig",
                        str(bootstrap), "--rotate-certificates",
                        "--rotate-server-certificates", "--client-ca-file", str(ca),
                        "--address", "0.0.0.0")
        transport = Transport(load_kubeconfig(server.write_kubeconfig(workdir / "a.conf")))
        admin = KubeClient(transport)
        approver = ServingApprover(server, admin)
        joined = Joined(server, daemon, workdir, admin)
        try:
            daemon.start()
            yield joined
        finally:
            for name in ("ticker", "after-rotation"):
                joined.kubectl.run("delete", "pod", name, "--wait=true", check=False,
                                   timeout=60)
            daemon.stop()
            approver.stop()
            transport.close()
            print(daemon.log())
            with CRIClient(containerd.endpoint, timeout=60) as cri:
                for sandbox in cri.list_pod_sandbox():
                    if sandbox.metadata.name in ("ticker", "after-rotation"):
                        cri.stop_pod_sandbox(sandbox.id)
                        cri.remove_pod_sandbox(sandbox.id)


def test_a_node_joins_with_only_a_bootstrap_token_emulated_apiserver(joined: Joined) -> None:
    doc = yaml.safe_load(joined.kubeconfig.read_text())
    current = joined.pki / "kubelet-client-current.pem"
    assert doc["users"][0]["user"] == {"client-certificate": str(current),
                                       "client-key": str(current)}
    assert current.is_symlink()
    assert Path(os.readlink(current)).name.startswith("kubelet-client-")
    bootstraps = [c for c in joined.csrs() if c["metadata"]["name"].startswith("node-csr-")]
    assert len(bootstraps) == 1
    spec = bootstraps[0]["spec"]
    assert spec["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
    assert spec["usages"] == ["digital signature", "client auth"]
    assert spec["username"].startswith("system:bootstrap:")
    wait_for(joined.node_ready, 60, "the node Ready", interval=0.5)
    # The serving certificate an admin approved, for the node's addresses.
    serving = [c for c in joined.csrs() if c["spec"]["signerName"] == KUBELET_SERVING_SIGNER]
    assert serving and serving[0]["spec"]["username"] == f"system:node:{NODE}"
    assert serving[0]["spec"]["usages"] == ["digital signature", "server auth"]
    node = joined.kubectl.json("get", "node", NODE)
    internal = next(a["address"] for a in node["status"]["addresses"]
                    if a["type"] == "InternalIP")
    wait_for(lambda: (joined.pki / "kubelet-server-current.pem").exists(), 60,
             "the serving certificate stored")
    pem = (joined.pki / "kubelet-server-current.pem").read_bytes()
    sans = x509.load_pem_x509_certificates(pem)[0].extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == [internal]
    assert sans.get_values_for_type(x509.DNSName) == [NODE]
    # kubectl logs through the API server, which checks the serving certificate.
    joined.apply(_pod("ticker", TICKER))
    wait_for(lambda: joined.running("ticker"), 90, "the ticker pod Running", interval=0.5)
    logs = wait_for(lambda: joined.kubectl.run("logs", "ticker", check=False).stdout, 30,
                    "the ticker's log through the API server")
    assert logs.startswith("line-0\n")


def test_a_restart_reuses_the_certificates_emulated_apiserver(joined: Joined) -> None:
    wait_for(joined.node_ready, 60, "the node Ready", interval=0.5)
    kubeconfig = joined.kubeconfig.read_bytes()
    bootstraps = sum(c["metadata"]["name"].startswith("node-csr-") for c in joined.csrs())
    joined.daemon.stop()
    joined.daemon.start()
    wait_for(joined.node_ready, 60, "the node Ready after the restart", interval=0.5)
    assert joined.kubeconfig.read_bytes() == kubeconfig
    assert sum(c["metadata"]["name"].startswith("node-csr-")
               for c in joined.csrs()) == bootstraps
    assert "skipping bootstrap" in joined.daemon.log()


def test_both_certificates_rotate_within_the_run_emulated_apiserver(joined: Joined) -> None:
    wait_for(lambda: joined.running("ticker"), 90, "the ticker pod Running", interval=0.5)
    client_before = joined.client_serial()
    client_expiry = x509.load_pem_x509_certificates(
        (joined.pki / "kubelet-client-current.pem").read_bytes())[0].not_valid_after_utc
    serving_before = wait_for(joined.serving_serial, 60, "port 10250 serving",
                              ignore=(OSError, ssl.SSLError))
    # A stream opened before the serving certificate rotates.
    # Without the helper's --request-timeout: it would end the stream after 20 s.
    argv = [kubectl_binary(), "--kubeconfig", str(joined.kubectl.kubeconfig), "logs", "-f",
            "ticker"]
    follow = subprocess.Popen(argv,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    out = follow.stdout
    assert out is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(out.readline, "")),
                              daemon=True)
    reader.start()
    try:
        wait_for(lambda: lines, 30, "the followed log's first line")
        wait_for(lambda: joined.serving_serial() != serving_before, 240,
                 "a new serving certificate on port 10250", ignore=(OSError, ssl.SSLError))
        seen = len(lines)
        wait_for(lambda: len(lines) > seen + 2, 30,
                 "the stream opened before the rotation still answering")
        assert follow.poll() is None
        wait_for(lambda: joined.client_serial() != client_before, 240,
                 "a new client certificate")
    finally:
        follow.terminate()
        follow.wait(30)
        reader.join(30)
    renewals = [c for c in joined.csrs()
                if c["spec"]["username"] == f"system:node:{NODE}"
                and c["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"]
    assert renewals, "the node renewed its client certificate with a CSR of its own"
    assert all(c["metadata"]["name"].startswith("csr-") for c in renewals)
    assert "certificate rotation detected, shutting down client connections" in \
        joined.daemon.log()
    # The server sees the new certificate: it refuses an expired one (401), and the node's
    # heartbeats go on past the old certificate's NotAfter.
    wait_for(lambda: joined.lease_renewed_after(client_expiry), 240,
             "a lease renewal after the first client certificate expired", interval=1.0)
    # The node stays Ready, and the pod watch is alive: a pod made now starts.
    assert joined.node_ready()
    joined.apply(_pod("after-rotation", "sleep 3600"))
    wait_for(lambda: joined.running("after-rotation"), 90,
             "a pod created after the rotation Running", interval=0.5)
    assert joined.node_ready()
