"""The probe handlers against real servers on 127.0.0.1 (HTTP, HTTPS, TCP, a gRPC health
server) and the FakeRuntime for exec."""

from __future__ import annotations

import http.server
import json
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from runtime.clock import FakeClock
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ExecResult,
    ImageSpec,
    PodSandboxConfig,
    PodSandboxMetadata,
)
from runtime.errors import CRIDeadlineExceeded, CRIUnavailable
from runtime.httpget import MAX_BODY
from runtime.ids import ContainerID
from runtime.pod.model import (
    Container,
    ContainerPort,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    HTTPHeader,
    Probe,
    TCPSocketAction,
)
from runtime.prober.handlers import USER_AGENT, run_probe
from runtime.prober.results import ProbeResult
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import serve

S, F, U = ProbeResult.SUCCESS, ProbeResult.FAILURE, ProbeResult.UNKNOWN
LOOPBACK = "127.0.0.1"


def container(port: int = 0) -> Container:
    return Container(name="app", image="busybox:1.35",
                     ports=(ContainerPort(container_port=port, name="web"),))


# --- servers -----------------------------------------------------------------------------


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self, code: int, body: bytes = b"", location: str | None = None) -> None:
        self.send_response(code)
        if location is not None:
            self.send_header("Location", location)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path
        if path == "/ok":
            self._answer(200, b"fine")
        elif path == "/headers":
            body = json.dumps({k.lower(): v for k, v in self.headers.items()}).encode()
            self._answer(200, body)
        elif path.startswith("/code/"):
            self._answer(int(path.rsplit("/", 1)[1]), b"code")
        elif path == "/to-ok":
            self._answer(302, location="/ok")
        elif path == "/to-fail":
            self._answer(301, location="/code/503")
        elif path == "/elsewhere":
            port = self.server.server_address[1]  # type: ignore[index]
            self._answer(302, location=f"http://localhost:{port}/code/500")
        elif path == "/loop":
            self._answer(307, location="/loop")
        elif path == "/big":
            self._answer(200, b"x" * (MAX_BODY * 10))
        elif path == "/slow":
            time.sleep(1.5)
            self._answer(200, b"late")
        elif path == "/q?a=1":
            self._answer(200, b"query")
        else:
            self._answer(404, b"no")


@pytest.fixture(scope="module")
def http_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)
    server.daemon_threads = True
    yield from serve(server)


@pytest.fixture(scope="module")
def https_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    tmp: Path = tmp_path_factory.mktemp("tls")
    key, cert = tmp / "key.pem", tmp / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-subj", "/CN=not-this-host", "-days", "1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    yield from serve(server)


@pytest.fixture(scope="module")
def grpc_port() -> Iterator[int]:
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    servicer.set("down", health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port(f"{LOOPBACK}:0")
    server.start()
    yield port
    server.stop(None)


@pytest.fixture(scope="module")
def bare_grpc_port() -> Iterator[int]:
    server = grpc.server(ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port(f"{LOOPBACK}:0")
    server.start()
    yield port
    server.stop(None)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
    return port


def check(probe: Probe, c: Container, pod_ip: str = LOOPBACK) -> tuple[ProbeResult, str]:
    return run_probe(probe, c, ContainerID("c1"), pod_ip, FakeRuntime())


# --- httpGet -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "result", "output_part"),
    [
        ("/ok", S, "fine"),
        ("ok", S, "fine"),  # a path without the leading slash
        ("/q?a=1", S, "query"),
        ("/code/204", S, ""),
        ("/code/399", S, "redirects"),  # a 3xx without Location: success with a warning
        ("/code/400", F, "statuscode: 400"),
        ("/code/500", F, "statuscode: 500"),
        ("/missing", F, "statuscode: 404"),
        ("/to-ok", S, "fine"),  # a redirect to the same host is followed
        ("/to-fail", F, "statuscode: 503"),
        ("/elsewhere", S, "terminated redirects"),  # another host: not followed, a warning
        ("/loop", F, "stopped after 10 redirects"),
    ],
)
def test_http(http_port: int, path: str, result: ProbeResult, output_part: str) -> None:
    probe = Probe(http_get=HTTPGetAction(port="web", path=path))
    got, output = check(probe, container(http_port))
    assert got == result, output
    assert output_part in output


def test_http_host_defaults_to_pod_ip_and_explicit_host_wins(http_port: int) -> None:
    probe = Probe(http_get=HTTPGetAction(port=http_port, path="/ok"))
    assert check(probe, container(), pod_ip=LOOPBACK)[0] == S
    explicit = Probe(http_get=HTTPGetAction(port=http_port, path="/ok", host=LOOPBACK))
    assert check(explicit, container(), pod_ip="")[0] == S
    assert check(probe, container(), pod_ip="")[0] == U


def test_http_headers(http_port: int) -> None:
    probe = Probe(http_get=HTTPGetAction(port=http_port, path="/headers"))
    result, output = check(probe, container())
    headers = json.loads(output)
    assert result == S
    assert headers["user-agent"] == USER_AGENT == "kube-probe/1.32"
    assert headers["accept"] == "*/*"
    assert headers["host"] == f"{LOOPBACK}:{http_port}"

    custom = Probe(http_get=HTTPGetAction(
        port=http_port, path="/headers",
        http_headers=(HTTPHeader(name="user-agent", value="mine/1"),
                      HTTPHeader(name="Accept", value="text/plain"),
                      HTTPHeader(name="Host", value="example.test"),
                      HTTPHeader(name="X-Custom", value="yes"))))
    headers = json.loads(check(custom, container())[1])
    assert headers["user-agent"] == "mine/1"
    assert headers["accept"] == "text/plain"
    assert headers["host"] == "example.test"
    assert headers["x-custom"] == "yes"


def test_http_body_is_capped(http_port: int) -> None:
    result, output = check(Probe(http_get=HTTPGetAction(port=http_port, path="/big")),
                           container())
    assert result == S
    assert len(output) == MAX_BODY


def test_http_timeout_and_refused(http_port: int) -> None:
    slow = Probe(http_get=HTTPGetAction(port=http_port, path="/slow"), timeout_seconds=1)
    started = time.monotonic()
    result, output = check(slow, container())
    assert result == F and "timed out" in output
    assert time.monotonic() - started < 3.0  # bounded by the timeout, not by the server
    refused = Probe(http_get=HTTPGetAction(port=closed_port(), path="/ok"))
    result, output = check(refused, container())
    assert result == F and "refused" in output.lower()


def test_https_skips_certificate_verification(https_port: int) -> None:
    probe = Probe(http_get=HTTPGetAction(port=https_port, path="/ok", scheme="HTTPS"))
    assert check(probe, container()) == (S, "fine")
    plain = Probe(http_get=HTTPGetAction(port=https_port, path="/ok"))
    assert check(plain, container())[0] == F


@pytest.mark.parametrize("port", ["nope", 0, 70000])
def test_http_bad_port_is_an_error(port: int | str) -> None:
    result, output = check(Probe(http_get=HTTPGetAction(port=port)), container(8080))
    assert result == U
    assert "nope" in output or "invalid port" in output


# --- tcpSocket ---------------------------------------------------------------------------


def test_tcp(http_port: int) -> None:
    assert check(Probe(tcp_socket=TCPSocketAction(port="web")), container(http_port)) == (S, "")
    assert check(Probe(tcp_socket=TCPSocketAction(port=http_port, host=LOOPBACK)),
                 container(), pod_ip="")[0] == S
    result, output = check(Probe(tcp_socket=TCPSocketAction(port=closed_port())), container())
    assert result == F and "refused" in output.lower()
    assert check(Probe(tcp_socket=TCPSocketAction(port="other")), container(1))[0] == U


# --- grpc --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("service", "result", "output_part"),
    [
        (None, S, ""),
        ("down", F, "NOT_SERVING"),
        ("unknown-service", F, "NOT_FOUND"),
    ],
)
def test_grpc(grpc_port: int, service: str | None, result: ProbeResult, output_part: str) -> None:
    got, output = check(Probe(grpc=GRPCAction(port=grpc_port, service=service)), container())
    assert got == result, output
    assert output_part in output


