"""Running postStart and preStop hooks (upstream lifecycle.handlerRunner).

A hook that fails gives a ``HookFailure``: the message the kubelet logs (and a failed
postStart's waiting message holds), and what the hook said (runtime.events.recorder's
HookOutput) for the node's own record beside the hook's event.
"""

from __future__ import annotations

import http.client
import socket
import time
from dataclasses import dataclass

from runtime.clock import Clock
from runtime.cri.service import RuntimeService
from runtime.errors import CRIError
from runtime.events.recorder import HookOutput
from runtime.httpget import action_url, get
from runtime.ids import ContainerID
from runtime.pod.model import Container, HTTPGetAction, LifecycleHandler
from runtime.pod.ports import resolve_port

USER_AGENT = "kube-lifecycle/1.32"
OUTPUT_LIMIT = 512
"""The characters of a failed hook's output kept in its message and its record."""


@dataclass(frozen=True, slots=True)
class HookFailure:
    """A lifecycle hook that failed: ``message`` for the log (and a postStart's waiting
    message), ``said`` for the record beside its event."""

    message: str
    said: HookOutput


def _error(text: str) -> HookFailure:
    """A hook that failed with no output of its own: the error is what it said."""
    return HookFailure(text, HookOutput(text[:OUTPUT_LIMIT]))


def http_get(action: HTTPGetAction, host: str, port: int, timeout: float, agent: str) -> int:
    """Send the GET an httpGet handler describes; return the status code."""
    headers = {"User-Agent": agent, "Accept": "*/*"}
    headers.update({h.name: h.value for h in action.http_headers})
    url = action_url(action, action.host or host, port)
    code, _location, _body = get(url, list(headers.items()), time.monotonic() + timeout)
    return code


class HandlerRunner:
    """Runs one lifecycle handler against a running container; returns its failure or None."""

    def __init__(self, runtime: RuntimeService, clock: Clock) -> None:
        self._runtime = runtime
        self._clock = clock

    def run(
        self,
        handler: LifecycleHandler,
        container: Container,
        container_id: ContainerID,
        pod_ip: str,
        timeout: float,
    ) -> HookFailure | None:
        try:
            if handler.exec is not None:
                result = self._runtime.exec_sync(container_id, handler.exec.command, timeout)
                if result.exit_code != 0:
                    output = (result.stdout + result.stderr).decode(errors="replace").strip()
                    output = output[:OUTPUT_LIMIT]
                    return HookFailure(
                        f"command {list(handler.exec.command)!r} exited with "
                        f"{result.exit_code}: {output}", HookOutput(output, result.exit_code))
                return None
            if handler.http_get is not None:
                port = resolve_port(handler.http_get.port, container)
                host = handler.http_get.host or pod_ip or "127.0.0.1"
                # As upstream: a lifecycle hook fails on a transport error only; whatever
                # status the container answers with, it was reached.
                http_get(handler.http_get, host, port, timeout, USER_AGENT)
                return None
            if handler.tcp_socket is not None:
                port = resolve_port(handler.tcp_socket.port, container)
                with socket.create_connection((handler.tcp_socket.host or pod_ip, port), timeout):
                    return None
            if handler.sleep is not None:
                self._clock.sleep(min(float(handler.sleep.seconds), timeout))
                return None
        except CRIError as err:
            return _error(err.detail)
        except (OSError, ValueError, http.client.HTTPException) as err:
            return _error(str(err) or type(err).__name__)
        return _error("the handler names no action")
