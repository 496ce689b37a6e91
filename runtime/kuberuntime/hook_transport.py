"""The network a lifecycle hook's httpGet and tcpSocket reach, as a service the kubelet
calls.

A postStart or preStop hook's httpGet sends a GET to the container, its tcpSocket opens a
connection (runtime.kuberuntime.hooks): what the network answers is an input from outside
the kubelet, like any of the node's. So both pass one narrow interface
(``HookTransport``) that a trace records and a replay answers, failures included with
their message: a replayed pod worker never sends a request from the machine it replays on,
nor to an address that was the recorded node's pod network.
"""

from __future__ import annotations

import http.client
import socket
import time
from typing import Protocol

from runtime.errors import HookTransportError
from runtime.httpget import get

__all__ = ["HOOK_TRANSPORT_TARGET", "NODE_HOOK_TRANSPORT", "HookTransport",
           "NodeHookTransport"]

HOOK_TRANSPORT_TARGET = "hooknet"
"""The service's name in traces (the ``target`` of its recorded calls)."""


class HookTransport(Protocol):
    """Reaches a container for its lifecycle hooks."""

    def http_get(self, url: str, headers: tuple[tuple[str, str], ...], timeout: float) -> int:
        """Send one GET of ``url`` with ``headers`` (in order), within ``timeout`` seconds;
        the status code. HookTransportError: the request could not be made or answered."""

    def tcp_connect(self, host: str, port: int, timeout: float) -> None:
        """Open a TCP connection to ``host``:``port`` within ``timeout`` seconds, and close
        it. HookTransportError: it could not be opened."""


def _failed(err: Exception) -> HookTransportError:
    # The cause's words are the hook's failure message (some, a bare timeout, have none).
    return HookTransportError(str(err) or type(err).__name__)


class NodeHookTransport:
    """The node's network."""

    def http_get(self, url: str, headers: tuple[tuple[str, str], ...], timeout: float) -> int:
        try:
            code, _location, _body = get(url, list(headers), time.monotonic() + timeout)
        except (OSError, ValueError, http.client.HTTPException) as err:
            raise _failed(err) from err
        return code

    def tcp_connect(self, host: str, port: int, timeout: float) -> None:
        try:
            with socket.create_connection((host, port), timeout):
                return
        except (OSError, ValueError) as err:
            raise _failed(err) from err


NODE_HOOK_TRANSPORT: HookTransport = NodeHookTransport()
"""What a runtime manager made without one uses: the node's network."""
