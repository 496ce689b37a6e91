"""What the kubelet's stream proxy costs: an exec's bytes through the main port (TLS,
hand-over, one proxy thread) against the same bytes straight to the runtime's server.

    .venv/bin/python -m bench.stream_bench [--quick]

In-process and runtime-free: the "runtime" is an echo server on loopback that answers the
upgrade with 101 (as containerd's streaming server does) and then echoes. Measured: the
round trip of a 1-byte message (p50, p99), the throughput of 64 MiB sent and echoed back,
and the time from the upgrade request to its 101, each through the kubelet and direct;
printed with the ratio. Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import socket
import ssl
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from actors.app.http.server import ANY_PORT, MAIN, KubeletHTTPServer
from actors.app.http.stream_routes import StreamHost
from actors.app.http.tls import TLSSettings, server_context, serving_pair
from actors.kubelet.messages import RuntimePod
from actors.kubelet.metrics import KubeletMetrics
from runtime.cri.streaming import StreamingCRI
from runtime.cri.types import (
    Container,
    ContainerMetadata,
    ContainerState,
    ContainerStatus,
    ImageSpec,
)
from runtime.ids import ContainerID, SandboxID
from runtime.pod.model import Container as SpecContainer
from runtime.pod.model import ObjectMeta, Pod, PodSpec
from runtime.status.types import PodStatus

_HEAD = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: bench\r\nConnection: Upgrade\r\n\r\n"


def _echo_server() -> socket.socket:
    listener = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            conn.sendall(_HEAD + data.partition(b"\r\n\r\n")[2])
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while chunk := conn.recv(262144):
                conn.sendall(chunk)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener


class _View:
    def __init__(self) -> None:
        self._pod = Pod(metadata=ObjectMeta(name="web", namespace="default", uid="u1"),
                        spec=PodSpec(containers=(SpecContainer(name="main", image="x"),)))

    def pods(self) -> tuple[tuple[Pod, PodStatus], ...]:
        return ((self._pod, PodStatus(phase="Running")),)

    def running_pods(self) -> tuple[RuntimePod, ...]:
        return ()

    def health(self) -> Mapping[str, str | None]:
        return {}

    def metrics(self) -> KubeletMetrics:
        return KubeletMetrics()

    def refresh_metrics(self) -> None:
        pass

    def container_status(self, container_id: ContainerID) -> ContainerStatus | None:
        return None


class _Runtime:
    def __init__(self, url: str) -> None:
        self.url = url

    def list_containers(self, filter: Any = None) -> tuple[Container, ...]:
        return (Container(ContainerID("c"), SandboxID("s"), ContainerMetadata("main", 0),
                          ImageSpec("x"), "", ContainerState.RUNNING, 1.0),)

    def exec(self, *args: Any) -> str:
        return self.url


def _upgrade(connect: Callable[[], socket.socket], path: str) -> tuple[socket.socket, float]:
    started = time.perf_counter()
    sock = connect()
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                 "Upgrade: bench\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock, time.perf_counter() - started


def _measure(connect: Callable[[], socket.socket], path: str, rounds: int,
             megabytes: int) -> dict[str, float]:
    setups = []
    for _ in range(20):
        sock, seconds = _upgrade(connect, path)
        setups.append(seconds)
        sock.close()
    sock, _ = _upgrade(connect, path)
    trips = []
    for _ in range(rounds):
        started = time.perf_counter()
        sock.sendall(b"x")
        sock.recv(1)
        trips.append(time.perf_counter() - started)
    block = b"y" * 262144
    total = megabytes * 1024 * 1024
    received = 0

    def drain() -> None:
        nonlocal received
        while received < total:
            received += len(sock.recv(262144))

    reader = threading.Thread(target=drain)
    started = time.perf_counter()
    reader.start()
    for _ in range(total // len(block)):
        sock.sendall(block)
    reader.join()
    elapsed = time.perf_counter() - started
    sock.close()
    trips.sort()
    return {"setup_ms": statistics.median(setups) * 1000,
            "rtt_p50_us": trips[len(trips) // 2] * 1e6,
            "rtt_p99_us": trips[int(len(trips) * 0.99)] * 1e6,
            "mib_s": megabytes / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, megabytes = (500, 16) if args.quick else (3000, 64)
    echo = _echo_server()
    url = f"http://127.0.0.1:{echo.getsockname()[1]}/exec/token"
    with tempfile.TemporaryDirectory() as tmp:
        settings = TLSSettings(cert_dir=tmp, node_name="bench")
        cert, key = serving_pair(settings)
        view = _View()
        server = KubeletHTTPServer(
            view, port=ANY_PORT, read_only_port=0, healthz_port=0,
            tls=(server_context(settings, cert, key), cert, key),
            streams=StreamHost(view, cast(StreamingCRI, _Runtime(url))))
        server.start()
        port = server.bound_ports[MAIN]
        client = ssl._create_unverified_context()
        try:
            direct = _measure(lambda: socket.create_connection(echo.getsockname()),
                              "/exec/token", rounds, megabytes)
            proxied = _measure(
                lambda: client.wrap_socket(socket.create_connection(("127.0.0.1", port))),
                "/exec/default/web/main?command=cat&input=1&output=1", rounds, megabytes)
        finally:
            server.stop()
            echo.close()
    print(f"{'':14}{'direct':>12}{'kubelet':>12}{'ratio':>10}")
    for name in ("setup_ms", "rtt_p50_us", "rtt_p99_us", "mib_s"):
        print(f"{name:14}{direct[name]:12.1f}{proxied[name]:12.1f}"
              f"{proxied[name] / direct[name]:10.2f}")


if __name__ == "__main__":
    main()
