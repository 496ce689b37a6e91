"""The kubelet HTTP server over a fake KubeletView, on free loopback ports."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from actors.app.http.routes import PodsResource
from actors.app.http.server import (
    ANY_PORT,
    DISABLED,
    HEALTHZ,
    MAIN,
    READ_ONLY,
    WORKER_THREADS,
    KubeletHTTPServer,
)
from actors.app.http.tls import TLSSettings, server_context, serving_pair
from actors.kubelet.messages import RuntimeContainer, RuntimePod
from actors.kubelet.metrics import KubeletMetrics
from runtime.cri import types as cri
from runtime.errors import ConfigError
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime.logs import LogOptions, fixed_timestamp, render_logs
from runtime.pod.defaults import to_api_object
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.status.types import (
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStatus,
    PodStatus,
)
from tests.helpers import wait_for

LOG = (
    b"2024-05-01T10:00:00.123456789Z stdout F first line\n"
    b"2024-05-01T10:00:01.5Z stdout P a long line \n"
    b"2024-05-01T10:00:01.6Z stderr F an error\n"
    b"2024-05-01T10:00:01.7Z stdout F split in two\n"
    b"2024-05-01T10:00:02Z stdout F last line\n"
)
PREVIOUS_LOG = b"2024-05-01T09:00:00.000000001Z stdout F from the previous instance\n"


def _pod(name: str, uid: str, *containers: str) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=uid),
        spec=PodSpec(containers=tuple(Container(name=c, image=f"{c}:1") for c in containers)),
    )


def _status(*containers: str, previous: bool = False) -> PodStatus:
    last = ContainerState(terminated=ContainerStateTerminated(
        exit_code=1, container_id="containerd://nginx-old")) if previous else ContainerState()
    return PodStatus(
        phase="Running",
        pod_ip="10.0.0.5",
        container_statuses=tuple(
            ContainerStatus(
                name=c, image=f"{c}:1", ready=True, restart_count=0, image_id="",
                last_state=last if c == "nginx" else ContainerState(),
                container_id=f"containerd://{c}-id",
                state=ContainerState(running=ContainerStateRunning(started_at="2024-05-01T10:00:00Z")),
            ) for c in containers),
    )


@dataclass
class FakeView:
    """A KubeletView with fixed answers the tests can change."""

    log_dir: Path
    checks: dict[str, str | None] = field(default_factory=lambda: {
        "ping": None, "syncloop": None, "pleg": None, "runtime": None})
    broken: bool = False
    previous: bool = False
    running: bool = False
    refreshed: int = 0
    kubelet_metrics: KubeletMetrics = field(default_factory=KubeletMetrics)

    def pods(self) -> tuple[tuple[Pod, PodStatus], ...]:
        if self.broken:
            raise RuntimeError("the pod manager is gone")
        return (
            (_pod("web", "uid-web", "nginx", "sidecar"),
             _status("nginx", "sidecar", previous=self.previous)),
            (_pod("db", "uid-db", "postgres"), PodStatus(phase="Pending")),
        )

    def running_pods(self) -> tuple[RuntimePod, ...]:
        return (
            RuntimePod(PodUID("uid-web"), "web", "default", True, (
                RuntimeContainer(ContainerID("c1"), "nginx", "nginx:1", "running"),
                RuntimeContainer(ContainerID("c0"), "nginx", "nginx:0", "exited"),
            )),
            RuntimePod(PodUID("uid-old"), "old", "default", False, (
                RuntimeContainer(ContainerID("c2"), "gone", "gone:1", "exited"),
            )),
        )

    def health(self) -> Mapping[str, str | None]:
        return dict(self.checks)

    def metrics(self) -> KubeletMetrics:
        return self.kubelet_metrics

    def refresh_metrics(self) -> None:
        self.refreshed += 1
        self.kubelet_metrics.running_pods.set(1)

    def container_status(self, container_id: ContainerID) -> cri.ContainerStatus | None:
        logs = {"nginx-id": "1.log", "nginx-old": "0.log"}
        if container_id not in logs:
            return None
        return cri.ContainerStatus(
            id=container_id, metadata=cri.ContainerMetadata(name="nginx"),
            state=cri.ContainerState.RUNNING if self.running else cri.ContainerState.EXITED,
            created_at=0.0,
            log_path=str(self.log_dir / logs[container_id]))


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()

    def json(self) -> dict[str, object]:
        value = json.loads(self.body)
        assert isinstance(value, dict)
        return value


def request(port: int, path: str, method: str = "GET") -> Response:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return Response(resp.status, dict(resp.headers), resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return Response(err.code, dict(err.headers), err.read())


@pytest.fixture
def view(tmp_path: Path) -> FakeView:
    (tmp_path / "1.log").write_bytes(LOG)
    fake = FakeView(tmp_path)
    fake.kubelet_metrics.runtime_operations.labels("RunPodSandbox").inc(3)
    fake.kubelet_metrics.observe_runtime_call("ListContainers", 0.01, ok=False)
    return fake


@pytest.fixture
def server(view: FakeView) -> Iterator[KubeletHTTPServer]:
    srv = KubeletHTTPServer(view, port=ANY_PORT, read_only_port=ANY_PORT,
                            healthz_port=ANY_PORT)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def main_port(server: KubeletHTTPServer) -> int:
    return server.bound_ports[MAIN]


# --- /pods and /runningpods ---------------------------------------------------------


def test_pods_is_a_v1_pod_list_with_status(server: KubeletHTTPServer) -> None:
    for listener in (MAIN, READ_ONLY):
        resp = request(server.bound_ports[listener], "/pods")
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/json"
        body = resp.json()
        assert body["kind"] == "PodList"
        assert body["apiVersion"] == "v1"
        assert body["metadata"] == {}
        items = body["items"]
        assert isinstance(items, list)
        assert [i["metadata"]["name"] for i in items] == ["web", "db"]
        web = items[0]
        assert web["metadata"] == {"name": "web", "namespace": "default", "uid": "uid-web"}
        assert [c["name"] for c in web["spec"]["containers"]] == ["nginx", "sidecar"]
        # The spec as `kubectl get pod -o yaml` shows it: with the API server's defaults.
        assert "kind" not in web and "apiVersion" not in web
        assert {k: web["spec"][k] for k in (
            "restartPolicy", "terminationGracePeriodSeconds", "dnsPolicy", "securityContext",
            "schedulerName", "enableServiceLinks")} == {
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "securityContext": {},
            "schedulerName": "default-scheduler", "enableServiceLinks": True}
        assert web["spec"]["containers"][0] == {
            "name": "nginx", "image": "nginx:1", "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File"}
        assert web["status"]["phase"] == "Running"
        assert web["status"]["podIP"] == "10.0.0.5"
        statuses = web["status"]["containerStatuses"]
        assert statuses[0]["containerID"] == "containerd://nginx-id"
        assert statuses[0]["state"]["running"]["startedAt"] == "2024-05-01T10:00:00Z"
        assert statuses[0]["ready"] is True
        assert items[1]["status"] == {"phase": "Pending"}
        # Fields Go never omits are there even at their zero values.
        assert statuses[1]["restartCount"] == 0
        assert statuses[1]["imageID"] == ""


class SamePods:
    """A view whose pods are the same objects each time, until a test replaces one."""

    def __init__(self) -> None:
        self.listed = [(_pod("web", "uid-web", "nginx"), _status("nginx")),
                       (_pod("db", "uid-db", "postgres"), PodStatus(phase="Pending"))]

    def pods(self) -> tuple[tuple[Pod, PodStatus], ...]:
        return tuple(self.listed)


@dataclass
class Captured:
    content_type: str = ""
    data: bytes = b""


def test_pods_renders_a_pod_again_only_when_it_changed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendering the specs was most of a GET's cost, paid again on every poll for pods
    that had not changed (pods are frozen: the same object renders the same)."""
    rendered: list[str] = []

    def counting(value: Any) -> Any:
        rendered.append(value.metadata.name)
        return to_api_object(value)

    monkeypatch.setattr("actors.app.http.routes.to_api_object", counting)
    view = SamePods()
    resource = PodsResource(cast(Any, view))

    def get() -> dict[str, Any]:
        resp = Captured()
        resource.on_get(cast(Any, None), cast(Any, resp))
        body: dict[str, Any] = json.loads(resp.data)
        return body

    first = get()
    assert rendered == ["web", "db"]
    view.listed[1] = (view.listed[1][0], _status("postgres"))  # a new status only
    second = get()
    assert rendered == ["web", "db"]
    assert second["items"][0] == first["items"][0]
    assert second["items"][1]["status"]["phase"] == "Running"
    web = view.listed[0][0]
    view.listed[0] = (Pod(metadata=ObjectMeta(name="web", namespace="default", uid="uid-web",
                                              labels={"tier": "front"}), spec=web.spec),
                      view.listed[0][1])
    third = get()
    assert rendered == ["web", "db", "web"]
    assert third["items"][0]["metadata"]["labels"] == {"tier": "front"}
    assert "kind" not in third["items"][0] and "status" in third["items"][0]


