"""Semantic checks and API defaults for decoded pods.

Decoding (runtime.pod.manifest) already guarantees the shape and types of a pod; this
module checks what the types cannot say (names, ranges, enumerations, references between
fields), following upstream's ``ValidatePodCreate`` for the fields this kubelet models,
and then applies upstream's API defaults, so a pod from a manifest looks like one the API
server would have handed the kubelet.

Every check reports ``(path, cause)`` pairs rather than raising, so a manifest with
several mistakes is reported in one go.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from runtime.pod.defaults import apply_defaults, default_pull_policy
from runtime.pod.model import (
    Container,
    ExecAction,
    HTTPGetAction,
    Lifecycle,
    LifecycleHandler,
    Pod,
    Probe,
    Volume,
)

__all__ = [
    "Problem",
    "apply_defaults",
    "default_pull_policy",
    "dns1123_label",
    "dns1123_subdomain",
    "validate_pod",
]

Problem = tuple[str, str]
"""A field path (``spec.containers[1].image``) and what is wrong with it."""

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
# An IANA service name: what a port name (and a named probe port) must look like.
_PORT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

RESTART_POLICIES = ("Always", "OnFailure", "Never")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
PROTOCOLS = ("TCP", "UDP", "SCTP")
DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
HOST_PATH_TYPES = (
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
)


_NON_NEGATIVE = "must be greater than or equal to 0"
_PLAIN_INIT = "may not be set for init containers without restartPolicy Always"


def _one_of(value: str, allowed: tuple[str, ...]) -> str:
    return f'unsupported value "{value}": supported values are {", ".join(allowed)}'


def dns1123_label(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 label (container, volume, namespace names), or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS1123_LABEL.fullmatch(value):
        return (
            f'invalid name "{value}": must be a DNS-1123 label (lowercase letters, digits '
            "and '-', starting and ending with a letter or digit)"
        )
    return None


def dns1123_subdomain(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 subdomain (pod names), or None."""
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        return (
            f'invalid name "{value}": must be a DNS-1123 subdomain (lowercase letters, '
            "digits, '-' and '.', starting and ending with a letter or digit)"
        )
    return None


# --- validation -------------------------------------------------------------------------


def validate_pod(pod: Pod) -> list[Problem]:
    """Every semantic fault of a decoded pod, in field order; empty when the pod is valid."""
    problems: list[Problem] = []
    problems += _metadata(pod)
    spec = pod.spec
    if not spec.containers:
        problems.append(("spec.containers", "at least one container is required"))
    volumes = {v.name for v in spec.volumes}
    seen: set[str] = set()
    for field, containers in (
        ("initContainers", spec.init_containers),
        ("containers", spec.containers),
    ):
        for i, c in enumerate(containers):
            path = f"spec.{field}[{i}]"
            if c.name in seen:
                problems.append((f"{path}.name", f'duplicate container name "{c.name}"'))
            seen.add(c.name)
            problems += _container(c, path, volumes, init=field == "initContainers")
    if spec.restart_policy and spec.restart_policy not in RESTART_POLICIES:
        problems.append(("spec.restartPolicy", _one_of(spec.restart_policy, RESTART_POLICIES)))
    if spec.dns_policy and spec.dns_policy not in DNS_POLICIES:
        problems.append(("spec.dnsPolicy", _one_of(spec.dns_policy, DNS_POLICIES)))
    if spec.dns_policy == "None" and spec.dns_config is None:
        problems.append(("spec.dnsConfig", "required when dnsPolicy is None"))
    grace = spec.termination_grace_period_seconds
    if grace is not None and grace < 0:
        problems.append(("spec.terminationGracePeriodSeconds", _NON_NEGATIVE))
    if spec.active_deadline_seconds is not None and spec.active_deadline_seconds <= 0:
        problems.append(("spec.activeDeadlineSeconds", "must be greater than 0"))
    names: set[str] = set()
    for i, v in enumerate(spec.volumes):
        problems += _volume(v, f"spec.volumes[{i}]", names)
    return problems


def _metadata(pod: Pod) -> Iterator[Problem]:
    meta = pod.metadata
    if not meta.name:
        yield "metadata.name", "required for a static pod"
    elif why := dns1123_subdomain(meta.name):
        yield "metadata.name", why
    if meta.namespace and (why := dns1123_label(meta.namespace)):
        yield "metadata.namespace", why


