"""The daemon's main port in cluster mode, end to end: joined with --kubeconfig to the
emulated API server, with its default security (anonymous off, TokenReview, Webhook)
and the cluster CA as --client-ca-file, it answers only whom the API server vouches for.
"""

from __future__ import annotations

import http.client
import json
import ssl
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.auth import Rules
from tests.e2e.daemon import Daemon

pytestmark = pytest.mark.e2e

NODE = "e2e-node"  # tests.e2e.daemon names its node so


class Joined:
    def __init__(self, server: EmulatedAPIServer, daemon: Daemon, workdir: Path) -> None:
        self.server = server
        self.daemon = daemon
        self.workdir = workdir

    def call(self, path: str, *, token: str = "", cert: tuple[bytes, bytes] | None = None,
             ) -> tuple[int, str]:
        # The serving certificate is the daemon's self-signed one: its CA is in the file.
        ctx = ssl.create_default_context(
            cafile=str(self.workdir / "root" / "pki" / "kubelet.crt"))
        ctx.check_hostname = False  # its SANs are the node name and IP, not 127.0.0.1
        if cert is not None:
            crt, key = self.workdir / "c.crt", self.workdir / "c.key"
            crt.write_bytes(cert[0])
            key.write_bytes(cert[1])
            ctx.load_cert_chain(str(crt), str(key))
        conn = http.client.HTTPSConnection("127.0.0.1", self.daemon.port, timeout=10,
                                           context=ctx)
        try:
            conn.request("GET", path,
                         headers={"Authorization": f"Bearer {token}"} if token else {})
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()


@pytest.fixture
def joined(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Joined]:
    workdir = containerd.base_dir / "kubelet-port" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    rules = Rules().allow("kube-apiserver-kubelet-client", verbs=("get",),
                          subresources=("proxy",), name=NODE)
    with EmulatedAPIServer(sar_policy=rules) as server:
        kubeconfig = server.write_kubeconfig(workdir / "kubelet.kubeconfig",
                                             f"system:node:{NODE}", groups=("system:nodes",))
        ca = workdir / "ca.crt"
        ca.write_bytes(server.ca.cert_pem)
        daemon = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
                        containerd.endpoint, "--kubeconfig", str(kubeconfig),
                        "--client-ca-file", str(ca))
        try:
            daemon.start()
            yield Joined(server, daemon, workdir)
        finally:
            daemon.stop()
            print(daemon.log())  # shown when the test failed


def test_the_main_port_answers_only_whom_the_api_server_vouches_for_emulated_apiserver(
        joined: Joined) -> None:
    server = joined.server
    assert joined.call("/pods") == (401, "Unauthorized")
    assert joined.call("/pods", token="forged") == (401, "Unauthorized")
    assert [r["spec"]["token"] for r in server.reviews_of("TokenReview")] == ["forged"]

    apiserver_client = server.client_cert("kube-apiserver-kubelet-client",
                                          ("kubeadm:cluster-admins",))
    pair = (apiserver_client.cert_pem, apiserver_client.key_pem)
    code, body = joined.call("/pods", cert=pair)
    assert code == 200 and '"PodList"' in body
    assert joined.call("/metrics", cert=pair) == (
        403, "Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, "
             "subresource(s)=[metrics])\n")
    # /pods asks nodes/pods first, then (denied) falls back to nodes/proxy.
    assert _sars(server, "kube-apiserver-kubelet-client") == [
        ("pods", NODE, False), ("proxy", NODE, True), ("metrics", NODE, False)]


def _sars(server: EmulatedAPIServer, user: str) -> list[tuple[str, str, bool]]:
    """The SubjectAccessReviews asked for ``user``: subresource, name, allowed (each verb
    get)."""
    out = []
    for review in server.reviews_of("SubjectAccessReview"):
        spec = review["spec"]
        if spec["user"] == user:
            assert spec["resourceAttributes"]["verb"] == "get"
            out.append((spec["resourceAttributes"]["subresource"],
                        spec["resourceAttributes"]["name"], review["status"]["allowed"]))
    return out


def test_fine_grained_subresources_and_the_proxy_fallback_emulated_apiserver(
        joined: Joined, containerd: EmbeddedContainerd) -> None:
    """Upstream's KubeletFineGrainedAuthz: nodes/pods opens /pods and nothing that needs
    nodes/proxy or nodes/stats; nodes/proxy still opens /pods, through the fallback."""
    server = joined.server
    rules = server.sar_policy
    assert isinstance(rules, Rules)
    server.add_token("pods-token", "pod-lister")
    rules.allow("pod-lister", verbs=("get",), subresources=("pods",), name=NODE)
    server.add_token("proxy-token", "old-monitor")
    rules.allow("old-monitor", verbs=("get",), subresources=("proxy",), name=NODE)
    server.add_token("configz-token", "config-reader")
    rules.allow("config-reader", verbs=("get",), subresources=("configz",), name=NODE)

    code, body = joined.call("/pods", token="pods-token")
    assert code == 200 and '"PodList"' in body
    assert joined.call("/exec/default/web/app?command=id&output=1", token="pods-token") == (
        403, "Forbidden (user=pod-lister, verb=get, resource=nodes, "
             "subresource(s)=[proxy])\n")
    assert joined.call("/stats/summary", token="pods-token") == (
        403, "Forbidden (user=pod-lister, verb=get, resource=nodes, "
             "subresource(s)=[stats])\n")
    assert joined.call("/configz", token="pods-token") == (
        403, "Forbidden (user=pod-lister, verb=get, resource=nodes, "
             "subresource(s)=[configz proxy])\n")
    # /configz's fallback found the denied nodes/proxy of /exec cached (30 s): not asked.
    assert _sars(server, "pod-lister") == [
        ("pods", NODE, True), ("proxy", NODE, False), ("stats", NODE, False),
        ("configz", NODE, False)]

    code, body = joined.call("/pods", token="proxy-token")
    assert code == 200 and '"PodList"' in body
    assert _sars(server, "old-monitor") == [("pods", NODE, False), ("proxy", NODE, True)]

    code, body = joined.call("/configz", token="configz-token")
    assert code == 200
    config = json.loads(body)["kubeletconfig"]
    assert (config["kind"], config["apiVersion"]) == (
        "KubeletConfiguration", "kubelet.config.k8s.io/v1beta1")
    # The daemon's effective settings: its cluster-mode security defaults, the runtime it
    # was given, the serving pair it made.
    assert config["authentication"]["anonymous"] == {"enabled": False}
    assert config["authentication"]["webhook"]["enabled"] is True
    assert config["authentication"]["x509"] == {
        "clientCAFile": str(joined.workdir / "ca.crt")}
    assert config["authorization"]["mode"] == "Webhook"
    assert config["port"] == joined.daemon.port
    assert config["readOnlyPort"] == joined.daemon.read_only_port
    assert config["registerNode"] is True
    assert config["containerRuntimeEndpoint"] == containerd.endpoint
    assert config["tlsCertFile"] == str(joined.workdir / "root" / "pki" / "kubelet.crt")
    assert config["staticPodPath"] == str(joined.workdir / "manifests")
    assert _sars(server, "config-reader") == [("configz", NODE, True)]
