"""Semantic checks of a decoded, defaulted pod, after upstream's ValidatePodCreate.

Decoding (runtime.pod.manifest) already guarantees the shape and types of a pod; this
module checks what the types cannot say (names, ranges, enumerations, references between
fields), following upstream's ``ValidatePodCreate`` and what it calls
(pkg/apis/core/validation/validation.go), on the pod with upstream's API defaults applied
(runtime.pod.defaults.api_defaults), as upstream validates it. Each fault is reported the
way upstream words it: the field path and ``Required value``, ``Invalid value: <value>:
<why>``, ``Duplicate value: <value>``, ``Unsupported value: <value>: supported values:
...``, ``Forbidden: <why>`` or ``Not found: <value>``.

Every check reports ``(path, cause)`` pairs rather than raising, so a manifest with
several mistakes is reported in one go.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from functools import lru_cache

from runtime.pod.defaults import apply_defaults, default_pull_policy
from runtime.pod.model import (
    Container,
    ContainerPort,
    EnvVar,
    EphemeralContainer,
    HTTPGetAction,
    IntOrString,
    Lifecycle,
    LifecycleHandler,
    NodeSelectorRequirement,
    Pod,
    PodSecurityContext,
    Probe,
    Quantity,
    ResourceClaim,
    ResourceRequirements,
    SecurityContext,
    Toleration,
    Volume,
    VolumeMount,
    volume_sources,
)
from runtime.pod.quantity import FORMAT_WRONG, parse_quantity

__all__ = [
    "Problem",
    "apply_defaults",
    "default_pull_policy",
    "dns1123_label",
    "dns1123_subdomain",
    "validate_labels",
    "validate_pod",
]

Problem = tuple[str, str]
"""A field path (``spec.containers[1].image``) and what is wrong with it."""

AnyContainer = Container | EphemeralContainer

# --- upstream's field.Error wording --------------------------------------------------------


def _show(value: object) -> str:
    """A value as upstream's field errors print it: strings quoted, numbers bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return str(value)
    if value is None:
        return "null"
    return json.dumps(str(value), ensure_ascii=False)


def required(path: str, detail: str = "") -> Problem:
    return path, f"Required value: {detail}" if detail else "Required value"


def invalid(path: str, value: object, detail: str) -> Problem:
    return path, f"Invalid value: {_show(value)}: {detail}"


def duplicate(path: str, value: object) -> Problem:
    return path, f"Duplicate value: {_show(value)}"


def not_supported(path: str, value: object, supported: Iterable[str]) -> Problem:
    values = ", ".join(_show(s) for s in supported)
    return path, f"Unsupported value: {_show(value)}: supported values: {values}"


def forbidden(path: str, detail: str) -> Problem:
    return path, f"Forbidden: {detail}"


def not_found(path: str, value: object) -> Problem:
    return path, f"Not found: {_show(value)}"


# --- names (k8s.io/apimachinery/pkg/util/validation) ---------------------------------------

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL)
_SUBDOMAIN = rf"{_LABEL}(\.{_LABEL})*"
_DNS1123_SUBDOMAIN = re.compile(_SUBDOMAIN)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{_LABEL}')"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    f"regex used for validation is '{_SUBDOMAIN}')"
)
_QUALIFIED = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME = re.compile(_QUALIFIED)
_QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    f"used for validation is '{_QUALIFIED}')"
)
_LABEL_VALUE = re.compile(rf"({_QUALIFIED})?")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '({_QUALIFIED})?')"
)
_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+")
_ENV_NAME_MSG = (
    "a valid environment variable name must consist only of printable ASCII characters "
    "other than '='"
)
_ENV_NAME_BAD = re.compile(r"[^\x20-\x7e]|=")  # not printable ASCII, or '='
_HEADER = re.compile(r"[-A-Za-z0-9]+")
_HEADER_MSG = (
    "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. "
    "'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')"
)
_SYSCTL = r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_NAME = re.compile(_SYSCTL)
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_ID_RANGE = "must be between 0 and 2147483647, inclusive"
_NON_NEGATIVE = "must be greater than or equal to 0"
_PLAIN_INIT = "may not be set for init containers without restartPolicy=Always"
_QUANTITY_MSG = FORMAT_WRONG
_MAX_INT32 = 2**31 - 1