def test_runningpods_lists_running_pods_and_containers(main_port: int) -> None:
    for path in ("/runningpods/", "/runningpods"):
        body = request(main_port, path).json()
        assert body["kind"] == "PodList"
        assert body["items"] == [{
            "metadata": {"name": "web", "namespace": "default", "uid": "uid-web"},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1", "resources": {}}]},
            "status": {},
        }]


# --- /healthz -------------------------------------------------------------------------


def test_healthz_ok(server: KubeletHTTPServer) -> None:
    for listener in (MAIN, READ_ONLY, HEALTHZ):
        resp = request(server.bound_ports[listener], "/healthz")
        assert (resp.status, resp.text) == (200, "ok")
        assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"


def test_systemd_socket_activation_is_not_taken_for_the_ports_bound(
        view: FakeView, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kubelet binds its own ports: with systemd's LISTEN_PID in its environment (a
    socket-activated unit), cheroot would serve file descriptor 3 instead of the socket
    bound for the port. The variables are dropped, as sd_listen_fds(unset_environment=1)
    does, and every port answers on the socket bound for it."""
    monkeypatch.setenv("LISTEN_PID", str(os.getpid()))
    monkeypatch.setenv("LISTEN_FDS", "1")
    srv = KubeletHTTPServer(view, port=ANY_PORT, read_only_port=ANY_PORT,
                            healthz_port=ANY_PORT)
    try:
        srv.start()
        for listener in (MAIN, READ_ONLY, HEALTHZ):
            assert request(srv.bound_ports[listener], "/healthz").status == 200
    finally:
        srv.stop()
    assert "LISTEN_PID" not in os.environ and "LISTEN_FDS" not in os.environ


def test_healthz_verbose(main_port: int) -> None:
    resp = request(main_port, "/healthz?verbose")
    assert resp.status == 200
    assert resp.text == (
        "[+]ping ok\n[+]syncloop ok\n[+]pleg ok\n[+]runtime ok\nhealthz check passed\n")


def test_healthz_failing_lists_every_check_with_reasons(
    view: FakeView, server: KubeletHTTPServer
) -> None:
    view.checks["pleg"] = "pleg was last seen active 3m0s ago; threshold is 3m0s"
    view.checks["runtime"] = "container runtime is down"
    for listener in (MAIN, HEALTHZ):
        resp = request(server.bound_ports[listener], "/healthz")
        assert resp.status == 500
        assert resp.text == (
            "[+]ping ok\n[+]syncloop ok\n"
            "[-]pleg failed: pleg was last seen active 3m0s ago; threshold is 3m0s\n"
            "[-]runtime failed: container runtime is down\n"
            "healthz check failed\n")


def test_healthz_exclude(view: FakeView, main_port: int) -> None:
    view.checks["pleg"] = "stuck"
    resp = request(main_port, "/healthz?exclude=pleg&verbose")
    assert resp.status == 200
    assert "[+]pleg excluded: ok\n" in resp.text
    resp = request(main_port, "/healthz?exclude=nothing&verbose")
    assert resp.status == 500
    assert 'no matches for "nothing"' in resp.text


def test_healthz_per_check(view: FakeView, server: KubeletHTTPServer) -> None:
    view.checks["syncloop"] = "sync loop has not run for 2m"
    for listener in (MAIN, HEALTHZ):
        port = server.bound_ports[listener]
        for check in ("ping", "pleg", "runtime"):
            resp = request(port, f"/healthz/{check}")
            assert (resp.status, resp.text) == (200, "ok")
        resp = request(port, "/healthz/syncloop")
        assert resp.status == 500
        assert resp.text == "internal server error: sync loop has not run for 2m\n"
        resp = request(port, "/healthz/nosuch")
        assert resp.status == 404
        assert resp.json()["code"] == 404


def test_healthz_port_serves_only_healthz(server: KubeletHTTPServer) -> None:
    port = server.bound_ports[HEALTHZ]
    for path in ("/pods", "/metrics", "/runningpods/", "/containerLogs/default/web/nginx"):
        resp = request(port, path)
        assert resp.status == 404, path


# --- /metrics -------------------------------------------------------------------------


def test_metrics(view: FakeView, main_port: int) -> None:
    resp = request(main_port, "/metrics")
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/plain; version=")
    assert view.refreshed == 1
    assert "kubelet_running_pods 1.0" in resp.text
    assert 'kubelet_runtime_operations_total{operation_type="RunPodSandbox"} 3.0' in resp.text
    assert ('kubelet_runtime_operations_errors_total{operation_type="ListContainers"} 1.0'
            in resp.text)


# --- /containerLogs -------------------------------------------------------------------


def test_container_logs_joins_partial_lines(main_port: int) -> None:
    resp = request(main_port, "/containerLogs/default/web/nginx")
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    # Records in the file's order, as upstream: the stderr line lands inside the stdout
    # line that was split around it.
    assert resp.text == "first line\na long line an error\nsplit in two\nlast line\n"


def test_container_logs_tail_lines_and_limit_bytes(main_port: int) -> None:
    base = "/containerLogs/default/web/nginx"
    assert request(main_port, f"{base}?tailLines=2").text == "split in two\nlast line\n"
    assert request(main_port, f"{base}?tail=1").text == "last line\n"
    assert request(main_port, f"{base}?tail=all&tailLines=1").text.startswith("first")
    assert request(main_port, f"{base}?tailLines=0").text == ""
    assert request(main_port, f"{base}?limitBytes=15").text == "first line\na lo"
    assert request(main_port, f"{base}?tailLines=1&limitBytes=4").text == "last"


@pytest.mark.parametrize(("query", "code", "message"), [
    ("tailLines=-1", 422, 'PodLogOptions "web" is invalid: tailLines: Invalid value: -1: '
                          "must be greater than or equal to 0"),
    ("limitBytes=0", 422, 'PodLogOptions "web" is invalid: limitBytes: Invalid value: 0: '
                          "must be greater than 0"),
    ("sinceSeconds=0", 422, 'PodLogOptions "web" is invalid: sinceSeconds: Invalid value: '
                            "0: must be greater than 0"),
    ("sinceSeconds=5&sinceTime=2024-05-01T10:00:00Z", 422,
     'PodLogOptions "web" is invalid: : Forbidden: at most one of `sinceTime` or '
     "`sinceSeconds` may be specified"),
    ("stream=Stdout&tailLines=1", 422, 'PodLogOptions "web" is invalid: : Forbidden: '
     "`tailLines` and specific `stream` are mutually exclusive for now"),
    ("stream=both", 422, 'PodLogOptions "web" is invalid: stream: Unsupported value: '
     '"both": supported values: "All", "Stderr", "Stdout"'),
    ("tailLines=x", 400, 'Unable to decode query: tailLines: strconv.ParseInt: parsing "x": '
                         "invalid syntax"),
    ("sinceTime=yesterday", 400, 'Unable to decode query: sinceTime: parsing time '
     '"yesterday" as RFC3339 ("2006-01-02T15:04:05Z07:00")'),
])
def test_container_logs_bad_options(main_port: int, query: str, code: int,
                                    message: str) -> None:
    resp = request(main_port, f"/containerLogs/default/web/nginx?{query}")
    assert (resp.status, resp.json()["message"]) == (code, message)


def test_container_logs_since_and_stream(main_port: int) -> None:
    base = "/containerLogs/default/web/nginx"
    assert request(main_port, f"{base}?sinceTime=2024-05-01T10:00:02Z").text == "last line\n"
    assert request(main_port, f"{base}?stream=Stderr").text == "an error\n"
    assert request(main_port, f"{base}?stream=Stdout").text == (
        "first line\na long line split in two\nlast line\n")


def test_container_logs_timestamps(main_port: int) -> None:
    resp = request(main_port, "/containerLogs/default/web/nginx?timestamps=true&tailLines=3")
    assert resp.text == (
        "2024-05-01T10:00:01.500000000Z a long line an error\n"
        "2024-05-01T10:00:01.700000000Z split in two\n"
        "2024-05-01T10:00:02.000000000Z last line\n")


def test_container_logs_previous(view: FakeView, main_port: int) -> None:
    base = "/containerLogs/default/web/nginx?previous=true"
    resp = request(main_port, base)
    assert resp.status == 400
    assert resp.json()["message"] == (
        'previous terminated container "nginx" in pod "web" not found')
    view.previous = True
    (view.log_dir / "0.log").write_bytes(PREVIOUS_LOG)
    resp = request(main_port, base)
    assert (resp.status, resp.text) == (200, "from the previous instance\n")


def test_container_logs_read_back_across_rotated_files(view: FakeView,
                                                      main_port: int) -> None:
    """Just rotated (an empty current file, the older rotated one compressed): the tail,
    since and limit come from the rotated files, for the previous instance too."""
    current = view.log_dir / "1.log"
    (view.log_dir / "1.log.20240501-095959.gz").write_bytes(gzip.compress(
        b"2024-05-01T09:59:59Z stdout F oldest\n"))
    os.rename(current, view.log_dir / "1.log.20240501-100002")
    current.write_bytes(b"")
    base = "/containerLogs/default/web/nginx"
    assert request(main_port, f"{base}?tailLines=1").text == "last line\n"
    assert request(main_port, f"{base}?sinceTime=2024-05-01T10:00:01.7Z").text == (
        "split in two\nlast line\n")
    assert request(main_port, f"{base}?limitBytes=10").text == "oldest\nfir"
    assert request(main_port, f"{base}?tailLines=5&timestamps=true").text.startswith(
        "2024-05-01T09:59:59.000000000Z oldest\n2024-05-01T10:00:00.123456789Z first line\n")
    view.previous = True
    (view.log_dir / "0.log.20240501-090000").write_bytes(PREVIOUS_LOG)
    (view.log_dir / "0.log").write_bytes(b"")
    resp = request(main_port, f"{base}?previous=true&tailLines=1")
    assert (resp.status, resp.text) == (200, "from the previous instance\n")


def test_container_logs_unknown_pod_or_container(main_port: int) -> None:
    resp = request(main_port, "/containerLogs/default/nosuch/nginx")
    assert resp.status == 404
    body = resp.json()
    assert body["kind"] == "Status"
    assert body["message"] == 'pod "nosuch" does not exist'
    resp = request(main_port, "/containerLogs/default/web/nosuch")
    assert resp.status == 404
    assert resp.json()["message"] == 'container "nosuch" not found in pod "web"'
    resp = request(main_port, "/containerLogs/default/web/sidecar")
    assert resp.status == 400
    assert resp.json()["message"] == "unable to retrieve container logs for containerd://sidecar-id"


def test_container_logs_follow_of_an_exited_container_ends(main_port: int) -> None:
    plain = request(main_port, "/containerLogs/default/web/nginx")
    followed = request(main_port, "/containerLogs/default/web/nginx?follow=true")
    assert (followed.status, followed.body) == (200, plain.body)


def _open_log_files(path: Path) -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # an fd closed while listing
            count += os.readlink(f"/proc/self/fd/{fd}") == str(path)
    return count


def test_container_logs_follow_ends_when_the_client_goes(view: FakeView,
                                                          main_port: int) -> None:
    """A quiet followed log whose client hangs up: the reader closes its file and
    frees its thread, though the container still runs and writes nothing."""
    view.running = True
    log = view.log_dir / "1.log"
    with socket.create_connection(("127.0.0.1", main_port), timeout=5) as conn:
        conn.sendall(b"GET /containerLogs/default/web/nginx?follow=true HTTP/1.1\r\n"
                     b"Host: test\r\n\r\n")
        received = b""
        while b"last line" not in received:
            chunk = conn.recv(65536)
            assert chunk, f"the stream ended early: {received!r}"
            received += chunk
        assert _open_log_files(log) == 1
    wait_for(lambda: _open_log_files(log) == 0, 10, "the follow to end")


def test_container_logs_follow_over_tls_ends_when_the_client_goes(
        view: FakeView, tmp_path: Path) -> None:
    """The same on the main port over TLS, whose records cannot be peeked at: the
    connection's socket is asked."""
    view.running = True
    tls = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name="node")
    cert, key = serving_pair(tls)
    server = KubeletHTTPServer(view, port=ANY_PORT, read_only_port=DISABLED,
                               healthz_port=DISABLED,
                               tls=(server_context(tls, cert, key), cert, key))
    server.start()
    try:
        context = ssl.create_default_context(cafile=cert)
        context.check_hostname = False
        log = view.log_dir / "1.log"
        raw = socket.create_connection(("127.0.0.1", server.bound_ports[MAIN]), timeout=5)
        with context.wrap_socket(raw) as conn:
            conn.sendall(b"GET /containerLogs/default/web/nginx?follow=true HTTP/1.1\r\n"
                         b"Host: test\r\n\r\n")
            received = b""
            while b"last line" not in received:
                chunk = conn.recv(65536)
                assert chunk, f"the stream ended early: {received!r}"
                received += chunk
            assert _open_log_files(log) == 1
        wait_for(lambda: _open_log_files(log) == 0, 10, "the follow to end")
    finally:
        server.stop()


