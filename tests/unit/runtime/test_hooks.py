"""HandlerRunner: exec, httpGet (against a real server on 127.0.0.1), tcpSocket and sleep
lifecycle handlers, with FakeRuntime and FakeClock."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from runtime.clock import FakeClock
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ExecResult,
    ImageSpec,
    PodSandboxConfig,
    PodSandboxMetadata,
)
from runtime.errors import HookTransportError
from runtime.events.recorder import HookOutput
from runtime.ids import ContainerID
from runtime.kuberuntime.hook_transport import NodeHookTransport
from runtime.kuberuntime.hooks import OUTPUT_LIMIT, USER_AGENT, HandlerRunner
from runtime.pod.model import (
    Container,
    ContainerPort,
    ExecAction,
    HTTPGetAction,
    HTTPHeader,
    IntOrString,
    LifecycleHandler,
    SleepAction,
    TCPSocketAction,
)
from runtime.pod.ports import resolve_port
from runtime.testing.fake_runtime import FakeRuntime

CONTAINER = Container(name="app", image="busybox:1.35",
                      ports=(ContainerPort(container_port=8080, name="http"),))


@dataclass
class Env:
    fake: FakeRuntime
    clock: FakeClock
    runner: HandlerRunner
    cid: ContainerID


@pytest.fixture
def env() -> Env:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=("busybox:1.35",))
    sandbox_config = PodSandboxConfig(metadata=PodSandboxMetadata(name="p", uid="u",
                                                                  namespace="default"))
    sandbox = fake.run_pod_sandbox(sandbox_config)
    cid = fake.create_container(sandbox, ContainerConfig(
        metadata=ContainerMetadata(name="app"), image=ImageSpec(image="busybox:1.35")),
        sandbox_config)
    fake.start_container(cid)
    return Env(fake, clock, HandlerRunner(fake, clock), cid)


# --- exec -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "error_parts"),
    [
        (ExecResult(b"ok", b"", 0), None),
        (ExecResult(b"", b"", 1), ("exited with 1",)),
        (ExecResult(b"out ", b"boom", 42), ("exited with 42", "out boom", "hook")),
    ],
)
def test_exec(env: Env, result: ExecResult, error_parts: tuple[str, ...] | None) -> None:
    env.fake.set_exec_result(env.cid, ("hook",), result)
    handler = LifecycleHandler(exec=ExecAction(command=("hook", "arg")))
    failure = env.runner.run(handler, CONTAINER, env.cid, "10.88.0.2", 30.0)
    [call] = env.fake.calls_to("exec_sync")
    assert call.args[:2] == (env.cid, ("hook", "arg"))
    if error_parts is None:
        assert failure is None
    else:
        assert failure is not None
        for part in error_parts:
            assert part in failure.message
        # What it said, for the record beside its event: output and exit code apart.
        assert failure.said == HookOutput(
            (result.stdout + result.stderr).decode().strip(), result.exit_code)


def test_exec_long_output_is_cut(env: Env) -> None:
    env.fake.set_exec_result(None, ("noisy",), ExecResult(b"x" * 5000, b"", 2))
    failure = env.runner.run(LifecycleHandler(exec=ExecAction(command=("noisy",))), CONTAINER,
                             env.cid, "", 30.0)
    assert failure is not None and len(failure.message) < 1000
    assert failure.said == HookOutput("x" * OUTPUT_LIMIT, 2)


def test_exec_on_stopped_container_is_an_error(env: Env) -> None:
    env.fake.stop_container(env.cid, 0)
    failure = env.runner.run(LifecycleHandler(exec=ExecAction(command=("true",))), CONTAINER,
                             env.cid, "", 30.0)
    assert failure is not None and "not running" in failure.message
    assert failure.said.output == failure.message and failure.said.exit_code is None


# --- httpGet --------------------------------------------------------------------------------


@dataclass
class Server:
    port: int
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[Server]:
    record: list[tuple[str, dict[str, str]]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            record.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            code = int(self.path.strip("/").split("/")[0] or 200)
            self.send_response(code)
            if 300 <= code < 400:
                self.send_header("Location", "/200")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield Server(httpd.server_address[1], record)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize("code", [200, 204, 302, 399, 400, 404, 500, 503])
def test_http_get_succeeds_whatever_the_status(env: Env, server: Server, code: int) -> None:
    # Upstream's runHTTPHandler fails only when the request cannot be made.
    handler = LifecycleHandler(http_get=HTTPGetAction(port=server.port, path=f"/{code}"))
    assert env.runner.run(handler, CONTAINER, env.cid, "127.0.0.1", 5.0) is None
    assert server.requests[0][0] == f"/{code}"


def test_http_get_headers_and_user_agent(env: Env, server: Server) -> None:
    handler = LifecycleHandler(http_get=HTTPGetAction(
        port=server.port, path="200/x", host="127.0.0.1",
        http_headers=(HTTPHeader(name="X-Custom", value="yes"),
                      HTTPHeader(name="Authorization", value="Bearer t"))))
    assert env.runner.run(handler, CONTAINER, env.cid, "10.255.255.1", 5.0) is None
    [(path, headers)] = server.requests
    assert path == "/200/x"
    assert headers["x-custom"] == "yes"
    assert headers["authorization"] == "Bearer t"
    assert headers["user-agent"] == USER_AGENT
    assert USER_AGENT.startswith("kube-lifecycle/")


def test_http_get_named_port(env: Env, server: Server) -> None:
    container = Container(name="app", ports=(ContainerPort(container_port=server.port,
                                                           name="web"),))
    handler = LifecycleHandler(http_get=HTTPGetAction(port="web", path="/200"))
    assert env.runner.run(handler, container, env.cid, "127.0.0.1", 5.0) is None
    assert len(server.requests) == 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_http_get_connection_refused(env: Env) -> None:
    handler = LifecycleHandler(http_get=HTTPGetAction(port=free_port(), path="/"))
    failure = env.runner.run(handler, CONTAINER, env.cid, "127.0.0.1", 5.0)
    assert failure is not None and failure.message != ""
    assert failure.said.output == failure.message and failure.said.exit_code is None


def test_http_get_unknown_named_port(env: Env) -> None:
    handler = LifecycleHandler(http_get=HTTPGetAction(port="nope"))
    failure = env.runner.run(handler, CONTAINER, env.cid, "127.0.0.1", 5.0)
    assert failure is not None and "nope" in failure.message


@pytest.mark.parametrize(
    ("port", "expected"),
    [(80, 80), ("8081", 8081), ("http", 8080)],
)
def test_resolve_port(port: IntOrString, expected: int) -> None:
    assert resolve_port(port, CONTAINER) == expected


def test_resolve_port_unknown() -> None:
    with pytest.raises(ValueError, match="grpc"):
        resolve_port("grpc", CONTAINER)


class Answering:
    """A HookTransport that notes each call and answers with ``error`` (None: reached)."""

    def __init__(self, error: str | None = None) -> None:
        self.calls: list[tuple[object, ...]] = []
        self._error = error

    def http_get(self, url: str, headers: tuple[tuple[str, str], ...], timeout: float) -> int:
        self.calls.append(("http_get", url, headers, timeout))
        if self._error is not None:
            raise HookTransportError(self._error)
        return 500

    def tcp_connect(self, host: str, port: int, timeout: float) -> None:
        self.calls.append(("tcp_connect", host, port, timeout))
        if self._error is not None:
            raise HookTransportError(self._error)


def test_http_get_and_tcp_socket_go_through_the_transport(env: Env) -> None:
    """What reaches the network is the transport's (a trace records it): the runner
    builds the request, and a transport's error is the hook's failure, word for word."""
    transport = Answering()
    runner = HandlerRunner(env.fake, env.clock, transport)
    get = LifecycleHandler(http_get=HTTPGetAction(
        port="http", path="drain", scheme="HTTPS",
        http_headers=(HTTPHeader(name="Accept", value="text/plain"),)))
    assert runner.run(get, CONTAINER, env.cid, "10.88.0.2", 7.0) is None
    tcp = LifecycleHandler(tcp_socket=TCPSocketAction(port=81, host="10.0.0.9"))
    assert runner.run(tcp, CONTAINER, env.cid, "10.88.0.2", 3.0) is None
    assert transport.calls == [
        ("http_get", "https://10.88.0.2:8080/drain",
         (("User-Agent", USER_AGENT), ("Accept", "text/plain")), 7.0),
        ("tcp_connect", "10.0.0.9", 81, 3.0)]
    failing = HandlerRunner(env.fake, env.clock, Answering("[Errno 113] No route to host"))
    for handler in (get, tcp):
        failure = failing.run(handler, CONTAINER, env.cid, "10.88.0.2", 1.0)
        assert failure is not None and failure.message == "[Errno 113] No route to host"
        assert failure.said == HookOutput("[Errno 113] No route to host")


@pytest.mark.parametrize(("url", "words"), [
    ("http://127.0.0.1:70000/", "Port out of range"),  # ValueError
    ("http://127.0.0.1:1/a b", "can't contain control characters"),  # InvalidURL
])
def test_a_request_that_cannot_be_sent_is_a_transport_error(url: str, words: str) -> None:
    with pytest.raises(HookTransportError, match=words):
        NodeHookTransport().http_get(url, (), 1.0)


def test_a_broken_answer_is_a_transport_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listening:
        port = listening.getsockname()[1]

        def answer_nonsense() -> None:
            conn, _ = listening.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(b"not http at all\r\n\r\n")

        thread = threading.Thread(target=answer_nonsense, daemon=True)
        thread.start()
        with pytest.raises(HookTransportError, match="not http at all"):
            NodeHookTransport().http_get(f"http://127.0.0.1:{port}/", (), 5.0)
        thread.join(timeout=5)


# --- tcpSocket ------------------------------------------------------------------------------


def test_tcp_socket(env: Env, server: Server) -> None:
    ok = LifecycleHandler(tcp_socket=TCPSocketAction(port=server.port))
    assert env.runner.run(ok, CONTAINER, env.cid, "127.0.0.1", 5.0) is None
    refused = LifecycleHandler(tcp_socket=TCPSocketAction(port=free_port(), host="127.0.0.1"))
    assert env.runner.run(refused, CONTAINER, env.cid, "", 5.0) is not None


# --- sleep and nothing ----------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "timeout", "advanced"),
                         [(5, 30.0, 5.0), (0, 30.0, 0.0), (60, 10.0, 10.0)])
def test_sleep_advances_fake_clock(env: Env, seconds: int, timeout: float,
                                   advanced: float) -> None:
    before = env.clock.monotonic()
    handler = LifecycleHandler(sleep=SleepAction(seconds=seconds))
    assert env.runner.run(handler, CONTAINER, env.cid, "", timeout) is None
    assert env.clock.monotonic() - before == advanced
    assert env.fake.called("exec_sync") == 0


def test_no_action_is_an_error(env: Env) -> None:
    failure = env.runner.run(LifecycleHandler(), CONTAINER, env.cid, "", 5.0)
    assert failure is not None and "no action" in failure.message
