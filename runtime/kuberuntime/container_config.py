"""A container's CRI config from its spec (upstream generateContainerConfig)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from loguru import logger
from msgspec import UNSET

from runtime.cm.container_resources import linux_container_resources
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ImageSpec,
    KeyValue,
    Mount,
    MountPropagation,
)
from runtime.errors import SyncError
from runtime.kuberuntime.api_env import ObjectEnv, service_env
from runtime.kuberuntime.downward import DownwardAPIError, env_field_value, resource_value
from runtime.kuberuntime.etc_hosts import pod_hosts_mount
from runtime.kuberuntime.host_paths import HostPaths
from runtime.kuberuntime.labels import container_annotations, container_labels
from runtime.kuberuntime.log_layout import container_log_file
from runtime.kuberuntime.object_source import ObjectSource
from runtime.kuberuntime.security_context import (
    ROOT_USER,
    ImageUser,
    container_security,
    unknown_capabilities,
    verify_run_as_non_root,
)
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.subpath import SubPath
from runtime.kuberuntime.volumes import NODE_HOST_PATHS, VolumeSetupError, volume_path
from runtime.machine import mem_total
from runtime.pod.model import Container, FileKeySelector, Pod, VolumeMount
from runtime.pod.validation.fields import go_quote

_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Upstream's $(VAR) expansion: defined names are replaced, $$ is a literal $."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)

    return _VAR_REF.sub(sub, text)


def field_value(pod: Pod, path: str, pod_ip: str, node_ip: str) -> str:
    """The downward-API value of ``path`` for an env var's fieldRef."""
    try:
        return env_field_value(pod, path, (pod_ip,) if pod_ip else (),
                               (node_ip,) if node_ip else ())
    except DownwardAPIError as err:
        raise SyncError("CreateContainerConfigError", str(err)) from err


def _missing(kind: str, name: str, optional: bool | None) -> None:
    """A ConfigMap or Secret reference: this node has no API server to get it from, so
    it is missing, as upstream's kubelet finds a missing one: an optional reference is
    skipped, any other fails the container (upstream's configmap/secret manager NotFound).
    """
    if not optional:
        raise SyncError("CreateContainerConfigError", f'{kind} "{name}" not found')


def file_key_value(pod: Pod, container: Container, ref: FileKeySelector,
                   settings: NodeSettings | None, host_paths: HostPaths) -> str | None:
    """An env var's value from a key of a file in one of the pod's emptyDirs (upstream's
    FileKeyRef case of makeEnvironmentVariables): read by ``host_paths``, never through a
    symlink out of the volume (runtime.kuberuntime.env_file); None when the key is missing
    (or empty) and the reference optional, SyncError in upstream's words otherwise. A
    file that is missing or cannot be parsed fails even an optional reference, as
    upstream's ParseEnv fails it."""
    volume = next((v for v in pod.spec.volumes if v.name == ref.volume_name), None)
    missing = SyncError("CreateContainerConfigError",
                        f"cannot find the volume {go_quote(ref.volume_name)} referenced by "
                        "FileKeyRef")
    if volume is None or settings is None:
        raise missing
    try:
        host = volume_path(pod, volume, settings)
    except VolumeSetupError as err:
        raise missing from err
    read = host_paths.read_env_key(host, ref.path, ref.key)
    if read.failed == "join":
        raise SyncError("CreateContainerConfigError", read.detail)
    if read.failed:
        # As upstream: the detail names the node's paths and what the file holds, so it
        # goes to the log, not to the pod.
        logger.bind(pod=pod.metadata.name, uid=pod.metadata.uid,
                    container=container.name).error("failed to parse env file: {}",
                                                    read.detail)
        raise SyncError("CreateContainerConfigError", "couldn't parse env file")
    if read.value:
        return read.value
    if ref.optional:
        return None
    raise SyncError("CreateContainerConfigError",
                    f"environment variable key {go_quote(ref.key)} not found in file "
                    f"{go_quote(read.path)}")


