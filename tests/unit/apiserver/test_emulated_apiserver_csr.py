"""CertificateSigningRequests on the emulated API server: validation in upstream's words, the
approval and status subresources, real kubectl (get csr, certificate approve|deny), the
signer's certificates and its refusals, and a watch that sees a request through to issued."""

from __future__ import annotations

import base64
import datetime
import ipaddress
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.apiserver import EmulatedAPIServer
from tests.apiserver.certs import csr_pem
from tests.apiserver.client import RawClient
from tests.apiserver.csrcontrollers import NODE_MESSAGE
from tests.apiserver.kubectl import Kubectl
from tests.helpers import wait_for

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
CLIENT_USAGES = ["digital signature", "client auth"]
SERVING_USAGES = ["digital signature", "key encipherment", "server auth"]


def body(name: str, request: bytes, signer: str = "kubernetes.io/kube-apiserver-client-kubelet",
         usages: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": base64.b64encode(request).decode(), "signerName": signer,
                     "usages": CLIENT_USAGES if usages is None else usages, **spec}}


def node_request(node: str = "n1", **kwargs: Any) -> bytes:
    return csr_pem(f"system:node:{node}", ("system:nodes",), **kwargs).cert_pem


@pytest.fixture
def manual(server: EmulatedAPIServer) -> Iterator[EmulatedAPIServer]:
    """The server with auto-approval off: approvals come from the test."""
    server.csr_auto_approve = False
    yield server


def issued(client: RawClient, name: str) -> x509.Certificate:
    def cert() -> bytes:
        status = client.get(f"{CSRS}/{name}").body.get("status") or {}
        return base64.b64decode(status["certificate"]) if status.get("certificate") else b""
    return x509.load_pem_x509_certificate(wait_for(
        cert, 10, f"{name} issued (signer errors: {client.server.csr_controllers.failures})"))


def causes(response: Any) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in response.body["details"]["causes"]]


def test_csr_create_records_the_requester_not_the_body_on_emulated_apiserver(
        manual: EmulatedAPIServer) -> None:
    node = RawClient(manual, cert=manual.client_cert("system:node:n1", ("system:nodes",)))
    created = node.post(CSRS, body("node-csr-AbC_1", node_request(), username="mallory",
                                   groups=["system:masters"]))
    node.close()
    assert created.status == 201, created.body
    spec = created.body["spec"]
    assert spec["username"] == "system:node:n1"
    assert spec["groups"] == ["system:nodes", "system:authenticated"]
    assert created.body["status"] == {}
    assert created.body["metadata"]["name"] == "node-csr-AbC_1"  # any name goes, as upstream


def test_csr_validation_speaks_upstreams_words_on_emulated_apiserver(
        manual: EmulatedAPIServer, client: RawClient) -> None:
    bad_pem = b"not a csr"
    answer = client.post(CSRS, body("a", bad_pem))
    assert answer.status == 422
    assert answer.body["reason"] == "Invalid"
    assert causes(answer) == [("spec.request", "Invalid value: []byte{0x6e, 0x6f, 0x74, 0x20, "
                               "0x61, 0x20, 0x63, 0x73, 0x72}: PEM block type must be "
                               "CERTIFICATE REQUEST")]
    assert answer.body["message"].startswith(
        'CertificateSigningRequest.certificates.k8s.io "a" is invalid: spec.request: ')

    good = node_request()
    checks = [
        (body("b", good, signer=""), [("spec.signerName", "Required value")]),
        (body("c", good, signer="example"),
         [("spec.signerName", "Invalid value: \"example\": must be a fully qualified domain "
           "and path of the form 'example.com/signer-name'")]),
        (body("d", good, signer="example/x"),
         [("spec.signerName", 'Invalid value: "example": should be a domain with at least two '
           "segments separated by dots")]),
        (body("e", good, usages=[]), [("spec.usages", "Required value")]),
        (body("f", good, usages=["client auth", "client auth"]),
         [("spec.usages[1]", 'Duplicate value: "client auth"')]),
        (body("g", good, expirationSeconds=599),
         [("spec.expirationSeconds", "Invalid value: 599: may not specify a duration less "
           "than 600 seconds (10 minutes)")]),
        (body("h", good, signer="kubernetes.io/legacy-unknown"),
         [("spec.signerName", 'Invalid value: "kubernetes.io/legacy-unknown": the legacy '
           "signerName is not allowed via this API version")]),
    ]
    for request, expected in checks:
        answer = client.post(CSRS, request)
        assert (answer.status, causes(answer)) == (422, expected), request["metadata"]
    unknown = causes(client.post(CSRS, body("i", good, usages=["frobnicate"])))
    assert unknown[0][0] == "spec.usages[0]"
    assert unknown[0][1].startswith('Unsupported value: "frobnicate": supported values: "any", '
                                    '"cert sign", "client auth",')

    # A request whose signature does not verify: another key signed it.
    other = x509.load_pem_x509_csr(csr_pem("system:node:n1", ("system:nodes",)).cert_pem)
    tampered = _swap_signature(good, other)
    answer = client.post(CSRS, body("j", tampered))
    assert answer.status == 422
    assert causes(answer)[0][1].endswith(": x509: ECDSA verification failure")