def _container(c: Container, path: str, volumes: set[str], *, init: bool) -> Iterator[Problem]:
    if not c.name:
        yield f"{path}.name", "required"
    elif why := dns1123_label(c.name):
        yield f"{path}.name", why
    # Image names are never guessed: a missing image is an error, not "busybox".
    if not c.image.strip():
        yield f"{path}.image", "required"
    elif c.image != c.image.strip():
        yield f"{path}.image", "must not have leading or trailing whitespace"
    if c.image_pull_policy and c.image_pull_policy not in PULL_POLICIES:
        yield f"{path}.imagePullPolicy", _one_of(c.image_pull_policy, PULL_POLICIES)
    policy = c.termination_message_policy
    if policy and policy not in TERMINATION_MESSAGE_POLICIES:
        yield f"{path}.terminationMessagePolicy", _one_of(policy, TERMINATION_MESSAGE_POLICIES)
    if c.restart_policy is not None:
        if not init:
            yield f"{path}.restartPolicy", "may not be set for non-init containers"
        elif c.restart_policy != "Always":
            yield f"{path}.restartPolicy", _one_of(c.restart_policy, ("Always",))
    for i, port in enumerate(c.ports):
        p = f"{path}.ports[{i}]"
        if not 1 <= port.container_port <= 65535:
            yield f"{p}.containerPort", "must be between 1 and 65535, inclusive"
        if not 0 <= port.host_port <= 65535:
            yield f"{p}.hostPort", "must be between 1 and 65535, inclusive"
        if port.protocol and port.protocol not in PROTOCOLS:
            yield f"{p}.protocol", _one_of(port.protocol, PROTOCOLS)
        if port.name and not _PORT_NAME.fullmatch(port.name):
            yield f"{p}.name", f'invalid port name "{port.name}"'
    for i, env in enumerate(c.env):
        p = f"{path}.env[{i}]"
        if not env.name:
            yield f"{p}.name", "required"
        if env.value_from is not None:
            if env.value:
                yield f"{p}.valueFrom", "may not be specified when value is not empty"
            sources = [
                s
                for s in (env.value_from.field_ref, env.value_from.resource_field_ref)
                if s is not None
            ]
            if len(sources) != 1:
                yield f"{p}.valueFrom", "must specify exactly one of fieldRef, resourceFieldRef"
    mount_paths: set[str] = set()
    for i, m in enumerate(c.volume_mounts):
        p = f"{path}.volumeMounts[{i}]"
        if m.name not in volumes:
            yield f"{p}.name", f'no volume named "{m.name}" in spec.volumes'
        if not m.mount_path:
            yield f"{p}.mountPath", "required"
        elif not m.mount_path.startswith("/"):
            yield f"{p}.mountPath", "must be an absolute path"
        elif m.mount_path in mount_paths:
            yield f"{p}.mountPath", f'duplicate mount path "{m.mount_path}"'
        mount_paths.add(m.mount_path)
        if m.sub_path and (m.sub_path.startswith("/") or ".." in m.sub_path.split("/")):
            yield f"{p}.subPath", "must be a relative path without '..'"
    # A plain init container runs to completion before anything else, so probes and hooks
    # have nothing to do there; a sidecar (restartPolicy Always) keeps running and may.
    plain_init = init and not c.is_restartable_init
    for field, probe in (
        ("livenessProbe", c.liveness_probe),
        ("readinessProbe", c.readiness_probe),
        ("startupProbe", c.startup_probe),
    ):
        if probe is None:
            continue
        if plain_init:
            yield f"{path}.{field}", _PLAIN_INIT
        else:
            yield from _probe(probe, f"{path}.{field}", field)
    if c.lifecycle is not None:
        if plain_init:
            yield f"{path}.lifecycle", _PLAIN_INIT
        else:
            yield from _lifecycle(c.lifecycle, f"{path}.lifecycle")


def _handlers(**actions: object) -> list[str]:
    return [name for name, action in actions.items() if action is not None]


def _one_handler(path: str, present: list[str], allowed: str) -> Iterator[Problem]:
    if not present:
        yield path, f"must specify a handler: exactly one of {allowed}"
    elif len(present) > 1:
        yield path, f"may not specify more than one handler (got {', '.join(present)})"


