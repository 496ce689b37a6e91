"""Proxying an upgraded connection to the runtime's streaming server, byte for byte.

Upstream's kubelet hands exec, attach and port-forward to apimachinery's
UpgradeAwareHandler: it dials the URL CRI returned, writes the client's request to it (the
path and host of that URL, the client's headers, X-Forwarded-For appended), then copies
bytes both ways until either side ends, and closes both. Whatever protocol the client and
the runtime agree on (SPDY/3.1, websocket channel protocols) passes through untouched, and
so does a refusal (a 403 for a websocket subprotocol the runtime does not speak, which
tells kubectl to fall back to SPDY).

Here one thread per stream moves the bytes with non-blocking sockets and ``poll`` (one
thread, not two, because an SSL socket must not be read and written from two threads at
once). A stream ends when either side closes or fails; then both sockets are closed and the
thread ends. ``StreamSessions.stop()`` ends every live stream (the server is stopping).
Handed-over client connections get no Nagle delay and TCP keepalives (15 s, as Go's
servers), so that a client that vanishes without a FIN is noticed.
"""

from __future__ import annotations

import contextlib
import itertools
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Iterable

from loguru import logger
from msgspec import Struct

_CHUNK = 64 * 1024
_BACKLOG = 1024 * 1024  # bytes held for a slow reader before its writer is paused
_DIAL_TIMEOUT = 10.0
_FLUSH_TIMEOUT = 5.0
_KEEPALIVE = 15
_JOIN_TIMEOUT = 5.0
# Not forwarded to the runtime: hop-by-hop for this request, or rewritten, or the
# client's credentials (the runtime's server on loopback needs none).
_DROPPED = frozenset({"host", "authorization", "proxy-authorization", "x-forwarded-for"})
# The WSGI server joins repeated headers with ", "; SPDY's protocol negotiation reads each
# X-Stream-Protocol-Version line as one protocol, so those go out one per line again.
_REPEATED = frozenset({"x-stream-protocol-version"})


class BackendError(OSError):
    """The runtime's streaming server cannot be reached."""


class Backend(Struct, frozen=True):
    """Where a stream goes: host, port and request target of the runtime's URL."""

    host: str
    port: int
    target: str

    @classmethod
    def from_url(cls, url: str) -> Backend:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            # containerd's enable_tls_streaming: not used by the embedded containerd.
            raise BackendError(f"unsupported streaming URL {url!r}: only http:// is proxied")
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(parts.hostname, parts.port or 80, target)

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def backend_request(method: str, backend: Backend, headers: Iterable[tuple[str, str]],
                    client_ip: str) -> bytes:
    """The request head sent to the runtime: the client's method and headers, the runtime
    URL's target and host, and X-Forwarded-For with the client's address appended."""
    lines = [f"{method} {backend.target} HTTP/1.1", f"Host: {backend.host_header}"]
    forwarded: list[str] = []
    for name, value in headers:
        if name.lower() == "x-forwarded-for":
            forwarded.append(value)
        elif name.lower() in _REPEATED:
            lines += [f"{name}: {part.strip()}" for part in value.split(",") if part.strip()]
        elif name.lower() not in _DROPPED:
            lines.append(f"{name}: {value}")
    if client_ip:
        forwarded.append(client_ip)
    if forwarded:
        lines.append(f"X-Forwarded-For: {', '.join(forwarded)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def dial(backend: Backend) -> socket.socket:
    """A connected socket to the runtime's streaming server, or BackendError."""
    try:
        sock = socket.create_connection((backend.host, backend.port), timeout=_DIAL_TIMEOUT)
    except OSError as err:
        raise BackendError(f"error dialing backend: {err}") from err
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def keep_alive(sock: socket.socket) -> None:
    """TCP keepalives and no Nagle delay on an accepted connection, as Go sets them (a
    small write after unacknowledged TLS records would otherwise wait out the peer's
    delayed ACK, 40 ms)."""
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, _KEEPALIVE)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, _KEEPALIVE)


