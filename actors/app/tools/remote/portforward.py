"""``kubelet-actors port-forward POD [-n NAMESPACE] LOCAL:REMOTE...``, as kubectl's.

Each ``LOCAL:REMOTE`` (``PORT`` for the same number, ``:REMOTE`` for any free local port)
listens on 127.0.0.1:LOCAL; every connection accepted there gets its own websocket to the
daemon's ``/portForward/{ns}/{pod}?port=REMOTE`` (protocol ``v4.channel.k8s.io``: channel
0 carries the data both ways, channel 1 the runtime's error, each first carrying the port),
and the bytes are moved both ways until either side closes. Runs until interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import sys
import threading
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

from actors.app.tools.remote import channels
from actors.app.tools.remote.server import ServerOptions, add_server_flags
from actors.app.tools.remote.session import StreamRefused, open_stream, stream_url
from runtime.pod import stream_params

EXIT_FAILED = 1
_READ = 32 * 1024


@dataclass(frozen=True, slots=True)
class PortPair:
    local: int  # 0: any free port
    remote: int


def parse_port_pairs(specs: Sequence[str]) -> tuple[PortPair, ...]:
    """kubectl's port specs, or ValueError naming the bad one."""
    pairs: list[PortPair] = []
    for spec in specs:
        local_text, sep, remote_text = spec.partition(":")
        if not sep:
            remote_text = local_text
        if sep and not local_text:
            local_text = "0"
        try:
            local, remote = int(local_text), int(remote_text)
        except ValueError:
            raise ValueError(f"Error parsing port {spec!r}: invalid port") from None
        if not 0 <= local <= 65535:
            raise ValueError(f"Error parsing local port '{local_text}': out of range")
        if not 0 < remote <= 65535:
            raise ValueError(f"Error parsing remote port '{remote_text}': out of range")
        pairs.append(PortPair(local, remote))
    return tuple(pairs)


class PortForwarder:
    """Listeners for each pair and a websocket per accepted connection; ``stop()`` ends
    them all."""

    def __init__(self, server: ServerOptions, namespace: str, pod: str,
                 pairs: Sequence[PortPair], address: str = "127.0.0.1") -> None:
        self._server = server
        self._path = "/portForward/" + "/".join(
            urllib.parse.quote(s, safe="") for s in (namespace, pod))
        self._pairs = tuple(pairs)
        self._address = address
        self._listeners: list[tuple[socket.socket, int]] = []
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()

    @property
    def ports(self) -> tuple[tuple[int, int], ...]:
        """The (local, remote) ports, with the local ports actually bound."""
        return tuple((sock.getsockname()[1], remote) for sock, remote in self._listeners)

    def start(self) -> None:
        for pair in self._pairs:
            sock = socket.create_server((self._address, pair.local))
            self._listeners.append((sock, pair.remote))
        for sock, remote in self._listeners:
            threading.Thread(target=self._accept, args=(sock, remote), daemon=True,
                             name=f"forward-{remote}").start()

    def stop(self) -> None:
        self._stopping.set()
        for sock, _remote in self._listeners:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)

    def _accept(self, listener: socket.socket, remote: int) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            print(f"Handling connection for {listener.getsockname()[1]}", file=sys.stderr)
            threading.Thread(target=self._forward, args=(conn, remote), daemon=True).start()

    def _forward(self, conn: socket.socket, remote: int) -> None:
        with self._lock:
            self._open.add(conn)
        try:
            url = stream_url(self._server, self._path, [(stream_params.PORT, str(remote))])
            try:
                ws = open_stream(self._server, url, channels.PORT_FORWARD_PROTOCOLS)
            except StreamRefused as err:
                print(f"error: {self._server.https_hint() or err}", file=sys.stderr)
                return
            with ws:
                threading.Thread(target=self._to_remote, args=(conn, ws), daemon=True).start()
                self._from_remote(conn, ws, remote)
        finally:
            with self._lock:
                self._open.discard(conn)
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    @staticmethod
    def _to_remote(conn: socket.socket, ws: ClientConnection) -> None:
        try:
            while data := conn.recv(_READ):
                ws.send(channels.encode(0, data))
        except (OSError, ConnectionClosed):
            pass
        with contextlib.suppress(Exception):
            ws.close()

    @staticmethod
    def _from_remote(conn: socket.socket, ws: ClientConnection, remote: int) -> None:
        headers = {0: False, 1: False}  # each channel starts with the port: skipped once
        try:
            for message in ws:
                channel, data = channels.decode(message)
                if channel in headers and not headers[channel]:
                    headers[channel] = True
                    data = data[2:]
                if channel == 0 and data:
                    conn.sendall(data)
                elif channel == 1 and data:
                    print(f"error: an error occurred forwarding to {remote}: "
                          f"{data.decode(errors='replace')}", file=sys.stderr)
        except (OSError, ConnectionClosed, channels.ProtocolError):
            pass


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubelet-actors port-forward",
        usage="%(prog)s POD [LOCAL:]REMOTE [[LOCAL:]REMOTE...] [-n NAMESPACE] "
              "[--address ADDRESS] [--server URL] [TLS and token flags]",
        description="Forward local ports to ports of a pod on the daemon, as kubectl "
                    "port-forward does: each connection accepted on ADDRESS:LOCAL is "
                    "carried to REMOTE in the pod's network namespace. Runs until "
                    "interrupted.",
        epilog="exit codes: 0 interrupted after forwarding; 1 a port spec is wrong or a "
               "local port cannot be listened on; 2 a flag is wrong. A connection the "
               "daemon refuses is reported and closed; the others go on.")
    add = parser.add_argument
    add("pod", metavar="POD", help="the pod's name")
    add("ports", nargs="+", metavar="[LOCAL:]REMOTE",
        help="REMOTE alone listens on the same local port; :REMOTE on any free one")
    add("-n", "--namespace", default="default", help="the pod's namespace (default: default)")
    add("--address", default="127.0.0.1",
        help="the local address to listen on (default: 127.0.0.1)")
    add_server_flags(parser)
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv[1:]))
    try:
        pairs = parse_port_pairs(args.ports)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
    forwarder = PortForwarder(ServerOptions.from_args(args), args.namespace, args.pod, pairs,
                              args.address)
    try:
        forwarder.start()
    except OSError as err:
        print(f"error: unable to listen on any of the requested ports: {err}", file=sys.stderr)
        return EXIT_FAILED
    for local, remote in forwarder.ports:
        print(f"Forwarding from {args.address}:{local} -> {remote}", flush=True)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    while not stop.wait(1.0):
        pass
    forwarder.stop()
    return 0
