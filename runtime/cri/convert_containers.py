"""CRI v1 container messages <-> domain types (the container half of runtime.cri.convert).

``container_config_to_proto`` builds CreateContainer's config; the ``*_from_proto`` functions
read ListContainers and ContainerStatus answers. ``container_config_from_proto`` is the
reverse direction, for fake servers and recorders. Times as in runtime.cri.convert.
"""

from __future__ import annotations

from proto import api_pb2
from runtime.cri.convert import (
    enum_or,
    frozen_map,
    image_spec_from_proto,
    image_spec_to_proto,
    mount_from_proto,
    mount_to_proto,
    namespace_mode_to_proto,
    ns_to_seconds,
    resources_from_proto,
    resources_to_proto,
)
from runtime.cri.convert_security import (
    container_security_from_proto,
    container_security_to_proto,
)
from runtime.cri.types import (
    Container,
    ContainerConfig,
    ContainerFilter,
    ContainerMetadata,
    ContainerState,
    ContainerStatus,
    KeyValue,
    NamespaceMode,
    PodSandboxConfig,
)
from runtime.ids import ContainerID, SandboxID


def container_state_from_int(value: int) -> ContainerState:
    """A CRI ContainerState value -> ContainerState (UNKNOWN for values not in CRI v1)."""
    return enum_or(ContainerState, value, ContainerState.UNKNOWN)


def container_metadata_from_proto(msg: api_pb2.ContainerMetadata) -> ContainerMetadata:
    """CRI ContainerMetadata -> domain ContainerMetadata."""
    return ContainerMetadata(name=msg.name, attempt=msg.attempt)


def container_config_to_proto(
    config: ContainerConfig, sandbox_config: PodSandboxConfig | None = None
) -> api_pb2.ContainerConfig:
    """Domain ContainerConfig -> CRI ContainerConfig.

    The container's namespace options follow its pod's (network, PID and IPC modes), as
    upstream's runtime manager sets them, when ``sandbox_config`` is given.
    """
    security = container_security_to_proto(config.security)
    if sandbox_config is not None:
        security.namespace_options.CopyFrom(
            api_pb2.NamespaceOption(
                network=namespace_mode_to_proto(sandbox_config.network_mode),
                pid=namespace_mode_to_proto(sandbox_config.pid_mode),
                ipc=namespace_mode_to_proto(sandbox_config.ipc_mode),
            )
        )
    if config.pid_target_id:
        security.namespace_options.pid = namespace_mode_to_proto(NamespaceMode.TARGET)
        security.namespace_options.target_id = config.pid_target_id
    linux = api_pb2.LinuxContainerConfig(security_context=security)
    if config.resources is not None:
        linux.resources.CopyFrom(resources_to_proto(config.resources))
    return api_pb2.ContainerConfig(
        metadata=api_pb2.ContainerMetadata(
            name=config.metadata.name, attempt=config.metadata.attempt
        ),
        image=image_spec_to_proto(config.image),
        command=config.command,
        args=config.args,
        working_dir=config.working_dir,
        envs=[api_pb2.KeyValue(key=e.key, value=e.value) for e in config.envs],
        mounts=[mount_to_proto(m) for m in config.mounts],
        labels=dict(config.labels),
        annotations=dict(config.annotations),
        log_path=config.log_path,
        stdin=config.stdin,
        stdin_once=config.stdin_once,
        tty=config.tty,
        linux=linux,
    )


def container_config_from_proto(msg: api_pb2.ContainerConfig) -> ContainerConfig:
    """CRI ContainerConfig -> domain ContainerConfig (for fakes and recorders)."""
    linux = msg.linux
    security = linux.security_context
    return ContainerConfig(
        metadata=container_metadata_from_proto(msg.metadata),
        image=image_spec_from_proto(msg.image),
        command=tuple(msg.command),
        args=tuple(msg.args),
        working_dir=msg.working_dir,
        envs=tuple(KeyValue(key=e.key, value=e.value) for e in msg.envs),
        mounts=tuple(mount_from_proto(m) for m in msg.mounts),
        labels=frozen_map(msg.labels),
        annotations=frozen_map(msg.annotations),
        log_path=msg.log_path,
        stdin=msg.stdin,
        stdin_once=msg.stdin_once,
        tty=msg.tty,
        resources=resources_from_proto(linux.resources) if linux.HasField("resources") else None,
        security=container_security_from_proto(security),
        pid_target_id=security.namespace_options.target_id,
    )


def container_filter_to_proto(flt: ContainerFilter) -> api_pb2.ContainerFilter:
    """Domain ContainerFilter -> CRI ContainerFilter (unset fields match everything)."""
    msg = api_pb2.ContainerFilter(
        id=flt.id, pod_sandbox_id=flt.pod_sandbox_id, label_selector=dict(flt.label_selector)
    )
    if flt.state is not None:
        msg.state.state = api_pb2.ContainerState.ValueType(int(flt.state))
    return msg


def container_from_proto(msg: api_pb2.Container) -> Container:
    """One CRI ListContainers item -> Container."""
    return Container(
        id=ContainerID(msg.id),
        pod_sandbox_id=SandboxID(msg.pod_sandbox_id),
        metadata=container_metadata_from_proto(msg.metadata),
        image=image_spec_from_proto(msg.image),
        image_ref=msg.image_ref,
        state=container_state_from_int(msg.state),
        created_at=ns_to_seconds(msg.created_at),
        labels=frozen_map(msg.labels),
        annotations=frozen_map(msg.annotations),
    )


def container_status_from_proto(msg: api_pb2.ContainerStatus) -> ContainerStatus:
    """CRI ContainerStatus -> ContainerStatus."""
    return ContainerStatus(
        id=ContainerID(msg.id),
        metadata=container_metadata_from_proto(msg.metadata),
        state=container_state_from_int(msg.state),
        created_at=ns_to_seconds(msg.created_at),
        started_at=ns_to_seconds(msg.started_at),
        finished_at=ns_to_seconds(msg.finished_at),
        exit_code=msg.exit_code,
        image=image_spec_from_proto(msg.image),
        image_ref=msg.image_ref,
        reason=msg.reason,
        message=msg.message,
        labels=frozen_map(msg.labels),
        annotations=frozen_map(msg.annotations),
        mounts=tuple(mount_from_proto(m) for m in msg.mounts),
        log_path=msg.log_path,
    )
