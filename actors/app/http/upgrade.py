"""Taking a connection out of the WSGI server for an upgraded stream (the Go Hijacker).

WSGI has no way to hand the raw connection to an application, and upstream's kubelet
hijacks the connection of an exec, attach or port-forward. The main port's cheroot server
gets a gateway (``upgrade_gateway``) that runs the falcon app as usual; a streaming
resource, once authentication, authorization and its own checks have passed and the
runtime's streaming server is dialed, leaves an :class:`Upgrade` in the environ (key
``UPGRADE``) and answers 101. The gateway then writes nothing, takes the client socket and
whatever cheroot had buffered past the request head, tells cheroot to forget the connection
without closing it, and hands both sockets to :class:`StreamSessions`. Every other request
takes cheroot's normal path. ``HIJACKABLE`` in the environ tells a resource that the
connection can be taken (waitress, used for plain HTTP, cannot).

cheroot keeps only the last of repeated header lines unless it knows the header as a list;
SPDY clients send one ``X-Stream-Protocol-Version`` line per protocol they speak (and
websocket clients may repeat ``Sec-WebSocket-Protocol``), so the server's requests read
those as lists too (``enable_upgrades`` installs both).
"""

from __future__ import annotations

import socket
from typing import Any

from cheroot import server as cheroot_server
from cheroot import wsgi as cheroot_wsgi
from msgspec import Struct

from actors.app.http.stream_proxy import StreamSessions

UPGRADE = "kubelet_actors.upgrade"
"""Environ key: the :class:`Upgrade` a streaming resource decided on."""

HIJACKABLE = "kubelet_actors.hijackable"
"""Environ key, true when the server can hand the connection to a stream."""

_CHUNK = 64 * 1024
_LIST_HEADERS = frozenset({b"X-Stream-Protocol-Version", b"Sec-Websocket-Protocol"})


class Upgrade(Struct, frozen=True):
    """A stream ready to start: the dialed runtime socket, the request head to send it,
    and a name for the logs."""

    backend: socket.socket
    request: bytes
    name: str


class _UpgradeGateway(cheroot_wsgi.Gateway_10):
    """cheroot's WSGI 1.0 gateway, plus the takeover of upgraded connections."""

    sessions: StreamSessions

    def respond(self) -> None:
        env: dict[str, Any] = self.env
        env[HIJACKABLE] = True
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


def enable_upgrades(server: cheroot_wsgi.Server, sessions: StreamSessions) -> None:
    """Let ``server`` hand upgraded connections to ``sessions``."""
    server.gateway = type("UpgradeGateway", (_UpgradeGateway,), {"sessions": sessions})
    server.ConnectionClass = _UpgradeConnection
