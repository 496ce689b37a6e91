"""What the runtime says a pod is, read back from CRI alone (upstream kubecontainer.PodStatus).

Everything here is rebuilt from the runtime's listings and the io.kubernetes.* labels and
annotations the kubelet put on sandboxes and containers, so a restarted kubelet sees the
same thing as the one that created them: nothing depends on memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from runtime.cri.service import RuntimeService
from runtime.cri.types import (
    ContainerFilter,
    ContainerState,
    ContainerStatus,
    PodSandboxStatus,
    SandboxFilter,
    SandboxState,
)
from runtime.errors import CRINotFound
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.termination_message import combine


@dataclass(frozen=True, slots=True)
class ContainerRuntimeStatus:
    """One container instance of a pod, as the runtime reports it."""

    id: ContainerID
    name: str
    state: ContainerState
    created_at: float
    started_at: float = 0.0
    finished_at: float = 0.0
    exit_code: int = 0
    image: str = ""
    image_ref: str = ""
    hash: str = ""
    restart_count: int = 0
    reason: str = ""
    message: str = ""
    log_path: str = ""

    @property
    def is_running(self) -> bool:
        return self.state == ContainerState.RUNNING


@dataclass(frozen=True, slots=True)
class RuntimePodStatus:
    """A pod's sandboxes and containers, newest first, from the runtime's point of view."""

    uid: PodUID
    name: str
    namespace: str
    ips: tuple[str, ...] = ()
    sandbox_statuses: tuple[PodSandboxStatus, ...] = ()
    container_statuses: tuple[ContainerRuntimeStatus, ...] = ()

    def find_container(self, name: str) -> ContainerRuntimeStatus | None:
        """The newest instance of the named container, or None if it never ran."""
        return next((c for c in self.container_statuses if c.name == name), None)

    def instances(self, name: str) -> tuple[ContainerRuntimeStatus, ...]:
        return tuple(c for c in self.container_statuses if c.name == name)

    @property
    def ready_sandbox(self) -> PodSandboxStatus | None:
        newest = self.sandbox_statuses[0] if self.sandbox_statuses else None
        return newest if newest and newest.state == SandboxState.READY else None


MessageReader = Callable[[ContainerStatus], str]
"""What an exited container left as its termination message (see termination_message)."""


def _no_message(status: ContainerStatus) -> str:
    return ""


def container_runtime_status(
    status: ContainerStatus, read_message: MessageReader = _no_message
) -> ContainerRuntimeStatus:
    """Convert a CRI ContainerStatus, reading the kubelet's labels and annotations, and
    (for an exited container) its termination message after the runtime's own."""
    info = L.parse_container_labels(status.labels, status.annotations)
    message = status.message
    if status.state == ContainerState.EXITED:
        message = combine(message, read_message(status))
    return ContainerRuntimeStatus(
        id=status.id,
        name=info.container_name or status.metadata.name,
        state=status.state,
        created_at=status.created_at,
        started_at=status.started_at,
        finished_at=status.finished_at,
        exit_code=status.exit_code,
        image=status.image.image,
        image_ref=status.image_ref,
        hash=info.hash,
        restart_count=info.restart_count,
        reason=status.reason,
        message=message,
        log_path=status.log_path,
    )


def get_pod_status(
    runtime: RuntimeService, uid: PodUID, name: str, namespace: str,
    read_message: MessageReader = _no_message,
) -> RuntimePodStatus:
    """Ask the runtime for everything it holds of one pod (upstream GetPodStatus)."""
    selector = {L.POD_UID: str(uid)}
    sandboxes = sorted(
        runtime.list_pod_sandbox(SandboxFilter(label_selector=selector)),
        # Equal timestamps (a coarse clock) fall back to the attempt number.
        key=lambda s: (s.created_at, s.metadata.attempt),
        reverse=True,
    )
    sandbox_statuses: list[PodSandboxStatus] = []
    for sandbox in sandboxes:
        try:
            sandbox_statuses.append(runtime.pod_sandbox_status(sandbox.id))
        except CRINotFound:
            continue  # removed between the list and the status call
    ips: tuple[str, ...] = ()
    if sandbox_statuses and sandbox_statuses[0].state == SandboxState.READY:
        newest = sandbox_statuses[0]
        ips = tuple(ip for ip in (newest.ip, *newest.additional_ips) if ip)
    containers = runtime.list_containers(ContainerFilter(label_selector=selector))
    statuses: list[ContainerRuntimeStatus] = []
    for container in containers:
        try:
            statuses.append(container_runtime_status(runtime.container_status(container.id),
                                                     read_message))
        except CRINotFound:
            continue
    statuses.sort(key=lambda c: (c.created_at, c.restart_count), reverse=True)
    return RuntimePodStatus(
        uid=uid,
        name=name,
        namespace=namespace,
        ips=ips,
        sandbox_statuses=tuple(sandbox_statuses),
        container_statuses=tuple(statuses),
    )
