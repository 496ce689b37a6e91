"""CRI's streaming calls: Exec, Attach and PortForward, each answered with a URL.

The runtime serves the stream itself (containerd's streaming server speaks SPDY/3.1 and
websocket channel protocols); the kubelet only asks for a one-time URL and then proxies the
client's upgraded connection to it, as upstream's kubelet does. These calls are not part of
``CRIRuntime``: no actor makes them, only the HTTP API, so they are neither recorded in a
trace nor answered in a replay.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from runtime.cri.service import RuntimeService
from runtime.ids import ContainerID, SandboxID


class StreamingRuntime(Protocol):
    """The three calls of CRI's RuntimeService that return a streaming URL."""

    def exec(self, container_id: ContainerID, cmd: tuple[str, ...], tty: bool, stdin: bool,
             stdout: bool, stderr: bool) -> str:
        """The URL at which ``cmd`` runs in the container once a client connects."""
        ...

    def attach(self, container_id: ContainerID, tty: bool, stdin: bool, stdout: bool,
               stderr: bool) -> str:
        """The URL at which a client attaches to the container's main process."""
        ...

    def port_forward(self, sandbox_id: SandboxID, ports: tuple[int, ...]) -> str:
        """The URL that forwards to ``ports`` in the sandbox's network namespace (the
        ports are named here for websocket clients; SPDY clients name them per stream)."""
        ...


@runtime_checkable
class StreamingCRI(RuntimeService, StreamingRuntime, Protocol):
    """A runtime endpoint that can both list what runs and open streams to it."""
