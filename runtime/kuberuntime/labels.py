"""The io.kubernetes.* labels and annotations, as upstream's kubelet writes them.

They are how a kubelet (this one after a restart, or a user with crictl) tells which pod and
container a runtime object belongs to, which spec it was made from (the container hash) and
how to stop it (grace period, preStop hook) without any memory of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import msgspec
from msgspec import Struct

from runtime.pod.model import Container, LifecycleHandler, Pod, container_to_json

POD_NAME = "io.kubernetes.pod.name"
POD_NAMESPACE = "io.kubernetes.pod.namespace"
POD_UID = "io.kubernetes.pod.uid"
CONTAINER_NAME = "io.kubernetes.container.name"

CONTAINER_HASH = "io.kubernetes.container.hash"
RESTART_COUNT = "io.kubernetes.container.restartCount"
TERMINATION_MESSAGE_PATH = "io.kubernetes.container.terminationMessagePath"
TERMINATION_MESSAGE_POLICY = "io.kubernetes.container.terminationMessagePolicy"
PRE_STOP_HANDLER = "io.kubernetes.container.preStopHandler"
CONTAINER_PORTS = "io.kubernetes.container.ports"
POD_DELETION_GRACE = "io.kubernetes.pod.deletionGracePeriod"
POD_TERMINATION_GRACE = "io.kubernetes.pod.terminationGracePeriod"


def hash_container(container: Container) -> str:
    """FNV-1a 32-bit of the container's canonical JSON, in hex (upstream's HashContainer).

    A running container whose hash label differs from its spec's hash was made from an older
    spec, and is restarted.
    """
    value = 0x811C9DC5
    for byte in container_to_json(container):
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return format(value, "x")


def pod_labels(pod: Pod) -> dict[str, str]:
    """The three labels that tie a runtime object to its pod."""
    return {
        POD_NAME: pod.metadata.name,
        POD_NAMESPACE: pod.metadata.namespace,
        POD_UID: pod.metadata.uid,
    }


def sandbox_labels(pod: Pod) -> dict[str, str]:
    """The pod's own labels plus the kubelet's; the kubelet's win on a clash."""
    return {**pod.metadata.labels, **pod_labels(pod)}


def sandbox_annotations(pod: Pod) -> dict[str, str]:
    return dict(pod.metadata.annotations)


def container_labels(pod: Pod, container: Container) -> dict[str, str]:
    return {**pod_labels(pod), CONTAINER_NAME: container.name}


def container_annotations(pod: Pod, container: Container, restart_count: int) -> dict[str, str]:
    annotations = {
        CONTAINER_HASH: hash_container(container),
        RESTART_COUNT: str(restart_count),
        TERMINATION_MESSAGE_PATH: container.termination_message_path,
        TERMINATION_MESSAGE_POLICY: container.termination_message_policy,
    }
    if pod.metadata.deletion_grace_period_seconds is not None:
        annotations[POD_DELETION_GRACE] = str(pod.metadata.deletion_grace_period_seconds)
    if pod.spec.termination_grace_period_seconds is not None:
        annotations[POD_TERMINATION_GRACE] = str(pod.spec.termination_grace_period_seconds)
    if container.lifecycle is not None and container.lifecycle.pre_stop is not None:
        annotations[PRE_STOP_HANDLER] = msgspec.json.encode(container.lifecycle.pre_stop).decode()
    if container.ports:
        annotations[CONTAINER_PORTS] = msgspec.json.encode(container.ports).decode()
    return annotations


class ContainerLabelInfo(Struct, frozen=True):
    """What the labels and annotations of a container say about it."""

    pod_name: str
    pod_namespace: str
    pod_uid: str
    container_name: str
    hash: str
    restart_count: int
    termination_message_path: str
    termination_message_policy: str
    pre_stop: LifecycleHandler | None
    termination_grace_period: int | None
    deletion_grace_period: int | None


def _int_or_none(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def parse_container_labels(
    labels: Mapping[str, str], annotations: Mapping[str, str]
) -> ContainerLabelInfo:
    """Read back what container_labels and container_annotations wrote.

    Containers made by another tool may lack some of them; missing or garbled values read
    as empty, so a foreign container never breaks a relist.
    """
    pre_stop: LifecycleHandler | None = None
    raw = annotations.get(PRE_STOP_HANDLER)
    if raw:
        try:
            pre_stop = msgspec.json.decode(raw.encode(), type=LifecycleHandler)
        except (msgspec.DecodeError, json.JSONDecodeError):
            pre_stop = None
    return ContainerLabelInfo(
        pod_name=labels.get(POD_NAME, ""),
        pod_namespace=labels.get(POD_NAMESPACE, ""),
        pod_uid=labels.get(POD_UID, ""),
        container_name=labels.get(CONTAINER_NAME, ""),
        hash=annotations.get(CONTAINER_HASH, ""),
        restart_count=_int_or_none(annotations.get(RESTART_COUNT)) or 0,
        termination_message_path=annotations.get(TERMINATION_MESSAGE_PATH, ""),
        termination_message_policy=annotations.get(TERMINATION_MESSAGE_POLICY, ""),
        pre_stop=pre_stop,
        termination_grace_period=_int_or_none(annotations.get(POD_TERMINATION_GRACE)),
        deletion_grace_period=_int_or_none(annotations.get(POD_DELETION_GRACE)),
    )
