"""Node admission: may this node run this pod, next to the pods it already runs?

Pure functions modelled on upstream's kubelet admit handlers: the sysctl allowlist
(pkg/kubelet/sysctl: safe sysctls, plus ``--allowed-unsafe-sysctls``) and the predicate
handler (pkg/kubelet/lifecycle/predicate.go: the OS label and field, then the scheduler's
AdmissionCheck: resources against allocatable, required node affinity and nodeSelector,
node name, host ports). Each returns None when the pod may run, else upstream's
``(reason, message)`` for the pod's Failed status, e.g. ``("OutOfcpu", "Node didn't have
enough resource: cpu, requested: 2000, used: 500, capacity: 2000")``.

``admit`` runs them in upstream's order and returns the first rejection. It is meant for
pods as runtime.pod.manifest returns them (defaulted); ``admitted`` are the pods the node
already runs (terminated ones left out by the caller).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal

from msgspec import Struct, field

from runtime.pod.model import (
    AppArmorProfile,
    Container,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Quantity,
    SecurityContext,
)
from runtime.pod.quantity import parse_quantity

__all__ = [
    "SAFE_SYSCTLS",
    "Node",
    "Rejection",
    "admit",
    "check_apparmor",
    "check_host_ports",
    "check_node_affinity",
    "check_node_name",
    "check_os",
    "check_resources",
    "check_supplemental_groups_policy",
    "check_sysctls",
    "container_apparmor",
    "container_security_contexts",
    "node_labels",
    "normalize_sysctl",
    "pod_requests",
    "rejected_message",
    "sysctl_allowlist_error",
]

Rejection = tuple[str, str]
"""Upstream's (reason, message) for a pod the node refuses."""

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_OS = "kubernetes.io/os"
LABEL_ARCH = "kubernetes.io/arch"

# pkg/kubelet/sysctl/safe_sysctls.go: namespaced and isolated, so always allowed.
# (Upstream drops the last ones on kernels too old to have them; this list assumes a
# current kernel.)
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
)


class Node(Struct, frozen=True):
    """What admission needs to know about this node.

    ``labels`` should hold kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch
    (see node_labels) plus the user's ``--node-labels``; ``allocatable`` the node's
    allocatable resources as quantities (cpu, memory, pods, ephemeral-storage, and any
    extended resources); ``os`` the node's operating system (Go's GOOS).
    """

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, Quantity] = field(default_factory=dict)
    os: str = "linux"
    # NodeFeatures.supplementalGroupsPolicy: the runtime reports (CRI Status features)
    # that it applies supplementalGroupsPolicy; containerd 1.6 does not.
    supplemental_groups_policy: bool = False
    # Whether the kernel enforces AppArmor (runtime.machine.apparmor_enabled).
    apparmor: bool = False


def rejected_message(message: str) -> str:
    """The status message of a pod refused with ``message`` (upstream's rejectPod sets it;
    its event carries ``message`` alone): what ``kubectl describe pod`` shows on its
    Message line."""
    return f"Pod was rejected: {message}"


