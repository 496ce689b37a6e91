"""Containers: names, images, ports, env, mounts, probes, lifecycle hooks, resources
(upstream's validateContainerCommon and what it calls).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from runtime.pod.model import (
    Container,
    ContainerPort,
    EnvVar,
    FileKeySelector,
    HTTPGetAction,
    IntOrString,
    Lifecycle,
    LifecycleHandler,
    PodSpec,
    Probe,
    Volume,
    VolumeMount,
)
from runtime.pod.validation.fields import (
    _ENV_NAME_BAD,
    _ENV_NAME_MSG,
    _HEADER,
    _HEADER_MSG,
    _NON_NEGATIVE,
    _PLAIN_INIT,
    _PORT_RANGE,
    AnyContainer,
    Problem,
    _descending_path,
    _field_ref_missing,
    _no_backsteps,
    _port_name,
    _qualified_name,
    config_map_key,
    duplicate,
    forbidden,
    invalid,
    label_faults,
    name_is_dns_subdomain,
    not_found,
    not_supported,
    required,
    subdomain_faults,
)
from runtime.pod.validation.resources import (
    claim_names,
    divisor,
    requirements,
    resize_policy,
)
from runtime.pod.validation.security import (
    security_context,
)

PULL_POLICIES = ("Always", "IfNotPresent", "Never")
PROTOCOLS = ("SCTP", "TCP", "UDP")
TERMINATION_MESSAGE_POLICIES = ("FallbackToLogsOnError", "File")
MOUNT_PROPAGATIONS = ("Bidirectional", "HostToContainer", "None")

# --- containers ----------------------------------------------------------------------------


def _container(
    c: AnyContainer, path: str, volumes: Mapping[str, Volume], grace: int | None, *,
    init: bool,
    host_users: bool,
    claims: frozenset[str] = frozenset(),
    pod_restart_policy: str = "Always",
) -> Iterator[Problem]:
    if not c.name:
        yield required(f"{path}.name")
    for why in label_faults(c.name) if c.name else ():
        yield invalid(f"{path}.name", c.name, why)
    if not c.image:
        yield required(f"{path}.image")
    elif c.image != c.image.strip():
        yield invalid(f"{path}.image", c.image, "must not have leading or trailing whitespace")
    if c.image_pull_policy not in PULL_POLICIES:
        yield not_supported(f"{path}.imagePullPolicy", c.image_pull_policy, PULL_POLICIES)
    policy = c.termination_message_policy
    if policy not in TERMINATION_MESSAGE_POLICIES:
        yield not_supported(f"{path}.terminationMessagePolicy", policy,
                            TERMINATION_MESSAGE_POLICIES)
    if c.restart_policy is not None:
        if not init:
            yield forbidden(f"{path}.restartPolicy", "may not be set for non-init containers")
        elif c.restart_policy != "Always":
            yield not_supported(f"{path}.restartPolicy", c.restart_policy, ("Always",))
    yield from _ports(c.ports, f"{path}.ports")
    yield from _env(c.env, f"{path}.env")
    for i, source in enumerate(c.env_from):
        p = f"{path}.envFrom[{i}]"
        refs = [(f, r) for f, r in (("configMapRef", source.config_map_ref),
                                    ("secretRef", source.secret_ref)) if r is not None]
        # upstream reports these two at envFrom itself, not at the entry
        if not refs:
            yield invalid(f"{path}.envFrom", "",
                          "must specify one of: `configMapRef` or `secretRef`")
        elif len(refs) > 1:
            yield invalid(f"{path}.envFrom", "",
                          "may not have more than one field specified at a time")
        for field, ref in refs:
            yield from _object_name(ref.name, f"{p}.{field}.name")
        if source.prefix and _ENV_NAME_BAD.search(source.prefix):
            yield invalid(f"{p}.prefix", source.prefix, _ENV_NAME_MSG)
    yield from _mounts(c, f"{path}.volumeMounts", volumes)
    yield from _devices(c, f"{path}.volumeDevices", volumes)
    if c.resources is not None:
        yield from requirements(c.resources, f"{path}.resources")
        yield from claim_names(c.resources.claims, claims, f"{path}.resources.claims")
    yield from resize_policy(c.resize_policy, f"{path}.resizePolicy", pod_restart_policy)
    if c.security_context is not None:
        yield from security_context(c.security_context, f"{path}.securityContext",
                                    host_users=host_users)
    plain_init = init and c.restart_policy != "Always"
    for field, probe in (
        ("livenessProbe", c.liveness_probe),
        ("readinessProbe", c.readiness_probe),
        ("startupProbe", c.startup_probe),
    ):
        if probe is None:
            continue
        if plain_init:
            yield forbidden(f"{path}.{field}", _PLAIN_INIT)
        else:
            yield from _probe(probe, f"{path}.{field}", field)
    if c.lifecycle is not None:
        if plain_init:
            yield forbidden(f"{path}.lifecycle", _PLAIN_INIT)
        else:
            yield from _lifecycle(c.lifecycle, f"{path}.lifecycle", grace)
    # upstream validateInitContainers: a sidecar may set a resize policy (its "must not be
    # set for init containers" fires only with InPlacePodVerticalScaling off, GA since
    # 1.35), but an init container that runs to completion cannot be restarted to resize
    for j, resize in enumerate(c.resize_policy if plain_init else ()):
        if resize.restart_policy == "RestartContainer":
            yield invalid(f"{path}.resizePolicy[{j}].restartPolicy", resize.restart_policy,
                          "must not be set to 'RestartContainer' for non-sidecar "
                          "initContainers")


def _ports(ports: tuple[ContainerPort, ...], path: str) -> Iterator[Problem]:
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = f"{path}[{i}]"
        if port.name:
            if why := _port_name(port.name):
                for msg in why:
                    yield invalid(f"{p}.name", port.name, msg)
            elif port.name in names:
                yield duplicate(f"{p}.name", port.name)
            else:
                names.add(port.name)
        if port.container_port == 0:
            yield required(f"{p}.containerPort")
        elif not 1 <= port.container_port <= 65535:
            yield invalid(f"{p}.containerPort", port.container_port, _PORT_RANGE)
        if port.host_port != 0 and not 1 <= port.host_port <= 65535:
            yield invalid(f"{p}.hostPort", port.host_port, _PORT_RANGE)
        if not port.protocol:
            yield required(f"{p}.protocol")
        elif port.protocol not in PROTOCOLS:
            yield not_supported(f"{p}.protocol", port.protocol, PROTOCOLS)


def _host_port_conflicts(containers: tuple[Container, ...], path: str) -> Iterator[Problem]:
    """upstream AccumulateUniqueHostPorts: one hostPort/protocol/IP per pod."""
    seen: set[str] = set()
    for i, c in enumerate(containers):
        for j, port in enumerate(c.ports):
            if port.host_port == 0:
                continue
            key = f"{port.protocol}/{port.host_ip}/{port.host_port}"
            if key in seen:
                yield duplicate(f"{path}[{i}].ports[{j}].hostPort", key)
            seen.add(key)


def _env(env: tuple[EnvVar, ...], path: str) -> Iterator[Problem]:
    for i, e in enumerate(env):
        p = f"{path}[{i}]"
        if not e.name:
            yield required(f"{p}.name")
        elif _ENV_NAME_BAD.search(e.name):
            yield invalid(f"{p}.name", e.name, _ENV_NAME_MSG)
        if e.value_from is not None:
            yield from _value_from(e, f"{p}.valueFrom")


def _value_from(e: EnvVar, path: str) -> Iterator[Problem]:
    """upstream validateEnvVarValueFrom: each source's own rules, then one error at most
    about how many there are."""
    vf = e.value_from
    assert vf is not None
    if vf.field_ref is not None:
        yield from _field_ref(vf.field_ref.api_version, vf.field_ref.field_path,
                              f"{path}.fieldRef")
    if (ref := vf.resource_field_ref) is not None:
        rp = f"{path}.resourceFieldRef"
        if not ref.resource:
            yield required(f"{rp}.resource")
        elif ref.resource not in _ENV_RESOURCES and not ref.resource.startswith(
                ("limits.hugepages-", "requests.hugepages-")):
            yield not_supported(f"{rp}.resource", ref.resource, _ENV_RESOURCES)
        yield from divisor(ref.resource, ref.divisor, rp)
    for field, key_ref in (("configMapKeyRef", vf.config_map_key_ref),
                           ("secretKeyRef", vf.secret_key_ref)):
        if key_ref is None:
            continue
        kp = f"{path}.{field}"
        # upstream checks the name with NameIsDNSSubdomain even when it is empty
        for why in subdomain_faults(key_ref.name):
            yield invalid(f"{kp}.name", key_ref.name, why)
        if not key_ref.key:
            yield required(f"{kp}.key")
        for why in config_map_key(key_ref.key) if key_ref.key else ():
            yield invalid(f"{kp}.key", key_ref.key, why)
    if vf.file_key_ref is not None:
        yield from _file_key_ref(vf.file_key_ref, f"{path}.fileKeyRef")
    sources = [s for s in (vf.field_ref, vf.resource_field_ref, vf.config_map_key_ref,
                           vf.secret_key_ref, vf.file_key_ref) if s is not None]
    if not sources:
        # the wording with fileKeyRef: upstream's EnvFiles, beta and on since 1.35
        yield invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, "
                      "`configMapKeyRef`, `secretKeyRef` or `fileKeyRef`")
    elif e.value:
        yield invalid(path, "", "may not be specified when `value` is not empty")
    elif len(sources) > 1:
        yield invalid(path, "", "may not have more than one field specified at a time")


def _file_key_ref(ref: FileKeySelector, path: str) -> Iterator[Problem]:
    """upstream validateFileKeySelector: a key that is an environment variable's name, the
    volume's name a DNS label, a path without backsteps (it may be absolute: upstream does
    not say otherwise). Which volume it names is file_key_ref_volumes's to check."""
    if not ref.key:
        yield required(f"{path}.key")
    elif _ENV_NAME_BAD.search(ref.key):
        yield invalid(f"{path}.key", ref.key, _ENV_NAME_MSG)
    if not ref.volume_name:
        yield required(f"{path}.volumeName")
    for why in label_faults(ref.volume_name) if ref.volume_name else ():
        yield invalid(f"{path}.volumeName", ref.volume_name, why)
    if not ref.path:
        yield required(f"{path}.path")
    else:
        yield from _no_backsteps(ref.path, f"{path}.path")