def _probe(probe: Probe, path: str, kind: str) -> Iterator[Problem]:
    present = _handlers(
        exec=probe.exec, httpGet=probe.http_get, tcpSocket=probe.tcp_socket, grpc=probe.grpc
    )
    yield from _one_handler(path, present, "exec, httpGet, tcpSocket, grpc")
    # Upstream defaults a 0 period, timeout or threshold to its usual value (see
    # apply_defaults), so only negative numbers are errors here.
    for field, value in (
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ):
        if value < 0:
            yield f"{path}.{field}", _NON_NEGATIVE
    if kind != "readinessProbe" and probe.success_threshold not in (0, 1):
        yield f"{path}.successThreshold", f"must be 1 for a {kind}"
    if probe.termination_grace_period_seconds is not None:
        if kind == "readinessProbe":
            yield f"{path}.terminationGracePeriodSeconds", "may not be set for a readinessProbe"
        elif probe.termination_grace_period_seconds < 1:
            yield f"{path}.terminationGracePeriodSeconds", "must be greater than 0"
    yield from _actions(probe.exec, probe.http_get, path)
    if probe.grpc is not None and not 1 <= probe.grpc.port <= 65535:
        yield f"{path}.grpc.port", "must be between 1 and 65535, inclusive"


def _lifecycle(lifecycle: Lifecycle, path: str) -> Iterator[Problem]:
    hooks: tuple[tuple[str, LifecycleHandler | None], ...] = (
        ("postStart", lifecycle.post_start),
        ("preStop", lifecycle.pre_stop),
    )
    for field, hook in hooks:
        if hook is None:
            continue
        p = f"{path}.{field}"
        present = _handlers(
            exec=hook.exec, httpGet=hook.http_get, tcpSocket=hook.tcp_socket, sleep=hook.sleep
        )
        yield from _one_handler(p, present, "exec, httpGet, tcpSocket, sleep")
        yield from _actions(hook.exec, hook.http_get, p)
        if hook.sleep is not None and hook.sleep.seconds < 0:
            yield f"{p}.sleep.seconds", _NON_NEGATIVE
        if hook.tcp_socket is not None:
            yield from _port(hook.tcp_socket.port, f"{p}.tcpSocket.port")


def _actions(
    exec_: ExecAction | None, http_get: HTTPGetAction | None, path: str
) -> Iterator[Problem]:
    if exec_ is not None and not exec_.command:
        yield f"{path}.exec.command", "required"
    if http_get is not None:
        yield from _port(http_get.port, f"{path}.httpGet.port")
        if http_get.scheme and http_get.scheme.upper() not in ("HTTP", "HTTPS"):
            yield f"{path}.httpGet.scheme", _one_of(http_get.scheme, ("HTTP", "HTTPS"))


def _port(port: int | str, path: str) -> Iterator[Problem]:
    if isinstance(port, int):
        if not 1 <= port <= 65535:
            yield path, "must be between 1 and 65535, inclusive"
    elif not _PORT_NAME.fullmatch(port) or len(port) > 15:
        yield path, f'invalid port name "{port}": must be a number or a container port name'


def _volume(v: Volume, path: str, names: set[str]) -> Iterator[Problem]:
    if why := dns1123_label(v.name):
        yield f"{path}.name", why
    elif v.name in names:
        yield f"{path}.name", f'duplicate volume name "{v.name}"'
    names.add(v.name)
    if v.empty_dir is not None and v.host_path is not None:
        yield path, "may not specify more than one volume source (got emptyDir, hostPath)"
    if v.host_path is not None:
        if not v.host_path.path:
            yield f"{path}.hostPath.path", "required"
        elif not v.host_path.path.startswith("/"):
            yield f"{path}.hostPath.path", "must be an absolute path"
        if v.host_path.type not in HOST_PATH_TYPES:
            yield f"{path}.hostPath.type", _one_of(v.host_path.type, HOST_PATH_TYPES[1:])
    if v.empty_dir is not None:
        medium = v.empty_dir.medium
        if medium not in ("", "Memory") and not medium.startswith("HugePages"):
            yield f"{path}.emptyDir.medium", _one_of(medium, ("Memory", "HugePages"))
