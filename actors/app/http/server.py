"""The kubelet's HTTP listeners: main, read-only and healthz ports, served by cheroot.

Upstream's kubelet listens on three ports: the main port (10250, HTTPS with
authentication and authorization), the read-only port (10255, plain HTTP, no
authentication) and the healthz port (10248, on ``--healthz-bind-address``). Each is a
cheroot WSGI server on a socket of its own, plain or (the main port, given an SSL
context) TLS, all served alike: one thread accepts connections and watches idle
keep-alive ones, a small pool of worker threads serves a request each, and the gateway
(actors.app.http.upgrade) hands an upgraded connection (exec, attach, port-forward) to a
stream thread of its own and tells a streaming response when its client has gone
(actors.app.http.disconnect). Over TLS, the client certificate's subject reaches the app
in the WSGI environ (``actors.app.http.auth.PEER_SUBJECT``); plain HTTP sent to the TLS
port gets Go's 400 (actors.app.http.tls.PLAIN_HTTP_ANSWER) instead of a reset connection
(``_answer_plain_http``). All sockets are bound in
``start()`` before anything is served, so a port in use fails the start with a
ConfigError naming the flag instead of leaving a kubelet half up.

Unlike upstream, the read-only port also serves the debugging handlers
(``/containerLogs``, ``/runningpods/``); it is off unless asked for in cluster mode.

Port numbers: 0 disables a listener, as upstream. ``ANY_PORT`` (-1) binds any free
port; it exists for tests, which read the ports actually bound from ``bound_ports``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import ssl
import struct
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cheroot import wsgi as cheroot_wsgi
from cheroot.ssl import Adapter
from cheroot.ssl.builtin import BuiltinSSLAdapter
from loguru import logger

from actors.app.http.auth import PEER_SUBJECT, KubeletAuth
from actors.app.http.routes import WSGIApp, add_configz_route, build_app, build_healthz_app
from actors.app.http.stats import StatsEndpoints
from actors.app.http.stream_proxy import StreamSessions
from actors.app.http.stream_routes import StreamHost, add_disabled_stream_routes, add_stream_routes
from actors.app.http.timeline import LiveTrace, add_timeline_route
from actors.app.http.tls import PLAIN_HTTP_ANSWER, RECORD_HEADER_LEN, looks_like_plain_http
from actors.app.http.upgrade import install_gateway
from actors.app.http.view import KubeletView
from runtime.errors import ConfigError

DISABLED = 0
"""A port of 0 turns its listener off (upstream: ``--read-only-port=0``, ...)."""

ANY_PORT = -1
"""Tests only: bind any free port; ``bound_ports`` tells which."""

MAIN, READ_ONLY, HEALTHZ = "main", "read-only", "healthz"
"""Listener names, the keys of ``bound_ports``."""

_SERVE_ORDER = (HEALTHZ, READ_ONLY, MAIN)
"""The order listeners are served in: the one the start is judged by first, the main
port (whose TLS server costs the most to start) last."""
WORKER_THREADS = {MAIN: 4, READ_ONLY: 4, HEALTHZ: 2}
"""Each listener's worker threads: the requests it serves at once (a followed log holds
one until it ends; an exec, attach or port-forward only until it is handed over)."""
_FLAGS = {MAIN: "--port", READ_ONLY: "--read-only-port", HEALTHZ: "--healthz-port"}
_ADDRESS_FLAGS = {MAIN: "--address", READ_ONLY: "--address", HEALTHZ: "--healthz-bind-address"}
_JOIN_TIMEOUT = 10.0


@dataclass
class _Listener:
    """One bound socket and, once serving, its server and the server's accept thread."""

    name: str
    address: str
    sock: socket.socket
    server: _BoundServer | None = None
    thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])