def _follow(port: int, context: ssl.SSLContext | None) -> socket.socket:
    """A followed log on ``port`` (TLS with ``context``), read until its last line: a
    worker thread serves it from then on."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    if context is not None:
        conn = context.wrap_socket(conn)
    conn.sendall(b"GET /containerLogs/default/web/nginx?follow=true HTTP/1.1\r\n"
                 b"Host: test\r\n\r\n")
    received = b""
    while b"last line" not in received:
        chunk = conn.recv(65536)  # times out (fails) when no worker serves it
        assert chunk, f"the stream ended early: {received!r}"
        received += chunk
    return conn


@pytest.mark.parametrize("tls", [False, True], ids=["plain read-only port", "TLS main port"])
def test_a_client_gone_mid_stream_frees_its_worker_thread(
        view: FakeView, tmp_path: Path, tls: bool) -> None:
    """As many quiet followed logs as the listener has worker threads, each client gone
    mid-stream; then as many again: served only if the first ones' threads came back."""
    view.running = True
    context = None
    if tls:
        settings = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name="node")
        cert, key = serving_pair(settings)
        server = KubeletHTTPServer(view, port=ANY_PORT, read_only_port=DISABLED,
                                   healthz_port=DISABLED,
                                   tls=(server_context(settings, cert, key), cert, key))
        context = ssl.create_default_context(cafile=cert)
        context.check_hostname = False
    else:
        server = KubeletHTTPServer(view, port=DISABLED, read_only_port=ANY_PORT,
                                   healthz_port=DISABLED)
    name = MAIN if tls else READ_ONLY
    server.start()
    try:
        port = server.bound_ports[name]
        for _round in range(2):
            held = [_follow(port, context) for _ in range(WORKER_THREADS[name])]
            for conn in held:
                conn.close()
        wait_for(lambda: _open_log_files(view.log_dir / "1.log") == 0, 10,
                 "the follows to end")
    finally:
        server.stop()


