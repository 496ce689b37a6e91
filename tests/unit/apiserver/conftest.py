"""Fixtures: a fresh emulated API server per test, a raw client, kubectl for it, and a
kubelet stand-in for pods/log."""

from __future__ import annotations

import http.server
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.apiserver import EmulatedAPIServer
from tests.apiserver.client import RawClient
from tests.apiserver.kubectl import Kubectl
from tests.apiserver.resources import by_kind


@pytest.fixture
def server() -> Iterator[EmulatedAPIServer]:
    with EmulatedAPIServer(bookmark_interval=0.2) as srv:
        yield srv


@pytest.fixture
def client(server: EmulatedAPIServer) -> Iterator[RawClient]:
    raw = RawClient(server)
    yield raw
    raw.close()


@pytest.fixture
def kubectl(server: EmulatedAPIServer, tmp_path: Path) -> Kubectl:
    return Kubectl(server.write_kubeconfig(tmp_path / "kubeconfig"))


@pytest.fixture
def fake_kubelet(server: EmulatedAPIServer, tmp_path: Path) -> Iterator[list[str]]:
    """An HTTPS kubelet stand-in serving /containerLogs; yields the paths it was asked."""
    asked: list[str] = []

    class Kubelet(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            cert = self.connection.getpeercert()
            who = dict(x[0] for x in cert["subject"])["commonName"] if cert else "nobody"
            data = f"log line 1\nlog line 2 for {who}\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    pair = server.ca.issue("n1", dns_names=("localhost",), ips=("127.0.0.1",), server=True)
    (tmp_path / "k.crt").write_bytes(pair.cert_pem)
    (tmp_path / "k.key").write_bytes(pair.key_pem)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "k.crt", tmp_path / "k.key")
    ctx.load_verify_locations(cadata=server.ca.cert_pem.decode())
    ctx.verify_mode = ssl.CERT_OPTIONAL
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Kubelet)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    nodes = by_kind("Node")
    server.registry.create(nodes, "", {"metadata": {"name": "n1"}})
    server.registry.update(
        nodes, "", "n1", {"metadata": {"name": "n1"}, "status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": httpd.server_address[1]}}}},
        "status")
    yield asked
    httpd.shutdown()
    httpd.server_close()
