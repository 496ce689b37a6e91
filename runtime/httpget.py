"""One HTTP GET as the kubelet's httpGet handlers make it (probes and lifecycle hooks).

Callers decide what the answer means: a probe follows same-host redirects and judges the
status code, a lifecycle hook only cares that the request was made.
"""

from __future__ import annotations

import http.client
import ssl
import time
import urllib.parse

from runtime.pod.model import HTTPGetAction

MAX_BODY = 10 * 1024
"""At most this much of a response body is read (upstream reads 10 KiB too)."""


def hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def action_url(action: HTTPGetAction, host: str, port: int) -> str:
    scheme = "https" if action.scheme.upper() == "HTTPS" else "http"
    path = action.path or "/"
    if not path.startswith("/"):
        path = "/" + path
    return f"{scheme}://{hostport(host, port)}{path}"


def insecure_tls() -> ssl.SSLContext:
    # As upstream: probes do not verify the server's certificate.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def get(
    url: str, headers: list[tuple[str, str]], deadline: float, verify_tls: bool = True
) -> tuple[int, str | None, bytes]:
    """One GET: the status code, the Location header and at most MAX_BODY of the body."""
    parts = urllib.parse.urlsplit(url)
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("timed out")
    host = parts.hostname or ""
    port = parts.port
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        tls = ssl.create_default_context() if verify_tls else insecure_tls()
        conn = http.client.HTTPSConnection(host, port, timeout=remaining, context=tls)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=remaining)
    try:
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        has_host = any(name.lower() == "host" for name, _ in headers)
        conn.putrequest("GET", target, skip_host=has_host, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        body = response.read(MAX_BODY)
        return response.status, response.getheader("Location"), body
    finally:
        conn.close()