@lru_cache(maxsize=4096)  # names repeat across a pod's containers
def dns1123_label(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 label (container, volume, namespace names), or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS1123_LABEL.fullmatch(value):
        return _LABEL_MSG
    return None


@lru_cache(maxsize=4096)  # names repeat across a pod's containers
def dns1123_subdomain(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 subdomain (pod names), or None."""
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        return _SUBDOMAIN_MSG
    return None


@lru_cache(maxsize=4096)
def _port_name(name: str) -> tuple[str, ...]:
    """upstream IsValidPortName: an IANA service name."""
    why: list[str] = []
    if len(name) > 15:
        why.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.fullmatch(name):
        why.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        why.append("must contain at least one letter (a-z)")
    if "--" in name:
        why.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        why.append("must not begin or end with a hyphen")
    return tuple(why)


@lru_cache(maxsize=4096)
def _qualified_name(value: str) -> tuple[str, ...]:
    """upstream IsQualifiedName: ``[prefix/]name`` (label keys, resource names)."""
    parts = value.split("/")
    if len(parts) > 2:
        return ("a qualified name " + _QUALIFIED_MSG.removeprefix("name part "),)
    name = parts[-1]
    why: list[str] = []
    if len(parts) == 2:
        if not parts[0]:
            why.append("prefix part must be non-empty")
        elif (w := dns1123_subdomain(parts[0])) is not None:
            why.append(f"prefix part {w}")
    if not name:
        why.append("name part must be non-empty")
    elif len(name) > 63:
        why.append("name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME.fullmatch(name):
        why.append(_QUALIFIED_MSG)
    return tuple(why)


# --- the pod -----------------------------------------------------------------------------

RESTART_POLICIES = ("Always", "OnFailure", "Never")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
PROTOCOLS = ("SCTP", "TCP", "UDP")
DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
TERMINATION_MESSAGE_POLICIES = ("FallbackToLogsOnError", "File")
HOST_PATH_TYPES = (
    "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
    "Socket",
)  # fmt: skip
MOUNT_PROPAGATIONS = ("Bidirectional", "HostToContainer", "None")
SECCOMP_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")
OPERATING_SYSTEMS = ("linux", "windows")


def validate_pod(pod: Pod) -> list[Problem]:
    """Every semantic fault of a decoded, defaulted pod, in field order; empty when valid."""
    problems: list[Problem] = list(_metadata(pod))
    spec = pod.spec
    volumes = {v.name for v in spec.volumes}
    names: set[str] = set()
    for i, v in enumerate(spec.volumes):
        problems += _volume(v, f"spec.volumes[{i}]", names)
    if not spec.containers:
        problems.append(required("spec.containers"))
    grace = spec.termination_grace_period_seconds
    claims = {c.name for c in spec.resource_claims}
    host_users = spec.host_users is not False  # unset is the node's user namespace
    seen: set[str] = set()
    for field, containers in (
        ("initContainers", spec.init_containers),
        ("containers", spec.containers),
    ):
        for i, c in enumerate(containers):
            path = f"spec.{field}[{i}]"
            if c.name and c.name in seen:
                problems.append(duplicate(f"{path}.name", c.name))
            seen.add(c.name)
            problems += _container(c, path, volumes, grace, init=field == "initContainers",
                                   claims=claims, host_users=host_users)
            if spec.host_network:
                for j, port in enumerate(c.ports):
                    if port.host_port != port.container_port:
                        problems.append(invalid(
                            f"{path}.ports[{j}].containerPort", port.container_port,
                            "must match `hostPort` when `hostNetwork` is true"))
    problems += _host_port_conflicts(spec.containers, "spec.containers")
    if spec.ephemeral_containers:
        problems.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.restart_policy not in RESTART_POLICIES:
        problems.append(not_supported("spec.restartPolicy", spec.restart_policy,
                                      RESTART_POLICIES))
    if spec.dns_policy not in DNS_POLICIES:
        problems.append(not_supported("spec.dnsPolicy", spec.dns_policy, DNS_POLICIES))
    problems += _dns_config(pod)
    if grace is not None and grace < 0:
        problems.append(invalid("spec.terminationGracePeriodSeconds", grace, _NON_NEGATIVE))
    deadline = spec.active_deadline_seconds
    if deadline is not None and not 1 <= deadline <= _MAX_INT32:
        problems.append(invalid("spec.activeDeadlineSeconds", deadline,
                                "must be between 1 and 2147483647, inclusive"))
    if spec.security_context is not None:
        problems += _pod_security_context(spec.security_context, "spec.securityContext")
    for key, value in spec.node_selector.items():
        problems += _label(key, value, "spec.nodeSelector")
    for i, t in enumerate(spec.tolerations):
        problems += _toleration(t, f"spec.tolerations[{i}]")
    problems += _affinity(pod)
    if spec.os is not None and spec.os.name not in OPERATING_SYSTEMS:
        problems.append(not_supported("spec.os.name", spec.os.name, OPERATING_SYSTEMS))
    if spec.hostname and (why := dns1123_label(spec.hostname)):
        problems.append(invalid("spec.hostname", spec.hostname, why))
    if spec.subdomain and (why := dns1123_label(spec.subdomain)):
        problems.append(invalid("spec.subdomain", spec.subdomain, why))
    if spec.priority_class_name and (why := dns1123_subdomain(spec.priority_class_name)):
        problems.append(invalid("spec.priorityClassName", spec.priority_class_name, why))
    if spec.runtime_class_name is not None and (why := dns1123_subdomain(
            spec.runtime_class_name)):
        problems.append(invalid("spec.runtimeClassName", spec.runtime_class_name, why))
    for i, secret in enumerate(spec.image_pull_secrets):
        if not secret.name:
            problems.append(required(f"spec.imagePullSecrets[{i}].name"))
    return problems


def validate_labels(labels: Mapping[str, str], path: str) -> list[Problem]:
    """Upstream's label rules (IsQualifiedName keys, IsValidLabelValue values), for
    labels that do not come in a pod (``--node-labels``)."""
    return [p for k, v in labels.items() for p in _label(k, v, path)]


def _label(key: str, value: str, path: str) -> Iterator[Problem]:
    for why in _qualified_name(key):
        yield invalid(path, key, why)
    if len(value) > 63:
        yield invalid(f"{path}[{key}]", value, "must be no more than 63 characters")
    elif not _LABEL_VALUE.fullmatch(value):
        yield invalid(f"{path}[{key}]", value, _LABEL_VALUE_MSG)


def _metadata(pod: Pod) -> Iterator[Problem]:
    meta = pod.metadata
    if not meta.name:
        yield required("metadata.name", "name or generateName is required")
    elif why := dns1123_subdomain(meta.name):
        yield invalid("metadata.name", meta.name, why)
    if meta.namespace and (why := dns1123_label(meta.namespace)):
        yield invalid("metadata.namespace", meta.namespace, why)
    for key, value in meta.labels.items():
        yield from _label(key, value, "metadata.labels")
    for key in meta.annotations:
        for why in _qualified_name(key):
            yield invalid("metadata.annotations", key, why)


# --- containers ----------------------------------------------------------------------------


def _container(
    c: AnyContainer, path: str, volumes: set[str], grace: int | None, *, init: bool,
    claims: set[str], host_users: bool,
) -> Iterator[Problem]:
    if not c.name:
        yield required(f"{path}.name")
    elif why := dns1123_label(c.name):
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
    if c.resources is not None:
        yield from _resources(c.resources, f"{path}.resources")
        yield from _claim_names(c.resources.claims, claims, f"{path}.resources.claims")
    if c.security_context is not None:
        yield from _security_context(c.security_context, f"{path}.securityContext",
                                     host_users)
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
        if e.value_from is None:
            continue
        vf = e.value_from
        sources = [s for s in (vf.field_ref, vf.resource_field_ref, vf.config_map_key_ref,
                               vf.secret_key_ref, vf.file_key_ref) if s is not None]
        if not sources:
            yield invalid(f"{p}.valueFrom", "", "must specify one of: `fieldRef`, "
                          "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`")
        elif len(sources) > 1:
            yield invalid(f"{p}.valueFrom", "",
                          "may not have more than one field specified at a time")
        if e.value and sources:
            yield invalid(f"{p}.valueFrom", "", "may not be specified when `value` is not empty")
        if vf.field_ref is not None:
            yield from _field_ref(vf.field_ref.api_version, vf.field_ref.field_path,
                                  f"{p}.valueFrom.fieldRef")
        if vf.resource_field_ref is not None:
            resource = vf.resource_field_ref.resource
            rp = f"{p}.valueFrom.resourceFieldRef.resource"
            if not resource:
                yield required(rp)
            elif resource not in _ENV_RESOURCES and not resource.startswith(
                    ("limits.hugepages-", "requests.hugepages-")):
                yield not_supported(rp, resource, _ENV_RESOURCES)
        for field, ref in (("configMapKeyRef", vf.config_map_key_ref),
                           ("secretKeyRef", vf.secret_key_ref)):
            if ref is None:
                continue
            if not ref.key:
                yield required(f"{p}.valueFrom.{field}.key")
            yield from _object_name(ref.name, f"{p}.valueFrom.{field}.name")


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
    if not api_version:
        yield required(f"{path}.apiVersion")
    if not field_path:
        yield required(f"{path}.fieldPath")
        return
    match = _ENV_SUBSCRIPT.fullmatch(field_path)
    if match is not None:
        for why in _qualified_name(match["key"]):
            yield invalid(f"{path}.fieldPath", field_path, why)
    elif field_path not in _ENV_FIELD_PATHS:
        yield not_supported(f"{path}.fieldPath", field_path, _ENV_FIELD_PATHS)


def _object_name(name: str, path: str) -> Iterator[Problem]:
    """A reference to a ConfigMap or Secret: a DNS-1123 subdomain."""
    if not name:
        yield required(path)
    elif why := dns1123_subdomain(name):
        yield invalid(path, name, why)


def _mounts(c: AnyContainer, path: str, volumes: set[str]) -> Iterator[Problem]:
    mount_paths: set[str] = set()
    privileged = c.security_context is not None and c.security_context.privileged is True
    for i, m in enumerate(c.volume_mounts):
        p = f"{path}[{i}]"
        if not m.name:
            yield required(f"{p}.name")
        elif m.name not in volumes:
            yield not_found(f"{p}.name", m.name)
        if not m.mount_path:
            yield required(f"{p}.mountPath")
        elif m.mount_path in mount_paths:
            yield invalid(f"{p}.mountPath", m.mount_path, "must be unique")
        mount_paths.add(m.mount_path)
        if m.sub_path:
            yield from _descending_path(m.sub_path, f"{p}.subPath")
        if m.sub_path and m.sub_path_expr:
            yield invalid(f"{p}.subPathExpr", m.sub_path_expr,
                          "subPathExpr and subPath are mutually exclusive")
        yield from _propagation(m, f"{p}.mountPropagation", privileged)


def _propagation(m: VolumeMount, path: str, privileged: bool) -> Iterator[Problem]:
    if not m.mount_propagation:
        return
    if m.mount_propagation not in MOUNT_PROPAGATIONS:
        yield not_supported(path, m.mount_propagation, MOUNT_PROPAGATIONS)
    elif m.mount_propagation == "Bidirectional" and not privileged:
        yield forbidden(path, "Bidirectional mount propagation is available only to "
                        "privileged containers")


def _descending_path(value: str, path: str) -> Iterator[Problem]:
    if value.startswith("/"):
        yield invalid(path, value, "must be a relative path")
    yield from _no_backsteps(value, path)


def _no_backsteps(value: str, path: str) -> Iterator[Problem]:
    if ".." in value.replace("\\", "/").split("/"):
        yield invalid(path, value, "must not contain '..'")


# --- resources -----------------------------------------------------------------------------


def _is_native(name: str) -> bool:
    return "/" not in name or name.split("/", 1)[0].endswith("kubernetes.io")


def _overcommit_allowed(name: str) -> bool:
    """upstream IsOvercommitAllowed: native resources other than hugepages."""
    return _is_native(name) and not name.startswith("hugepages-")


def _quantity(value: Quantity, path: str) -> tuple[Decimal | None, list[Problem]]:
    try:
        return parse_quantity(value), []
    except ValueError:
        return None, [invalid(path, str(value), _QUANTITY_MSG)]


def _container_resource_name(name: str, path: str) -> Iterator[Problem]:
    for why in _qualified_name(name):
        yield invalid(path, name, why)
    if "/" not in name:
        if name not in ("cpu", "memory", "ephemeral-storage") and not name.startswith(
                "hugepages-"):
            yield invalid(path, name, "must be a standard resource for containers")
    elif name.startswith(("requests.", "limits.")):
        yield invalid(path, name, "must not start with 'requests.' or 'limits.'")


def _resources(r: ResourceRequirements, path: str) -> Iterator[Problem]:
    limits: dict[str, Decimal] = {}
    for name, value in r.limits.items():
        p = f"{path}.limits[{name}]"
        yield from _container_resource_name(name, p)
        q, errors = _quantity(value, p)
        yield from errors
        if q is None:
            continue
        limits[name] = q
        yield from _resource_value(name, value, q, p)
    for name, value in r.requests.items():
        p = f"{path}.requests[{name}]"
        yield from _container_resource_name(name, p)
        q, errors = _quantity(value, p)
        yield from errors
        if q is None:
            continue
        yield from _resource_value(name, value, q, p)
        limit = limits.get(name)
        if limit is not None:
            shown = str(r.limits[name])
            if q != limit and not _overcommit_allowed(name):
                yield invalid(f"{path}.requests", str(value),
                              f"must be equal to {name} limit of {shown}")
            elif q > limit:
                yield invalid(f"{path}.requests", str(value),
                              f"must be less than or equal to {name} limit of {shown}")
        elif not _overcommit_allowed(name) and name not in r.limits:
            yield required(f"{path}.limits[{name}]",
                           "Limit must be set for non overcommitable resources")
    resources = set(r.limits) | set(r.requests)
    if any(n.startswith("hugepages-") for n in resources) and not resources & {"cpu", "memory"}:
        yield forbidden(path, "HugePages require cpu or memory")


def _claim_names(claims: Iterable[ResourceClaim], pod_claims: set[str], path: str
                 ) -> Iterator[Problem]:
    """Upstream validateResourceClaimNames: each container claim names one of the pod's
    spec.resourceClaims, once per request."""
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        if not claim.name:
            yield required(f"{path}[{i}]")
            continue
        key = f"{claim.name}/{claim.request}" if claim.request else claim.name
        if key in seen:
            yield duplicate(f"{path}[{i}]", key)
        seen.add(key)
        if claim.name not in pod_claims:
            known = (": " + ", ".join(sorted(pod_claims))) if pod_claims else " which is empty"
            where, what = not_found(f"{path}[{i}]", claim.name)
            yield where, f"{what}: must be one of the names in pod.spec.resourceClaims{known}"


def _resource_value(name: str, value: Quantity, q: Decimal, path: str) -> Iterator[Problem]:
    if q < 0:
        yield invalid(path, str(value), _NON_NEGATIVE)
    if not _is_native(name) and q != q.to_integral_value():
        yield invalid(path, str(value), "must be an integer")


# --- security ------------------------------------------------------------------------------


def _ids(path: str, **ids: int | None) -> Iterator[Problem]:
    for field, value in ids.items():
        if value is not None and not 0 <= value <= _MAX_INT32:
            yield invalid(f"{path}.{field}", value, _ID_RANGE)


def _seccomp(sc: PodSecurityContext | SecurityContext, path: str) -> Iterator[Problem]:
    profile = sc.seccomp_profile
    if profile is None:
        return
    if profile.type not in SECCOMP_TYPES:
        yield not_supported(f"{path}.seccompProfile.type", profile.type, SECCOMP_TYPES)
    elif profile.type == "Localhost" and not profile.localhost_profile:
        yield required(f"{path}.seccompProfile.localhostProfile",
                       "must be set when seccomp type is Localhost")
    elif profile.type != "Localhost" and profile.localhost_profile is not None:
        yield invalid(f"{path}.seccompProfile.localhostProfile", profile.localhost_profile,
                      "can only be set when seccomp type is Localhost")


def _pod_security_context(sc: PodSecurityContext, path: str) -> Iterator[Problem]:
    yield from _ids(path, runAsUser=sc.run_as_user, runAsGroup=sc.run_as_group,
                    fsGroup=sc.fs_group)
    for i, group in enumerate(sc.supplemental_groups):
        if not 0 <= group <= _MAX_INT32:
            yield invalid(f"{path}.supplementalGroups[{i}]", group, _ID_RANGE)
    names: set[str] = set()
    for i, sysctl in enumerate(sc.sysctls):
        p = f"{path}.sysctls[{i}].name"
        if not sysctl.name:
            yield required(p)
        elif len(sysctl.name) > 253 or not _SYSCTL_NAME.fullmatch(sysctl.name):
            yield invalid(p, sysctl.name,
                          f"must have at most 253 characters and match regex {_SYSCTL}")
        elif sysctl.name in names:
            yield duplicate(p, sysctl.name)
        names.add(sysctl.name)
    yield from _seccomp(sc, path)
    if sc.fs_group_change_policy and sc.fs_group_change_policy not in (
            "OnRootMismatch", "Always"):
        yield not_supported(f"{path}.fsGroupChangePolicy", sc.fs_group_change_policy,
                            ("Always", "OnRootMismatch"))


def _security_context(sc: SecurityContext, path: str, host_users: bool) -> Iterator[Problem]:
    yield from _ids(path, runAsUser=sc.run_as_user, runAsGroup=sc.run_as_group)
    if sc.privileged and sc.allow_privilege_escalation is False:
        yield invalid(path, "", "cannot set `allowPrivilegeEscalation` to false and "
                      "`privileged` to true")
    if (sc.capabilities is not None and "CAP_SYS_ADMIN" in sc.capabilities.add
            and sc.allow_privilege_escalation is False):
        yield invalid(path, "", "cannot set `allowPrivilegeEscalation` to false and "
                      "`capabilities.Add` CAP_SYS_ADMIN")
    if sc.proc_mount and sc.proc_mount not in ("Default", "Unmasked"):
        yield not_supported(f"{path}.procMount", sc.proc_mount, ("Default", "Unmasked"))
    elif sc.proc_mount == "Unmasked" and host_users:
        # An unmasked /proc only inside the pod's own user namespace, where it cannot
        # reach the node's.
        yield invalid(f"{path}.procMount", sc.proc_mount,
                      "`hostUsers` must be false to use `Unmasked`")
    yield from _seccomp(sc, path)


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


# --- volumes -------------------------------------------------------------------------------


def _mode(mode: int | None, path: str) -> Iterator[Problem]:
    if mode is not None and not 0 <= mode <= 0o777:
        yield invalid(path, mode, "must be a number between 0 and 0777 (octal), both inclusive")


def _volume(v: Volume, path: str, names: set[str]) -> Iterator[Problem]:
    if not v.name:
        yield required(f"{path}.name")
    elif why := dns1123_label(v.name):
        yield invalid(f"{path}.name", v.name, why)
    elif v.name in names:
        yield duplicate(f"{path}.name", v.name)
    names.add(v.name)
    sources = volume_sources(v)
    if not sources:
        yield required(path, "must specify a volume type")
    for extra in sources[1:]:
        yield forbidden(f"{path}.{extra}", "may not specify more than 1 volume type")
    if v.host_path is not None:
        p = f"{path}.hostPath"
        if not v.host_path.path:
            yield required(f"{p}.path")
        else:
            yield from _no_backsteps(v.host_path.path, f"{p}.path")
        if v.host_path.type not in HOST_PATH_TYPES:
            yield not_supported(f"{p}.type", v.host_path.type, HOST_PATH_TYPES)
    if v.empty_dir is not None and v.empty_dir.size_limit is not None:
        q, errors = _quantity(v.empty_dir.size_limit, f"{path}.emptyDir.sizeLimit")
        yield from errors
        if q is not None and q < 0:
            yield forbidden(f"{path}.emptyDir.sizeLimit",
                            "SizeLimit field must be a valid resource quantity")
    if v.secret is not None:
        if not v.secret.secret_name:
            yield required(f"{path}.secret.secretName")
        yield from _mode(v.secret.default_mode, f"{path}.secret.defaultMode")
        yield from _items(v.secret.items, f"{path}.secret.items")
    if v.config_map is not None:
        if not v.config_map.name:
            yield required(f"{path}.configMap.name")
        yield from _mode(v.config_map.default_mode, f"{path}.configMap.defaultMode")
        yield from _items(v.config_map.items, f"{path}.configMap.items")
    if v.persistent_volume_claim is not None and not v.persistent_volume_claim.claim_name:
        yield required(f"{path}.persistentVolumeClaim.claimName")
    if v.downward_api is not None:
        yield from _mode(v.downward_api.default_mode, f"{path}.downwardAPI.defaultMode")
        for i, item in enumerate(v.downward_api.items):
            p = f"{path}.downwardAPI.items[{i}]"
            if not item.path:
                yield required(f"{p}.path")
            else:
                yield from _descending_path(item.path, f"{p}.path")
    if v.nfs is not None:
        if not v.nfs.server:
            yield required(f"{path}.nfs.server")
        if not v.nfs.path.startswith("/"):
            yield invalid(f"{path}.nfs.path", v.nfs.path, "must be an absolute path")
    if v.csi is not None and not v.csi.driver:
        yield required(f"{path}.csi.driver")
    if v.image is not None and not v.image.reference:
        yield required(f"{path}.image.reference")
    if v.projected is not None:
        yield from _mode(v.projected.default_mode, f"{path}.projected.defaultMode")


def _items(items: Iterable[object], path: str) -> Iterator[Problem]:
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        if not getattr(item, "key", ""):
            yield required(f"{p}.key")
        target = getattr(item, "path", "")
        if not target:
            yield required(f"{p}.path")
        else:
            yield from _descending_path(target, f"{p}.path")
        yield from _mode(getattr(item, "mode", None), f"{p}.mode")


# --- scheduling and DNS ----------------------------------------------------------------------


def _toleration(t: Toleration, path: str) -> Iterator[Problem]:
    if t.key:
        for why in _qualified_name(t.key):
            yield invalid(f"{path}.key", t.key, why)
    elif t.operator != "Exists":
        yield invalid(f"{path}.operator", t.operator,
                      "operator must be Exists when `key` is empty, which means \"match all "
                      "values and all keys\"")
    # Gt and Lt compare numeric taint values (upstream's TaintTolerationComparisonOperators
    # feature, documented in the Kubernetes docs' examples); accepted here.
    if t.operator and t.operator not in ("Equal", "Exists", "Gt", "Lt"):
        yield not_supported(f"{path}.operator", t.operator, ("Equal", "Exists", "Gt", "Lt"))
    if t.operator == "Exists" and t.value:
        yield invalid(f"{path}.operator", t.value,
                      "value must be empty when `operator` is 'Exists'")
    if t.effect and t.effect not in ("NoExecute", "NoSchedule", "PreferNoSchedule"):
        yield not_supported(f"{path}.effect", t.effect,
                            ("NoExecute", "NoSchedule", "PreferNoSchedule"))
    if t.toleration_seconds is not None and t.effect != "NoExecute":
        yield invalid(f"{path}.effect", t.effect,
                      "effect must be 'NoExecute' when `tolerationSeconds` is set")


_SELECTOR_OPS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")


def _requirement(r: NodeSelectorRequirement, path: str) -> Iterator[Problem]:
    for why in _qualified_name(r.key):
        yield invalid(f"{path}.key", r.key, why)
    if r.operator in ("In", "NotIn"):
        if not r.values:
            yield required(f"{path}.values",
                           "must be specified when `operator` is 'In' or 'NotIn'")
    elif r.operator in ("Exists", "DoesNotExist"):
        if r.values:
            yield forbidden(f"{path}.values",
                            "may not be specified when `operator` is 'Exists' or "
                            "'DoesNotExist'")
    elif r.operator in ("Gt", "Lt"):
        if len(r.values) != 1:
            yield required(f"{path}.values",
                           "must be specified single value when `operator` is 'Lt' or 'Gt'")
    else:
        yield not_supported(f"{path}.operator", r.operator, _SELECTOR_OPS)


def _affinity(pod: Pod) -> Iterator[Problem]:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return
    path = "spec.affinity.nodeAffinity"
    required_ = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if required_ is not None:
        p = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
        if not required_.node_selector_terms:
            yield required(f"{p}.nodeSelectorTerms", "must have at least one node selector term")
        for i, term in enumerate(required_.node_selector_terms):
            for j, r in enumerate(term.match_expressions):
                yield from _requirement(r, f"{p}.nodeSelectorTerms[{i}].matchExpressions[{j}]")
    preferred = affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
    for i, pref in enumerate(preferred):
        p = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        if not 1 <= pref.weight <= 100:
            yield invalid(f"{p}.weight", pref.weight, "must be in the range 1-100")
        for j, r in enumerate(pref.preference.match_expressions):
            yield from _requirement(r, f"{p}.preference.matchExpressions[{j}]")


def _dns_config(pod: Pod) -> Iterator[Problem]:
    spec = pod.spec
    config = spec.dns_config
    if spec.dns_policy == "None" and config is None:
        yield required("spec.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None")
    if config is None:
        return
    if spec.dns_policy == "None" and not config.nameservers:
        yield required("spec.dnsConfig.nameservers",
                       "must provide at least one DNS nameserver when `dnsPolicy` is None")
    if len(config.nameservers) > 3:
        yield invalid("spec.dnsConfig.nameservers", ",".join(config.nameservers),
                      "must not have more than 3 nameservers")
    for i, ns in enumerate(config.nameservers):
        try:
            ipaddress.ip_address(ns)
        except ValueError:
            yield invalid(f"spec.dnsConfig.nameservers[{i}]", ns, "must be valid IP address")
    if len(config.searches) > 32:
        yield invalid("spec.dnsConfig.searches", ",".join(config.searches),
                      "must not have more than 32 search paths")
    for i, search in enumerate(config.searches):
        if search != "." and (why := dns1123_subdomain(search.removesuffix("."))):
            yield invalid(f"spec.dnsConfig.searches[{i}]", search, why)
    for i, option in enumerate(config.options):
        if not option.name:
            yield required(f"spec.dnsConfig.options[{i}]", "Option.Name must not be empty")
