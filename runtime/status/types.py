"""The v1 PodStatus, as frozen values that encode to the Kubernetes JSON shape."""

from __future__ import annotations

import msgspec

from runtime.apitime import rfc3339 as rfc3339


class APIModel(msgspec.Struct, frozen=True, rename="camel", kw_only=True, omit_defaults=True):
    """Base of the status values; JSON names are the Kubernetes ones."""




class ContainerStateWaiting(APIModel, frozen=True):
    reason: str = ""
    message: str = ""


class ContainerStateRunning(APIModel, frozen=True):
    started_at: str = ""


class ContainerStateTerminated(APIModel, frozen=True):
    exit_code: int = 0
    signal: int = 0
    reason: str = ""
    message: str = ""
    started_at: str = ""
    finished_at: str = ""
    container_id: str = msgspec.field(default="", name="containerID")


class ContainerState(APIModel, frozen=True):
    waiting: ContainerStateWaiting | None = None
    running: ContainerStateRunning | None = None
    terminated: ContainerStateTerminated | None = None

    @property
    def summary(self) -> str:
        """One word for tables: the reason if waiting/terminated, else Running."""
        if self.running is not None:
            return "Running"
        if self.terminated is not None:
            return self.terminated.reason or "Terminated"
        if self.waiting is not None:
            return self.waiting.reason or "Waiting"
        return "Unknown"


class ContainerStatus(APIModel, frozen=True):
    # No defaults on the fields the v1 type always carries (no omitempty in Go): msgspec
    # then always encodes them, as kubectl and other clients expect.
    name: str
    state: ContainerState
    last_state: ContainerState
    ready: bool
    restart_count: int
    image: str
    image_id: str = msgspec.field(name="imageID")
    container_id: str = msgspec.field(default="", name="containerID")
    started: bool | None = None


class PodCondition(APIModel, frozen=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_probe_time: str | None = None
    last_transition_time: str = ""


class PodIP(APIModel, frozen=True):
    ip: str


class HostIP(APIModel, frozen=True):
    ip: str


class PodStatus(APIModel, frozen=True):
    phase: str  # always encoded, as in Go
    conditions: tuple[PodCondition, ...] = ()
    message: str = ""
    reason: str = ""
    host_ip: str = msgspec.field(default="", name="hostIP")
    host_ips: tuple[HostIP, ...] = msgspec.field(default=(), name="hostIPs")
    pod_ip: str = msgspec.field(default="", name="podIP")
    pod_ips: tuple[PodIP, ...] = msgspec.field(default=(), name="podIPs")
    start_time: str = ""
    init_container_statuses: tuple[ContainerStatus, ...] = ()
    container_statuses: tuple[ContainerStatus, ...] = ()
    ephemeral_container_statuses: tuple[ContainerStatus, ...] = ()
    qos_class: str = msgspec.field(default="", name="qosClass")

    def condition(self, type_: str) -> PodCondition | None:
        return next((c for c in self.conditions if c.type == type_), None)


# As runtime.pod.model does for Pod: the decoding info built once, at import, so threads
# decoding a status for the first time together cannot race msgspec into a segfault.
_STATUS_DECODER = msgspec.json.Decoder(PodStatus)
