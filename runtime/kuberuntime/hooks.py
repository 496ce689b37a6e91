"""Running postStart and preStop hooks (upstream lifecycle.handlerRunner)."""

from __future__ import annotations

import http.client
import socket
import time

from runtime.clock import Clock
from runtime.cri.service import RuntimeService
from runtime.errors import CRIError
from runtime.httpget import action_url, get
from runtime.ids import ContainerID
from runtime.pod.model import Container, HTTPGetAction, LifecycleHandler
from runtime.pod.ports import resolve_port

USER_AGENT = "kube-lifecycle/1.32"


def http_get(action: HTTPGetAction, host: str, port: int, timeout: float, agent: str) -> int:
    """Send the GET an httpGet handler describes; return the status code."""
    headers = {"User-Agent": agent, "Accept": "*/*"}
    headers.update({h.name: h.value for h in action.http_headers})
    url = action_url(action, action.host or host, port)
    code, _location, _body = get(url, list(headers.items()), time.monotonic() + timeout)
    return code


class HandlerRunner:
    """Runs one lifecycle handler against a running container; returns an error or None."""

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
    ) -> str | None:
        try:
            if handler.exec is not None:
                result = self._runtime.exec_sync(container_id, handler.exec.command, timeout)
                if result.exit_code != 0:
                    output = (result.stdout + result.stderr).decode(errors="replace").strip()
                    return (
                        f"command {list(handler.exec.command)!r} exited with "
                        f"{result.exit_code}: {output[:512]}"
                    )
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
            return err.detail
        except (OSError, ValueError, http.client.HTTPException) as err:
            return str(err) or type(err).__name__
        return "the handler names no action"
