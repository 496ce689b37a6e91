"""A small raw HTTP client for the emulated API server, for tests that look at the wire.

Requests go over one short-lived connection each (HTTPS trusting the server's CA, with a
bearer token, a client certificate, or nothing). Watches are read event by event from the
chunked stream, so a test can see exactly what a reflector would.
"""

from __future__ import annotations

import http.client
import json
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from tests.apiserver.certs import KeyPair

if TYPE_CHECKING:
    from tests.apiserver.server import EmulatedAPIServer


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: Any

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", "")) if isinstance(self.body, dict) else ""


@dataclass
class Watch:
    """An open watch stream; iterate for events, ``close()`` when done."""

    conn: http.client.HTTPConnection
    response: http.client.HTTPResponse
    status: int
    ended_cleanly: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)

    def next(self) -> dict[str, Any] | None:
        """The next event, or None when the stream ended: ``ended_cleanly`` if with the last
        chunk, as a server ends a watch; not if the connection was cut."""
        # The chunks are read here, not by http.client, which hides a cut stream as an end.
        fp = self.response.fp
        if fp is None or self.ended_cleanly:
            return None
        try:
            size_line = fp.readline()
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                fp.readline()
                self.ended_cleanly = True
                return None
            data = fp.read(size)
            fp.readline()
        except (OSError, ValueError):
            return None
        if len(data) < size:
            return None
        event: dict[str, Any] = json.loads(data)
        self.events.append(event)
        return event

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while (event := self.next()) is not None:
            yield event

    def close(self) -> None:
        self.conn.close()


class RawClient:
    """Speaks HTTP to an EmulatedAPIServer as one user."""

    def __init__(self, server: EmulatedAPIServer, *, token: str | None = None,
                 cert: KeyPair | None = None, anonymous: bool = False,
                 timeout: float = 10.0) -> None:
        self.server = server
        self.token = None if anonymous or cert is not None else (token or server.admin_token)
        self.timeout = timeout
        self._tmp = tempfile.TemporaryDirectory(prefix="raw-client-")
        self.context: ssl.SSLContext | None = None
        if server.tls:
            self.context = ssl.create_default_context(cadata=server.ca.cert_pem.decode())
            if cert is not None:
                cert_file = Path(self._tmp.name) / "client.crt"
                key_file = Path(self._tmp.name) / "client.key"
                cert_file.write_bytes(cert.cert_pem)
                key_file.write_bytes(cert.key_pem)
                self.context.load_cert_chain(str(cert_file), str(key_file))

    def close(self) -> None:
        self._tmp.cleanup()

    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        if self.context is not None:
            return http.client.HTTPSConnection(self.server.host, self.server.port,
                                               context=self.context, timeout=timeout)
        return http.client.HTTPConnection(self.server.host, self.server.port, timeout=timeout)

    def _headers(self, content_type: str | None, accept: str | None) -> dict[str, str]:
        headers = {"Accept": accept or "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def request(self, method: str, path: str, body: Any = None, *,
                query: dict[str, Any] | None = None, content_type: str = "application/json",
                accept: str | None = None) -> Response:
        if query:
            path += "?" + urlencode(query)
        conn = self._connect(self.timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data,
                         headers=self._headers(content_type if data else None, accept))
            resp = conn.getresponse()
            raw = resp.read()
            try:
                parsed: Any = json.loads(raw) if raw else None
            except ValueError:
                parsed = raw.decode(errors="replace")
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, parsed)
        finally:
            conn.close()

    def get(self, path: str, **query: Any) -> Response:
        return self.request("GET", path, query=query or None)

    def post(self, path: str, body: Any) -> Response:
        return self.request("POST", path, body)

    def put(self, path: str, body: Any) -> Response:
        return self.request("PUT", path, body)

    def patch(self, path: str, body: Any,
              content_type: str = "application/strategic-merge-patch+json") -> Response:
        return self.request("PATCH", path, body, content_type=content_type)

    def delete(self, path: str, body: Any = None) -> Response:
        return self.request("DELETE", path, body)

    def watch(self, path: str, **query: Any) -> Watch:
        query["watch"] = "true"
        conn = self._connect(self.timeout)
        conn.request("GET", f"{path}?{urlencode(query)}", headers=self._headers(None, None))
        resp = conn.getresponse()
        if resp.chunked:
            resp.chunked = False  # Watch.next() reads the chunks itself
            return Watch(conn, resp, resp.status)
        watch = Watch(conn, resp, resp.status)  # an error answered whole, not a stream
        watch.events.append(json.loads(resp.read() or b"null"))
        watch.ended_cleanly = True
        return watch