def file_key_ref_volumes(spec: PodSpec) -> Iterator[Problem]:
    """upstream validateFileKeyRefVolumes, the last of ValidatePodSpec's checks: a fileKeyRef
    names one of the pod's volumes (any of them, faulty or not), an emptyDir; over the init,
    regular and ephemeral containers, in that order (upstream's VisitContainersWithPath)."""
    sources = {v.name: v for v in spec.volumes}
    visits: tuple[tuple[str, tuple[AnyContainer, ...]], ...] = (
        ("initContainers", spec.init_containers), ("containers", spec.containers),
        ("ephemeralContainers", spec.ephemeral_containers))
    for field, containers in visits:
        for i, c in enumerate(containers):
            for j, e in enumerate(c.env):
                ref = e.value_from.file_key_ref if e.value_from is not None else None
                if ref is None:
                    continue
                p = f"spec.{field}[{i}].env[{j}].valueFrom.fileKeyRef.volumeName"
                volume = sources.get(ref.volume_name)
                if volume is None:
                    yield not_found(p, ref.volume_name)
                elif volume.empty_dir is None:
                    yield invalid(p, ref.volume_name, "referenced volume must be of type emptyDir")


_ENV_FIELD_PATHS = (
    "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
    "status.podIPs",
)  # fmt: skip
_ENV_SUBSCRIPT = re.compile(r"metadata\.(labels|annotations)\['(?P<key>[^']*)'\]")
_ENV_RESOURCES = (
    "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
    "requests.ephemeral-storage", "requests.memory",
)  # fmt: skip


