"""One GET to a running daemon, with the connection flags' TLS and credentials: the way
``logs`` and ``get`` read it, and how they print its refusals (as kubectl prints a
server's error)."""

from __future__ import annotations

import http.client
import json
from typing import BinaryIO

from actors.app.tools.remote.server import ServerOptions

_READ = 64 << 10


class RemoteError(Exception):
    """The daemon refused or could not be reached: the message to print."""


def _connect(server: ServerOptions, timeout: float | None) -> http.client.HTTPConnection:
    host, port = server.host_port()
    context = server.ssl_context()
    if context is not None:
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    return http.client.HTTPConnection(host, port, timeout=timeout)


def refusal(status: int, body: bytes) -> RemoteError:
    """The daemon's answer as kubectl prints a server error."""
    text = body.decode("utf-8", "replace").strip()
    reason = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
              422: "Invalid"}.get(status, str(status))
    try:
        value = json.loads(text)
        if isinstance(value, dict) and value.get("message"):
            text = str(value["message"])
            reason = str(value.get("reason") or reason)
    except ValueError:
        pass
    return RemoteError(f"Error from server ({reason}): {text}")


def get(server: ServerOptions, path: str, out: BinaryIO | None = None,
        timeout: float | None = 30.0) -> bytes:
    """GET ``path``; the body (or, with ``out``, the body written there as it arrives).
    RemoteError for any status but 200 and for connection failures."""
    conn = _connect(server, timeout)
    try:
        conn.request("GET", path, headers=server.headers())
        resp = conn.getresponse()
        if resp.status != 200:
            raise refusal(resp.status, resp.read())
        if out is None:
            return resp.read()
        while chunk := resp.read1(_READ):
            out.write(chunk)
            out.flush()
        return b""
    except OSError as err:  # refused, reset, TLS failure, timeout
        raise RemoteError(f"cannot reach the kubelet at {server.url}: "
                          f"{getattr(err, 'strerror', None) or err}") from err
    except http.client.HTTPException as err:
        raise RemoteError(f"bad answer from the kubelet at {server.url}: {err!r}") from err
    finally:
        conn.close()


def print_error(err: RemoteError, server: ServerOptions) -> str:
    """The line to print for ``err`` from ``server``: a server's error as is, anything else
    as kubectl's ``error: ...``; a failure on an ``http://`` URL whose port speaks TLS says
    so and names the https URL instead (ServerOptions.https_hint)."""
    if hint := server.https_hint():
        return f"error: {hint}"
    return str(err) if str(err).startswith("Error from server") else f"error: {err}"