def make_env(pod: Pod, container: Container, pod_ip: str, node_ip: str,
             allocatable: Mapping[str, str] | None = None,
             objects: ObjectSource | None = None, settings: NodeSettings | None = None,
             host_paths: HostPaths = NODE_HOST_PATHS) -> dict[str, str]:
    """The container's environment, as upstream's makeEnvironmentVariables: envFrom
    first, then env in order (with ``objects``, cluster mode: from the API server, and
    the service links after them; api_env). A ``fileKeyRef`` is read from the pod's
    volume (found by ``settings``) through ``host_paths``."""
    if objects is not None:
        return _make_api_env(pod, container, pod_ip, node_ip, objects, allocatable,
                             settings, host_paths)
    env: dict[str, str] = {}
    for source in container.env_from:
        if source.config_map_ref is not None:
            _missing("configmap", source.config_map_ref.name, source.config_map_ref.optional)
        elif source.secret_ref is not None:
            _missing("secret", source.secret_ref.name, source.secret_ref.optional)
    for var in container.env:
        ref = var.value_from
        if ref is None:
            env[var.name] = expand(var.value, env)
        elif ref.field_ref is not None:
            env[var.name] = field_value(pod, ref.field_ref.field_path, pod_ip, node_ip)
        elif ref.resource_field_ref is not None:
            env[var.name] = resource_value(pod, container, ref.resource_field_ref, allocatable)
        elif ref.config_map_key_ref is not None:
            _missing("configmap", ref.config_map_key_ref.name, ref.config_map_key_ref.optional)
        elif ref.secret_key_ref is not None:
            _missing("secret", ref.secret_key_ref.name, ref.secret_key_ref.optional)
        elif ref.file_key_ref is not None:
            value = file_key_value(pod, container, ref.file_key_ref, settings, host_paths)
            if value is not None:
                env[var.name] = value
    return env


def _make_api_env(pod: Pod, container: Container, pod_ip: str, node_ip: str,
                  objects: ObjectSource, allocatable: Mapping[str, str] | None,
                  settings: NodeSettings | None, host_paths: HostPaths) -> dict[str, str]:
    services = service_env(pod, objects)
    reader = ObjectEnv(pod, objects)
    env: dict[str, str] = {}
    for source in container.env_from:
        if source.config_map_ref is not None:
            ref = source.config_map_ref
            env.update(reader.env_from("configmap", ref.name, source.prefix, bool(ref.optional)))
        elif source.secret_ref is not None:
            sref = source.secret_ref
            env.update(reader.env_from("secret", sref.name, source.prefix, bool(sref.optional)))
    for var in container.env:
        ref_ = var.value_from
        value: str | None = var.value
        if ref_ is None or var.value:
            value = expand(var.value, {**services, **env})
        elif ref_.field_ref is not None:
            value = field_value(pod, ref_.field_ref.field_path, pod_ip, node_ip)
        elif ref_.resource_field_ref is not None:
            value = resource_value(pod, container, ref_.resource_field_ref, allocatable)
        elif ref_.config_map_key_ref is not None:
            k = ref_.config_map_key_ref
            value = reader.key("configmap", k.name, k.key, bool(k.optional))
        elif ref_.secret_key_ref is not None:
            sk = ref_.secret_key_ref
            value = reader.key("secret", sk.name, sk.key, bool(sk.optional))
        elif ref_.file_key_ref is not None:
            value = file_key_value(pod, container, ref_.file_key_ref, settings, host_paths)
        if value is not None:
            env[var.name] = value
    # The service links go after, unless the container names the variable itself.
    return {**env, **{k: v for k, v in services.items() if k not in env}}


def termination_message_file(pod: Pod, container: Container, settings: NodeSettings,
                             restart_count: int) -> str | None:
    """The file the runtime mounts at the container's terminationMessagePath, made empty
    now; None when it needs none (no path, or a volume mounted there)."""
    if not container.termination_message_path or any(
        vm.mount_path == container.termination_message_path for vm in container.volume_mounts
    ):
        return None
    directory = os.path.join(settings.pod_dir(pod.metadata.uid), "containers", container.name)
    os.makedirs(directory, exist_ok=True)
    message_file = os.path.join(directory, f"termination-{restart_count}")
    # Created empty (a new container must not show an older one's message: upstream
    # names it by a random id, here the restart count keeps replays deterministic)
    # and world-writable, so a container running as any user can write it.
    Path(message_file).write_bytes(b"")
    os.chmod(message_file, 0o666)
    return message_file


_PROPAGATIONS = {"": MountPropagation.PRIVATE, "None": MountPropagation.PRIVATE,
                 "HostToContainer": MountPropagation.HOST_TO_CONTAINER,
                 "Bidirectional": MountPropagation.BIDIRECTIONAL}
"""A volume mount's mountPropagation as the CRI names it (upstream's
translateMountPropagation); None and unset are private."""