def test_render_edge_cases() -> None:
    data = (
        b"garbage\n"
        b"2024-05-01T10:00:00Z stdout P out-1 \n"
        b"2024-05-01T10:00:01Z stderr P err-1 \n"
        b"2024-05-01T10:00:02Z stdout F out-2\n"
        b"2024-05-01T10:00:03Z stdout X unknown tag\n"
        b"2024-05-01T10:00:04Z stdout F \n"
        b"2024-05-01T10:00:05Z stderr P err-2"
    )
    # Records in the file's order, a P record without its newline, as upstream.
    assert render_logs(data, LogOptions()) == b"out-1 err-1 out-2\nunknown tag\n\nerr-2"
    assert fixed_timestamp("2024-05-01T10:00:00.12+02:00") == "2024-05-01T10:00:00.120000000+02:00"
    assert fixed_timestamp("not a time") == "not a time"
    assert render_logs(data, LogOptions(tail_lines=1, timestamps=True)) == (
        b"2024-05-01T10:00:05.000000000Z err-2")


# --- errors and methods ---------------------------------------------------------------


def test_unknown_path_is_a_status_404(main_port: int) -> None:
    resp = request(main_port, "/nosuch/path")
    assert resp.status == 404
    assert resp.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the server could not find the requested resource", "reason": "NotFound",
        "code": 404,
    }


