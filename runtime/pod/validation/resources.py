"""Compute resources: a container's requirements and resize policy, the pod's own resources
(upstream's PodLevelResources, on by default) and its overhead (upstream's
validateResourceRequirements and what it calls, validateResizePolicy, validatePodResources,
validateOverhead).

A quantity is shown as upstream's Quantity.String() prints it: in canonical form (``1.5``
as ``1500m``, ``2048Ki`` as ``2Mi``), runtime.pod.quantity.quantity_string.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from decimal import ROUND_CEILING, Decimal

from runtime.pod.model import (
    Container,
    ContainerResizePolicy,
    PodResourceClaim,
    PodSpec,
    Quantity,
    ResourceClaim,
    ResourceRequirements,
)
from runtime.pod.quantity import canonical, parse_quantity, quantity_string
from runtime.pod.validation.fields import (
    _NON_NEGATIVE,
    _QUANTITY_MSG,
    Problem,
    Raw,
    _qualified_name,
    duplicate,
    forbidden,
    invalid,
    label_faults,
    not_found,
    not_supported,
    required,
    subdomain_faults,
)

_STANDARD_CONTAINER = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD = _STANDARD_CONTAINER | {
    "requests.cpu", "requests.memory", "requests.ephemeral-storage", "requests.storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services",
    "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers", "storage",
}  # fmt: skip
"""upstream helper's standardResources (IsStandardResourceName, with its hugepages)."""
POD_LEVEL = ("cpu", "memory")
"""upstream resourcehelper.SupportedPodLevelResources."""
RESIZE_RESOURCES = ("cpu", "memory")
RESIZE_POLICIES = ("NotRequired", "RestartContainer")


