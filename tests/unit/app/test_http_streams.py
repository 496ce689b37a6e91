"""The main port's streaming endpoints, over TLS and over plain HTTP, against a fake
runtime whose streaming server echoes: the connection is handed over after the checks,
the runtime gets the client's request, bytes flow both ways, and a dropped client or a
stopping server ends both sockets and the stream's thread."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest

from actors.app.http.server import ANY_PORT, MAIN, READ_ONLY, KubeletHTTPServer
from actors.app.http.stream_routes import StreamHost
from actors.app.http.tls import TLSSettings, server_context, serving_pair
from runtime.cri.streaming import StreamingCRI
from runtime.cri.types import (
    Container,
    ContainerFilter,
    ContainerMetadata,
    ContainerState,
    ImageSpec,
    PodSandbox,
    PodSandboxMetadata,
    SandboxFilter,
    SandboxState,
)
from runtime.ids import ContainerID, SandboxID
from runtime.kuberuntime import labels
from tests.helpers import wait_for
from tests.unit.app.test_http_server import FakeView

POD_UID = "uid-web"  # FakeView's pod "web": nginx runs, sidecar does not


class EchoRuntime:
    """The streaming server: answers 101, then echoes; remembers each request head."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.heads: list[bytes] = []
        self.open = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/exec/token"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with self.lock:
            self.open += 1
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            head, _, rest = data.partition(b"\r\n\r\n")
            self.heads.append(head)
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\n\r\n" + rest)
            while chunk := conn.recv(4096):
                conn.sendall(chunk)
        except OSError:
            pass
        finally:
            conn.close()
            with self.lock:
                self.open -= 1


@dataclass
class FakeStreamingRuntime:
    echo: EchoRuntime
    calls: list[tuple[object, ...]] = field(default_factory=list)

    def list_containers(self, filter: ContainerFilter | None = None) -> tuple[Container, ...]:
        assert filter is not None and filter.state == ContainerState.RUNNING
        if filter.label_selector.get(labels.CONTAINER_NAME) != "nginx":
            return ()
        return (Container(ContainerID("c-nginx"), SandboxID("s-1"),
                          ContainerMetadata("nginx", 0), ImageSpec("nginx:1"), "",
                          ContainerState.RUNNING, 1.0),)

    def list_pod_sandbox(self, filter: SandboxFilter | None = None) -> tuple[PodSandbox, ...]:
        return (PodSandbox(SandboxID("s-1"), PodSandboxMetadata("web", POD_UID, "default", 0),
                           SandboxState.READY, 1.0),)

    def exec(self, container_id: ContainerID, cmd: tuple[str, ...], tty: bool, stdin: bool,
             stdout: bool, stderr: bool) -> str:
        self.calls.append(("exec", container_id, cmd, tty, stdin, stdout, stderr))
        return self.echo.url

    def attach(self, container_id: ContainerID, tty: bool, stdin: bool, stdout: bool,
               stderr: bool) -> str:
        self.calls.append(("attach", container_id, tty, stdin, stdout, stderr))
        return self.echo.url

    def port_forward(self, sandbox_id: SandboxID, ports: tuple[int, ...]) -> str:
        self.calls.append(("port_forward", sandbox_id, ports))
        return self.echo.url


