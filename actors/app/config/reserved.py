"""The node allocatable flags and KubeletConfiguration fields, checked as upstream checks them
(server.go parseResourceList, ValidateKubeletConfiguration); runtime.cm.node_allocatable
computes what they reserve.

- ``--system-reserved`` / systemReserved and ``--kube-reserved`` / kubeReserved: maps of
  cpu, memory, ephemeral-storage and pid to quantities held back from pods;
- ``--reserved-cpus`` / reservedSystemCPUs: a cpu list (``0-1,3``) for the system, which
  takes precedence over the cpu of both maps;
- ``--enforce-node-allocatable`` / enforceNodeAllocatable (default ``pods``): which
  cgroups get the limits: pods (kubepods), system-reserved, kube-reserved, their
  -compressible variants (the cpu alone), or none;
- ``--system-reserved-cgroup`` / systemReservedCgroup and ``--kube-reserved-cgroup`` /
  kubeReservedCgroup: the existing cgroups that system-reserved and kube-reserved limit.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from actors.app.config.pflag_values import MAP_STRING_STRING, STRING, STRINGS
from runtime.cm.node_allocatable import ENFORCE_PODS, check_enforcement, parse_resource_list
from runtime.errors import ConfigError

RESERVED_FIELDS = {"system_reserved": "systemReserved", "kube_reserved": "kubeReserved"}


def add_reserved_flags(add: Any) -> None:
    """The node allocatable flags, on build_parser's ``add``."""
    add("--system-reserved", type=MAP_STRING_STRING, default="",
        help="resources held back for the system's daemons, e.g. cpu=200m,memory=500Mi,"
             "ephemeral-storage=1Gi,pid=1000 (cpu, memory, ephemeral-storage and pid)")
    add("--kube-reserved", type=MAP_STRING_STRING, default="",
        help="resources held back for the kubelet and the container runtime, e.g. "
             "cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000")
    add("--reserved-cpus", type=STRING, default="",
        help="a list of cpus (0-1,3) reserved for the system and the kubelet; it takes "
             "precedence over the cpu of --system-reserved and --kube-reserved")
    add("--enforce-node-allocatable", type=STRINGS, default=ENFORCE_PODS,
        help="where the kubelet enforces the reservations, comma-separated: pods (the "
             "kubepods cgroup), system-reserved, kube-reserved, system-reserved-compressible "
             "and kube-reserved-compressible (the cpu only); none (or empty) for none")
    add("--system-reserved-cgroup", type=STRING, default="",
        help="the existing cgroup that system-reserved enforcement limits, absolute")
    add("--kube-reserved-cgroup", type=STRING, default="",
        help="the existing cgroup that kube-reserved enforcement limits, absolute")


def _resource_map(value: Any) -> dict[str, str]:
    """systemReserved / kubeReserved: a map of resource name to quantity (strings)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in value.items()):
        raise TypeError("expected a map of resource names to quantities (strings)")
    return value


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    return value


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


CONFIG_FIELDS: dict[str, tuple[str, Any]] = {
    "systemReserved": ("system_reserved", _resource_map),
    "kubeReserved": ("kube_reserved", _resource_map),
    "reservedSystemCPUs": ("reserved_cpus", _string),
    "enforceNodeAllocatable": ("enforce_node_allocatable", _strings),
    "systemReservedCgroup": ("system_reserved_cgroup", _string),
    "kubeReservedCgroup": ("kube_reserved_cgroup", _string),
}
"""The KubeletConfiguration fields these flags set."""


def _pairs(value: str | dict[str, str]) -> dict[str, str]:
    """The flag's ``k=v,k2=v2`` text (checked by its type) or the file's map."""
    if isinstance(value, dict):
        return value
    out: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in value.split(","))):
        key, _, amount = pair.partition("=")
        out[key.strip()] = amount.strip()
    return out


def _enforce(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    return tuple(s.strip() for s in items if s.strip())


def _resources(ns: argparse.Namespace, dest: str) -> tuple[tuple[str, str], ...]:
    """--system-reserved or --kube-reserved, parsed as parseResourceList does."""
    try:
        return parse_resource_list(_pairs(getattr(ns, dest)))
    except ValueError as err:
        raise ConfigError(str(err), field=RESERVED_FIELDS[dest]) from err


def _located(rule: str) -> ConfigError:
    """An enforcement rule's error: at reservedSystemCPUs when the rule is about it, else
    at enforceNodeAllocatable, or at the field beside it that the user set."""
    if "unable to parse reservedSystemCPUs" in rule or "can't use reservedSystemCPUs" in rule:
        return ConfigError(rule, field="reservedSystemCPUs",
                           related=("systemReservedCgroup", "kubeReservedCgroup"))
    return ConfigError(rule, field="enforceNodeAllocatable",
                       related=("cgroupsPerQOS", "systemReservedCgroup", "kubeReservedCgroup"))


def reserved_settings(ns: argparse.Namespace,
                      check: Callable[[], AbstractContextManager[None]]) -> dict[str, Any]:
    """The KubeletFlags fields of node allocatable, every rule checked, each inside
    ``check`` (Problems.check: a broken one is kept, located at the flag or the file's
    field that set it, and the checking goes on)."""
    system: tuple[tuple[str, str], ...] = ()
    kube: tuple[tuple[str, str], ...] = ()
    with check():
        system = _resources(ns, "system_reserved")
    with check():
        kube = _resources(ns, "kube_reserved")
    enforce = _enforce(ns.enforce_node_allocatable)
    for rule in check_enforcement(enforce, ns.system_reserved_cgroup, ns.kube_reserved_cgroup,
                                  ns.reserved_cpus, ns.cgroups_per_qos):
        with check():
            raise _located(rule)
    return {"system_reserved": system, "kube_reserved": kube,
            "reserved_cpus": ns.reserved_cpus, "enforce_node_allocatable": enforce,
            "system_reserved_cgroup": ns.system_reserved_cgroup,
            "kube_reserved_cgroup": ns.kube_reserved_cgroup}
