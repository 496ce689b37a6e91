"""Scheduling and DNS: tolerations, affinity, DNS config.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from runtime.pod.model import (
    NodeSelectorRequirement,
    Pod,
    PodSpec,
    Toleration,
)
from runtime.pod.validation.fields import (
    Problem,
    _qualified_name,
    dns1123_subdomain,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)

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


# --- gates, host aliases, topology spread ----------------------------------------------------

_IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")


def gates_and_aliases(spec: PodSpec) -> Iterator[Problem]:
    """upstream validateReadinessGates, validateSchedulingGates (and ValidatePodCreate's
    nodeName with gates left), ValidateHostAliases."""
    for i, gate in enumerate(spec.readiness_gates):
        for why in _qualified_name(gate.condition_type):
            yield invalid(f"spec.readinessGates[{i}].conditionType", gate.condition_type, why)
    seen: set[str] = set()
    for i, sg in enumerate(spec.scheduling_gates):
        for why in _qualified_name(sg.name):
            yield invalid(f"spec.schedulingGates[{i}]", sg.name, why)
        if sg.name in seen:
            yield duplicate(f"spec.schedulingGates[{i}]", sg.name)
        seen.add(sg.name)
    if spec.node_name and spec.scheduling_gates:
        yield forbidden("spec.nodeName", "cannot be set until all schedulingGates have been "
                        "cleared")
    for i, alias in enumerate(spec.host_aliases):
        try:
            ipaddress.ip_address(alias.ip)
        except ValueError:
            yield invalid(f"spec.hostAliases[{i}].ip", alias.ip, _IP_MSG)
        for j, hostname in enumerate(alias.hostnames):
            if bad := dns1123_subdomain(hostname):
                yield invalid(f"spec.hostAliases[{i}].hostnames[{j}]", hostname, bad)


def topology_spread(spec: PodSpec) -> Iterator[Problem]:
    """upstream validateTopologySpreadConstraints (its label selector's own rules aside)."""
    constraints = spec.topology_spread_constraints
    for i, c in enumerate(constraints):
        p = f"spec.topologySpreadConstraints[{i}]"
        if c.max_skew <= 0:
            yield invalid(f"{p}.maxSkew", c.max_skew, "must be greater than zero")
        if not c.topology_key:
            yield required(f"{p}.topologyKey", "can not be empty")
        if c.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            yield not_supported(f"{p}.whenUnsatisfiable", c.when_unsatisfiable,
                                WHEN_UNSATISFIABLE)
        if any(c.topology_key == o.topology_key and c.when_unsatisfiable == o.when_unsatisfiable
               for o in constraints[i + 1:]):
            yield duplicate(f"{p}.{{topologyKey, whenUnsatisfiable}}",
                            f"{{{c.topology_key}, {c.when_unsatisfiable}}}")
        if c.min_domains is not None:
            if c.min_domains <= 0:
                yield invalid(f"{p}.minDomains", c.min_domains, "must be greater than zero")
            if c.when_unsatisfiable != "DoNotSchedule":
                yield invalid(f"{p}.minDomains", c.min_domains, "can only use minDomains if "
                              f"whenUnsatisfiable=DoNotSchedule, not {c.when_unsatisfiable}")
        for field, policy in (("nodeAffinityPolicy", c.node_affinity_policy),
                              ("nodeTaintsPolicy", c.node_taints_policy)):
            if policy and policy not in NODE_INCLUSION_POLICIES:
                yield not_supported(f"{p}.{field}", policy, NODE_INCLUSION_POLICIES)
        if c.match_label_keys:
            selector = c.label_selector
            keys = set(selector.match_labels) | {e.key for e in selector.match_expressions} \
                if selector is not None else set()
            if selector is None:
                yield forbidden(f"{p}.matchLabelKeys",
                                "must not be specified when labelSelector is not set")
            for j, key in enumerate(c.match_label_keys):
                for why in _qualified_name(key):
                    yield invalid(f"{p}.matchLabelKeys[{j}]", key, why)
                if key in keys:
                    yield invalid(f"{p}.matchLabelKeys[{j}]", key,
                                  "exists in both matchLabelKeys and labelSelector")