def expand_sub_path_expr(expr: str, env: Mapping[str, str]) -> str:
    """A subPathExpr with the container's env put in (upstream's
    ExpandContainerVolumeMounts): a name that is not set, or set empty, fails it."""
    missing: set[str] = set()

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        value = env.get(match.group(1), "")
        if not value:
            missing.add(match.group(1))
        return value

    expanded = _VAR_REF.sub(sub, expr)
    if missing:
        raise SyncError("CreateContainerConfigError",
                        f"missing value for {', '.join(sorted(missing))}")
    return expanded


def wants_recursive_read_only(container: Container) -> bool:
    """Whether a volume mount of ``container`` asks for recursive read-only (Enabled or
    IfPossible): only then does the runtime handler's support matter."""
    return any(m.recursive_read_only not in (None, "", "Disabled")
               for m in container.volume_mounts)


def resolve_recursive_read_only(mount: VolumeMount, supported: bool) -> bool:
    """Whether ``mount`` is made recursively read-only (upstream's resolveRecursiveReadOnly):
    Enabled needs a read-only mount with no propagation on a runtime that supports it,
    IfPossible takes it where the runtime does; SyncError in upstream's words else."""
    mode = mount.recursive_read_only
    if mode in (None, "", "Disabled"):
        return False
    if not mount.read_only:
        error = f'volume "{mount.name}" requested recursive read-only mode, but it is not read-only'
    elif mount.mount_propagation not in ("", "None"):
        error = (f'volume "{mount.name}" requested recursive read-only mode, but it is not '
                 f'compatible with propagation "{mount.mount_propagation}"')
    elif mode == "IfPossible":
        return supported
    elif mode == "Enabled":
        if supported:
            return True
        error = (f'volume "{mount.name}" requested recursive read-only mode, but it is not '
                 "supported by the runtime")
    else:
        error = f'unknown recursive read-only mode "{mode}"'
    raise SyncError("CreateContainerConfigError",
                    f"failed to resolve recursive read-only mode: {error}")


def _sub_path_mount(pod: Pod, container: Container, index: int, sub_path: str,
                    volume_name: str, volume_dir: str, settings: NodeSettings,
                    host_paths: HostPaths) -> str:
    """The host path a container's volume mount with a subPath mounts: the subPath made
    inside the volume and bind-mounted safely by ``host_paths`` (upstream's makeMounts),
    never the volume's path joined with what the pod wrote."""
    if os.path.isabs(sub_path):
        raise SyncError("CreateContainerConfigError",
                        f"error SubPath `{sub_path}` must not be an absolute path")
    if ".." in sub_path.split("/"):
        raise SyncError("CreateContainerConfigError",
                        f"unable to provision SubPath `{sub_path}`: must not contain '..'")
    made = host_paths.mount_sub_path(SubPath(
        # Cleaned as upstream's filepath.Join cleans it ("c/." is "c", a file or not).
        path=os.path.normpath(os.path.join(volume_dir, sub_path)), volume_path=volume_dir,
        pod_dir=settings.pod_dir(pod.metadata.uid), volume_name=volume_name,
        container_name=container.name, mount_index=index))
    if not made.failed:
        return made.host_path
    # As upstream: the detail names node paths, so it goes to the log, not to the pod.
    logger.bind(pod=pod.metadata.name, uid=pod.metadata.uid, container=container.name).warning(
        "failed to {} subPath for volumeMount {!r}: {}", made.failed, volume_name, made.detail)
    what = ("create subPath directory" if made.failed == "create" else "prepare subPath")
    raise SyncError("CreateContainerConfigError",
                    f'failed to {what} for volumeMount "{volume_name}" of container '
                    f'"{container.name}"')