def _field_ref(api_version: str, field_path: str, path: str) -> Iterator[Problem]:
    """upstream validateObjectFieldSelector for env: the first missing part ends it."""
    if (missing := _field_ref_missing(api_version, field_path, path)) is not None:
        yield missing
        return
    if api_version != "v1":
        yield invalid(f"{path}.fieldPath", field_path,
                      f"error converting fieldPath: unsupported pod version: {api_version}")
        return
    match = _ENV_SUBSCRIPT.fullmatch(field_path)
    if match is not None:
        key = match["key"].lower() if match[1] == "annotations" else match["key"]
        for why in _qualified_name(key):
            yield invalid(path, key, why)
    elif field_path not in _ENV_FIELD_PATHS:
        yield not_supported(f"{path}.fieldPath", field_path, _ENV_FIELD_PATHS)


def _object_name(name: str, path: str) -> Iterator[Problem]:
    """An envFrom reference to a ConfigMap or Secret: upstream's NameIsDNSSubdomain as a
    prefix (a trailing '-' allowed)."""
    if not name:
        yield required(path)
    for why in name_is_dns_subdomain(name, prefix=True) if name else ():
        yield invalid(path, name, why)


def _mounts(c: AnyContainer, path: str, volumes: Mapping[str, Volume]) -> Iterator[Problem]:
    """upstream ValidateVolumeMounts. Some of its errors name the list, not the entry
    (``volumeMounts.subPath``): upstream's paths, kept."""
    mount_paths: set[str] = set()
    devices = {d.name: d.device_path for d in c.volume_devices}
    privileged = c.security_context is not None and c.security_context.privileged is True
    for i, m in enumerate(c.volume_mounts):
        p = f"{path}[{i}]"
        if not m.name:
            yield required(f"{p}.name")
        if m.name not in volumes:
            yield not_found(f"{p}.name", m.name)
        if not m.mount_path:
            yield required(f"{p}.mountPath")
        if m.mount_path in mount_paths:
            yield invalid(f"{p}.mountPath", m.mount_path, "must be unique")
        mount_paths.add(m.mount_path)
        if m.name in devices:
            yield invalid(f"{p}.name", m.name, "must not already exist in volumeDevices")
        if m.mount_path in devices.values():
            yield invalid(f"{p}.mountPath", m.mount_path,
                          "must not already exist as a path in volumeDevices")
        # (upstream refused subPath on image volumes until its ImageVolume feature took
        # them, 1.33: the Kubernetes docs' own example mounts one with a subPath.)
        if m.sub_path:
            yield from _descending_path(m.sub_path, f"{path}.subPath")
        if m.sub_path_expr:
            if m.sub_path:
                yield invalid(f"{p}.subPathExpr", m.sub_path_expr,
                              "subPathExpr and subPath are mutually exclusive")
            yield from _descending_path(m.sub_path_expr, f"{path}.subPathExpr")
        yield from _propagation(m, f"{path}.mountPropagation", privileged)
        yield from _recursive_read_only(m, f"{path}.recursiveReadOnly")


