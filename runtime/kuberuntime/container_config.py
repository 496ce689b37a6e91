"""A container's CRI config from its spec (upstream generateContainerConfig)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ImageSpec,
    KeyValue,
    LinuxContainerResources,
    Mount,
)
from runtime.errors import SyncError
from runtime.kuberuntime.api_env import ObjectEnv, service_env
from runtime.kuberuntime.api_volumes import api_volume_path, is_api_volume
from runtime.kuberuntime.downward import metadata_value, resource_value
from runtime.kuberuntime.labels import container_annotations, container_labels
from runtime.kuberuntime.object_source import ObjectSource
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.volumes import VolumeSetupError, set_up_volume
from runtime.pod.model import Container, Pod
from runtime.pod.quantity import bytes_of, milli_cpu

CPU_PERIOD = 100_000
MIN_SHARES = 2
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
    simple = {
        "spec.nodeName": pod.spec.node_name,
        "spec.serviceAccountName": pod.spec.service_account_name,
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIP": node_ip,
        "status.hostIPs": node_ip,
    }
    if path in simple:
        return simple[path]
    value = metadata_value(pod, path)
    if value is not None and path not in ("metadata.labels", "metadata.annotations"):
        return value
    raise SyncError("CreateContainerConfigError", f'unsupported fieldRef fieldPath "{path}"')


def _missing(kind: str, name: str, optional: bool | None) -> None:
    """A ConfigMap or Secret reference: this node has no API server to get it from, so
    it is missing, as upstream's kubelet finds a missing one: an optional reference is
    skipped, any other fails the container (upstream's configmap/secret manager NotFound).
    """
    if not optional:
        raise SyncError("CreateContainerConfigError", f'{kind} "{name}" not found')


def make_env(pod: Pod, container: Container, pod_ip: str, node_ip: str,
             objects: ObjectSource | None = None) -> dict[str, str]:
    """The container's environment, as upstream's makeEnvironmentVariables: envFrom
    first, then env in order (with ``objects``, cluster mode: from the API server, and
    the service links after them; api_env)."""
    if objects is not None:
        return _make_api_env(pod, container, pod_ip, node_ip, objects)
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
            env[var.name] = resource_value(pod, container, ref.resource_field_ref)
        elif ref.config_map_key_ref is not None:
            _missing("configmap", ref.config_map_key_ref.name, ref.config_map_key_ref.optional)
        elif ref.secret_key_ref is not None:
            _missing("secret", ref.secret_key_ref.name, ref.secret_key_ref.optional)
    return env


def _make_api_env(pod: Pod, container: Container, pod_ip: str, node_ip: str,
                  objects: ObjectSource) -> dict[str, str]:
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
            value = resource_value(pod, container, ref_.resource_field_ref)
        elif ref_.config_map_key_ref is not None:
            k = ref_.config_map_key_ref
            value = reader.key("configmap", k.name, k.key, bool(k.optional))
        elif ref_.secret_key_ref is not None:
            sk = ref_.secret_key_ref
            value = reader.key("secret", sk.name, sk.key, bool(sk.optional))
        if value is not None:
            env[var.name] = value
    # The service links go after, unless the container names the variable itself.
    return {**env, **{k: v for k, v in services.items() if k not in env}}


def make_resources(container: Container) -> LinuxContainerResources | None:
    if container.resources is None:
        return None
    limits, requests = container.resources.limits, container.resources.requests
    cpu_request = requests.get("cpu", limits.get("cpu"))
    shares = MIN_SHARES
    if cpu_request is not None:
        shares = max(MIN_SHARES, milli_cpu(cpu_request) * 1024 // 1000)
    quota = 0
    if "cpu" in limits:
        quota = max(1000, milli_cpu(limits["cpu"]) * CPU_PERIOD // 1000)
    memory = bytes_of(limits["memory"]) if "memory" in limits else 0
    return LinuxContainerResources(
        cpu_period=CPU_PERIOD if quota else 0,
        cpu_quota=quota,
        cpu_shares=shares,
        memory_limit_in_bytes=memory,
    )


def make_mounts(
    pod: Pod, container: Container, settings: NodeSettings, restart_count: int,
    objects: ObjectSource | None = None,
) -> tuple[Mount, ...]:
    volumes = {v.name: v for v in pod.spec.volumes}
    mounts: list[Mount] = []
    for vm in container.volume_mounts:
        volume = volumes.get(vm.name)
        if volume is None:
            raise SyncError(
                "CreateContainerConfigError", f'volumeMount "{vm.name}" names no volume'
            )
        try:
            # Set up before the sandbox (KubeRuntimeManager): here only looked up again.
            host = (api_volume_path(pod, volume, settings)
                    if objects is not None and is_api_volume(volume)
                    else set_up_volume(pod, volume, settings))
        except VolumeSetupError as err:
            raise SyncError("CreateContainerConfigError", str(err)) from err
        if vm.sub_path:
            host = os.path.join(host, vm.sub_path)
            os.makedirs(host, exist_ok=True)
        mounts.append(Mount(container_path=vm.mount_path, host_path=host, readonly=vm.read_only))
    if container.termination_message_path and not any(
        m.container_path == container.termination_message_path for m in mounts
    ):
        directory = os.path.join(settings.pod_dir(pod.metadata.uid), "containers", container.name)
        os.makedirs(directory, exist_ok=True)
        message_file = os.path.join(directory, f"termination-{restart_count}")
        Path(message_file).touch(mode=0o666)
        os.chmod(message_file, 0o666)
        mounts.append(Mount(container.termination_message_path, message_file))
    return tuple(mounts)


def generate_container_config(
    pod: Pod,
    container: Container,
    image_ref: str,
    restart_count: int,
    pod_ip: str,
    settings: NodeSettings,
    node_ip: str = "",
    objects: ObjectSource | None = None,
) -> ContainerConfig:
    """The CreateContainer config; SyncError(CreateContainerConfigError) when it can't be."""
    try:
        env = make_env(pod, container, pod_ip, node_ip, objects)
        resources = make_resources(container)
    except ValueError as err:
        raise SyncError("CreateContainerConfigError", str(err)) from err
    security = container.security_context
    run_as_user = security.run_as_user if security else None
    if run_as_user is None and pod.spec.security_context is not None:
        run_as_user = pod.spec.security_context.run_as_user
    return ContainerConfig(
        metadata=ContainerMetadata(name=container.name, attempt=restart_count),
        image=ImageSpec(image=image_ref or container.image),
        command=tuple(expand(c, env) for c in container.command),
        args=tuple(expand(a, env) for a in container.args),
        working_dir=container.working_dir,
        envs=tuple(KeyValue(k, v) for k, v in env.items()),
        mounts=make_mounts(pod, container, settings, restart_count, objects),
        labels=container_labels(pod, container),
        annotations=container_annotations(pod, container, restart_count),
        log_path=os.path.join(container.name, f"{restart_count}.log"),
        stdin=container.stdin,
        stdin_once=container.stdin_once,
        tty=container.tty,
        resources=resources,
        run_as_user=run_as_user,
        privileged=bool(security and security.privileged),
    )