def make_mounts(
    pod: Pod, container: Container, settings: NodeSettings, restart_count: int,
    pod_ip: str = "", host_paths: HostPaths = NODE_HOST_PATHS,
    made_message_file: str | None = None, env: Mapping[str, str] | None = None,
    recursive_read_only: bool = False,
) -> tuple[Mount, ...]:
    """The container's mounts: its volume mounts (a subPath or a subPathExpr, expanded from
    ``env``, bind-mounted safely; recursively read-only where asked and the runtime handler
    can, ``recursive_read_only``), its termination-message file (the one
    ``made_message_file`` names when the start made it already, else made here) and the
    pod's /etc/hosts."""
    volumes = {v.name: v for v in pod.spec.volumes}
    mounts: list[Mount] = []
    for index, vm in enumerate(container.volume_mounts):
        volume = volumes.get(vm.name)
        if volume is None:
            raise SyncError(
                "CreateContainerConfigError", f'volumeMount "{vm.name}" names no volume'
            )
        try:
            # Set up before the sandbox (KubeRuntimeManager): here only looked up.
            host = volume_path(pod, volume, settings)
        except VolumeSetupError as err:
            raise SyncError("CreateContainerConfigError", str(err)) from err
        sub_path = (expand_sub_path_expr(vm.sub_path_expr, env or {}) if vm.sub_path_expr
                    else vm.sub_path)
        if sub_path:
            host = _sub_path_mount(pod, container, index, sub_path, vm.name, host, settings,
                                   host_paths)
        propagation = _PROPAGATIONS.get(vm.mount_propagation)
        if propagation is None:
            raise SyncError("CreateContainerConfigError",
                            f'invalid MountPropagation mode: "{vm.mount_propagation}"')
        rro = resolve_recursive_read_only(vm, recursive_read_only)
        mounts.append(Mount(container_path=vm.mount_path, host_path=host,
                            readonly=vm.read_only, propagation=propagation,
                            recursive_read_only=True if rro else UNSET))
    message_file = made_message_file or termination_message_file(pod, container, settings,
                                                                  restart_count)
    if message_file is not None:
        mounts.append(Mount(container.termination_message_path, message_file))
    hosts = pod_hosts_mount(pod, container, settings, pod_ip)
    if hosts is not None:
        mounts.append(hosts)
    return tuple(mounts)


def generate_container_config(
    pod: Pod,
    container: Container,
    image_ref: str,
    restart_count: int,
    pod_ip: str,
    settings: NodeSettings,
    node_ip: str = "",
    pid_target: str = "",
    image_user: ImageUser = ROOT_USER,
    objects: ObjectSource | None = None,
    host_paths: HostPaths = NODE_HOST_PATHS,
    made_message_file: str | None = None,
    recursive_read_only: bool = False,
) -> ContainerConfig:
    """The CreateContainer config; SyncError(CreateContainerConfigError) when it can't be.

    ``image_user`` is the user the image's config names (security_context.image_user of
    its ImageStatus), for the runAsNonRoot check and as the user to run as when the pod
    names none. ``host_paths`` makes and bind-mounts the volume mounts' subPaths and reads
    the env vars' ``fileKeyRef`` files.
    ``made_message_file``: the termination-message file this start made already
    (termination_message_file), else it is made here. ``recursive_read_only``: whether the
    pod's runtime handler can make recursive read-only mounts.
    """
    refused = verify_run_as_non_root(pod, container, image_user)
    if refused is not None:
        raise SyncError("CreateContainerConfigError", refused)
    for name in unknown_capabilities(pod, container):
        logger.bind(pod=pod.metadata.name, uid=pod.uid, container=container.name).warning(
            'unknown capability "{}" in securityContext.capabilities: not a Linux capability, '
            "the runtime ignores it", name)
    try:
        env = make_env(pod, container, pod_ip, node_ip, dict(settings.allocatable), objects,
                       settings, host_paths)
        resources = linux_container_resources(
            pod, container, settings.memory_capacity or mem_total(), settings.hugepage_sizes)
        security = container_security(pod, container, image_user, settings.seccomp_dir,
                                      settings.seccomp_default)
    except ValueError as err:
        raise SyncError("CreateContainerConfigError", str(err)) from err
    return ContainerConfig(
        metadata=ContainerMetadata(name=container.name, attempt=restart_count),
        image=ImageSpec(image=image_ref or container.image),
        command=tuple(expand(c, env) for c in container.command),
        args=tuple(expand(a, env) for a in container.args),
        working_dir=container.working_dir,
        envs=tuple(KeyValue(k, v) for k, v in env.items()),
        mounts=make_mounts(pod, container, settings, restart_count, pod_ip, host_paths,
                           made_message_file, env, recursive_read_only),
        labels=container_labels(pod, container),
        annotations=container_annotations(pod, container, restart_count),
        log_path=container_log_file(container.name, restart_count),
        stdin=container.stdin,
        stdin_once=container.stdin_once,
        tty=container.tty,
        resources=resources,
        security=security,
        pid_target_id=pid_target,
    )