_RRO = ("Disabled", "Enabled", "IfPossible")


def _recursive_read_only(m: VolumeMount, path: str) -> Iterator[Problem]:
    """upstream validateMountRecursiveReadOnly."""
    if m.recursive_read_only is None or m.recursive_read_only == "Disabled":
        return
    if m.recursive_read_only not in _RRO:
        yield not_supported(path, m.recursive_read_only, _RRO)
        return
    if not m.read_only:
        yield forbidden(path, "may only be specified when readOnly is true")
    if m.mount_propagation and m.mount_propagation != "None":
        yield forbidden(path, "may only be specified when mountPropagation is None or not "
                        "specified")


def _devices(c: AnyContainer, path: str, volumes: Mapping[str, Volume]) -> Iterator[Problem]:
    """upstream ValidateVolumeDevices."""
    mounts = {m.name: m.mount_path for m in c.volume_mounts}
    device_paths: set[str] = set()
    device_names: set[str] = set()
    for i, d in enumerate(c.volume_devices):
        p = f"{path}[{i}]"
        volume = volumes.get(d.name)
        if not d.name:
            yield required(f"{p}.name")
        if d.name in device_names:
            yield invalid(f"{p}.name", d.name, "must be unique")
        if volume is not None and volume.persistent_volume_claim is None and (
                volume.ephemeral is None):
            yield invalid(f"{p}.name", d.name, "can only use volume source type of "
                          "PersistentVolumeClaim or Ephemeral for block mode")
        if volume is None:
            yield not_found(f"{p}.name", d.name)
        if not d.device_path:
            yield required(f"{p}.devicePath")
        if d.device_path in device_paths:
            yield invalid(f"{p}.devicePath", d.device_path, "must be unique")
        if d.device_path and ".." in d.device_path.split("/"):
            yield invalid(f"{p}.devicePath", d.device_path, "can not contain backsteps ('..')")
        else:
            device_paths.add(d.device_path)
        if d.name in mounts:
            yield invalid(f"{p}.name", d.name, "must not already exist in volumeMounts")
        if d.device_path in mounts.values():
            yield invalid(f"{p}.devicePath", d.device_path,
                          "must not already exist as a path in volumeMounts")
        if d.name:
            device_names.add(d.name)