def test_grpc_without_health_service(bare_grpc_port: int) -> None:
    result, output = check(Probe(grpc=GRPCAction(port=bare_grpc_port)), container())
    assert result == F
    assert "does not implement the grpc health protocol" in output


def test_grpc_nothing_listening() -> None:
    result, output = check(Probe(grpc=GRPCAction(port=closed_port()), timeout_seconds=1),
                           container())
    assert result == F and "failed to connect" in output
    assert check(Probe(grpc=GRPCAction(port=1)), container(), pod_ip="")[0] == U


# --- exec --------------------------------------------------------------------------------


@pytest.fixture
def fake() -> tuple[FakeRuntime, ContainerID]:
    runtime = FakeRuntime(FakeClock(), images=("busybox:1.35",))
    config = PodSandboxConfig(metadata=PodSandboxMetadata(name="p", uid="u", namespace="d"))
    sandbox = runtime.run_pod_sandbox(config)
    cid = runtime.create_container(sandbox, ContainerConfig(
        metadata=ContainerMetadata(name="app"), image=ImageSpec(image="busybox:1.35")), config)
    runtime.start_container(cid)
    return runtime, cid


def run_exec(fake: tuple[FakeRuntime, ContainerID], **kw: Any) -> tuple[ProbeResult, str]:
    runtime, cid = fake
    probe = Probe(exec=ExecAction(command=("check", "-v")), **kw)
    return run_probe(probe, container(), cid, "", runtime)


@pytest.mark.parametrize(
    ("exec_result", "result", "output"),
    [
        (ExecResult(b"healthy", b"", 0), S, "healthy"),
        (ExecResult(b"out ", b"err", 1), F, "out err"),
        (ExecResult(b"", b"", 2), F, "command exited with 2"),
        (ExecResult(b"y" * (MAX_BODY * 2), b"", 0), S, "y" * MAX_BODY),
    ],
)
def test_exec(fake: tuple[FakeRuntime, ContainerID], exec_result: ExecResult,
              result: ProbeResult, output: str) -> None:
    runtime, cid = fake
    runtime.set_exec_result(cid, ("check",), exec_result)
    assert run_exec(fake, timeout_seconds=4) == (result, output)
    [call] = runtime.calls_to("exec_sync")
    assert call.args == (cid, ("check", "-v"), 4.0)


def test_exec_timeout_is_a_failure(fake: tuple[FakeRuntime, ContainerID]) -> None:
    fake[0].fail("exec_sync", CRIDeadlineExceeded("ExecSync", "deadline exceeded"))
    result, output = run_exec(fake)
    assert result == F and "timed out" in output


def test_exec_runtime_error_is_unknown(fake: tuple[FakeRuntime, ContainerID]) -> None:
    fake[0].fail("exec_sync", CRIUnavailable("ExecSync", "socket gone"))
    assert run_exec(fake) == (U, "socket gone")
    fake[0].stop_container(fake[1], 0)
    result, output = run_exec(fake)
    assert result == U and "not running" in output


def test_no_action_is_unknown() -> None:
    assert check(Probe(), container()) == (U, "missing probe handler")