def test_only_get_and_head(main_port: int) -> None:
    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        resp = request(main_port, "/pods", method=method)
        assert resp.status == 405, method
        assert resp.headers["Allow"] == "GET, HEAD"
        assert resp.json()["code"] == 405
    resp = request(main_port, "/pods", method="HEAD")
    assert resp.status == 200
    assert resp.body == b""
    assert int(resp.headers["Content-Length"]) > 0


def test_view_errors_are_500_and_the_server_goes_on(view: FakeView, main_port: int) -> None:
    view.broken = True
    resp = request(main_port, "/pods")
    assert resp.status == 500
    assert resp.json()["message"] == "RuntimeError: the pod manager is gone"
    view.broken = False
    assert request(main_port, "/pods").status == 200


# --- listeners ------------------------------------------------------------------------


def _busy_port() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock


@pytest.mark.parametrize(("kwarg", "flag"), [
    ("port", "--port"), ("read_only_port", "--read-only-port"),
    ("healthz_port", "--healthz-port"),
])
def test_port_in_use_is_a_config_error_naming_the_flag(
    view: FakeView, kwarg: str, flag: str
) -> None:
    with _busy_port() as busy:
        port = busy.getsockname()[1]
        ports = {"port": ANY_PORT, "read_only_port": ANY_PORT, "healthz_port": ANY_PORT}
        ports[kwarg] = port
        srv = KubeletHTTPServer(view, port=ports["port"], read_only_port=ports["read_only_port"],
                                healthz_port=ports["healthz_port"])
        with pytest.raises(ConfigError) as info:
            srv.start()
        message = str(info.value)
        assert f"{flag}={port}" in message
        assert f"127.0.0.1:{port}" in message
        assert "already in use" in message
        assert srv.bound_ports == {}
        srv.stop()