def _bind(name: str, address: str, port: int) -> socket.socket:
    """A listening TCP socket on ``address:port``, or a ConfigError naming the flags."""
    where = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    flag = f"{_FLAGS[name]}={port} {_ADDRESS_FLAGS[name]}={address}"
    try:
        infos = socket.getaddrinfo(
            address, max(port, 0), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise ConfigError(f"{flag}: cannot resolve {address!r}: {err}") from err
    family, socktype, proto, _canon, sockaddr = infos[0]
    sock = socket.socket(family, socktype, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
        sock.listen(1024)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"{flag}: cannot listen on {where}: the address is already in use") from err
        raise ConfigError(f"{flag}: cannot listen on {where}: {err.strerror or err}") from err
    return sock


_TLS_HANDSHAKE = 0x16
"""The content type of a TLS record that starts a handshake: a ClientHello's first byte."""
_PEEK_TIMEOUT = 10.0
"""How long the first bytes of a connection that does not start as TLS are waited for (as
cheroot waits for a handshake: its connection timeout)."""
_DRAIN_TIMEOUT, _DRAIN_LIMIT = 1.0, 64 << 10
"""How long, and how much of, a plain HTTP request is read after the answer, so that
closing with it unread does not reset the connection before the client reads the 400."""


class _PlainHTTPAnswered(ConnectionAbortedError):
    """Raised out of the adapter's wrap once plain HTTP was answered: cheroot drops a
    connection that fails so without a word (ECONNABORTED is among the errors it ignores),
    as Go's server logs nothing for it."""

    def __init__(self) -> None:
        super().__init__(errno.ECONNABORTED, "plain HTTP answered on the TLS port")


def _first_bytes(sock: socket.socket) -> bytes:
    """The connection's first ``RECORD_HEADER_LEN`` bytes, left unread for the handshake
    (fewer when the client stops or closes first): a TLS client's first byte is enough,
    anything else is waited for in full, as Go reads a whole record header."""
    saved = sock.gettimeout()
    try:
        first = sock.recv(1, socket.MSG_PEEK)
        if not first or first[0] == _TLS_HANDSHAKE:
            return first
        sock.settimeout(None)  # blocking, bounded by SO_RCVTIMEO: MSG_WAITALL waits then
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                        _timeval(_PEEK_TIMEOUT))
        try:
            return sock.recv(RECORD_HEADER_LEN, socket.MSG_PEEK | socket.MSG_WAITALL)
        finally:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(0))
    except OSError:
        return b""  # the handshake will meet the same end and report it
    finally:
        sock.settimeout(saved)


def _timeval(seconds: float) -> bytes:
    whole = int(seconds)
    return struct.pack("ll", whole, int((seconds - whole) * 1_000_000))