def _swap_signature(pem: bytes, other: x509.CertificateSigningRequest) -> bytes:
    """``pem`` with the last bytes of its signature replaced by ``other``'s (same length)."""
    req = x509.load_pem_x509_csr(pem)
    der = req.public_bytes(serialization.Encoding.DER)
    good_sig, bad_sig = req.signature, other.signature
    size = min(len(good_sig), len(bad_sig)) // 2
    swapped = der.replace(good_sig[-size:], bad_sig[-size:])
    assert swapped != der
    return (b"-----BEGIN CERTIFICATE REQUEST-----\n" + base64.encodebytes(swapped)
            + b"-----END CERTIFICATE REQUEST-----\n")


def test_kubectl_gets_approves_and_denies_csrs_on_emulated_apiserver(
        manual: EmulatedAPIServer, client: RawClient, kubectl: Kubectl) -> None:
    serving = node_request(dns_names=("n1.example",), ips=("127.0.0.1",))
    assert client.post(CSRS, body("serving", serving, "kubernetes.io/kubelet-serving",
                                  SERVING_USAGES, expirationSeconds=3600)).status == 201
    assert client.post(CSRS, body("other", node_request("n2"))).status == 201
    lines = kubectl.run("get", "csr").stdout.splitlines()
    assert lines[0].split() == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION",
                                "CONDITION"]
    rows = {line.split()[0]: line.split()[2:] for line in lines[1:]}
    assert rows == {
        "other": ["kubernetes.io/kube-apiserver-client-kubelet", "kubernetes-admin", "<none>",
                  "Pending"],
        "serving": ["kubernetes.io/kubelet-serving", "kubernetes-admin", "60m", "Pending"]}

    out = kubectl.run("certificate", "approve", "serving").stdout.strip()
    assert out == "certificatesigningrequest.certificates.k8s.io/serving approved"
    issued(client, "serving")
    approved = kubectl.json("get", "csr", "serving")["status"]["conditions"]
    assert [(c["type"], c["reason"]) for c in approved] == [("Approved", "KubectlApprove")]
    assert approved[0]["lastUpdateTime"] and approved[0]["lastTransitionTime"]
    row = kubectl.run("get", "csr", "serving").stdout.splitlines()[1].split()
    assert row[-1] == "Approved,Issued"

    out = kubectl.run("certificate", "deny", "other").stdout.strip()
    assert out == "certificatesigningrequest.certificates.k8s.io/other denied"
    assert kubectl.run("get", "csr", "other").stdout.splitlines()[1].split()[-1] == "Denied"
    refused = kubectl.run("certificate", "approve", "other", check=False)
    assert refused.returncode != 0
    assert 'certificate signing request "other" is already Denied' in refused.stderr
    # kubectl refuses that itself, even with --force; the server's own rule, over the wire:
    denied = client.get(f"{CSRS}/other/approval").body
    denied["status"]["conditions"].append({"type": "Approved", "status": "True"})
    both = client.put(f"{CSRS}/other/approval", denied)
    assert (both.status, causes(both)) == (422, [(
        "status.conditions[1].type",
        'Invalid value: "Approved": Approved and Denied conditions are mutually exclusive')])
    assert "certificate" not in (client.get(f"{CSRS}/other").body.get("status") or {})

    assert kubectl.run("delete", "csr", "other").stdout.strip() == \
        'certificatesigningrequest.certificates.k8s.io "other" deleted'
    assert client.get(f"{CSRS}/other").status == 404