def node_labels(
    name: str, os: str, arch: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The well-known labels a kubelet puts on its node, plus ``extra`` (which win)."""
    return {LABEL_HOSTNAME: name.lower(), LABEL_OS: os, LABEL_ARCH: arch, **(extra or {})}


def admit(
    pod: Pod,
    node: Node,
    admitted: Sequence[Pod] = (),
    allowed_unsafe_sysctls: Sequence[str] = (),
) -> Rejection | None:
    """None if ``node`` may run ``pod`` next to ``admitted``, else the first rejection."""
    return (
        check_sysctls(pod, allowed_unsafe_sysctls)
        or check_os(pod, node)
        or check_supplemental_groups_policy(pod, node)
        or check_resources(pod, node, admitted)
        or check_node_affinity(pod, node)
        or check_node_name(pod, node)
        or check_host_ports(pod, admitted)
        or check_apparmor(pod, node)
    )


# --- sysctls -----------------------------------------------------------------------------


def _sysctl_namespace(name: str) -> str | None:
    """pkg/kubelet/sysctl/namespace.go: which namespace a sysctl lives in."""
    if name.startswith("kernel.shm") or name.startswith("kernel.msg") or name in (
            "kernel.sem",) or name.startswith("fs.mqueue."):
        return "IPC"
    if name.startswith("net."):
        return "Net"
    return None


# pkg/apis/policy/validation: SysctlContainSlashPatternFmt.
_SYSCTL_PATTERN = re.compile(
    r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]")


def sysctl_allowlist_error(patterns: Sequence[str]) -> str | None:
    """Why upstream's sysctl.NewAllowlist refuses ``patterns`` (``--allowed-unsafe-sysctls``:
    names, or prefixes ending in ``*``), or None."""
    for pattern in patterns:
        if len(pattern) > 253 or not _SYSCTL_PATTERN.fullmatch(pattern):
            return (f'sysctl "{pattern}" must have at most 253 characters and match regex '
                    f"{_SYSCTL_PATTERN.pattern}")
        name = normalize_sysctl(pattern)
        if _sysctl_namespace(name.rstrip("*")) is None:
            return f'the sysctls "{name.rstrip("*")}" are not known to be namespaced'
    return None


def check_sysctls(pod: Pod, allowed_unsafe: Sequence[str] = ()) -> Rejection | None:
    """The sysctl allowlist: safe sysctls and ``allowed_unsafe`` (names or ``prefix*``)."""
    context = pod.spec.security_context
    if context is None or not context.sysctls:
        return None
    exact = set(SAFE_SYSCTLS) | {s for s in allowed_unsafe if not s.endswith("*")}
    prefixes = [s[:-1] for s in allowed_unsafe if s.endswith("*")]
    for sysctl in context.sysctls:
        name = normalize_sysctl(sysctl.name)
        if name in exact or any(name.startswith(p) for p in prefixes):
            namespace = _sysctl_namespace(name)
            if (namespace == "IPC" and pod.spec.host_ipc) or (
                    namespace == "Net" and pod.spec.host_network):
                return ("SysctlForbidden", f'forbidden sysctl: "{name}" not allowed with host '
                        f"{namespace} enabled")
            continue
        return "SysctlForbidden", f'forbidden sysctl: "{name}" not allowlisted'
    return None


def normalize_sysctl(name: str) -> str:
    """utilsysctl.NormalizeName: ``net/ipv4/ip_forward`` is ``net.ipv4.ip_forward``."""
    if "/" not in name:
        return name
    if "." in name.split("/", 1)[0]:  # a dotted first segment keeps its dots
        return name
    return name.replace(".", "\0").replace("/", ".").replace("\0", "/")


# --- the predicate handler ----------------------------------------------------------------


def check_supplemental_groups_policy(pod: Pod, node: Node) -> Rejection | None:
    """Upstream rejectPodAdmissionBasedOnSupplementalGroupsPolicy (predicate.go): a pod
    asking for Strict on a node whose runtime cannot apply it is refused, not silently
    given Merge."""
    context = pod.spec.security_context
    if context is None or context.supplemental_groups_policy != "Strict":
        return None
    if node.supplemental_groups_policy:
        return None
    return ("SupplementalGroupsPolicyNotSupported",
            "SupplementalGroupsPolicy=Strict is not supported in this node")


def check_os(pod: Pod, node: Node) -> Rejection | None:
    """The pod's kubernetes.io/os label and spec.os against the node's OS."""
    label = pod.metadata.labels.get(LABEL_OS)
    if label is not None and label != node.os:
        return ("PodOSSelectorNodeLabelDoesNotMatch",
                "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")
    if pod.spec.os is not None and pod.spec.os.name != node.os:
        return "PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"
    return None


def _amount(name: str, value: Quantity | Decimal) -> int:
    """A quantity as the integer upstream compares: millicores for cpu, else units
    (rounded up, as Quantity.MilliValue and Value round)."""
    q = value if isinstance(value, Decimal) else parse_quantity(value)
    return math.ceil(q * 1000) if name == "cpu" else math.ceil(q)


def _is_extended(name: str) -> bool:
    return "/" in name and not name.split("/", 1)[0].endswith("kubernetes.io")


def _container_requests(c: Container) -> dict[str, Decimal]:
    """A container's requests, a limit standing in for a missing request (the API
    default that copies limits to requests)."""
    if c.resources is None:
        return {}
    merged = {**c.resources.limits, **c.resources.requests}
    return {k: parse_quantity(v) for k, v in merged.items()}


def _add(total: dict[str, Decimal], more: Mapping[str, Decimal]) -> None:
    for k, v in more.items():
        total[k] = total.get(k, Decimal(0)) + v


def _max(total: dict[str, Decimal], other: Mapping[str, Decimal]) -> None:
    for k, v in other.items():
        total[k] = max(total.get(k, Decimal(0)), v)


def pod_requests(pod: Pod) -> dict[str, Decimal]:
    """What the pod asks of the node (component-helpers' PodRequests): the sum over app
    containers and sidecars, or the largest init container with the sidecars started
    before it, whichever is more, per resource; pod-level requests (spec.resources)
    replace the containers' for the resources they name; plus the pod overhead."""
    requests: dict[str, Decimal] = {}
    for c in pod.spec.containers:
        _add(requests, _container_requests(c))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for c in pod.spec.init_containers:
        own = _container_requests(c)
        if c.restart_policy == "Always":
            _add(requests, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            step = dict(own)
            _add(step, sidecars)
            _max(init_peak, step)
    _max(requests, init_peak)
    level = pod.spec.resources
    if level is not None:
        merged = {**level.limits, **level.requests}
        for name in ("cpu", "memory", *(n for n in merged if n.startswith("hugepages-"))):
            if name in merged:
                requests[name] = parse_quantity(merged[name])
    _add(requests, {k: parse_quantity(v) for k, v in pod.spec.overhead.items()})
    return requests


def check_resources(pod: Pod, node: Node, admitted: Sequence[Pod]) -> Rejection | None:
    """noderesources.Fits: the pod count, then each requested resource, against what the
    admitted pods already request and the node's allocatable."""
    allocatable = {k: _amount(k, v) for k, v in node.allocatable.items()}
    if "pods" in allocatable and len(admitted) + 1 > allocatable["pods"]:
        return _insufficient("pods", 1, len(admitted), allocatable["pods"])
    wanted = {k: _amount(k, v) for k, v in pod_requests(pod).items()}
    used: dict[str, int] = {}
    for other in admitted:
        for k, v in pod_requests(other).items():
            used[k] = used.get(k, 0) + _amount(k, v)
    order = ["cpu", "memory", "ephemeral-storage"]
    order += sorted(k for k in wanted if k not in order)
    for name in order:
        amount = wanted.get(name, 0)
        if amount <= 0 or name == "pods":
            continue
        if name not in allocatable:
            if _is_extended(name) or name.startswith("hugepages-"):
                # removeMissingExtendedResources: requests for extended resources the
                # node does not know are not checked here.
                continue
            capacity = 0
        else:
            capacity = allocatable[name]
        if amount > capacity - used.get(name, 0):
            return _insufficient(name, amount, used.get(name, 0), capacity)
    return None


def _insufficient(name: str, requested: int, used: int, capacity: int) -> Rejection:
    return (f"OutOf{name}", f"Node didn't have enough resource: {name}, requested: "
            f"{requested}, used: {used}, capacity: {capacity}")


def _requirement_matches(r: NodeSelectorRequirement, values: Mapping[str, str]) -> bool:
    present = r.key in values
    value = values.get(r.key, "")
    if r.operator == "In":
        return present and value in r.values
    if r.operator == "NotIn":
        return not present or value not in r.values
    if r.operator == "Exists":
        return present
    if r.operator == "DoesNotExist":
        return not present
    if r.operator in ("Gt", "Lt") and present and len(r.values) == 1:
        if not re.fullmatch(r"-?\d+", value) or not re.fullmatch(r"-?\d+", r.values[0]):
            return False
        have, want = int(value), int(r.values[0])
        return have > want if r.operator == "Gt" else have < want
    return False


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False  # an empty term matches no node
    fields = {"metadata.name": node.name}
    return all(_requirement_matches(r, node.labels) for r in term.match_expressions) and all(
        _requirement_matches(r, fields) for r in term.match_fields)


def check_node_affinity(pod: Pod, node: Node) -> Rejection | None:
    """GetRequiredNodeAffinity(pod).Match(node): every nodeSelector label, and one of the
    required node affinity terms."""
    rejection = ("NodeAffinity",
                 "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")
    if any(node.labels.get(k) != v for k, v in pod.spec.node_selector.items()):
        return rejection
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if required is None:
        return None
    if not any(_term_matches(t, node) for t in required.node_selector_terms):
        return rejection
    return None


def check_node_name(pod: Pod, node: Node) -> Rejection | None:
    if pod.spec.node_name and pod.spec.node_name != node.name:
        return ("NodeName",
                "Predicate NodeName failed: node(s) didn't match the requested node name")
    return None


def _host_ports(pods: Iterable[Pod]) -> list[tuple[str, str, int]]:
    """(protocol, IP, hostPort) of every container port that asks for a host port."""
    ports: list[tuple[str, str, int]] = []
    for pod in pods:
        for c in pod.spec.containers:
            for p in c.ports:
                host_port = p.host_port or (p.container_port if pod.spec.host_network else 0)
                if host_port > 0:
                    ports.append((p.protocol or "TCP", p.host_ip or "0.0.0.0", host_port))
    return ports


def check_host_ports(pod: Pod, admitted: Sequence[Pod]) -> Rejection | None:
    """nodeports.Fits: a host port is taken when another pod holds it for the same
    protocol and an overlapping IP (0.0.0.0 overlaps every IP)."""
    taken = _host_ports(admitted)
    for protocol, ip, port in _host_ports([pod]):
        for other_protocol, other_ip, other_port in taken:
            if (port == other_port and protocol == other_protocol
                    and (ip == other_ip or "0.0.0.0" in (ip, other_ip))):
                return ("NodePorts", "Predicate NodePorts failed: node(s) didn't have free "
                        "ports for the requested pod ports")
    return None


# --- AppArmor (pkg/security/apparmor/validate.go, lifecycle.NewAppArmorAdmitHandler) -------

APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"


def container_security_contexts(pod: Pod) -> Iterator[SecurityContext | None]:
    """The security context of every container: init, regular and ephemeral (upstream's
    VisitContainers with all of them)."""
    for c in pod.all_containers():
        yield c.security_context
    for e in pod.spec.ephemeral_containers:
        yield e.security_context


def apparmor_required(pod: Pod) -> bool:
    """Upstream isRequired: a profile other than Unconfined on the pod or a container, or
    a deprecated annotation other than ``unconfined``."""
    context = pod.spec.security_context
    if context is not None and context.app_armor_profile is not None \
            and context.app_armor_profile.type != "Unconfined":
        return True
    for sc in container_security_contexts(pod):
        if sc is not None and sc.app_armor_profile is not None \
                and sc.app_armor_profile.type != "Unconfined":
            return True
    return any(value != "unconfined" for key, value in pod.metadata.annotations.items()
               if key.startswith(APPARMOR_ANNOTATION_PREFIX))


def _annotation_apparmor(pod: Pod, container: str) -> AppArmorProfile | None:
    """The deprecated per-container annotation: runtime/default, unconfined,
    localhost/<name> (upstream getProfileFromPodAnnotations); None for anything else."""
    value = pod.metadata.annotations.get(APPARMOR_ANNOTATION_PREFIX + container)
    if value == "runtime/default":
        return AppArmorProfile(type="RuntimeDefault")
    if value == "unconfined":
        return AppArmorProfile(type="Unconfined")
    if value is not None and value.startswith("localhost/"):
        return AppArmorProfile(type="Localhost", localhost_profile=value[len("localhost/"):])
    return None


def container_apparmor(pod: Pod, container: str, sc: SecurityContext | None
                       ) -> AppArmorProfile | None:
    """Upstream apparmor.GetProfile: the container's field, else its deprecated
    annotation (static pods may have only that), else the pod's field."""
    profile = sc.app_armor_profile if sc is not None else None
    if profile is None:
        profile = _annotation_apparmor(pod, container)
    if profile is None and pod.spec.security_context is not None:
        profile = pod.spec.security_context.app_armor_profile
    return profile


def check_apparmor(pod: Pod, node: Node) -> Rejection | None:
    """A pod that needs AppArmor on a node without it, or that names an empty Localhost
    profile, is refused with reason AppArmor (upstream's appArmorAdmitHandler). Whether a
    named profile is loaded is the runtime's to find out, as upstream leaves it."""
    if not apparmor_required(pod):
        return None
    if not node.apparmor:
        return "AppArmor", "Cannot enforce AppArmor: AppArmor is not enabled on the host"
    containers = [(c.name, c.security_context) for c in pod.all_containers()]
    containers += [(e.name, e.security_context) for e in pod.spec.ephemeral_containers]
    for name, sc in containers:
        profile = container_apparmor(pod, name, sc)
        if profile is not None and profile.type == "Localhost" \
                and not (profile.localhost_profile or "").strip():
            return ("AppArmor", "Cannot enforce AppArmor: invalid empty AppArmor profile "
                    f'name: "{profile.localhost_profile or ""}"')
    return None
