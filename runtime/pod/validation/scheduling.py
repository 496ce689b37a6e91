"""Scheduling and DNS: tolerations, affinity, DNS config.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from runtime.pod.model import (
    LabelSelector,
    NodeAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    PodSpec,
    Toleration,
)
from runtime.pod.validation.fields import (
    IP_MSG,
    Problem,
    Raw,
    _qualified_name,
    dns1123_subdomain_with_underscore,
    duplicate,
    forbidden,
    invalid,
    label_faults,
    label_value,
    not_supported,
    required,
    subdomain_faults,
    valid_ip,
)
from runtime.pod.validation.metadata import labels

# --- scheduling and DNS ----------------------------------------------------------------------


TOLERATION_OPERATORS = ("Equal", "Exists")
"""Gt and Lt need upstream's TaintTolerationComparisonOperators, alpha (off by default) since
1.35: with the gate off upstream refuses them as any unknown operator."""


def _toleration(t: Toleration, path: str) -> Iterator[Problem]:
    """upstream ValidateTolerations, for one toleration."""
    if t.key:
        for why in _qualified_name(t.key):
            yield invalid(f"{path}.key", t.key, why)
    elif t.operator != "Exists":
        yield invalid(f"{path}.operator", t.operator,
                      "operator must be Exists when `key` is empty, which means \"match all "
                      "values and all keys\"")
    if t.toleration_seconds is not None and t.effect != "NoExecute":
        yield invalid(f"{path}.effect", t.effect,
                      "effect must be 'NoExecute' when `tolerationSeconds` is set")
    if t.operator in ("Equal", ""):
        if faults := label_value(t.value):
            yield invalid(f"{path}.operator", t.value, ";".join(faults))
    elif t.operator == "Exists":
        if t.value:
            yield invalid(f"{path}.operator", t.value,
                          "value must be empty when `operator` is 'Exists'")
    else:
        yield not_supported(f"{path}.operator", t.operator, TOLERATION_OPERATORS)
    if t.effect and t.effect not in ("NoExecute", "NoSchedule", "PreferNoSchedule"):
        yield not_supported(f"{path}.effect", t.effect,
                            ("NoSchedule", "PreferNoSchedule", "NoExecute"))


def _requirement(r: NodeSelectorRequirement, path: str, *, values_checked: bool
                 ) -> Iterator[Problem]:
    """upstream ValidateNodeSelectorRequirement; a required term's values must be label
    values (upstream lets a preferred term's through)."""
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
        yield invalid(f"{path}.operator", r.operator, _NOT_AN_OPERATOR)
    for why in _qualified_name(r.key):
        yield invalid(f"{path}.key", r.key, why)
    if values_checked:
        for i, value in enumerate(r.values):
            for why in label_value(value):
                yield invalid(f"{path}.values[{i}]", value, why)


def _field_requirement(r: NodeSelectorRequirement, path: str) -> Iterator[Problem]:
    """upstream ValidateNodeFieldSelectorRequirement: only metadata.name, In or NotIn, with
    one value."""
    if r.operator in ("In", "NotIn"):
        if len(r.values) != 1:
            yield required(f"{path}.values", "must be only one value when `operator` is 'In' "
                           "or 'NotIn' for node field selector")
    else:
        yield invalid(f"{path}.operator", r.operator, _NOT_AN_OPERATOR)
    if r.key != "metadata.name":
        yield invalid(f"{path}.key", r.key, "not a valid field selector key")
    else:
        for i, value in enumerate(r.values):
            for why in subdomain_faults(value):
                yield invalid(f"{path}.values[{i}]", value, why)


def _term(term: NodeSelectorTerm, path: str, *, values_checked: bool) -> Iterator[Problem]:
    for j, r in enumerate(term.match_expressions):
        yield from _requirement(r, f"{path}.matchExpressions[{j}]",
                                values_checked=values_checked)
    for j, r in enumerate(term.match_fields):
        yield from _field_requirement(r, f"{path}.matchFields[{j}]")


def label_selector(selector: LabelSelector | None, path: str) -> Iterator[Problem]:
    """upstream ValidateLabelSelector (label values checked, as for a new pod)."""
    if selector is None:
        return
    yield from labels(selector.match_labels, f"{path}.matchLabels")
    for i, e in enumerate(selector.match_expressions):
        p = f"{path}.matchExpressions[{i}]"
        if e.operator in ("In", "NotIn"):
            if not e.values:
                yield required(f"{p}.values",
                               "must be specified when `operator` is 'In' or 'NotIn'")
        elif e.operator in ("Exists", "DoesNotExist"):
            if e.values:
                yield forbidden(f"{p}.values", "may not be specified when `operator` is "
                                "'Exists' or 'DoesNotExist'")
        else:
            yield invalid(f"{p}.operator", e.operator, _NOT_AN_OPERATOR)
        for why in _qualified_name(e.key):
            yield invalid(f"{p}.key", e.key, why)
        for j, value in enumerate(e.values):
            for why in label_value(value):
                yield invalid(f"{p}.values[{j}]", value, why)


def _affinity(pod: Pod) -> Iterator[Problem]:
    """upstream validateAffinity."""
    affinity = pod.spec.affinity
    if affinity is None:
        return
    if affinity.node_affinity is not None:
        yield from _node_affinity(affinity.node_affinity, "spec.affinity.nodeAffinity")
    for field, pod_affinity in (("podAffinity", affinity.pod_affinity),
                                ("podAntiAffinity", affinity.pod_anti_affinity)):
        if pod_affinity is None:
            continue
        path = f"spec.affinity.{field}"
        for i, term in enumerate(pod_affinity.required_during_scheduling_ignored_during_execution):
            yield from _pod_affinity_term(
                term, f"{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]")
        for i, weighted in enumerate(
                pod_affinity.preferred_during_scheduling_ignored_during_execution):
            p = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            if not 1 <= weighted.weight <= 100:
                yield invalid(f"{p}.weight", weighted.weight, "must be in the range 1-100")
            yield from _pod_affinity_term(weighted.pod_affinity_term, f"{p}.podAffinityTerm")


def _node_affinity(node_affinity: NodeAffinity, path: str) -> Iterator[Problem]:
    required_ = node_affinity.required_during_scheduling_ignored_during_execution
    if required_ is not None:
        p = f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        if not required_.node_selector_terms:
            yield required(p, "must have at least one node selector term")
        for i, term in enumerate(required_.node_selector_terms):
            yield from _term(term, f"{p}[{i}]", values_checked=True)
    preferred = node_affinity.preferred_during_scheduling_ignored_during_execution
    for i, pref in enumerate(preferred):
        p = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        if not 1 <= pref.weight <= 100:
            yield invalid(f"{p}.weight", pref.weight, "must be in the range 1-100")
        yield from _term(pref.preference, f"{p}.preference", values_checked=False)


def _pod_affinity_term(term: PodAffinityTerm, path: str) -> Iterator[Problem]:
    """upstream validatePodAffinityTerm. Its namespaces' errors name ``namespace``, as
    upstream's do."""
    yield from label_selector(term.label_selector, f"{path}.labelSelector")
    yield from label_selector(term.namespace_selector, f"{path}.namespaceSelector")
    for name in term.namespaces:
        for why in label_faults(name):
            yield invalid(f"{path}.namespace", name, why)
    yield from _label_keys(term, path)
    if not term.topology_key:
        yield required(f"{path}.topologyKey", "can not be empty")
    for why in _qualified_name(term.topology_key):
        yield invalid(f"{path}.topologyKey", term.topology_key, why)


def _label_keys(term: PodAffinityTerm, path: str) -> Iterator[Problem]:
    """upstream validateMatchLabelKeysAndMismatchLabelKeys."""
    selector = term.label_selector
    for field, keys in (("matchLabelKeys", term.match_label_keys),
                        ("mismatchLabelKeys", term.mismatch_label_keys)):
        if not keys:
            continue
        if selector is None:
            yield forbidden(f"{path}.{field}", "must not be specified when labelSelector is "
                            "not set")
            continue
        for i, key in enumerate(keys):
            for why in _qualified_name(key):
                yield invalid(f"{path}.{field}[{i}]", key, why)
    if selector is not None:
        # upstream's index is into the term's path itself, not into matchLabelKeys
        positions = {key: i for i, key in enumerate(term.match_label_keys)}
        selector_keys = set(selector.match_labels)
        for e in selector.match_expressions:
            if e.key in positions and e.key in selector_keys:
                yield invalid(f"{path}[{positions[e.key]}]", e.key,
                              "exists in both matchLabelKeys and labelSelector")
            selector_keys.add(e.key)
    mismatch = set(term.mismatch_label_keys)
    for i, key in enumerate(term.match_label_keys):
        if key in mismatch:
            yield invalid(f"{path}.matchLabelKeys[{i}]", key,
                          "exists in both matchLabelKeys and mismatchLabelKeys")


def _go_strings(values: tuple[str, ...]) -> Raw:
    """A []string as upstream's field errors print it (Go's %#v)."""
    return Raw("[]string{" + ", ".join(json.dumps(v) for v in values) + "}")


def _dns_config(pod: Pod) -> Iterator[Problem]:
    """upstream validatePodDNSConfig, with RelaxedDNSSearchValidation (on by default): a
    search domain may be '.' or hold underscores."""
    spec = pod.spec
    config = spec.dns_config
    path = "spec.dnsConfig"
    if spec.dns_policy == "None":
        if config is None:
            yield required(path, "must provide `dnsConfig` when `dnsPolicy` is None")
            return
        if not config.nameservers:
            yield required(f"{path}.nameservers",
                           "must provide at least one DNS nameserver when `dnsPolicy` is None")
            return
    if config is None:
        return
    if len(config.nameservers) > MAX_NAMESERVERS:
        yield invalid(f"{path}.nameservers", _go_strings(config.nameservers),
                      f"must not have more than {MAX_NAMESERVERS} nameservers")
    for i, ns in enumerate(config.nameservers):
        if not valid_ip(ns):
            yield invalid(f"{path}.nameservers[{i}]", ns, IP_MSG)
    if len(config.searches) > MAX_SEARCH_PATHS:
        yield invalid(f"{path}.searches", _go_strings(config.searches),
                      f"must not have more than {MAX_SEARCH_PATHS} search paths")
    if len(" ".join(config.searches)) > MAX_SEARCH_LIST_CHARS:
        yield invalid(f"{path}.searches", _go_strings(config.searches),
                      f"must not have more than {MAX_SEARCH_LIST_CHARS} characters (including "
                      "spaces) in the search list")
    for i, search in enumerate(config.searches):
        if search != ".":
            trimmed = search.removesuffix(".")
            for why in dns1123_subdomain_with_underscore(trimmed):
                yield invalid(f"{path}.searches[{i}]", trimmed, why)
    for i, option in enumerate(config.options):
        if not option.name:
            yield required(f"{path}.options[{i}]", "must not be empty")


MAX_NAMESERVERS = 3
MAX_SEARCH_PATHS = 32
MAX_SEARCH_LIST_CHARS = 2048
"""upstream's MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars."""
_NOT_AN_OPERATOR = "not a valid selector operator"


# --- gates, host aliases, topology spread ----------------------------------------------------

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
        if not valid_ip(alias.ip):
            yield invalid(f"spec.hostAliases[{i}].ip", alias.ip, IP_MSG)
        for j, hostname in enumerate(alias.hostnames):
            for bad in subdomain_faults(hostname):
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
        yield from label_selector(c.label_selector, f"{p}.labelSelector")