def _is_native(name: str) -> bool:
    """upstream IsNativeResource: unprefixed, or in the kubernetes.io namespace."""
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    """upstream IsExtendedResourceName: a prefixed name that stays a qualified name as a
    quota's ``requests.<name>``."""
    if _is_native(name) or name.startswith("requests."):
        return False
    return not _qualified_name("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    """upstream IsOvercommitAllowed: native resources other than hugepages."""
    return _is_native(name) and not name.startswith("hugepages-")


def _quantity(value: Quantity, path: str) -> tuple[Decimal | None, list[Problem]]:
    try:
        return parse_quantity(value), []
    except ValueError:
        return None, [invalid(path, str(value), _QUANTITY_MSG)]


def _resource_name(name: str, path: str) -> list[Problem]:
    """upstream validateResourceName."""
    problems = [invalid(path, name, why) for why in _qualified_name(name)]
    if not problems and "/" not in name and name not in _STANDARD and not name.startswith(
            ("hugepages-", "requests.hugepages-")):
        problems.append(invalid(path, name, "must be a standard resource type or fully "
                                "qualified"))
    return problems


def _container_resource_name(name: str, path: str) -> list[Problem]:
    """upstream validateContainerResourceName."""
    problems = _resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER and not name.startswith("hugepages-"):
            problems.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        problems.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return problems


def _pod_resource_name(name: str, path: str) -> list[Problem]:
    """upstream validatePodResourceName."""
    problems = _resource_name(name, path)
    if not problems and name not in POD_LEVEL:
        problems.append(not_supported(path, name, POD_LEVEL))
    return problems


def _hugepages_divisible(name: str, q: Decimal) -> bool:
    """upstream IsHugePageResourceValueDivisible: a whole number of pages."""
    try:
        page = parse_quantity(name.removeprefix("hugepages-"))
    except ValueError:
        return False
    if page <= 0 or page != page.to_integral_value():
        return False
    return q.to_integral_value(ROUND_CEILING) % page == 0


def claim_names(claims: Iterable[ResourceClaim], pod_claims: frozenset[str], path: str
                ) -> Iterator[Problem]:
    """Upstream validateResourceClaimNames: each container claim names one of the pod's
    spec.resourceClaims, once: a whole claim, or each of its requests once."""
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        p = f"{path}[{i}]"
        if not claim.name:
            yield required(p)
            continue
        if claim.name in seen:
            yield duplicate(p, claim.name)  # the whole claim is referenced already
        else:
            key = claim.name
            if claim.request:
                for why in label_faults(claim.request):
                    yield invalid(f"{p}.request", claim.request, why)
                key += "/" + claim.request
            if key in seen:
                yield duplicate(p, key)
            elif not claim.request:
                # the whole claim after one of its requests
                for earlier in sorted(seen):
                    if "/" in earlier and earlier.split("/", 1)[0] == claim.name:
                        yield duplicate(p, claim.name)
            seen.add(key)
        if claim.name not in pod_claims:
            known = (": " + ", ".join(sorted(pod_claims))) if pod_claims else " which is empty"
            where, what = not_found(p, claim.name)
            yield where, f"{what}: must be one of the names in pod.spec.resourceClaims{known}"


def pod_claims(claims: tuple[PodResourceClaim, ...]) -> Iterator[Problem]:
    """upstream validatePodResourceClaims. Upstream shows the whole claim (a Go struct dump
    with pointers) as the value of its two one-of errors; it has no stable text, so the value
    shown is empty. An empty name field reads as unset (the model cannot tell them apart)."""
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        p = f"spec.resourceClaims[{i}]"
        if not claim.name:
            yield required(f"{p}.name")
        elif claim.name in seen:
            yield duplicate(f"{p}.name", claim.name)
        else:
            for why in label_faults(claim.name):
                yield invalid(f"{p}.name", claim.name, why)
            seen.add(claim.name)
        named, templated = claim.resource_claim_name, claim.resource_claim_template_name
        if named and templated:
            yield invalid(p, "", "at most one of `resourceClaimName` or "
                          "`resourceClaimTemplateName` may be specified")
        if not named and not templated:
            yield invalid(p, "", "must specify one of: `resourceClaimName`, "
                          "`resourceClaimTemplateName`")
        for field, value in (("resourceClaimName", named),
                             ("resourceClaimTemplateName", templated)):
            for why in subdomain_faults(value) if value else ():
                yield invalid(f"{p}.{field}", value, why)


def requirements(r: ResourceRequirements, path: str, *, pod_level: bool = False
                 ) -> Iterator[Problem]:
    """upstream validateResourceRequirements (its claims aside): names, quantities, whole
    hugepages, requests within limits."""
    name_rule = _pod_resource_name if pod_level else _container_resource_name
    limits: dict[str, Decimal] = {}
    seen: set[str] = set()
    for field, values in (("limits", r.limits), ("requests", r.requests)):
        for name, value in values.items():
            p = f"{path}.{field}[{name}]"
            yield from name_rule(name, p)
            q, errors = _quantity(value, p)
            yield from errors
            if q is None:
                continue
            seen.add(name)
            shown = quantity_string(value)
            if q < 0:
                yield invalid(p, shown, _NON_NEGATIVE)
            if _is_extended(name) and q != q.to_integral_value():
                # upstream passes the Quantity itself here, which prints unquoted
                yield invalid(p, Raw(shown), "must be an integer")
            if field == "limits":
                limits[name] = q
            else:
                yield from _request_within_limit(r, name, value, q, limits.get(name), path)
            if name.startswith("hugepages-") and not _hugepages_divisible(name, q):
                yield invalid(p, shown, f"{shown} is not positive integer multiple of {name}")
    if any(n.startswith("hugepages-") for n in seen) and not seen & {"cpu", "memory"}:
        yield forbidden(path, "HugePages require cpu or memory")


def _request_within_limit(r: ResourceRequirements, name: str, value: Quantity, q: Decimal,
                          limit: Decimal | None, path: str) -> Iterator[Problem]:
    if limit is not None:
        shown = quantity_string(r.limits[name])
        if q != limit and not _overcommit_allowed(name):
            yield invalid(f"{path}.requests", quantity_string(value),
                          f"must be equal to {name} limit of {shown}")
        elif q > limit:
            yield invalid(f"{path}.requests", quantity_string(value),
                          f"must be less than or equal to {name} limit of {shown}")
    elif not _overcommit_allowed(name) and name not in r.limits:
        yield required(f"{path}.limits", "Limit must be set for non overcommitable resources")


def resize_policy(policies: tuple[ContainerResizePolicy, ...], path: str,
                  pod_restart_policy: str) -> Iterator[Problem]:
    """upstream validateResizePolicy; most of its errors name the list, not the entry."""
    seen: set[str] = set()
    for i, policy in enumerate(policies):
        if policy.resource_name in seen:
            yield duplicate(f"{path}[{i}]", policy.resource_name)
        seen.add(policy.resource_name)
        if not policy.resource_name:
            yield required(path)
        elif policy.resource_name not in RESIZE_RESOURCES:
            yield not_supported(path, policy.resource_name, RESIZE_RESOURCES)
        if not policy.restart_policy:
            yield required(path)
        elif policy.restart_policy not in RESIZE_POLICIES:
            yield not_supported(path, policy.restart_policy, RESIZE_POLICIES)
        if pod_restart_policy == "Never" and policy.restart_policy != "NotRequired":
            yield invalid(path, policy.restart_policy,
                          "must be 'NotRequired' when pod `restartPolicy` is 'Never'")


_BYTE_DIVISORS = frozenset({"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti",
                            "1Pi", "1Ei"})
_BYTE_DIVISORS_MSG = "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, " \
    "1Ei are supported with the {} resource"


def divisor(resource: str, value: Quantity, path: str) -> Iterator[Problem]:
    """upstream validateContainerResourceDivisor (a downward API resourceFieldRef); the value
    shown is the resource's name, as upstream shows it."""
    try:
        q = parse_quantity(value)
    except ValueError:
        return  # the decoder refuses a malformed quantity first
    if q == 0:
        return
    shown = quantity_string(value)
    p = f"{path}.divisor"
    kind = {"cpu": "cpu", "memory": "memory", "ephemeral-storage": "local ephemeral storage"}.get(
        resource.partition(".")[2]) if resource.startswith(("limits.", "requests.")) else None
    if kind == "cpu" and shown not in ("1m", "1"):
        yield invalid(p, resource, "only divisor's values 1m and 1 are supported with the cpu "
                      "resource")
    elif kind not in (None, "cpu") and shown not in _BYTE_DIVISORS:
        yield invalid(p, resource, _BYTE_DIVISORS_MSG.format(kind))
    if resource.startswith(("requests.hugepages-", "limits.hugepages-")) and (
            shown not in _BYTE_DIVISORS):
        yield invalid(p, resource, _BYTE_DIVISORS_MSG.format("hugepages"))


def overhead(values: Mapping[str, Quantity]) -> Iterator[Problem]:
    """upstream validateOverhead: the overhead checked as a container's limits."""
    if values:
        yield from requirements(ResourceRequirements(limits=values), "spec.overhead")


def pod_resources(spec: PodSpec) -> Iterator[Problem]:
    """upstream validatePodResources (PodLevelResources is on by default)."""
    r = spec.resources
    if r is None:
        return
    path = "spec.resources"
    if r.claims:
        yield forbidden(f"{path}.claims", "claims cannot be set for Resources at pod-level")
    yield from requirements(r, path, pod_level=True)
    yield from _consistency(spec, r, path)


Amount = tuple[Decimal, bool]
"""A quantity and whether it is in binary (Ki, Mi, ...) form, which a sum keeps from its
first term, as upstream's Quantity.Add keeps its receiver's format."""


def _requests(c: Container) -> dict[str, Amount]:
    out: dict[str, Amount] = {}
    for name, value in (c.resources.requests if c.resources else {}).items():
        try:
            out[name] = parse_quantity(value), str(value).endswith("i")
        except ValueError:
            continue  # reported with the container
    return out


def _add(a: Mapping[str, Amount], b: Mapping[str, Amount]) -> dict[str, Amount]:
    out = dict(a)
    for k, (q, binary) in b.items():
        out[k] = (out[k][0] + q, out[k][1]) if k in out else (q, binary)
    return out


def _max(a: Mapping[str, Amount], b: Mapping[str, Amount]) -> dict[str, Amount]:
    out = dict(a)
    for k, v in b.items():
        if k not in out or v[0] > out[k][0]:
            out[k] = v
    return out


def _aggregate_requests(spec: PodSpec) -> dict[str, Amount]:
    """upstream resourcehelper.AggregateContainerRequests: the regular containers and
    sidecars together, or the largest init container (with the sidecars started before it),
    whichever is more."""
    total: dict[str, Amount] = {}
    for c in spec.containers:
        total = _add(total, _requests(c))
    sidecars: dict[str, Amount] = {}
    init_peak: dict[str, Amount] = {}
    for c in spec.init_containers:
        reqs = _requests(c)
        if c.restart_policy == "Always":
            total = _add(total, reqs)
            sidecars = _add(sidecars, reqs)
            reqs = dict(sidecars)
        else:
            reqs = _add(reqs, sidecars)
        init_peak = _max(init_peak, reqs)
    return _max(total, init_peak)


def _consistency(spec: PodSpec, r: ResourceRequirements, path: str) -> Iterator[Problem]:
    """upstream validatePodResourceConsistency. A resource the pod level does not request is
    not compared: the pod level governs only what it names."""
    for name, (total, binary) in sorted(_aggregate_requests(spec).items()):
        if name not in r.requests:
            continue
        try:
            pod_request = parse_quantity(r.requests[name])
        except ValueError:
            continue
        if total > pod_request:
            yield invalid(f"{path}.requests[{name}]", quantity_string(r.requests[name]),
                          "must be greater than or equal to aggregate container requests "
                          f"of {canonical(total, binary=binary)}")
    for i, c in enumerate(spec.containers):
        for name, value in (c.resources.limits if c.resources else {}).items():
            if name not in r.limits:
                continue
            try:
                over = parse_quantity(value) > parse_quantity(r.limits[name])
            except ValueError:
                continue
            if over:
                yield invalid(f"{path}.containers[{i}][{name}].limits", quantity_string(value),
                              "must be less than or equal to pod limits of "
                              f"{quantity_string(r.limits[name])}")
