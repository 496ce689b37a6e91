"""The kubelet's HTTP listeners: main, read-only and healthz ports, served by waitress.

Upstream's kubelet listens on three ports: the main port (10250, HTTPS with
authentication and authorization), the read-only port (10255, plain HTTP, no
authentication) and the healthz port (10248, on ``--healthz-bind-address``). The plain
ones are waitress servers, each on its own socket map with a few worker threads and an
event loop in a daemon thread; the main port, given an SSL context, is a cheroot server
(waitress has no TLS): cheroot's thread pool serves each connection after the handshake,
and the client certificate's subject reaches the app in the WSGI environ
(``actors.app.http.auth.PEER_SUBJECT``). All sockets are bound in ``start()`` before
anything is served, so a port in use fails the start with a ConfigError naming the flag
instead of leaving a kubelet half up.

Unlike upstream, the read-only port also serves the debugging handlers
(``/containerLogs``, ``/runningpods/``); it is off unless asked for in cluster mode.

Port numbers: 0 disables a listener, as upstream. ``ANY_PORT`` (-1) binds any free
port; it exists for tests, which read the ports actually bound from ``bound_ports``.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import socket
import ssl
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cheroot import wsgi as cheroot_wsgi
from cheroot.ssl import Adapter
from cheroot.ssl.builtin import BuiltinSSLAdapter
from loguru import logger
from waitress import create_server, wasyncore
from waitress.channel import HTTPChannel

from actors.app.http.auth import PEER_SUBJECT, KubeletAuth
from actors.app.http.disconnect import CLIENT_GONE, socket_closed
from actors.app.http.routes import WSGIApp, add_configz_route, build_app, build_healthz_app
from actors.app.http.stats import StatsEndpoints
from actors.app.http.stream_proxy import StreamSessions
from actors.app.http.stream_routes import StreamHost, add_disabled_stream_routes, add_stream_routes
from actors.app.http.timeline import LiveTrace, add_timeline_route
from actors.app.http.upgrade import enable_upgrades
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
_THREADS = {MAIN: 4, READ_ONLY: 4, HEALTHZ: 2}
_FLAGS = {MAIN: "--port", READ_ONLY: "--read-only-port", HEALTHZ: "--healthz-port"}
_ADDRESS_FLAGS = {MAIN: "--address", READ_ONLY: "--address", HEALTHZ: "--healthz-bind-address"}
_JOIN_TIMEOUT = 10.0


@dataclass
class _Listener:
    """One bound socket and, once serving, its waitress server and loop thread."""

    name: str
    address: str
    sock: socket.socket
    server: Any = None
    thread: threading.Thread | None = None
    stopping: threading.Event = field(default_factory=threading.Event)

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

    def get_environ(self, sock: ssl.SSLSocket) -> dict[str, Any]:  # type: ignore[override]
        env: dict[str, Any] = super().get_environ(sock)  # type: ignore[no-untyped-call]
        env[CLIENT_GONE] = functools.partial(socket_closed, sock)  # for a followed log
        peer = sock.getpeercert()
        if peer:
            env[PEER_SUBJECT] = peer.get("subject")
        return env


class _BoundTLSServer(cheroot_wsgi.Server):
    """A cheroot WSGI server on a socket bound beforehand (``_bind``)."""

    def __init__(self, sock: socket.socket, app: WSGIApp, adapter: _PeerSubjectAdapter,
                 threads: int) -> None:
        super().__init__(sock.getsockname()[:2], app, numthreads=threads,
                         server_name="kubelet-actors")
        self._bound = sock
        self.ssl_adapter = adapter

    def bind(self, family: int, type: int, proto: int = 0) -> socket.socket:
        self.socket = self._bound
        self.bind_addr = self._bound.getsockname()[:2]
        return self._bound


def _serve_tls(listener: _Listener) -> None:
    """The accept loop of the TLS listener, until ``stop()``."""
    try:
        listener.server.serve()
    except Exception as err:  # never expected: cheroot handles errors per connection
        logger.opt(exception=err).error("HTTP {} listener failed: {}", listener.name, err)


def _serve(listener: _Listener) -> None:
    """The loop thread of one listener: poll until told to stop, then close everything
    in its socket map (from this thread, which owns the map) and end its workers."""
    server = listener.server
    socket_map: dict[int, Any] = server._map
    timeout = server.adj.asyncore_loop_timeout
    try:
        while not listener.stopping.is_set():
            wasyncore.loop(timeout=timeout, map=socket_map, use_poll=True, count=1)
    except Exception as err:  # never expected: waitress handles errors per channel
        logger.opt(exception=err).error("HTTP {} listener failed: {}", listener.name, err)
    finally:
        for obj in list(socket_map.values()):
            try:
                if isinstance(obj, HTTPChannel):
                    obj.handle_close()  # wakes worker threads waiting to write to it
                else:
                    obj.close()
            except OSError:
                pass
        server.task_dispatcher.shutdown(timeout=_JOIN_TIMEOUT)


class KubeletHTTPServer:
    """The kubelet's HTTP API over a KubeletView, on up to three ports.

    The main and read-only ports serve every endpoint (see actors.app.http.routes), the
    healthz port only ``/healthz`` and its per-check subpaths; ``configz`` (the answer of
    ``/configz``) is served on the main port only, as upstream. With ``tls`` (an SSL
    context and the serving pair's files) the main port is HTTPS; with ``auth`` its
    requests are authenticated and authorized first. ``start()`` binds, then serves in
    daemon threads; ``stop()`` stops serving, closes the sockets and joins the threads.
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
        """Hand a bound socket to a new server (cheroot for TLS, else waitress) and start
        its loop thread."""
        if listener.name == MAIN and self._tls is not None:
            context, cert, key = self._tls
            server = _BoundTLSServer(listener.sock, app,
                                     _PeerSubjectAdapter(context, cert, key),
                                     _THREADS[listener.name])
            enable_upgrades(server, self._sessions)
            server.prepare()
            listener.server = server
            listener.thread = threading.Thread(
                target=_serve_tls, args=(listener,), name=f"https-{listener.name}",
                daemon=True)
            self._listeners.append(listener)
            listener.thread.start()
            logger.info("Serving HTTPS ({}) on {}:{}", listener.name, listener.address,
                        listener.port)
            return
        with warnings.catch_warnings():
            # send_bytes is deprecated in waitress 3 but still the only way to have a
            # task thread send what it wrote at once.
            warnings.simplefilter("ignore", DeprecationWarning)
            listener.server = create_server(
                app, map={}, sockets=[listener.sock],
                threads=_THREADS[listener.name], ident="kubelet-actors",
                # A followed log learns that its client went away while the log is quiet.
                channel_request_lookahead=1,
                # Each chunk a streamed response yields goes out at once (a followed
                # log's line), not at the event loop's next turn (up to 1 s later).
                send_bytes=1)
        listener.thread = threading.Thread(
            target=_serve, args=(listener,), name=f"http-{listener.name}", daemon=True)
        self._listeners.append(listener)
        listener.thread.start()
        logger.info("Serving HTTP ({}) on {}:{}", listener.name, listener.address,
                    listener.port)

    def stop(self) -> None:
        """Stop serving, close every socket and join the threads; idempotent."""
        listeners, self._listeners = self._listeners, []
        self._stopping.set()
        for listener in listeners:
            listener.stopping.set()
            if isinstance(listener.server, _BoundTLSServer):
                listener.server.stop()
            else:
                # OSError: its loop saw `stopping` first and closed the trigger.
                with contextlib.suppress(OSError):
                    listener.server.pull_trigger()
        for listener in listeners:
            if listener.thread is not None:
                listener.thread.join(_JOIN_TIMEOUT)
                if listener.thread.is_alive():
                    logger.warning("HTTP {} listener did not stop within {:g}s",
                                   listener.name, _JOIN_TIMEOUT)
            listener.sock.close()
        self._sessions.stop()  # streams the listeners handed over
