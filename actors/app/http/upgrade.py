"""The gateway between cheroot and the falcon app on every port: taking a connection out
of the server for an upgraded stream (the Go Hijacker), and a streaming response's check
whether its client is still there.

WSGI has no way to hand the raw connection to an application, and upstream's kubelet
hijacks the connection of an exec, attach or port-forward. Every listener's cheroot server
gets a gateway (``install_gateway``) that runs the falcon app as usual; a streaming
resource, once authentication, authorization and its own checks have passed and the
runtime's streaming server is dialed, leaves an :class:`Upgrade` in the environ (key
``UPGRADE``) and answers 101. The gateway then writes nothing, takes the client socket and
whatever cheroot had buffered past the request head, tells cheroot to forget the connection
without closing it, and hands both sockets to :class:`StreamSessions`. Every other request
takes cheroot's normal path, with ``CLIENT_GONE`` in its environ (a check of the
connection's socket, actors.app.http.disconnect) for a response that streams, and its
header names written as Go writes them.

cheroot keeps only the last of repeated header lines unless it knows the header as a list;
SPDY clients send one ``X-Stream-Protocol-Version`` line per protocol they speak (and
websocket clients may repeat ``Sec-WebSocket-Protocol``), so the server's requests read
those as lists too (``install_gateway`` installs both).
"""

from __future__ import annotations

import functools
import socket
from typing import Any

from cheroot import server as cheroot_server
from cheroot import wsgi as cheroot_wsgi
from msgspec import Struct

from actors.app.http.disconnect import CLIENT_GONE, socket_closed
from actors.app.http.stream_proxy import StreamSessions

UPGRADE = "kubelet_actors.upgrade"
"""Environ key: the :class:`Upgrade` a streaming resource decided on."""

_CHUNK = 64 * 1024
_LIST_HEADERS = frozenset({b"X-Stream-Protocol-Version", b"Sec-Websocket-Protocol"})


class Upgrade(Struct, frozen=True):
    """A stream ready to start: the dialed runtime socket, the request head to send it,
    and a name for the logs."""

    backend: socket.socket
    request: bytes
    name: str


def _canonical(name: str) -> str:
    """A header name as Go's textproto.CanonicalMIMEHeaderKey writes it
    (``content-type``: ``Content-Type``)."""
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))


class _KubeletGateway(cheroot_wsgi.Gateway_10):
    """cheroot's WSGI 1.0 gateway, plus the takeover of upgraded connections and the
    client's check."""

    sessions: StreamSessions

    def start_response(self, status: str, headers: list[tuple[str, str]],
                       exc_info: Any = None) -> Any:
        # falcon names headers in lower case and cheroot sends them as given; Go's
        # servers (and clients that compare names as written) use the canonical form.
        return super().start_response(
            status, [(_canonical(name), value) for name, value in headers], exc_info)

    def respond(self) -> None:
        env: dict[str, Any] = self.env
        # The connection's socket, plain or TLS: a followed log asks it while quiet.
        env[CLIENT_GONE] = functools.partial(socket_closed, self.req.conn.socket)
        response = self.req.server.wsgi_app(env, self.start_response)
        upgrade: Upgrade | None = env.pop(UPGRADE, None)
        if upgrade is not None:
            if bytes(self.req.status or b"").startswith(b"101"):
                if hasattr(response, "close"):
                    response.close()
                self._take_over(upgrade)
                return
            upgrade.backend.close()  # a later step failed: answer as the app says
        try:
            for chunk in filter(None, response):
                if not isinstance(chunk, bytes):
                    raise ValueError("WSGI Applications must yield bytes")
                self.write(chunk)
        finally:
            self.req.ensure_headers_sent()
            if hasattr(response, "close"):
                response.close()

    def _take_over(self, upgrade: Upgrade) -> None:
        req = self.req
        conn = req.conn
        rfile = conn.rfile
        early = bytearray()
        while rfile.has_data():  # what the client sent past the head, already buffered
            early += rfile.read1(_CHUNK)
        # cheroot must neither answer nor close: the stream owns the socket from here.
        req.sent_headers = True
        req.close_connection = True
        conn.linger = True
        self.sessions.start(conn.socket, upgrade.backend, upgrade.request + bytes(early),
                            upgrade.name)


class _ListHeaders(dict[bytes, bytes]):
    """Request headers where a repeated list header is joined, not replaced."""

    def __setitem__(self, key: bytes, value: bytes) -> None:
        if key in _LIST_HEADERS and key in self:
            value = self[key] + b", " + value
        super().__setitem__(key, value)


class _ListHeaderReader(cheroot_server.HeaderReader):
    def __call__(self, rfile: Any, hdict: dict[bytes, bytes] | None = None) -> Any:
        headers = _ListHeaders()
        super().__call__(rfile, headers)
        if hdict is None:
            return headers
        hdict.update(headers)
        return hdict


class _UpgradeRequest(cheroot_server.HTTPRequest):
    header_reader = _ListHeaderReader()


class _UpgradeConnection(cheroot_server.HTTPConnection):
    RequestHandlerClass = _UpgradeRequest


def install_gateway(server: cheroot_wsgi.Server, sessions: StreamSessions) -> None:
    """Let ``server`` hand upgraded connections to ``sessions`` and tell its streaming
    responses when their client has gone."""
    server.gateway = type("KubeletGateway", (_KubeletGateway,), {"sessions": sessions})
    server.ConnectionClass = _UpgradeConnection
