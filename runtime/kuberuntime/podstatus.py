"""What the runtime says a pod is, read back from CRI alone (upstream kubecontainer.PodStatus).

Everything here is rebuilt from the runtime's listings and the io.kubernetes.* labels and
annotations the kubelet put on sandboxes and containers, so a restarted kubelet sees the
same thing as the one that created them: nothing depends on memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from msgspec import Struct

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
from runtime.ids import ContainerID, PodUID, SandboxID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.termination_message import combine


class ContainerRuntimeStatus(Struct, frozen=True):
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


class RuntimePodStatus(Struct, frozen=True):
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


class ListedSandbox(Struct, frozen=True):
    """A sandbox as a listing shows it: what orders a pod's sandboxes, newest first."""

    id: SandboxID
    created_at: float
    attempt: int


class PodListing(Struct, frozen=True):
    """What one listing of the whole runtime held of a pod (upstream's PLEG relist, which
    fills its cache): its sandboxes and the ids of its containers. A pod the listing did
    not show has an empty one. Reading a pod's status from it saves the two listings of
    get_pod_status; the status calls are still made, so states and times are fresh."""

    uid: PodUID
    sandboxes: tuple[ListedSandbox, ...] = ()
    containers: tuple[ContainerID, ...] = ()


def _selector(uid: PodUID) -> dict[str, str]:
    return {L.POD_UID: str(uid)}


def _list_sandboxes(runtime: RuntimeService, uid: PodUID) -> tuple[ListedSandbox, ...]:
    listed = runtime.list_pod_sandbox(SandboxFilter(label_selector=_selector(uid)))
    return tuple(ListedSandbox(s.id, s.created_at, s.metadata.attempt) for s in listed)


def _list_containers(runtime: RuntimeService, uid: PodUID) -> tuple[ContainerID, ...]:
    listed = runtime.list_containers(ContainerFilter(label_selector=_selector(uid)))
    return tuple(c.id for c in listed)


def get_pod_status(
    runtime: RuntimeService, uid: PodUID, name: str, namespace: str,
    read_message: MessageReader = _no_message, listing: PodListing | None = None,
    known: Mapping[SandboxID, PodSandboxStatus] | None = None,
) -> RuntimePodStatus:
    """Ask the runtime for everything it holds of one pod (upstream GetPodStatus).

    ``listing``: what a listing of the whole runtime already showed of it (see
    PodListing); without it the pod's sandboxes and containers are listed first.
    ``known``: sandbox statuses read just now (a sync's, after RunPodSandbox): not
    asked again."""
    listed = listing.sandboxes if listing is not None else _list_sandboxes(runtime, uid)
    sandboxes = sorted(
        listed,
        # Equal timestamps (a coarse clock) fall back to the attempt number.
        key=lambda s: (s.created_at, s.attempt),
        reverse=True,
    )
    sandbox_statuses: list[PodSandboxStatus] = []
    for sandbox in sandboxes:
        if known and sandbox.id in known:
            sandbox_statuses.append(known[sandbox.id])
            continue
        try:
            sandbox_statuses.append(runtime.pod_sandbox_status(sandbox.id))
        except CRINotFound:
            continue  # removed between the list and the status call
    ips: tuple[str, ...] = ()
    if sandbox_statuses and sandbox_statuses[0].state == SandboxState.READY:
        newest = sandbox_statuses[0]
        ips = tuple(ip for ip in (newest.ip, *newest.additional_ips) if ip)
    containers = listing.containers if listing is not None else _list_containers(runtime, uid)
    statuses: list[ContainerRuntimeStatus] = []
    for container in containers:
        try:
            statuses.append(container_runtime_status(runtime.container_status(container),
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