@dataclass
class Served:
    server: KubeletHTTPServer
    runtime: FakeStreamingRuntime
    echo: EchoRuntime
    tls: bool

    @property
    def port(self) -> int:
        return self.server.bound_ports[MAIN]

    def connect(self) -> socket.socket:
        """A connection to the main port, TLS when it serves TLS."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        return ssl._create_unverified_context().wrap_socket(sock) if self.tls else sock


@pytest.fixture(params=[True, False], ids=["TLS", "plain"])
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Served]:
    view = FakeView(tmp_path)
    tls = None
    if request.param:
        settings = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name="node")
        cert, key = serving_pair(settings)
        tls = (server_context(settings, cert, key), cert, key)
    echo = EchoRuntime()
    runtime = FakeStreamingRuntime(echo)
    server = KubeletHTTPServer(view, port=ANY_PORT, read_only_port=ANY_PORT,
                               healthz_port=ANY_PORT, tls=tls,
                               streams=StreamHost(view, cast(StreamingCRI, runtime)))
    server.start()
    yield Served(server, runtime, echo, request.param)
    server.stop()
    echo.listener.close()


def _request(sock: socket.socket, method: str, path: str, *extra: str,
             upgrade: bool = True) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: node:10250"]
    if upgrade:
        lines += ["Connection: Upgrade", "Upgrade: SPDY/3.1"]
    lines += list(extra)
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return head


def _status_and_message(sock: socket.socket, head: bytes) -> tuple[int, str]:
    top, _, body = head.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in top.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(4096)
    return int(top.split(b" ")[1]), json.loads(body)["message"]


def test_an_exec_is_handed_to_the_runtime_and_bytes_flow_both_ways(served: Served) -> None:
    with served.connect() as sock:
        head = _request(sock, "POST", "/exec/default/web/nginx?command=sh&command=-c&input=1"
                        "&output=1&error=1&tty=1",
                        "X-Stream-Protocol-Version: v4.channel.k8s.io",
                        "X-Stream-Protocol-Version: channel.k8s.io",
                        "Authorization: Bearer secret")
        assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
        sock.sendall(b"ping")
        assert sock.recv(4) == b"ping"
    assert served.runtime.calls == [("exec", "c-nginx", ("sh", "-c"), True, True, True, False)]
    (forwarded,) = served.echo.heads
    lines = forwarded.decode().split("\r\n")
    assert lines[:2] == ["POST /exec/token HTTP/1.1",
                         f"Host: 127.0.0.1:{served.echo.listener.getsockname()[1]}"]
    assert "X-STREAM-PROTOCOL-VERSION: v4.channel.k8s.io" in lines
    assert "X-STREAM-PROTOCOL-VERSION: channel.k8s.io" in lines
    assert "X-Forwarded-For: 127.0.0.1" in lines
    assert not any(line.lower().startswith("authorization") for line in lines)


def test_a_dropped_client_ends_the_runtime_side_and_the_thread(served: Served) -> None:
    threads = threading.active_count()
    for _ in range(20):
        sock = served.connect()
        assert _request(sock, "GET", "/attach/default/web/nginx?output=1").startswith(
            b"HTTP/1.1 101")
        sock.close()
    wait_for(lambda: served.echo.open == 0, 10, "the runtime's connections to end")
    wait_for(lambda: threading.active_count() <= threads, 10, "the stream threads to end")
    assert served.runtime.calls[0] == ("attach", "c-nginx", False, False, True, False)


def test_stopping_the_server_ends_live_streams(served: Served) -> None:
    sock = served.connect()
    assert _request(sock, "GET", "/portForward/default/web?port=80").startswith(b"HTTP/1.1 101")
    wait_for(lambda: served.echo.open == 1, 10, "the stream to the runtime")
    served.server.stop()
    wait_for(lambda: served.echo.open == 0, 10, "the runtime's side to end")
    assert sock.recv(10) == b""
    sock.close()
    assert served.runtime.calls == [("port_forward", "s-1", ())]  # SPDY: no query ports


@pytest.mark.parametrize(("path", "code", "message"), [
    ("/exec/default/nope/nginx?command=true&output=1", 404, "pod does not exist"),
    ("/exec/default/web/sidecar?command=true&output=1", 404, 'container not found ("sidecar")'),
    ("/exec/default/web/uid-web/nope?command=true&output=1", 404,
     'container not found ("nope")'),
    ("/attach/default/web/other-uid/nginx?output=1", 404, "pod web_default not found"),
    ("/portForward/default/web/other-uid", 404, "pod not found"),
    ("/exec/default/web/nginx?command=true", 400,
     "you must specify at least 1 of stdin, stdout, stderr"),
])
def test_refusals_name_what_is_wrong(served: Served, path: str, code: int,
                                     message: str) -> None:
    with served.connect() as sock:
        head = _request(sock, "GET", path)
        assert _status_and_message(sock, head) == (code, message)
    assert served.runtime.calls == []


def test_a_request_that_is_not_an_upgrade_is_refused_before_the_runtime(
        served: Served) -> None:
    with served.connect() as sock:
        head = _request(sock, "GET", "/exec/default/web/nginx?command=true&output=1",
                        upgrade=False)
        assert _status_and_message(sock, head) == (500, "Upgrade request required")
    assert served.runtime.calls == []


def test_the_read_only_port_has_no_streams(served: Served) -> None:
    port = served.server.bound_ports[READ_ONLY]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = _request(sock, "POST", "/exec/default/web/nginx?command=true&output=1")
        assert _status_and_message(sock, head) == (405, "Debug endpoints are disabled.")
