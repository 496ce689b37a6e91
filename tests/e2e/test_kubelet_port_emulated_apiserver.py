"""The daemon's main port in cluster mode, end to end: joined with --kubeconfig to the
emulated API server, with its default security (anonymous off, TokenReview, Webhook)
and the cluster CA as --client-ca-file, it answers only whom the API server vouches for.
"""

from __future__ import annotations

import http.client
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
             "subresource=metrics)")
    sars = [(r["spec"]["user"], r["spec"]["resourceAttributes"]["subresource"],
             r["spec"]["resourceAttributes"]["name"], r["status"]["allowed"])
            for r in server.reviews_of("SubjectAccessReview")]
    assert sars == [("kube-apiserver-kubelet-client", "proxy", NODE, True),
                    ("kube-apiserver-kubelet-client", "metrics", NODE, False)]
