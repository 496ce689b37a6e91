"""serverTLSBootstrap on a TLS listener: no handshake before a certificate is issued (with
upstream's message), the new certificate for new connections after a rotation while an
open connection keeps working; and the certificate actor's timing on a fake clock."""

from __future__ import annotations

import random
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from cryptography import x509

from actors.app.config.tls import TLSSettings
from actors.app.http.tls import ServingCertificates
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import ManualTimers
from actors.kubelet import names
from actors.kubelet.cluster.certificates import CertificateActor
from actors.kubelet.cluster.messages import CertificateRotated
from runtime.clock import FakeClock
from runtime.kubeapi.certificate_manager import CertificateManager
from runtime.kubeapi.certificate_store import FileStore
from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.csr import KUBELET_SERVING_SIGNER, serving_template, serving_usages
from tests.helpers import wait_for
from tests.unit.runtime.csr_fakes import FakeCSRAPI, deny

NODE = "node-a"
ADDRESSES = (("InternalIP", "127.0.0.1"), ("Hostname", NODE))


def _manager(tmp_path: Path, clock: FakeClock, api: FakeCSRAPI) -> CertificateManager:
    return CertificateManager(
        store=FileStore("kubelet-server", str(tmp_path), clock=clock),
        signer_name=KUBELET_SERVING_SIGNER,
        get_template=lambda: serving_template(NODE, ADDRESSES), get_usages=serving_usages,
        client_for=lambda _pair: cast(KubeClient, api), clock=clock,
        rng=random.Random(3))


class _EchoServer:
    """A TLS server on loopback: each connection echoes lines until the client closes."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.errors: list[str] = []
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(raw,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            with self.context.wrap_socket(raw, server_side=True) as conn:
                while data := conn.recv(1024):
                    conn.sendall(data)
        except (OSError, ssl.SSLError) as err:
            self.errors.append(str(err))

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not)
        self.sock.close()
        self._accepting.join(5)
        for thread in self._threads:
            thread.join(5)


@pytest.fixture
def client_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _serial(conn: ssl.SSLSocket) -> int:
    der = conn.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[CertificateManager, ServingCertificates,
                                             _EchoServer, FakeCSRAPI]]:
    clock = FakeClock()
    api = FakeCSRAPI(clock.now)
    manager = _manager(tmp_path, clock, api)
    serving = ServingCertificates(TLSSettings(cert_dir=str(tmp_path), node_name=NODE), manager)
    server = _EchoServer(serving.listening_context)
    yield manager, serving, server, api
    server.close()


def test_no_handshake_before_a_serving_certificate_is_issued(
        served: tuple[CertificateManager, ServingCertificates, _EchoServer, FakeCSRAPI],
        client_context: ssl.SSLContext) -> None:
    _, serving, server, _ = served
    with socket.create_connection(("127.0.0.1", server.port)) as raw, \
            pytest.raises(ssl.SSLError, match="INTERNAL_ERROR"):
        client_context.wrap_socket(raw)  # by IP: no SNI, the callback still runs
    assert serving.refused == 1


def test_a_rotation_reaches_new_connections_and_spares_open_ones(
        served: tuple[CertificateManager, ServingCertificates, _EchoServer, FakeCSRAPI],
        client_context: ssl.SSLContext) -> None:
    manager, _serving, server, api = served
    assert manager.rotate()
    first = manager.current()
    assert first is not None and first.ip_addresses == ("127.0.0.1",)
    assert first.dns_names == (NODE,)
    raw = socket.create_connection(("127.0.0.1", server.port))
    with client_context.wrap_socket(raw) as open_conn:
        assert _serial(open_conn) == first.serial
        assert manager.rotate()
        second = manager.current()
        assert second is not None and second.serial != first.serial
        with socket.create_connection(("127.0.0.1", server.port)) as raw2, \
                client_context.wrap_socket(raw2) as new_conn:
            assert _serial(new_conn) == second.serial
        open_conn.sendall(b"still here\n")
        assert open_conn.recv(64) == b"still here\n"
    (request,) = {r["spec"]["signerName"] for r in api.created}
    assert request == KUBELET_SERVING_SIGNER


def test_the_actor_rotates_at_the_deadline_and_retries_with_backoff(tmp_path: Path) -> None:
    clock = FakeClock()
    api = FakeCSRAPI(clock.now, lifetime=1000.0)
    manager = _manager(tmp_path, clock, api)
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, clock)
    actor = CertificateActor(names.SERVING_CERTIFICATE, dispatch, timers, clock, manager)
    sent: list[object] = []

    def send(to: str, message: object) -> bool:
        sent.append(message)
        return True

    actor.send = send  # type: ignore[method-assign]
    try:
        actor.on_start()  # no certificate: a round at once
        assert timers.next_due() == clock.monotonic()
        actor.handle(Tick(names.TICK_CERTIFICATE_ROTATE, clock.monotonic()))
        wait_for(lambda: sent, 10, "the first round's report")
        assert sent == [CertificateRotated(True)]
        pair = manager.current()
        assert pair is not None
        actor.handle(sent.pop())
        # The next round is due at 70-90% of the new certificate's lifetime.
        due = timers.next_due()
        assert due is not None
        delay = due - clock.monotonic()
        life = pair.not_after - pair.not_before
        assert 0.7 * life - 1 <= delay + (clock.now() - pair.not_before) <= 0.9 * life + 1
        # A denied round: retried after 2 s, then 4 s.
        api.decide = deny
        for expected in (2.0, 4.0):
            actor.handle(Tick(names.TICK_CERTIFICATE_ROTATE, clock.monotonic()))
            wait_for(lambda: sent, 10, "a denied round's report")
            assert sent == [CertificateRotated(False)]
            actor.handle(sent.pop())
            due = timers.next_due()
            assert due is not None
            assert expected <= due - clock.monotonic() <= expected * 1.1
        assert manager.current() == pair  # the denied rounds left the pair in use
    finally:
        actor.on_stop()


def test_a_stopping_actor_ends_a_round_that_waits_for_approval(tmp_path: Path) -> None:
    clock = FakeClock()
    api = FakeCSRAPI(clock.now, decide=lambda _csr: None)  # nobody approves
    manager = _manager(tmp_path, clock, api)
    actor = CertificateActor(names.SERVING_CERTIFICATE, Dispatch(),
                             ManualTimers(Dispatch(), clock), clock, manager)
    sent: list[object] = []

    def send(to: str, message: object) -> bool:
        sent.append(message)
        return True

    actor.send = send  # type: ignore[method-assign]
    actor.on_start()
    actor.handle(Tick(names.TICK_CERTIFICATE_ROTATE, clock.monotonic()))
    wait_for(lambda: api.created, 10, "the pending serving CSR")
    actor.on_stop()
    wait_for(lambda: sent, 10, "the stopped round's report")
    assert sent == [CertificateRotated(False)] and manager.current() is None