def _answer_plain_http(sock: socket.socket) -> None:
    """Write Go's 400 on the raw connection, let the client read it, and close."""
    try:
        sock.sendall(PLAIN_HTTP_ANSWER)
        sock.shutdown(socket.SHUT_WR)  # the answer's end: its body is read to here
        sock.settimeout(_DRAIN_TIMEOUT)
        deadline, drained = time.monotonic() + _DRAIN_TIMEOUT, 0
        while drained < _DRAIN_LIMIT and time.monotonic() < deadline:
            chunk = sock.recv(_DRAIN_LIMIT)
            if not chunk:
                break
            drained += len(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sock.close()


class _PeerSubjectAdapter(BuiltinSSLAdapter):
    """cheroot's stdlib-ssl adapter on our context, passing the client certificate's
    subject (checked by the handshake) to the app."""

    def __init__(self, context: ssl.SSLContext, cert: str, key: str) -> None:
        # Only the base Adapter's attributes, not BuiltinSSLAdapter.__init__: that builds an
        # SSL context of its own (reading the system's CA bundle) which ours replaces, and
        # parses the serving certificate through a TLS handshake with itself (a second
        # context, a socket pair, a thread), some 30 ms of CPU before the daemon serves,
        # only to put SSL_SERVER_* into every request's environ, which nothing here reads.
        Adapter.__init__(self, cert, key)
        self.context = context
        self._server_env: dict[str, Any] = {}

    def wrap(self, sock: socket.socket) -> tuple[ssl.SSLSocket, dict[str, Any]]:
        """The handshake (cheroot's), unless the client speaks plain HTTP: then Go's 400."""
        if looks_like_plain_http(_first_bytes(sock)):
            logger.debug("plain HTTP from {} on the TLS port: answered 400",
                         _peer(sock))
            _answer_plain_http(sock)
            raise _PlainHTTPAnswered
        wrapped: tuple[ssl.SSLSocket, dict[str, Any]] = super().wrap(sock)  # type: ignore[no-untyped-call]
        return wrapped

    def get_environ(self, sock: ssl.SSLSocket) -> dict[str, Any]:  # type: ignore[override]
        env: dict[str, Any] = super().get_environ(sock)  # type: ignore[no-untyped-call]
        peer = sock.getpeercert()
        if peer:
            env[PEER_SUBJECT] = peer.get("subject")
        return env


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return "a client gone"
    return f"{host}:{port}"


class _BoundServer(cheroot_wsgi.Server):
    """A cheroot WSGI server on a socket bound beforehand (``_bind``), TLS with an
    ``adapter``."""

    def __init__(self, sock: socket.socket, app: WSGIApp, adapter: _PeerSubjectAdapter | None,
                 threads: int) -> None:
        super().__init__(sock.getsockname()[:2], app, numthreads=threads,
                         server_name="kubelet-actors")
        self._bound = sock
        self.ssl_adapter = adapter

    def bind(self, family: int, type: int, proto: int = 0) -> socket.socket:
        self.socket = self._bound
        self.bind_addr = self._bound.getsockname()[:2]
        return self._bound


_SOCKET_ACTIVATION = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


def _drop_socket_activation() -> None:
    """Forget systemd's socket activation, as sd_listen_fds(unset_environment=1) does.

    The kubelet binds its own ports (upstream takes no sockets from systemd), but cheroot's
    prepare() serves file descriptor 3 instead of the socket it is given whenever
    LISTEN_PID is set, so a socket-activated unit would serve whatever fd 3 is."""
    found = [name for name in _SOCKET_ACTIVATION if os.environ.pop(name, None) is not None]
    if found:
        logger.warning("ignoring systemd socket activation ({}): the kubelet binds its own "
                       "ports", ", ".join(found))


def _serve(name: str, server: _BoundServer) -> None:
    """The accept thread of the listener ``name``, until ``stop()``."""
    try:
        server.serve()
    except Exception as err:  # never expected: cheroot handles errors per connection
        logger.opt(exception=err).error("HTTP {} listener failed: {}", name, err)


class KubeletHTTPServer:
    """The kubelet's HTTP API over a KubeletView, on up to three ports.

    The main and read-only ports serve every endpoint (see actors.app.http.routes), the
    healthz port only ``/healthz`` and its per-check subpaths; ``configz`` (the answer of
    ``/configz``) is served on the main port only, as upstream. With ``tls`` (an SSL
    context and the serving pair's files) the main port is HTTPS; with ``auth`` its
    requests are authenticated and authorized first. ``start()`` binds, then serves in
    threads of its own; ``stop()`` stops serving, closes the sockets and joins the threads.
    Both are meant to be called from one thread (the daemon's main).
    """

    def __init__(
        self,
        view: KubeletView,
        address: str = "127.0.0.1",
        port: int = 10250,
        read_only_port: int = 10255,
        healthz_port: int = 10248,
        healthz_address: str = "127.0.0.1",
        tls: tuple[ssl.SSLContext, str, str] | None = None,
        auth: KubeletAuth | None = None,
        stats: StatsEndpoints | None = None,
        streams: StreamHost | None = None,
        trace: LiveTrace | None = None,
        configz: bytes | None = None,
    ) -> None:
        for name, value in ((MAIN, port), (READ_ONLY, read_only_port),
                            (HEALTHZ, healthz_port)):
            if not ANY_PORT <= value <= 65535:
                raise ConfigError(f"{_FLAGS[name]}={value}: must be between 0 and 65535")
        self._view = view
        self._tls = tls
        self._auth = auth
        self._stats = stats
        self._streams = streams  # exec, attach, port-forward on the main port
        self._trace = trace  # /debug/timeline shows the trace recorded there
        self._configz = configz  # /configz's answer, on the main port only (as upstream)
        self._sessions = StreamSessions()
        self._wanted = (
            (MAIN, address, port), (READ_ONLY, address, read_only_port),
            (HEALTHZ, healthz_address, healthz_port),
        )
        self._listeners: list[_Listener] = []
        self._stopping = threading.Event()  # ends followed logs when the server stops

    @property
    def bound_ports(self) -> Mapping[str, int]:
        """The port each running listener is bound to, by name (``main``, ``read-only``,
        ``healthz``); disabled listeners are absent, and all are before ``start()``."""
        return {listener.name: listener.port for listener in self._listeners}

    def start(self) -> None:
        """Bind every enabled listener, then serve them, the healthz port first and the
        main port last. Raises ConfigError (and serves nothing) when a port cannot be
        bound.

        The healthz port is served first: what it answers (the sync loop's health) is up
        already, and building the other ports' apps and starting their worker threads
        (tens of milliseconds on a busy start, each thread waiting for the GIL) need not
        come before it. Their sockets
        are listening by then: a connection made meanwhile waits in the backlog, and a
        server that cannot start still fails the start."""
        if self._listeners:
            raise RuntimeError("the kubelet HTTP server is already started")
        self._stopping.clear()
        self._sessions = StreamSessions()
        _drop_socket_activation()
        listeners: list[_Listener] = []
        try:
            for name, address, port in self._wanted:
                if port == DISABLED:
                    continue
                sock = _bind(name, address, 0 if port == ANY_PORT else port)
                listeners.append(_Listener(name, address, sock))
        except BaseException:
            for listener in listeners:
                listener.sock.close()
            raise
        try:
            for listener in sorted(listeners, key=lambda listener: _SERVE_ORDER.index(
                    listener.name)):
                self._serve(listener, self._app(listener.name))  # enabled ones' only
        except BaseException:
            for listener in listeners:
                if listener.server is None:
                    listener.sock.close()
            self.stop()
            raise

    def _app(self, name: str) -> WSGIApp:
        """The app of the listener ``name``."""
        if name == HEALTHZ:
            return build_healthz_app(self._view)
        if name == READ_ONLY:
            app = build_app(self._view, self._stopping, stats=self._stats)
            add_disabled_stream_routes(app)
        else:
            app = build_app(self._view, self._stopping,
                            [self._auth.middleware()] if self._auth is not None else (),
                            self._stats)
            if self._streams is not None:
                add_stream_routes(app, self._streams)
            if self._configz is not None:
                add_configz_route(app, self._configz)
        add_timeline_route(app, self._trace)
        return app

    def _serve(self, listener: _Listener, app: WSGIApp) -> None:
        """Hand a bound socket to a new server (TLS for the main port given a context)
        and start its accept thread."""
        adapter = None
        if listener.name == MAIN and self._tls is not None:
            context, cert, key = self._tls
            adapter = _PeerSubjectAdapter(context, cert, key)
        server = _BoundServer(listener.sock, app, adapter, WORKER_THREADS[listener.name])
        install_gateway(server, self._sessions)
        server.prepare()
        listener.server = server
        scheme = "HTTPS" if adapter is not None else "HTTP"
        listener.thread = threading.Thread(
            target=_serve, args=(listener.name, server), name=f"{scheme.lower()}-{listener.name}",
            daemon=True)
        self._listeners.append(listener)
        listener.thread.start()
        logger.info("Serving {} ({}) on {}:{}", scheme, listener.name, listener.address,
                    listener.port)

    def stop(self) -> None:
        """Stop serving, close every socket and join the threads; idempotent."""
        listeners, self._listeners = self._listeners, []
        self._stopping.set()  # first: a followed log frees its worker for the pool's stop
        for listener in listeners:
            if listener.server is not None:
                listener.server.stop()  # waits for its workers
        for listener in listeners:
            if listener.thread is not None:
                listener.thread.join(_JOIN_TIMEOUT)
                if listener.thread.is_alive():
                    logger.warning("HTTP {} listener did not stop within {:g}s",
                                   listener.name, _JOIN_TIMEOUT)
            listener.sock.close()
        self._sessions.stop()  # streams the listeners handed over
