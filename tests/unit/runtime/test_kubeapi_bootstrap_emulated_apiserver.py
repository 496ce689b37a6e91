"""The kubelet's CSR client against the emulated API server (its CSR API, csrapproving and
csrsigning controllers, bootstrap tokens): the TLS bootstrap with only a token, client
certificate rotation with short certificates through the kubelet's own transport, and a
serving certificate an admin approves."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import errors
from runtime.clock import RealClock
from runtime.kubeapi.bootstrap import load_client_cert
from runtime.kubeapi.certificate_manager import CertificateManager
from runtime.kubeapi.certificate_store import FileStore
from runtime.kubeapi.client import NODES, KubeClient
from runtime.kubeapi.csr import (
    CLIENT_KUBELET_SIGNER,
    CSRS,
    KUBELET_SERVING_SIGNER,
    client_usages,
    node_template,
    serving_template,
    serving_usages,
)
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.transport import Transport
from tests.apiserver import EmulatedAPIServer
from tests.helpers import wait_for

NODE = "boot-1"


@pytest.fixture
def server() -> Iterator[EmulatedAPIServer]:
    with EmulatedAPIServer(csr_auto_approve=True) as srv:
        yield srv


def _bootstrap(server: EmulatedAPIServer, tmp_path: Path, wait: float = 30.0) -> bool:
    bootstrap = server.write_bootstrap_kubeconfig(tmp_path / "bootstrap.conf")
    return load_client_cert(str(tmp_path / "kubelet.conf"), str(bootstrap),
                            str(tmp_path / "pki"), NODE, RealClock(), wait=wait)


def test_a_node_bootstraps_with_only_a_token_on_emulated_apiserver(
        server: EmulatedAPIServer, tmp_path: Path) -> None:
    assert _bootstrap(server, tmp_path)
    rest = load_kubeconfig(tmp_path / "kubelet.conf")
    transport = Transport(rest)
    try:
        # The node's own identity: it may create its Node (the token user may not).
        KubeClient(transport).create(NODES, {"metadata": {"name": NODE}})
    finally:
        transport.close()
    assert not _bootstrap(server, tmp_path)  # a restart reuses the certificate


def test_a_denied_bootstrap_names_the_reason_on_emulated_apiserver(
        server: EmulatedAPIServer, tmp_path: Path) -> None:
    server.csr_auto_approve = False
    done: list[BaseException | bool] = []

    def run() -> None:
        try:
            done.append(_bootstrap(server, tmp_path))
        except BaseException as err:  # handed to the test's thread
            done.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    admin = KubeClient(Transport(load_kubeconfig(server.write_kubeconfig(tmp_path / "admin"))))
    try:
        name: str = wait_for(lambda: next((str(c["metadata"]["name"])
                                           for c in admin.list(CSRS).items), ""),
                             10, "the bootstrap CSR")
        assert name.startswith("node-csr-")
        server.deny_csr(name)
        thread.join(30)
    finally:
        admin.transport.close()
    (outcome,) = done
    assert isinstance(outcome, errors.CertificateError)
    assert "certificate signing request is denied, reason:" in str(outcome)


def test_client_rotation_with_short_certificates_on_emulated_apiserver(
        server: EmulatedAPIServer, tmp_path: Path) -> None:
    server.cluster_signing_duration = 600.0
    assert _bootstrap(server, tmp_path)
    clock = RealClock()
    rest = load_kubeconfig(tmp_path / "kubelet.conf")
    manager = CertificateManager(
        store=FileStore("kubelet-client", str(tmp_path / "pki"), clock=clock),
        signer_name=CLIENT_KUBELET_SIGNER, get_template=lambda: node_template(NODE),
        get_usages=client_usages, client_for=lambda _pair: client, clock=clock,
        rng=random.Random(5))
    transport = Transport(rest, certificates=manager)
    client = KubeClient(transport)
    manager.subscribe(transport.certificate_rotated)
    try:
        first = manager.current()
        assert first is not None
        assert first.not_after - clock.now() <= 600.0  # the cluster's signing duration
        # The signer backdates NotBefore 5 minutes: the lifetime counted is the signed one.
        life = first.not_after - first.not_before
        deadline = manager.next_rotation_deadline()
        assert first.not_before + 0.7 * life <= deadline <= first.not_before + 0.9 * life
        assert manager.rotate()  # the node renews its own (auto-approved as upstream)
        second = manager.current()
        assert second is not None and second.serial != first.serial
        assert transport.closed_all == 1
        KubeClient(transport).create(NODES, {"metadata": {"name": NODE}})
    finally:
        transport.close()


def test_a_serving_certificate_needs_an_admin_on_emulated_apiserver(
        server: EmulatedAPIServer, tmp_path: Path) -> None:
    assert _bootstrap(server, tmp_path)
    clock = RealClock()
    transport = Transport(load_kubeconfig(tmp_path / "kubelet.conf"))
    client = KubeClient(transport)
    addresses = (("InternalIP", "10.0.0.7"), ("Hostname", NODE))
    manager = CertificateManager(
        store=FileStore("kubelet-server", str(tmp_path / "pki"), clock=clock),
        signer_name=KUBELET_SERVING_SIGNER,
        get_template=lambda: serving_template(NODE, addresses), get_usages=serving_usages,
        client_for=lambda _pair: client, clock=clock, wait_timeout=30.0)
    admin = KubeClient(Transport(load_kubeconfig(server.write_kubeconfig(tmp_path / "admin"))))
    approved: list[str] = []

    def approve_serving() -> bool:
        for csr in admin.list(CSRS).items:
            name = csr["metadata"]["name"]
            if csr["spec"]["signerName"] == KUBELET_SERVING_SIGNER and name not in approved:
                server.approve_csr(name)
                approved.append(name)
        return bool(approved)

    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(manager.rotate()))
    thread.start()
    try:
        wait_for(approve_serving, 10, "the serving CSR")
        thread.join(30)
    finally:
        transport.close()
        admin.transport.close()
    assert result == [True]
    pair = manager.current()
    assert pair is not None
    assert (pair.common_name, pair.dns_names, pair.ip_addresses) == (
        f"system:node:{NODE}", (NODE,), ("10.0.0.7",))
    assert (tmp_path / "pki" / "kubelet-server-current.pem").is_symlink()