def test_csr_subresources_keep_their_own_fields_on_emulated_apiserver(
        manual: EmulatedAPIServer, client: RawClient) -> None:
    # A signer kube-controller-manager does not run: nothing writes the request but the test.
    created = client.post(CSRS, body("x", node_request(), "example.com/custom")).body
    # The main resource never takes status; /status never takes approval.
    sneaky = dict(created, status={"conditions": [{"type": "Approved", "status": "True"}]})
    assert client.put(f"{CSRS}/x", sneaky).body.get("status") == {}
    answer = client.put(f"{CSRS}/x/status", sneaky)
    assert answer.status == 200
    assert answer.body["status"] == {}
    approval = client.get(f"{CSRS}/x/approval").body
    approval["status"] = {"conditions": [{"type": "Approved", "status": "Unknown"}]}
    bad = client.put(f"{CSRS}/x/approval", approval)
    assert causes(bad) == [("status.conditions[0].status",
                            'Unsupported value: "Unknown": supported values: "True"')]
    approval["status"] = {"conditions": [{"type": "Approved", "status": "True"}],
                          "certificate": base64.b64encode(b"junk").decode()}
    answer = client.put(f"{CSRS}/x/approval", approval)
    assert answer.status == 200
    assert "certificate" not in answer.body["status"]  # not approval's to set
    # Once there, an approval stays.
    gone = client.put(f"{CSRS}/x/approval", dict(answer.body, status={}))
    assert causes(gone) == [("status.conditions", 'Forbidden: updates may not remove a '
                             'condition of type "Approved"')]
    junk = dict(answer.body, status=dict(answer.body["status"],
                                         certificate=base64.b64encode(b"junk").decode()))
    assert causes(client.put(f"{CSRS}/x/status", junk)) == [
        ("status.certificate", 'Invalid value: "<certificate data>": must contain at least '
         "one CERTIFICATE PEM block")]


def fixed_clock(server: EmulatedAPIServer) -> int:
    """Stop the signer's clock (an hour into the CA's life): the certificates' dates are
    exact."""
    now = int(server.ca.cert.not_valid_before_utc.timestamp()) + 3600
    server.csr_controllers.clock = lambda: float(now)
    return now


def _approve_and_read(server: EmulatedAPIServer, client: RawClient, name: str,
                      request: dict[str, Any]) -> x509.Certificate:
    assert client.post(CSRS, request).status == 201
    server.approve_csr(name)
    return issued(client, name)


def test_signer_issues_kubelet_serving_certificates_on_emulated_apiserver(
        manual: EmulatedAPIServer, client: RawClient) -> None:
    now = fixed_clock(manual)
    manual.cluster_signing_duration = 120
    request = node_request(dns_names=("n1.example", "n1"), ips=("10.0.0.5", "::1"))
    cert = _approve_and_read(manual, client, "serving", body(
        "serving", request, "kubernetes.io/kubelet-serving", SERVING_USAGES,
        expirationSeconds=3600))
    assert cert.subject == x509.load_pem_x509_csr(request).subject
    assert cert.issuer == manual.ca.cert.subject
    cert.verify_directly_issued_by(manual.ca.cert)
    assert cert.public_key() == x509.load_pem_x509_csr(request).public_key()
    # min(3600 s requested, 120 s configured): short, so only notBefore is backdated.
    assert cert.not_valid_before_utc.timestamp() == now - 300
    assert cert.not_valid_after_utc.timestamp() == now + 120
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["n1.example", "n1"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.0.0.5"),
                                                        ipaddress.ip_address("::1")]
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical
    assert (usage.value.digital_signature, usage.value.key_encipherment,
            usage.value.key_cert_sign) == (True, True, False)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


def test_signer_validity_follows_the_request_and_the_ca_on_emulated_apiserver(
        manual: EmulatedAPIServer, client: RawClient) -> None:
    now = fixed_clock(manual)
    # Asked for 15 minutes of a year: 15 minutes (short: notAfter not backdated).
    cert = _approve_and_read(manual, client, "short", body(
        "short", node_request(), expirationSeconds=900))
    assert (cert.not_valid_before_utc.timestamp(), cert.not_valid_after_utc.timestamp()) == \
        (now - 300, now + 900)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == \
        "system:nodes"
    # Ten hours (long: notAfter backdated too), with the CA's own end close: cut there.
    late = manual.ca.cert.not_valid_after_utc.timestamp() - 20 * 3600
    manual.csr_controllers.clock = lambda: late
    cert = _approve_and_read(manual, client, "long", body(
        "long", node_request(), expirationSeconds=10 * 3600))
    assert cert.not_valid_after_utc.timestamp() == late + 10 * 3600 - 300
    cert = _approve_and_read(manual, client, "capped", body("capped", node_request()))
    assert cert.not_valid_after_utc == manual.ca.cert.not_valid_after_utc


