"""What the HTTP API reads of the kubelet: a narrow, read-only view.

The daemon implements it over its actors; tests implement it with fixed values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from actors.kubelet.messages import RuntimePod
from actors.kubelet.metrics import KubeletMetrics
from runtime.cri.types import ContainerStatus
from runtime.ids import ContainerID
from runtime.pod.model import Pod
from runtime.status.types import PodStatus


class KubeletView(Protocol):
    def pods(self) -> tuple[tuple[Pod, PodStatus], ...]:
        """The pods the kubelet wants to run, each with its current v1 status."""
        ...

    def running_pods(self) -> tuple[RuntimePod, ...]:
        """What the runtime holds, as of the last relist (upstream's /runningpods/)."""
        ...

    def health(self) -> Mapping[str, str | None]:
        """Each health check by name (ping, syncloop, pleg, runtime): None when healthy,
        else the reason it is not."""
        ...

    def metrics(self) -> KubeletMetrics:
        """The metrics registry; gauges are refreshed before each scrape."""
        ...

    def refresh_metrics(self) -> None:
        """Bring point-in-time gauges (mailbox depths, ...) up to date."""
        ...

    def container_status(self, container_id: ContainerID) -> ContainerStatus | None:
        """A container instance as the runtime reports it now (CRI ContainerStatus: its
        state and log path), or None when the runtime does not know it."""
        ...
