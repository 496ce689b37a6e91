"""Plain HTTP sent to the HTTPS port is answered as Go's net/http server answers it.

Go writes ``HTTP/1.0 400 Bad Request`` and "Client sent an HTTP request to an HTTPS
server." on the raw connection when a handshake's first record header is one of five plain
request starts (tlsRecordHeaderLooksLikeHTTP), then closes; any other bytes just fail the
handshake. The answer must reach the client whole (no reset before it is read), the port
must serve TLS as before, and the project's clients, given ``--server http://...`` for that
port, say it is HTTPS and name the https URL to use.
"""

from __future__ import annotations

import http.client
import http.server
import io
import socket
import ssl
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.http.server import DISABLED, MAIN, KubeletHTTPServer
from actors.app.http.tls import (
    PLAIN_HTTP_ANSWER,
    TLSSettings,
    looks_like_plain_http,
    server_context,
    serving_pair,
)
from actors.app.tools import get_cli
from actors.app.tools.remote import logs_cli, portforward, stream_cli
from actors.app.tools.remote.server import ServerOptions
from tests.unit.app.test_http_server import LOG, FakeView

ANY_PORT = -1


@pytest.fixture
def https(tmp_path: Path) -> Iterator[tuple[int, str]]:
    """A kubelet HTTP server whose main port is HTTPS: its port and certificate file."""
    (tmp_path / "1.log").write_bytes(LOG)
    settings = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name="node")
    cert, key = serving_pair(settings)
    server = KubeletHTTPServer(FakeView(tmp_path), port=ANY_PORT, read_only_port=DISABLED,
                               healthz_port=DISABLED,
                               tls=(server_context(settings, cert, key), cert, key))
    server.start()
    try:
        yield server.bound_ports[MAIN], cert
    finally:
        server.stop()


def _raw(port: int, sent: bytes) -> bytes:
    """Everything the server writes back to ``sent`` until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(sent)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


@pytest.mark.parametrize(("start", "answered"), [
    (b"GET /", True), (b"HEAD ", True), (b"POST ", True), (b"PUT /", True), (b"OPTIO", True),
    (b"DELETE /", False), (b"PATCH /", False), (b"GET  /", False), (b"\x16\x03\x01", False),
    (b"GET", False),  # too short to tell: Go waits for a whole record header
])
def test_go_answers_five_request_starts(start: bytes, answered: bool) -> None:
    assert looks_like_plain_http(start) is answered


@pytest.mark.parametrize("request_head", [
    b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /exec/default/web/main?command=id HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
])
def test_plain_http_to_the_https_port_gets_gos_400(https: tuple[int, str],
                                                   request_head: bytes) -> None:
    assert _raw(https[0], request_head) == PLAIN_HTTP_ANSWER


def test_the_answer_is_read_by_an_http_client(https: tuple[int, str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", https[0], timeout=10)
    try:
        conn.request("GET", "/pods")
        resp = conn.getresponse()
        assert (resp.status, resp.version) == (400, 10)
        assert resp.read() == b"Client sent an HTTP request to an HTTPS server.\n"
    finally:
        conn.close()


def test_a_request_start_sent_in_pieces_is_still_answered(https: tuple[int, str]) -> None:
    with socket.create_connection(("127.0.0.1", https[0]), timeout=10) as sock:
        sock.sendall(b"GE")
        sock.sendall(b"T /healthz HTTP/1.1\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received == PLAIN_HTTP_ANSWER


def test_other_bytes_fail_the_handshake_unanswered(https: tuple[int, str]) -> None:
    try:
        received = _raw(https[0], b"DELETE /pods HTTP/1.1\r\n\r\n")
    except ConnectionResetError:
        received = b""  # the failed handshake's close, the request unread
    assert not received.startswith(b"HTTP/")


def test_tls_is_served_as_before(https: tuple[int, str]) -> None:
    port, cert = https
    context = ssl.create_default_context(cafile=cert)
    context.check_hostname = False
    for _ in range(2):  # and again after a plain request was answered
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=context,
                                    timeout=10) as resp:
            assert resp.read() == b"ok"
        assert _raw(port, b"GET /healthz HTTP/1.1\r\n\r\n") == PLAIN_HTTP_ANSWER


# --- the clients ----------------------------------------------------------------------


def _hint(port: int) -> str:
    return (f"error: http://127.0.0.1:{port} is an HTTPS port: the server answers a TLS "
            f"handshake there. Use --server https://127.0.0.1:{port}")


def test_server_options_tell_an_https_port(https: tuple[int, str]) -> None:
    port = https[0]
    plain = ServerOptions(f"http://127.0.0.1:{port}")
    assert plain.https_hint() == _hint(port).removeprefix("error: ")
    assert ServerOptions(f"https://127.0.0.1:{port}").https_hint() is None


def test_no_hint_for_a_plain_http_port() -> None:
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    port = plain.server_address[1]
    try:
        assert ServerOptions(f"http://127.0.0.1:{port}").https_hint() is None
    finally:
        plain.shutdown()
        plain.server_close()
    assert ServerOptions(f"http://127.0.0.1:{port}").https_hint() is None  # refused


def test_logs_names_the_https_url(https: tuple[int, str],
                                  capsys: pytest.CaptureFixture[str]) -> None:
    port = https[0]
    out = io.BytesIO()
    code = logs_cli.main(["web", "--server", f"http://127.0.0.1:{port}"], out)
    assert (code, out.getvalue()) == (1, b"")
    assert capsys.readouterr().err == _hint(port) + "\n"


def test_get_pods_names_the_https_url(https: tuple[int, str],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    port = https[0]
    assert get_cli.main(["pods", "--server", f"http://127.0.0.1:{port}"]) == 1
    assert capsys.readouterr().err == _hint(port) + "\n"


def test_exec_and_attach_name_the_https_url(https: tuple[int, str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    port = https[0]
    for argv in (["exec", "web", "-c", "nginx", "--server", f"http://127.0.0.1:{port}", "--",
                  "id"],
                 ["attach", "web", "-c", "nginx", "--server", f"http://127.0.0.1:{port}"]):
        assert stream_cli.main(argv) == 1
        assert capsys.readouterr().err == _hint(port) + "\n"


def test_port_forward_names_the_https_url(https: tuple[int, str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    port = https[0]
    forwarder = portforward.PortForwarder(ServerOptions(f"http://127.0.0.1:{port}"),
                                          "default", "web", (portforward.PortPair(0, 80),),
                                          "127.0.0.1")
    forwarder.start()
    try:
        (local, _remote), = forwarder.ports
        with socket.create_connection(("127.0.0.1", local), timeout=10) as conn:
            assert conn.recv(1) == b""  # the forward fails: the connection is closed
    finally:
        forwarder.stop()
    assert _hint(port) + "\n" in capsys.readouterr().err
