"""What a pod being removed is read as before it is stopped: its two listings, no status calls.

Stopping a pod needs, of the runtime, only which of its containers run (their ids and
names) and which sandboxes it has; a label-filtered ListPodSandbox and ListContainers say
both. A full status read (runtime.kuberuntime.podstatus.get_pod_status) adds a
PodSandboxStatus per sandbox and a ContainerStatus per container for what a pod's status
shows (times, exit codes, messages, the pod IP), which a pod that is stopped and then
removed never shows: its status goes with it. When many pods are removed at once those
calls are a third of what the kubelet asks the runtime per pod, on a node whose CPUs the
runtime needs for the stops.

One thing a kill does need from a status call is the pod IP: an HTTP or TCP preStop hook
with no host of its own is sent to it. A pod with any preStop hook is read in full.
"""

from __future__ import annotations

from msgspec import UNSET

from runtime.cri.service import RuntimeService
from runtime.cri.types import (
    Container,
    ContainerFilter,
    PodSandbox,
    PodSandboxStatus,
    SandboxFilter,
)
from runtime.ids import PodUID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.ephemeral import ephemeral_containers
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus, RuntimePodStatus
from runtime.pod.model import Pod


def needs_full_status(pod: Pod | None) -> bool:
    """Whether stopping ``pod`` needs its full status (the pod IP, for a preStop hook):
    an orphan (no spec: its hooks are in its containers' annotations) or a pod with any
    preStop hook."""
    if pod is None:
        return True
    return any(c.lifecycle is not None and c.lifecycle.pre_stop is not None
               for c in (*pod.all_containers(), *ephemeral_containers(pod)))


def listed_pod_status(runtime: RuntimeService, uid: PodUID, name: str, namespace: str
                      ) -> RuntimePodStatus:
    """The pod's sandboxes and containers as its two label-filtered listings show them,
    ordered as get_pod_status orders them (newest first); no IPs."""
    selector = {L.POD_UID: str(uid)}
    sandboxes = runtime.list_pod_sandbox(SandboxFilter(label_selector=selector))
    containers = runtime.list_containers(ContainerFilter(label_selector=selector))
    return status_from_listings(uid, name, namespace, sandboxes, containers)


def status_from_listings(uid: PodUID, name: str, namespace: str,
                         sandboxes: tuple[PodSandbox, ...], containers: tuple[Container, ...]
                         ) -> RuntimePodStatus:
    """A RuntimePodStatus of listing entries (a pure function: the table tests' subject)."""
    ordered = sorted(sandboxes, key=lambda s: (s.created_at, s.metadata.attempt), reverse=True)
    statuses = sorted((_container(c) for c in containers),
                      key=lambda c: (c.created_at, c.restart_count), reverse=True)
    return RuntimePodStatus(
        uid=uid, name=name, namespace=namespace, ips=(),
        sandbox_statuses=tuple(PodSandboxStatus(
            id=s.id, metadata=s.metadata, state=s.state, created_at=s.created_at,
            labels=s.labels, annotations=s.annotations,
            runtime_handler=s.runtime_handler or UNSET) for s in ordered),
        container_statuses=tuple(statuses),
    )


def _container(entry: Container) -> ContainerRuntimeStatus:
    info = L.parse_container_labels(entry.labels, entry.annotations)
    return ContainerRuntimeStatus(
        id=entry.id,
        name=info.container_name or entry.metadata.name,
        state=entry.state,
        created_at=entry.created_at,
        image=entry.image.image,
        image_ref=entry.image_ref,
        hash=info.hash,
        restart_count=info.restart_count,
    )
