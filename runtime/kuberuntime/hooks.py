"""Running postStart and preStop hooks (upstream lifecycle.handlerRunner).

A hook that fails gives a ``HookFailure``: the message the kubelet logs (and a failed
postStart's waiting message holds), and what the hook said (runtime.events.recorder's
HookOutput) for the node's own record beside the hook's event.

An httpGet or tcpSocket handler reaches the container through a HookTransport
(runtime.kuberuntime.hook_transport), which a trace records: the runner only builds the
request and reads what came of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.clock import Clock
from runtime.cri.service import RuntimeService
from runtime.errors import CRIError, HookTransportError
from runtime.events.recorder import HookOutput
from runtime.httpget import action_url
from runtime.ids import ContainerID
from runtime.kuberuntime.hook_transport import NODE_HOOK_TRANSPORT, HookTransport
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


def http_request(action: HTTPGetAction, host: str, port: int,
                 agent: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The URL and headers of the GET an httpGet handler describes (the handler's own
    headers after, and over, the kubelet's)."""
    headers = {"User-Agent": agent, "Accept": "*/*"}
    headers.update({h.name: h.value for h in action.http_headers})
    return action_url(action, action.host or host, port), tuple(headers.items())


class HandlerRunner:
    """Runs one lifecycle handler against a running container; returns its failure or None.

    ``transport``: what reaches the container for httpGet and tcpSocket handlers (the
    node's network by default; a trace records its answers)."""

    def __init__(self, runtime: RuntimeService, clock: Clock,
                 transport: HookTransport = NODE_HOOK_TRANSPORT) -> None:
        self._runtime = runtime
        self._clock = clock
        self._transport = transport

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
                url, headers = http_request(handler.http_get, host, port, USER_AGENT)
                # As upstream: a lifecycle hook fails on a transport error only; whatever
                # status the container answers with, it was reached.
                self._transport.http_get(url, headers, timeout)
                return None
            if handler.tcp_socket is not None:
                port = resolve_port(handler.tcp_socket.port, container)
                self._transport.tcp_connect(handler.tcp_socket.host or pod_ip, port, timeout)
                return None
            if handler.sleep is not None:
                self._clock.sleep(min(float(handler.sleep.seconds), timeout))
                return None
        except CRIError as err:
            return _error(err.detail)
        except HookTransportError as err:
            return _error(str(err))
        except ValueError as err:  # a named port the container does not have
            return _error(str(err))
        return _error("the handler names no action")
