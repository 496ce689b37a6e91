"""A lifecycle hook's httpGet and tcpSocket reach the network through a recorded service
(runtime.kuberuntime.hook_transport): a trace records what the network answered and a
replay gives it back, never sending the request again from the machine it replays on.

Each test records a pod whose preStop hook reaches 127.0.0.1, removes the pod, then
changes what listens there before replaying: had the replay reached the network, it
would have got another answer and sent another event than the recording's.
"""

from __future__ import annotations

import http.server
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import pytest

from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.trace import KubeletWorld
from runtime.kuberuntime.hook_transport import HOOK_TRANSPORT_TARGET
from runtime.kuberuntime.hooks import USER_AGENT
from runtime.pod.model import (
    HTTPGetAction,
    HTTPHeader,
    Lifecycle,
    LifecycleHandler,
    Pod,
    TCPSocketAction,
)
from tests.helpers import serve
from tests.traces.scenarios import RecordedNode, pod

pytestmark = pytest.mark.timeout(120)

UID = "u-hook"


@dataclass
class Heard:
    """The requests a test server got: path and headers (names lower-cased)."""

    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)


def _server(heard: Heard) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            heard.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            self.send_response(503)  # a hook fails on a transport error only
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    return http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)


def _bound() -> socket.socket:
    """A socket bound to a free port of 127.0.0.1, not listening: a connection to it is
    refused until it listens."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def _with_pre_stop(handler: LifecycleHandler) -> Pod:
    p = pod(UID, "web")
    (c,) = p.spec.containers
    c = msgspec.structs.replace(c, lifecycle=Lifecycle(pre_stop=handler))
    return msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, containers=(c,)))


def _http(port: int) -> LifecycleHandler:
    return LifecycleHandler(http_get=HTTPGetAction(
        port=port, path="/drain", host="127.0.0.1",
        http_headers=(HTTPHeader(name="X-Drain", value="now"),)))


def _tcp(port: int) -> LifecycleHandler:
    return LifecycleHandler(tcp_socket=TCPSocketAction(port=port, host="127.0.0.1"))


def _record(directory: Path, scratch: Path, handler: LifecycleHandler) -> None:
    """The pod runs, then is removed: its preStop hook runs on the way."""
    node = RecordedNode(directory, scratch)
    try:
        node.snapshot(_with_pre_stop(handler))
        node.until("the pod to run", lambda: len(node.running(UID)) == 1)
        node.snapshot()
        node.until("the pod to be removed", lambda: node.fake.list_pod_sandbox() == ())
    finally:
        node.close()


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    yield tmp_path / "trace", tmp_path / "scratch"
    shutil.rmtree(tmp_path / "trace", ignore_errors=True)
    shutil.rmtree(tmp_path / "scratch", ignore_errors=True)


def _hook_calls(directory: Path) -> list[dict[str, object]]:
    return [r for r in read_trace(directory).records
            if r["k"] == "call" and r.get("target") == HOOK_TRANSPORT_TARGET]


def _hook_events(directory: Path) -> list[dict[str, object]]:
    return [r for r in read_trace(directory).records if r["k"] == "msg"
            and r.get("type") == "RecordEvent" and r["body"]["reason"] == "FailedPreStopHook"]


def _replays_clean(directory: Path) -> None:
    report = replay(read_trace(directory), KubeletWorld())
    assert report.ok, format_report(report)


def _never_reached(listening: socket.socket) -> None:
    listening.setblocking(False)
    with pytest.raises(BlockingIOError):
        listening.accept()


def test_an_http_pre_stop_hook_replays_without_the_server(dirs: tuple[Path, Path]) -> None:
    directory, scratch = dirs
    heard = Heard()
    for port in serve(_server(heard)):
        _record(directory, scratch, _http(port))
    # Reached once, as upstream sends it: its headers, kube-lifecycle's User-Agent.
    [(path, headers)] = heard.requests
    assert path == "/drain"
    assert headers["x-drain"] == "now" and headers["user-agent"] == USER_AGENT
    [call] = _hook_calls(directory)
    assert call["method"] == "http_get" and call["actor"] == names.worker_name(UID)
    assert call["result"] == 503
    assert _hook_events(directory) == []
    # The server is gone: a GET now would fail, and the replay would send a
    # FailedPreStopHook the recording did not.
    _replays_clean(directory)


def test_a_failed_http_pre_stop_hook_replays_its_failure(dirs: tuple[Path, Path]) -> None:
    directory, scratch = dirs
    with _bound() as sock:
        port = sock.getsockname()[1]
        _record(directory, scratch, _http(port))  # refused: nothing listens
        [call] = _hook_calls(directory)
        assert call["error"]["type"] == "HookTransportError"  # type: ignore[index]
        [event] = _hook_events(directory)
        assert event["body"]["message"] == "PreStopHook failed"  # type: ignore[index]
        # Something listens there now: a GET would be made and no event sent again.
        sock.listen()
        _replays_clean(directory)
        _never_reached(sock)


def test_a_tcp_pre_stop_hook_replays_without_the_listener(dirs: tuple[Path, Path]) -> None:
    directory, scratch = dirs
    with _bound() as sock:
        sock.listen()
        port = sock.getsockname()[1]
        _record(directory, scratch, _tcp(port))
    [call] = _hook_calls(directory)
    assert call["method"] == "tcp_connect" and call["args"][:2] == ["127.0.0.1", port]  # type: ignore[index]
    assert _hook_events(directory) == []
    _replays_clean(directory)  # the port closed: a connection now would be refused


def test_a_failed_tcp_pre_stop_hook_replays_its_failure(dirs: tuple[Path, Path]) -> None:
    directory, scratch = dirs
    with _bound() as sock:
        _record(directory, scratch, _tcp(sock.getsockname()[1]))
        assert len(_hook_events(directory)) == 1
        sock.listen()
        _replays_clean(directory)
        _never_reached(sock)