@pytest.mark.parametrize(("signer", "usages", "request_args", "message"), [
    ("kubernetes.io/kube-apiserver-client-kubelet", CLIENT_USAGES,
     {"common_name": "system:node:n1", "organizations": ("system:masters",)},
     "subject organization is not system:nodes"),
    ("kubernetes.io/kube-apiserver-client-kubelet", CLIENT_USAGES,
     {"common_name": "system:node:n1", "organizations": ("system:nodes",),
      "ips": ("10.0.0.1",)}, "IP subjectAltNames are not allowed"),
    ("kubernetes.io/kube-apiserver-client-kubelet", ["client auth"],
     {"common_name": "system:node:n1", "organizations": ("system:nodes",)},
     "usages did not match [client auth digital signature key encipherment]"),
    ("kubernetes.io/kubelet-serving", SERVING_USAGES,
     {"common_name": "system:node:n1", "organizations": ("system:nodes",),
      "dns_names": ("n1",), "emails": ("n1@example.com",)},
     "Email subjectAltNames are not allowed"),
    ("kubernetes.io/kubelet-serving", SERVING_USAGES,
     {"common_name": "system:node:n1", "organizations": ("system:nodes",)},
     "DNS or IP subjectAltName is required"),
    ("kubernetes.io/kubelet-serving", SERVING_USAGES,
     {"common_name": "n1", "organizations": ("system:nodes",), "dns_names": ("n1",)},
     "subject common name does not begin with system:node:"),
    ("kubernetes.io/kube-apiserver-client", ["client auth", "server auth"],
     {"common_name": "jane"}, "invalid usage for client certificate: server auth"),
])
def test_signer_fails_what_its_checks_refuse_on_emulated_apiserver(
        manual: EmulatedAPIServer, client: RawClient, signer: str, usages: list[str],
        request_args: dict[str, Any], message: str) -> None:
    cn = request_args.pop("common_name")
    orgs = request_args.pop("organizations", ())
    request = csr_pem(cn, orgs, **request_args).cert_pem
    assert client.post(CSRS, body("bad", request, signer, usages)).status == 201
    manual.approve_csr("bad")

    def failed() -> dict[str, Any]:
        conditions = client.get(f"{CSRS}/bad").body["status"].get("conditions") or []
        return next((c for c in conditions if c["type"] == "Failed"), {})

    condition = wait_for(failed, 10, "a Failed condition")
    assert (condition["reason"], condition["message"]) == ("SignerValidationFailure", message)
    assert "certificate" not in client.get(f"{CSRS}/bad").body["status"]


def test_watch_of_one_csr_sees_it_approved_then_issued_on_emulated_apiserver(
        server: EmulatedAPIServer) -> None:
    token = server.create_bootstrap_token()
    joiner = RawClient(server, token=token)
    created = joiner.post(CSRS, body("node-csr-w", node_request())).body
    watch = joiner.watch(CSRS, fieldSelector="metadata.name=node-csr-w",
                         resourceVersion=created["metadata"]["resourceVersion"])
    try:
        assert watch.status == 200
        seen: list[tuple[str, list[str], bool]] = []
        for event in watch:
            status = event["object"].get("status") or {}
            seen.append((event["type"], [c["type"] for c in status.get("conditions") or []],
                         bool(status.get("certificate"))))
            if status.get("certificate"):
                break
        assert seen == [("MODIFIED", ["Approved"], False), ("MODIFIED", ["Approved"], True)]
        approval = watch.events[0]["object"]["status"]["conditions"][0]
        assert (approval["reason"], approval["message"]) == ("AutoApproved", NODE_MESSAGE)
    finally:
        watch.close()
        joiner.close()
    pem = base64.b64decode(watch.events[-1]["object"]["status"]["certificate"])
    cert = x509.load_pem_x509_certificate(pem)
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    assert cert.not_valid_after_utc > datetime.datetime.now(datetime.UTC)


def test_csr_admission_and_repeated_approval_on_emulated_apiserver(
        manual: EmulatedAPIServer, client: RawClient) -> None:
    masters = csr_pem("eve", ("system:masters",)).cert_pem
    answer = client.post(CSRS, body("root", masters, "kubernetes.io/kube-apiserver-client"))
    assert (answer.status, answer.body["message"]) == (403, (
        'certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of '
        "kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"))
    jane = csr_pem("jane", ("devs",)).cert_pem
    assert client.post(CSRS, body("jane", jane, "kubernetes.io/kube-apiserver-client")).status \
        == 201
    manual.approve_csr("jane")
    # Approving again changes nothing (as kubectl certificate approve on an approved request;
    # a second Approved condition would be refused as a duplicate).
    again = manual.approve_csr("jane")
    assert [c["type"] for c in again["status"]["conditions"]] == ["Approved"]
    cert = issued(client, "jane")
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "jane"
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == \
        [ExtendedKeyUsageOID.CLIENT_AUTH]
