"""Frozen domain values for the CRI v1 calls the kubelet makes.

Nothing above runtime/ sees a protobuf object: the CRI client converts to and from these at
the boundary. Field names follow the CRI messages (snake_case), so a reader of api.proto
finds their way; times are float seconds since the epoch (CRI uses int64 nanoseconds).
Mappings are typed read-only (``Mapping``) and never mutated after construction.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from msgspec import UNSET, Struct, UnsetType, field

from runtime.cri.usage import CpuUsage, MemoryUsage
from runtime.ids import ContainerID, SandboxID


def _empty() -> Mapping[str, str]:
    return {}


# --- runtime --------------------------------------------------------------------------


class VersionInfo(Struct, frozen=True):
    version: str
    runtime_name: str
    runtime_version: str
    runtime_api_version: str


class RuntimeCondition(Struct, frozen=True):
    type: str  # RuntimeReady, NetworkReady
    status: bool
    reason: str = ""
    message: str = ""


class RuntimeHandlerFeatures(Struct, frozen=True):
    """CRI RuntimeHandlerFeatures: what one runtime handler can do."""

    recursive_read_only_mounts: bool = False
    user_namespaces: bool = False


class RuntimeHandler(Struct, frozen=True):
    """CRI RuntimeHandler: a handler the runtime has (``""`` is its default one)."""

    name: str
    features: RuntimeHandlerFeatures = RuntimeHandlerFeatures()


class RuntimeStatus(Struct, frozen=True):
    """CRI StatusResponse: the runtime's conditions and its handlers with their features
    (none from a runtime older than CRI's runtime_handlers, such as containerd 1.6)."""

    conditions: tuple[RuntimeCondition, ...]
    handlers: tuple[RuntimeHandler, ...] = ()

    def condition(self, type_: str) -> RuntimeCondition | None:
        return next((c for c in self.conditions if c.type == type_), None)


# --- sandboxes ------------------------------------------------------------------------


class SandboxState(enum.IntEnum):
    READY = 0
    NOTREADY = 1


class NamespaceMode(enum.IntEnum):
    """CRI NamespaceMode: POD shares within the pod, NODE is the host's namespace."""

    POD = 0
    CONTAINER = 1
    NODE = 2
    TARGET = 3


class Protocol(enum.IntEnum):
    TCP = 0
    UDP = 1
    SCTP = 2


class PodSandboxMetadata(Struct, frozen=True):
    name: str
    uid: str
    namespace: str
    attempt: int = 0


class DNSConfig(Struct, frozen=True):
    servers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[str, ...] = ()


class PortMapping(Struct, frozen=True):
    container_port: int
    host_port: int = 0
    protocol: Protocol = Protocol.TCP
    host_ip: str = ""


class HugepageLimit(Struct, frozen=True):
    page_size: str  # "2MB", "1GB": the runtime's names for the kernel's page sizes
    limit: int  # bytes


class LinuxContainerResources(Struct, frozen=True):
    cpu_period: int = 0
    cpu_quota: int = 0
    cpu_shares: int = 0
    memory_limit_in_bytes: int = 0
    oom_score_adj: int = 0
    hugepage_limits: tuple[HugepageLimit, ...] = ()


class SecurityProfileType(enum.IntEnum):
    """CRI SecurityProfile.ProfileType (seccomp and AppArmor)."""

    RUNTIME_DEFAULT = 0
    UNCONFINED = 1
    LOCALHOST = 2


class SupplementalGroupsPolicy(enum.IntEnum):
    """CRI SupplementalGroupsPolicy: MERGE adds the image's /etc/group memberships of the
    user to the groups asked for; STRICT uses only those asked for."""

    MERGE = 0
    STRICT = 1


class SecurityProfile(Struct, frozen=True):
    profile_type: SecurityProfileType
    localhost_ref: str = ""  # the profile's path on the node, for LOCALHOST


class Capability(Struct, frozen=True):
    add_capabilities: tuple[str, ...] = ()
    drop_capabilities: tuple[str, ...] = ()


class SELinuxOption(Struct, frozen=True):
    user: str = ""
    role: str = ""
    type: str = ""
    level: str = ""


class LinuxSandboxSecurityContext(Struct, frozen=True):
    """The sandbox's security settings (its namespace modes are PodSandboxConfig's).

    ``privileged`` is True when any container of the pod is privileged: containerd
    refuses a privileged container in a sandbox that was not created privileged.
    """

    run_as_user: int | None = None
    run_as_group: int | None = None
    supplemental_groups: tuple[int, ...] = ()
    supplemental_groups_policy: SupplementalGroupsPolicy = SupplementalGroupsPolicy.MERGE
    privileged: bool = False
    seccomp: SecurityProfile | None = None
    selinux_options: SELinuxOption | None = None


class LinuxContainerSecurityContext(Struct, frozen=True):
    """A container's security settings (its namespace modes follow its sandbox's).

    ``masked_paths`` and ``readonly_paths`` empty means none, not the runtime's defaults:
    containerd's CRI plugin starts from empty lists and applies what the kubelet sends.
    """

    capabilities: Capability | None = None
    privileged: bool = False
    selinux_options: SELinuxOption | None = None
    run_as_user: int | None = None
    run_as_username: str = ""
    run_as_group: int | None = None
    readonly_rootfs: bool = False
    supplemental_groups: tuple[int, ...] = ()
    supplemental_groups_policy: SupplementalGroupsPolicy = SupplementalGroupsPolicy.MERGE
    no_new_privs: bool = False
    masked_paths: tuple[str, ...] = ()
    readonly_paths: tuple[str, ...] = ()
    seccomp: SecurityProfile | None = None
    apparmor: SecurityProfile | None = None


class PodSandboxConfig(Struct, frozen=True):
    """CRI PodSandboxConfig with its LinuxPodSandboxConfig flattened in.

    ``overhead`` and ``resources`` (LinuxPodSandboxConfig fields 4 and 5) are what a runtime
    that sizes a VM per pod reads: the pod's spec.overhead, and its summed requests and
    limits without it (runtime.cm.container_resources). The kubelet always sends both, as
    upstream's applySandboxResources does (a zero overhead for a pod without one); UNSET is
    a config not made by the kubelet's generate_sandbox_config (a test's, a fake's), sent
    without them and left out of its JSON.
    """

    metadata: PodSandboxMetadata
    hostname: str = ""
    log_directory: str = ""
    dns_config: DNSConfig | None = None
    port_mappings: tuple[PortMapping, ...] = ()
    labels: Mapping[str, str] = field(default_factory=_empty)
    annotations: Mapping[str, str] = field(default_factory=_empty)
    cgroup_parent: str = ""
    network_mode: NamespaceMode = NamespaceMode.POD
    pid_mode: NamespaceMode = NamespaceMode.CONTAINER
    ipc_mode: NamespaceMode = NamespaceMode.POD
    sysctls: Mapping[str, str] = field(default_factory=_empty)
    security: LinuxSandboxSecurityContext = field(default_factory=LinuxSandboxSecurityContext)
    overhead: LinuxContainerResources | UnsetType = UNSET
    resources: LinuxContainerResources | UnsetType = UNSET


class PodSandbox(Struct, frozen=True):
    """One entry of ListPodSandbox."""

    id: SandboxID
    metadata: PodSandboxMetadata
    state: SandboxState
    created_at: float
    labels: Mapping[str, str] = field(default_factory=_empty)
    annotations: Mapping[str, str] = field(default_factory=_empty)
    runtime_handler: str = ""


class PodSandboxStatus(Struct, frozen=True):
    """One sandbox as PodSandboxStatus reports it.

    ``runtime_handler`` is the handler the sandbox runs on (its RuntimeClass's); the
    runtime's default handler ("") leaves it UNSET, so msgspec leaves it out of the JSON:
    a status on the default handler encodes exactly as it did before the field existed,
    and recorded traces still compare equal on replay. Read it as ``handler``.
    """

    id: SandboxID
    metadata: PodSandboxMetadata
    state: SandboxState
    created_at: float
    ip: str = ""
    additional_ips: tuple[str, ...] = ()
    network_mode: NamespaceMode = NamespaceMode.POD
    labels: Mapping[str, str] = field(default_factory=_empty)
    annotations: Mapping[str, str] = field(default_factory=_empty)
    runtime_handler: str | UnsetType = UNSET

    @property
    def handler(self) -> str:
        """The runtime handler, "" for the runtime's default."""
        return "" if isinstance(self.runtime_handler, UnsetType) else self.runtime_handler


class SandboxFilter(Struct, frozen=True):
    id: str = ""
    state: SandboxState | None = None
    label_selector: Mapping[str, str] = field(default_factory=_empty)


# --- containers -----------------------------------------------------------------------


class ContainerState(enum.IntEnum):
    CREATED = 0
    RUNNING = 1
    EXITED = 2
    UNKNOWN = 3


class ContainerMetadata(Struct, frozen=True):
    name: str
    attempt: int = 0


class ImageSpec(Struct, frozen=True):
    image: str
    annotations: Mapping[str, str] = field(default_factory=_empty)


class KeyValue(Struct, frozen=True):
    key: str
    value: str


class MountPropagation(enum.IntEnum):
    PRIVATE = 0
    HOST_TO_CONTAINER = 1
    BIDIRECTIONAL = 2


class Mount(Struct, frozen=True):
    container_path: str
    host_path: str
    readonly: bool = False
    propagation: MountPropagation = MountPropagation.PRIVATE
    # Read-only all the way down (mounts under it too). Only True is written: UNSET, left
    # out of the JSON, is false.
    recursive_read_only: bool | UnsetType = UNSET


class ContainerConfig(Struct, frozen=True):
    metadata: ContainerMetadata
    image: ImageSpec
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    working_dir: str = ""
    envs: tuple[KeyValue, ...] = ()
    mounts: tuple[Mount, ...] = ()
    labels: Mapping[str, str] = field(default_factory=_empty)
    annotations: Mapping[str, str] = field(default_factory=_empty)
    log_path: str = ""
    stdin: bool = False
    stdin_once: bool = False
    tty: bool = False
    resources: LinuxContainerResources | None = None
    security: LinuxContainerSecurityContext = field(
        default_factory=LinuxContainerSecurityContext)
    # The container whose PID namespace this one joins (an ephemeral container's target):
    # CRI NamespaceMode TARGET with this target_id.
    pid_target_id: str = ""


class Container(Struct, frozen=True):
    """One entry of ListContainers."""

    id: ContainerID
    pod_sandbox_id: SandboxID
    metadata: ContainerMetadata
    image: ImageSpec
    image_ref: str
    state: ContainerState
    created_at: float
    labels: Mapping[str, str] = field(default_factory=_empty)
    annotations: Mapping[str, str] = field(default_factory=_empty)


class ContainerStatus(Struct, frozen=True):
    id: ContainerID
    metadata: ContainerMetadata
    state: ContainerState
    created_at: float
    started_at: float = 0.0
    finished_at: float = 0.0
    exit_code: int = 0
    image: ImageSpec = field(default_factory=lambda: ImageSpec(""))
    image_ref: str = ""
    reason: str = ""
    message: str = ""
    labels: Mapping[str, str] = field(default_factory=_empty)
    annotations: Mapping[str, str] = field(default_factory=_empty)
    mounts: tuple[Mount, ...] = ()
    log_path: str = ""


class ContainerFilter(Struct, frozen=True):
    id: str = ""
    state: ContainerState | None = None
    pod_sandbox_id: str = ""
    label_selector: Mapping[str, str] = field(default_factory=_empty)


class ExecResult(Struct, frozen=True):
    stdout: bytes
    stderr: bytes
    exit_code: int


class ContainerStats(Struct, frozen=True):
    id: ContainerID
    name: str
    labels: Mapping[str, str]
    cpu_usage_core_nanoseconds: int | None
    memory_working_set_bytes: int | None
    writable_layer_used_bytes: int | None
    timestamp: float
    # The whole samples, for the stats summary (the flat fields above are their gist).
    cpu: CpuUsage | None = None
    memory: MemoryUsage | None = None
    writable_layer: FilesystemUsage | None = None


# --- images ---------------------------------------------------------------------------


class Image(Struct, frozen=True):
    id: str
    repo_tags: tuple[str, ...] = ()
    repo_digests: tuple[str, ...] = ()
    size: int = 0
    pinned: bool = False
    uid: int | None = None  # the image's numeric user, when its config names one
    username: str = ""  # the image's user when it is a name, not a number


class AuthConfig(Struct, frozen=True):
    username: str = ""
    password: str = ""
    auth: str = ""
    server_address: str = ""
    identity_token: str = ""
    registry_token: str = ""


class FilesystemUsage(Struct, frozen=True):
    mountpoint: str
    used_bytes: int
    inodes_used: int
    timestamp: float
