"""TLS bootstrap on the emulated API server: bootstrap tokens (made by the test control or by
kubectl as a Secret), what kubeadm's RBAC lets their users do, the csrapproving controller's
rules, and the signer's client certificates authenticating until they expire."""

from __future__ import annotations

import base64
import datetime
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from cryptography import x509

from tests.apiserver import EmulatedAPIServer
from tests.apiserver.bootstrap import KUBEADM_NODE_TOKEN_GROUP
from tests.apiserver.certs import KeyPair, csr_pem
from tests.apiserver.client import RawClient
from tests.apiserver.control import ControlServer
from tests.apiserver.csrcontrollers import NODE_MESSAGE, SELF_MESSAGE
from tests.apiserver.kubectl import Kubectl
from tests.helpers import wait_for

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
CLIENT_USAGES = ["digital signature", "key encipherment", "client auth"]


def request_body(name: str, request: bytes, signer: str = CLIENT,
                 usages: list[str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": base64.b64encode(request).decode(), "signerName": signer,
                     "usages": usages or CLIENT_USAGES}}


def node_csr(node: str, **kwargs: Any) -> KeyPair:
    return csr_pem(f"system:node:{node}", ("system:nodes",), **kwargs)


def conditions(client: RawClient, name: str) -> list[tuple[str, str, str]]:
    status = client.get(f"{CSRS}/{name}").body.get("status") or {}
    return [(c["type"], c.get("reason", ""), c.get("message", ""))
            for c in status.get("conditions") or []]


def issued_pem(client: RawClient, name: str) -> bytes:
    def cert() -> bytes:
        status = client.get(f"{CSRS}/{name}").body.get("status") or {}
        return base64.b64decode(status.get("certificate") or "")
    return wait_for(cert, 10, f"{name} issued")


def test_bootstrap_token_user_may_only_request_certificates_on_emulated_apiserver(
        server: EmulatedAPIServer, client: RawClient) -> None:
    token = server.create_bootstrap_token()
    token_id = token.split(".")[0]
    review = client.post("/apis/authentication.k8s.io/v1/tokenreviews", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token}}).body["status"]
    assert review["authenticated"] is True
    assert review["user"] == {"username": f"system:bootstrap:{token_id}", "groups": [
        "system:bootstrappers", KUBEADM_NODE_TOKEN_GROUP, "system:authenticated"]}

    joiner = RawClient(server, token=token)
    try:
        assert joiner.get(CSRS).status == 200
        created = joiner.post(CSRS, request_body("node-csr-1", node_csr("n1").cert_pem))
        assert created.status == 201
        assert created.body["spec"]["username"] == f"system:bootstrap:{token_id}"
        pods = joiner.get("/api/v1/namespaces/default/pods")
        assert pods.status == 403
        assert pods.body["message"] == (
            f'pods is forbidden: User "system:bootstrap:{token_id}" cannot list resource '
            '"pods" in API group "" in the namespace "default"')
        assert joiner.get("/api/v1/nodes").status == 403
        assert joiner.delete(f"{CSRS}/node-csr-1").status == 403
    finally:
        joiner.close()


def test_bootstrap_tokens_refused_as_upstream_on_emulated_apiserver(
        server: EmulatedAPIServer) -> None:
    good = server.create_bootstrap_token()
    refused = [
        server.create_bootstrap_token(ttl=-60),  # expired a minute ago
        good.split(".")[0] + "." + "0" * 16,  # the right id, another secret
        server.create_bootstrap_token(usage_authentication=False),
        server.create_bootstrap_token(extra_groups=("system:nodes",)),  # not a bootstrap group
        "ABCDEF.0123456789abcdef",  # not of the token form
    ]
    for token in refused:
        joiner = RawClient(server, token=token)
        assert joiner.get(CSRS).status == 401, token
        joiner.close()
    # A token without kubeadm's group authenticates, but kubeadm bound nothing to it.
    bare = RawClient(server, token=server.create_bootstrap_token(extra_groups=()))
    assert bare.get(CSRS).status == 403
    bare.close()
    joiner = RawClient(server, token=good)
    assert joiner.get(CSRS).status == 200
    joiner.close()


def test_bootstrap_token_secret_made_with_kubectl_on_emulated_apiserver(
        server: EmulatedAPIServer, kubectl: Kubectl, tmp_path: Path) -> None:
    expiration = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    kubectl.run("-n", "kube-system", "create", "secret", "generic", "bootstrap-token-07401b",
                "--type", "bootstrap.kubernetes.io/token",
                "--from-literal", "token-id=07401b",
                "--from-literal", "token-secret=f395accd246ae52d",
                "--from-literal", "usage-bootstrap-authentication=true",
                "--from-literal", f"auth-extra-groups={KUBEADM_NODE_TOKEN_GROUP}",
                "--from-literal", f"expiration={expiration}")
    joiner = Kubectl(server.write_bootstrap_kubeconfig(tmp_path / "bootstrap.kubeconfig",
                                                       "07401b.f395accd246ae52d"))
    manifest = tmp_path / "csr.json"
    manifest.write_text(json.dumps(request_body("node-csr-k", node_csr("n1").cert_pem)))
    assert joiner.run("create", "-f", str(manifest)).stdout.strip() == \
        "certificatesigningrequest.certificates.k8s.io/node-csr-k created"
    csr = joiner.json("get", "csr", "node-csr-k")
    assert csr["spec"]["username"] == "system:bootstrap:07401b"
    assert "Forbidden" in joiner.run("get", "pods", check=False).stderr
    kubectl.run("-n", "kube-system", "delete", "secret", "bootstrap-token-07401b")
    gone = joiner.run("get", "csr", check=False)
    assert gone.returncode != 0
    assert "Unauthorized" in gone.stderr or "must be logged in" in gone.stderr