def _propagation(m: VolumeMount, path: str, privileged: bool) -> Iterator[Problem]:
    if not m.mount_propagation:
        return
    if m.mount_propagation not in MOUNT_PROPAGATIONS:
        yield not_supported(path, m.mount_propagation, MOUNT_PROPAGATIONS)
    elif m.mount_propagation == "Bidirectional" and not privileged:
        yield forbidden(path, "Bidirectional mount propagation is available only to "
                        "privileged containers")



# --- probes and handlers -------------------------------------------------------------------


def _handler_problems(path: str, **actions: object) -> Iterator[Problem]:
    present = [name for name, action in actions.items() if action is not None]
    if not present:
        yield required(path, "must specify a handler type")
    for extra in present[1:]:
        yield forbidden(f"{path}.{extra}", "may not specify more than 1 handler type")


def _probe(probe: Probe, path: str, kind: str) -> Iterator[Problem]:
    yield from _handler_problems(path, exec=probe.exec, httpGet=probe.http_get,
                                 tcpSocket=probe.tcp_socket, grpc=probe.grpc)
    for field, value in (
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ):
        if value < 0:
            yield invalid(f"{path}.{field}", value, _NON_NEGATIVE)
    if kind != "readinessProbe" and probe.success_threshold != 1:
        yield invalid(f"{path}.successThreshold", probe.success_threshold, "must be 1")
    grace = probe.termination_grace_period_seconds
    if grace is not None:
        if kind == "readinessProbe":
            yield invalid(f"{path}.terminationGracePeriodSeconds", grace,
                          "must not be set for readinessProbes")
        elif grace <= 0:
            yield invalid(f"{path}.terminationGracePeriodSeconds", grace,
                          "must be greater than 0")
    yield from _actions(probe.exec, probe.http_get, path)
    if probe.tcp_socket is not None:
        yield from _port(probe.tcp_socket.port, f"{path}.tcpSocket.port")
    if probe.grpc is not None and not 1 <= probe.grpc.port <= 65535:
        yield invalid(f"{path}.grpc.port", probe.grpc.port, _PORT_RANGE)


def _lifecycle(lifecycle: Lifecycle, path: str, grace: int | None) -> Iterator[Problem]:
    hooks: tuple[tuple[str, LifecycleHandler | None], ...] = (
        ("postStart", lifecycle.post_start),
        ("preStop", lifecycle.pre_stop),
    )
    for field, hook in hooks:
        if hook is None:
            continue
        p = f"{path}.{field}"
        yield from _handler_problems(p, exec=hook.exec, httpGet=hook.http_get,
                                     tcpSocket=hook.tcp_socket, sleep=hook.sleep)
        yield from _actions(hook.exec, hook.http_get, p)
        if hook.sleep is not None and grace is not None and not (
                0 <= hook.sleep.seconds <= grace):
            yield invalid(f"{p}.sleep", hook.sleep.seconds, "must be non-negative and less "
                          f"than terminationGracePeriodSeconds ({grace})")
        if hook.tcp_socket is not None:
            yield from _port(hook.tcp_socket.port, f"{p}.tcpSocket.port")


def _actions(
    exec_: object | None, http_get: HTTPGetAction | None, path: str
) -> Iterator[Problem]:
    if exec_ is not None and not getattr(exec_, "command", ()):
        yield required(f"{path}.exec.command")
    if http_get is not None:
        p = f"{path}.httpGet"
        if not http_get.path:
            yield required(f"{p}.path")
        yield from _port(http_get.port, f"{p}.port")
        if http_get.scheme not in ("HTTP", "HTTPS"):
            yield not_supported(f"{p}.scheme", http_get.scheme, ("HTTP", "HTTPS"))
        for header in http_get.http_headers:
            if not _HEADER.fullmatch(header.name):
                yield invalid(f"{p}.httpHeaders", header.name, _HEADER_MSG)


def _port(port: IntOrString, path: str) -> Iterator[Problem]:
    if isinstance(port, int):
        if not 1 <= port <= 65535:
            yield invalid(path, port, _PORT_RANGE)
    else:
        for why in _port_name(port):
            yield invalid(path, port, why)