def test_port_zero_disables_a_listener(view: FakeView) -> None:
    srv = KubeletHTTPServer(view, port=ANY_PORT, read_only_port=0, healthz_port=0)
    srv.start()
    try:
        assert set(srv.bound_ports) == {MAIN}
        assert request(srv.bound_ports[MAIN], "/healthz").status == 200
    finally:
        srv.stop()


def test_out_of_range_port_is_a_config_error(view: FakeView) -> None:
    with pytest.raises(ConfigError, match="--healthz-port=70000"):
        KubeletHTTPServer(view, healthz_port=70000)


def test_stop_frees_the_ports(view: FakeView) -> None:
    srv = KubeletHTTPServer(view, port=ANY_PORT, read_only_port=ANY_PORT,
                            healthz_port=ANY_PORT)
    srv.start()
    ports = dict(srv.bound_ports)
    for port in ports.values():
        assert request(port, "/healthz").status == 200
    srv.stop()
    srv.stop()  # idempotent
    assert srv.bound_ports == {}
    for port in ports.values():
        with pytest.raises(urllib.error.URLError):
            request(port, "/healthz")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen(1)
    again = KubeletHTTPServer(view, port=ports[MAIN], read_only_port=ports[READ_ONLY],
                              healthz_port=ports[HEALTHZ])
    again.start()
    try:
        assert again.bound_ports == ports
        assert request(ports[MAIN], "/healthz").status == 200
    finally:
        again.stop()