def test_auto_approval_follows_kubeadms_rules_on_emulated_apiserver(
        server: EmulatedAPIServer, client: RawClient) -> None:
    node = RawClient(server, cert=server.client_cert("system:node:n1", ("system:nodes",)))
    joiner = RawClient(server, token=server.create_bootstrap_token())
    try:
        # A node renewing its own client certificate: selfnodeclient.
        assert node.post(CSRS, request_body("renew", node_csr("n1").cert_pem)).status == 201
        # A node asking for another node's: system:nodes may not create nodeclient.
        assert node.post(CSRS, request_body("steal", node_csr("n2").cert_pem)).status == 201
        # A serving certificate: never auto-approved.
        assert node.post(CSRS, request_body(
            "serving", node_csr("n1", dns_names=("n1",)).cert_pem, "kubernetes.io/kubelet-serving",
            ["digital signature", "key encipherment", "server auth"])).status == 201
        # Not a kubelet client request (O is not system:nodes): not recognized.
        assert joiner.post(CSRS, request_body(
            "odd", csr_pem("system:node:n3", ("other",)).cert_pem)).status == 201
        # A joining node with a bootstrap token: nodeclient. The controller takes requests in
        # order, so once this one is approved the ones above were decided.
        assert joiner.post(CSRS, request_body("join", node_csr("n3").cert_pem)).status == 201
        wait_for(lambda: conditions(client, "join"), 10, "join approved")
        assert conditions(client, "join") == [("Approved", "AutoApproved", NODE_MESSAGE)]
        assert conditions(client, "renew") == [("Approved", "AutoApproved", SELF_MESSAGE)]
        assert conditions(client, "steal") == []
        assert conditions(client, "serving") == []
        assert conditions(client, "odd") == []
        assert issued_pem(client, "join")
        assert issued_pem(client, "renew")

        # Switched off: nothing is approved (a serving request approved by the test and
        # issued by the controller thread marks the point the request before it was seen).
        server.csr_auto_approve = False
        assert joiner.post(CSRS, request_body("later", node_csr("n4").cert_pem)).status == 201
        server.approve_csr("serving")
        assert issued_pem(client, "serving")
        assert conditions(client, "later") == []
        # Switched on again: the pending kubelet client request is approved.
        server.csr_auto_approve = True
        wait_for(lambda: conditions(client, "later"), 10, "later approved")
        assert conditions(client, "later")[0][:2] == ("Approved", "AutoApproved")
        assert conditions(client, "steal") == []
    finally:
        node.close()
        joiner.close()


def _signed_pair(server: EmulatedAPIServer, client: RawClient, name: str) -> KeyPair:
    key = node_csr("n1")
    assert client.post(CSRS, request_body(name, key.cert_pem)).status == 201
    return KeyPair(issued_pem(client, name), key.key_pem)


def test_signed_client_certificate_authenticates_until_it_expires_on_emulated_apiserver(
        server: EmulatedAPIServer) -> None:
    server.cluster_signing_duration = 120
    joiner = RawClient(server, token=server.create_bootstrap_token())
    pair = _signed_pair(server, joiner, "node-csr-short")
    joiner.close()
    node = RawClient(server, cert=pair)
    conn = node._connect(10)  # one kept-alive connection: checked on every request
    try:
        def get() -> int:
            conn.request("GET", CSRS, headers={"Accept": "application/json"})
            resp = conn.getresponse()
            resp.read()
            return resp.status

        assert get() == 200
        renewal = node.post(CSRS, request_body("node-csr-renew", node_csr("n1").cert_pem))
        assert renewal.body["spec"]["username"] == "system:node:n1"
        real = server.authenticator.clock
        server.authenticator.clock = lambda: real() + 121  # past its notAfter (now + 120 s)
        assert get() == 401
        assert node.get(CSRS).status == 401  # a new connection too: not a handshake failure
        server.authenticator.clock = lambda: real() - 301  # before its (backdated) notBefore
        assert get() == 401
        server.authenticator.clock = real
        assert get() == 200
    finally:
        conn.close()
        node.close()


def _control(port: int, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                      data=json.dumps(body).encode() if body is not None
                                      else None)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def test_tls_bootstrap_controls_over_the_control_endpoint_on_emulated_apiserver(
        server: EmulatedAPIServer, client: RawClient) -> None:
    control = ControlServer(server).start()
    try:
        port = control.port
        assert _control(port, "GET", "/ca") == {"ca.crt": server.ca.cert_pem.decode()}
        assert _control(port, "POST", "/csr-signing", {"auto_approve": False,
                                                        "duration": 120}) == \
            {"auto_approve": False, "duration": 120.0}
        assert (server.csr_auto_approve, server.cluster_signing_duration) == (False, 120.0)
        token = _control(port, "POST", "/bootstrap-tokens", {"ttl": 600})["token"]
        joiner = RawClient(server, token=token)
        assert joiner.post(CSRS, request_body("join", node_csr("n1").cert_pem)).status == 201
        joiner.close()
        approved = _control(port, "POST", "/csrs/join/approve", {"message": "by the drill"})
        assert approved["status"]["conditions"][0]["type"] == "Approved"
        assert conditions(client, "join") == [("Approved", "TestApprove", "by the drill")]
        pem = issued_pem(client, "join")
        cert = x509.load_pem_x509_certificate(pem)
        assert cert.not_valid_after_utc - cert.not_valid_before_utc == \
            datetime.timedelta(seconds=120 + 300)
        assert _control(port, "GET", "/csr-signing") == {"auto_approve": False,
                                                         "duration": 120.0}
    finally:
        control.stop()
