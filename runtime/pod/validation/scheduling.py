"""Scheduling and DNS: tolerations, affinity, DNS config.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from runtime.pod.model import (
    NodeSelectorRequirement,
    Pod,
    Toleration,
)
from runtime.pod.validation.fields import (
    Problem,
    _qualified_name,
    dns1123_subdomain,
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
