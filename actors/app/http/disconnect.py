"""Whether a streaming response's client is still there, which WSGI does not say.

A followed log may stay quiet for hours: it learns that its client hung up only by
asking. Every listener's gateway (actors.app.http.upgrade) puts ``CLIENT_GONE`` in the
WSGI environ, a check of the connection's socket: the peer's end closed (POLLRDHUP) or
the connection failed, seen without reading from it (the same on a plain and a TLS
port: TLS records cannot be peeked at, and a request pipelined behind the followed one
must stay unread).
"""

from __future__ import annotations

import select
import socket
from collections.abc import Callable, Mapping
from typing import Any

CLIENT_GONE = "kubelet_actors.client_gone"
"""WSGI environ key: a callable, True once the client hung up."""

_GONE = select.POLLRDHUP | select.POLLHUP | select.POLLERR | select.POLLNVAL


def socket_closed(sock: socket.socket) -> bool:
    """True when the peer closed its end of ``sock`` or the connection failed."""
    try:
        fd = sock.fileno()
    except OSError:
        return True
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLRDHUP)
    return any(events & _GONE for _fd, events in poller.poll(0))


def client_gone(environ: Mapping[str, Any]) -> Callable[[], bool]:
    """The environ's check whether the client hung up (never, when the server has none)."""
    check = environ.get(CLIENT_GONE)
    if check is None:
        return lambda: False
    result: Callable[[], bool] = check
    return result