def _shutdown(sock: socket.socket) -> None:
    # The plain socket's shutdown, also for an SSL socket: it wakes a poll on it without
    # touching the SSL object another thread may be using.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Pipe:
    """Both directions of one stream, moved by one thread until either side ends."""

    def __init__(self, client: socket.socket, backend: socket.socket, to_backend: bytes,
                 name: str) -> None:
        self.client = client
        self.backend = backend
        self.name = name
        # Bytes waiting to be written to each socket (read from the other one).
        self._out: dict[socket.socket, bytearray] = {
            client: bytearray(), backend: bytearray(to_backend)}
        self._peer = {client: backend, backend: client}

    def run(self) -> None:
        try:
            self._move()
        except Exception as err:  # never expected: the stream ends either way
            logger.opt(exception=err).warning("stream {} failed: {}", self.name, err)
        finally:
            self._flush()
            for sock in (self.client, self.backend):
                _shutdown(sock)
                sock.close()

    def stop(self) -> None:
        """Wake the thread: both sockets read as ended."""
        _shutdown(self.client)
        _shutdown(self.backend)

    def _move(self) -> None:
        for sock in (self.client, self.backend):
            sock.setblocking(False)
        poller = select.poll()
        fds = {sock.fileno(): sock for sock in (self.client, self.backend)}
        while True:
            pending = False
            for sock in (self.client, self.backend):
                mask = 0
                if len(self._out[self._peer[sock]]) < _BACKLOG:
                    mask |= select.POLLIN
                    # Decrypted bytes the SSL layer holds are not seen by poll.
                    pending = pending or (isinstance(sock, ssl.SSLSocket) and sock.pending() > 0)
                if self._out[sock]:
                    mask |= select.POLLOUT
                poller.register(sock, mask)
            for fd, events in poller.poll(0 if pending else None):
                sock = fds[fd]
                writable = events & (select.POLLOUT | select.POLLERR) and self._out[sock]
                if writable and not self._write(sock):
                    return
                readable = events & (select.POLLIN | select.POLLHUP | select.POLLERR)
                if readable and not self._read(sock):
                    return
            if pending:
                for sock in (self.client, self.backend):
                    if isinstance(sock, ssl.SSLSocket) and sock.pending() > 0 \
                            and not self._read(sock):
                        return

    def _read(self, sock: socket.socket) -> bool:
        """Move what ``sock`` has to its peer's queue; False once it has ended."""
        try:
            data = sock.recv(_CHUNK)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return True
        except OSError:
            return False
        if not data:
            return False
        self._out[self._peer[sock]].extend(data)
        return True

    def _write(self, sock: socket.socket) -> bool:
        queue = self._out[sock]
        try:
            sent = sock.send(queue[:_CHUNK])
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return True
        except OSError:
            queue.clear()
            return False
        del queue[:sent]
        return True

    def _flush(self) -> None:
        """What one side sent before it ended still reaches the other (as io.Copy)."""
        deadline = time.monotonic() + _FLUSH_TIMEOUT
        for sock in (self.client, self.backend):
            queue = self._out[sock]
            while queue and time.monotonic() < deadline:
                try:
                    select.select([], [sock], [], max(0.0, deadline - time.monotonic()))
                    if not self._write(sock):
                        break
                except (OSError, ValueError):
                    break


def pipe(client: socket.socket, backend: socket.socket, to_backend: bytes, name: str) -> None:
    """Move bytes between ``client`` and ``backend`` on this thread until either ends, then
    close both (what ``StreamSessions`` runs on a thread of its own)."""
    _Pipe(client, backend, to_backend, name).run()


class StreamSessions:
    """The live proxied streams of a listener, each on its own thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, tuple[_Pipe, threading.Thread]] = {}
        self._ids = itertools.count(1)
        self._stopped = False

    def __len__(self) -> int:
        with self._lock:
            return len(self._live)

    def start(self, client: socket.socket, backend: socket.socket, to_backend: bytes,
              name: str) -> None:
        """Move bytes between ``client`` and ``backend`` (first sending ``to_backend``:
        the request head and what the client sent after it) until either ends; the
        sockets now belong to the stream."""
        keep_alive(client)
        with self._lock:
            if self._stopped:
                client.close()
                backend.close()
                return
            number = next(self._ids)
            pipe = _Pipe(client, backend, to_backend, f"{name}#{number}")
            thread = threading.Thread(target=self._run, args=(number, pipe),
                                      name=f"stream-{number}", daemon=True)
            self._live[number] = (pipe, thread)
        logger.debug("stream {} started", pipe.name)
        thread.start()

    def _run(self, number: int, pipe: _Pipe) -> None:
        try:
            pipe.run()
        finally:
            with self._lock:
                self._live.pop(number, None)
            logger.debug("stream {} ended", pipe.name)

    def stop(self) -> None:
        """End every live stream and wait for their threads; later starts are refused."""
        with self._lock:
            self._stopped = True
            live = list(self._live.values())
        for pipe, _thread in live:
            pipe.stop()
        for _pipe, thread in live:
            thread.join(_JOIN_TIMEOUT)
