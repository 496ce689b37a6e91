"""The v1 Pod, as immutable values.

These Structs are decoded straight from a manifest (see runtime.pod.manifest): field names
are the Kubernetes JSON names, unknown fields are refused, and after decoding nothing
changes them (frozen; sequences are tuples; mappings are typed read-only). Defaults are
upstream's API defaults, so a decoded pod looks like one the API server would hand a
kubelet. ``omit_defaults`` keeps the JSON encoding (and so the container hash) stable when
a field with a default is added later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec


class Model(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    rename="camel",
    kw_only=True,
    omit_defaults=True,
):
    """Base of every manifest value."""


Quantity = str | int | float
IntOrString = int | str


# --- metadata -------------------------------------------------------------------------


class ObjectMeta(Model, frozen=True):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: Mapping[str, str] = msgspec.field(default_factory=dict)
    annotations: Mapping[str, str] = msgspec.field(default_factory=dict)
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    resource_version: str = ""
    generation: int = 0


# --- handlers and probes ---------------------------------------------------------------


class ExecAction(Model, frozen=True):
    command: tuple[str, ...] = ()


class HTTPHeader(Model, frozen=True):
    name: str
    value: str


class HTTPGetAction(Model, frozen=True):
    port: IntOrString
    path: str = ""
    host: str = ""
    scheme: str = "HTTP"
    http_headers: tuple[HTTPHeader, ...] = ()


class TCPSocketAction(Model, frozen=True):
    port: IntOrString
    host: str = ""


class GRPCAction(Model, frozen=True):
    port: int
    service: str | None = None


class SleepAction(Model, frozen=True):
    seconds: int


class LifecycleHandler(Model, frozen=True):
    """What a postStart or preStop hook runs: exactly one of the actions."""

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    sleep: SleepAction | None = None


class Lifecycle(Model, frozen=True):
    post_start: LifecycleHandler | None = None
    pre_stop: LifecycleHandler | None = None


class Probe(Model, frozen=True):
    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    grpc: GRPCAction | None = None
    initial_delay_seconds: int = 0
    timeout_seconds: int = 1
    period_seconds: int = 10
    success_threshold: int = 1
    failure_threshold: int = 3
    termination_grace_period_seconds: int | None = None


# --- containers -----------------------------------------------------------------------


class ContainerPort(Model, frozen=True):
    container_port: int
    host_port: int = 0
    protocol: str = "TCP"
    name: str = ""
    host_ip: str = msgspec.field(default="", name="hostIP")


class ObjectFieldSelector(Model, frozen=True):
    field_path: str
    api_version: str = "v1"


class ResourceFieldSelector(Model, frozen=True):
    resource: str
    container_name: str = ""
    divisor: Quantity = "1"


class EnvVarSource(Model, frozen=True):
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None


class EnvVar(Model, frozen=True):
    name: str
    value: str = ""
    value_from: EnvVarSource | None = None


class ResourceRequirements(Model, frozen=True):
    limits: Mapping[str, Quantity] = msgspec.field(default_factory=dict)
    requests: Mapping[str, Quantity] = msgspec.field(default_factory=dict)


class VolumeMount(Model, frozen=True):
    name: str
    mount_path: str
    read_only: bool = False
    sub_path: str = ""
    mount_propagation: str = ""


class Capabilities(Model, frozen=True):
    add: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()


class SecurityContext(Model, frozen=True):
    privileged: bool | None = None
    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    read_only_root_filesystem: bool | None = None
    allow_privilege_escalation: bool | None = None
    capabilities: Capabilities | None = None


class Container(Model, frozen=True):
    name: str
    image: str = ""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    working_dir: str = ""
    ports: tuple[ContainerPort, ...] = ()
    env: tuple[EnvVar, ...] = ()
    resources: ResourceRequirements | None = None
    volume_mounts: tuple[VolumeMount, ...] = ()
    lifecycle: Lifecycle | None = None
    liveness_probe: Probe | None = None
    readiness_probe: Probe | None = None
    startup_probe: Probe | None = None
    termination_message_path: str = "/dev/termination-log"
    termination_message_policy: str = "File"
    image_pull_policy: str = ""
    security_context: SecurityContext | None = None
    restart_policy: str | None = None
    stdin: bool = False
    stdin_once: bool = False
    tty: bool = False

    @property
    def is_restartable_init(self) -> bool:
        """An init container with restartPolicy Always (a sidecar) keeps running."""
        return self.restart_policy == "Always"


# --- volumes --------------------------------------------------------------------------


class EmptyDirVolumeSource(Model, frozen=True):
    medium: str = ""
    size_limit: Quantity | None = None


class HostPathVolumeSource(Model, frozen=True):
    path: str
    type: str = ""


class Volume(Model, frozen=True):
    name: str
    empty_dir: EmptyDirVolumeSource | None = None
    host_path: HostPathVolumeSource | None = None


# --- pods -----------------------------------------------------------------------------


class PodDNSConfigOption(Model, frozen=True):
    name: str
    value: str | None = None


class PodDNSConfig(Model, frozen=True):
    nameservers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[PodDNSConfigOption, ...] = ()


class PodSecurityContext(Model, frozen=True):
    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    fs_group: int | None = None
    sysctls: tuple[Mapping[str, str], ...] = ()


class PodSpec(Model, frozen=True):
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    restart_policy: str = "Always"
    termination_grace_period_seconds: int | None = 30
    active_deadline_seconds: int | None = None
    dns_policy: str = "ClusterFirst"
    dns_config: PodDNSConfig | None = None
    host_network: bool = False
    host_pid: bool = msgspec.field(default=False, name="hostPID")
    host_ipc: bool = msgspec.field(default=False, name="hostIPC")
    hostname: str = ""
    subdomain: str = ""
    node_name: str = ""
    volumes: tuple[Volume, ...] = ()
    security_context: PodSecurityContext | None = None
    # Accepted so common static-pod manifests decode; a lone node has no scheduler, so
    # these carry no behaviour here (upstream's kubelet ignores them for static pods too).
    node_selector: Mapping[str, str] = msgspec.field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    priority_class_name: str = ""
    priority: int | None = None
    scheduler_name: str = ""
    service_account_name: str = ""
    automount_service_account_token: bool | None = None
    enable_service_links: bool | None = None


class Pod(Model, frozen=True):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)

    @property
    def uid(self) -> str:
        return self.metadata.uid

    @property
    def full_name(self) -> str:
        """``name_namespace``, upstream's key for a pod's identity across UIDs."""
        return f"{self.metadata.name}_{self.metadata.namespace}"

    @property
    def is_static(self) -> bool:
        source = self.metadata.annotations.get("kubernetes.io/config.source", "")
        return source not in ("", "api")

    def all_containers(self) -> tuple[Container, ...]:
        return self.spec.init_containers + self.spec.containers

    def container(self, name: str) -> Container | None:
        return next((c for c in self.all_containers() if c.name == name), None)


def pod_to_json(pod: Pod) -> bytes:
    """The pod's canonical JSON (field order fixed by the Structs, defaults omitted)."""
    return msgspec.json.encode(pod)


def container_to_json(container: Container) -> bytes:
    return msgspec.json.encode(container)
