"""The EventRecorder role: what a kubelet part calls to record an event about an object.

Upstream's parts hold a record.EventRecorder and call ``Eventf(ref, type, reason, ...)``;
here the role is this Protocol with one method, so the runtime (which must not know the
actors) records through it and the kubelet's actors give it a recorder that sends a
message (actors.kubelet.events). ``ObjectRef`` is the v1 ObjectReference an event names:
a pod, a container of it (``fieldPath`` ``spec.containers{name}``, as upstream's
GenerateContainerRef) or the node.

``HookOutput`` is what a failed lifecycle hook said. Upstream keeps it out of the
FailedPostStartHook and FailedPreStopHook events (it may hold secrets) and only logs it;
here it goes with the event to the kubelet's events actor, which never hands it to the
API server, and so into the node's own trace (0700) beside the event it explains.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from msgspec import Struct

from runtime.pod.model import Container, Pod


class ObjectRef(Struct, frozen=True):
    """A v1 ObjectReference (what ``involvedObject`` holds)."""

    kind: str
    namespace: str
    name: str
    uid: str
    api_version: str = "v1"
    resource_version: str = ""
    field_path: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for key, value in (("namespace", self.namespace), ("name", self.name),
                           ("uid", self.uid), ("apiVersion", self.api_version),
                           ("resourceVersion", self.resource_version),
                           ("fieldPath", self.field_path)):
            if value:
                out[key] = value
        return out


class HookOutput(Struct, frozen=True):
    """What a failed lifecycle hook said: an exec hook's output (stdout, then stderr) and
    exit code, or the error of an httpGet, tcpSocket or sleep hook (no exit code); cut to
    runtime.kuberuntime.hooks.OUTPUT_LIMIT characters."""

    output: str
    exit_code: int | None = None


class EventRecorder(Protocol):
    """Records one event; never blocks, never raises (an event is best effort).

    ``hook``: a failed hook's output, for the node's own record only (see the module's
    doc); never part of the event an API server sees."""

    def event(self, ref: ObjectRef, type: str, reason: str, message: str,
              hook: HookOutput | None = None) -> None:
        ...


class NullRecorder:
    """Records nothing (a part built without a kubelet around it)."""

    def event(self, ref: ObjectRef, type: str, reason: str, message: str,
              hook: HookOutput | None = None) -> None:
        return None


class Recorded(Struct, frozen=True):
    ref: ObjectRef
    type: str
    reason: str
    message: str
    hook: HookOutput | None = None


class ListRecorder:
    """Keeps what it is told, in order (tests' fake)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[Recorded] = []

    def event(self, ref: ObjectRef, type: str, reason: str, message: str,
              hook: HookOutput | None = None) -> None:
        with self._lock:
            self.events.append(Recorded(ref, type, reason, message, hook))

    def reasons(self) -> list[str]:
        with self._lock:
            return [e.reason for e in self.events]

    def find(self, reason: str) -> list[Recorded]:
        with self._lock:
            return [e for e in self.events if e.reason == reason]


NULL_RECORDER = NullRecorder()


def pod_ref(pod: Pod) -> ObjectRef:
    """The reference to ``pod`` (upstream ref.GetReference)."""
    m = pod.metadata
    return ObjectRef("Pod", m.namespace, m.name, m.uid, "v1", m.resource_version)


def field_path(pod: Pod, name: str) -> str:
    """``spec.containers{name}``, ``spec.initContainers{name}`` or
    ``spec.ephemeralContainers{name}`` (upstream's fieldPath); "" if the pod has none."""
    spec = pod.spec
    groups: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("spec.containers", tuple(c.name for c in spec.containers)),
        ("spec.initContainers", tuple(c.name for c in spec.init_containers)),
        ("spec.ephemeralContainers", tuple(c.name for c in spec.ephemeral_containers)))
    for path, names in groups:
        for index, container in enumerate(names):
            if container == name:
                return f"{path}{{{name}}}" if name else f"{path}[{index}]"
    return ""


def container_ref(pod: Pod, container: Container | str) -> ObjectRef:
    """The reference to one container of ``pod`` (upstream GenerateContainerRef)."""
    name = container if isinstance(container, str) else container.name
    ref = pod_ref(pod)
    return ObjectRef(ref.kind, ref.namespace, ref.name, ref.uid, ref.api_version,
                     ref.resource_version, field_path(pod, name))


def node_ref(node_name: str) -> ObjectRef:
    """The kubelet's reference to its Node: upstream sets the UID to the node's name."""
    return ObjectRef("Node", "", node_name, node_name, "", "")
