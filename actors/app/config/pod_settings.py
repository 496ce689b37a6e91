"""The flags of what this node gives its pods, with their parsers: ``--node-labels``
(for the pods' nodeSelector and node affinity), ``--allowed-unsafe-sysctls``,
``--runtime-classes`` (standalone), ``--node-ip`` (the pods' status.hostIP),
``--cluster-dns``, ``--cluster-domain``, ``--resolv-conf`` and
``--seccomp-default``. Each parser takes the flag's text or the --config file's
value and checks it as upstream does."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from loguru import logger

from actors.app.config.pflag import GoBool
from actors.app.config.pflag_values import MAP_STRING_STRING, STRINGS
from runtime.containerd.config import RUNTIME_HANDLERS
from runtime.errors import ConfigError
from runtime.pod.admission import sysctl_allowlist_error
from runtime.pod.validation import dns1123_label, dns1123_subdomain, validate_labels

# Upstream's kubelet sets these labels on its node itself (IsKubeletLabel): --node-labels
# may name only these, or labels with these prefixes, in the kubernetes.io namespaces.
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/instance-type", "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
})
KUBELET_LABEL_PREFIXES = ("kubelet.kubernetes.io/", "node.kubernetes.io/")


def _is_kubernetes_label(key: str) -> bool:
    namespace = key.partition("/")[0] if "/" in key else ""
    return any(namespace == d or namespace.endswith("." + d) for d in ("kubernetes.io", "k8s.io"))


def parse_node_labels(text: str) -> tuple[tuple[str, str], ...]:
    """``--node-labels k=v,k2=v2`` (upstream's mapStringString) as (key, value) pairs,
    checked as upstream's ValidateKubeletFlags checks them."""
    labels: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, equals, value = pair.partition("=")
        if not equals:
            raise ConfigError(f'--node-labels "{text}": malformed pair "{pair}", '
                              "expect string=string")
        labels[key.strip()] = value.strip()
    unknown = sorted(k for k in labels if _is_kubernetes_label(k) and k not in KUBELET_LABELS
                     and not k.startswith(KUBELET_LABEL_PREFIXES))
    if unknown:
        raise ConfigError(
            f"unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: "
            f"{unknown}: --node-labels in the 'kubernetes.io' namespace must begin with an "
            f"allowed prefix ({', '.join(KUBELET_LABEL_PREFIXES)}) or be in the specifically "
            f"allowed set ({', '.join(sorted(KUBELET_LABELS))})")
    if problems := validate_labels(labels, "--node-labels"):
        raise ConfigError("invalid node labels: " + "; ".join(f"{p}: {c}" for p, c in problems))
    return tuple(labels.items())


def parse_runtime_classes(value: str | dict[str, str], cluster: bool = False
                          ) -> tuple[tuple[str, str], ...]:
    """``--runtime-classes name=handler,name2=handler2`` (or the config file's
    runtimeClasses map): the runtime classes a standalone node knows, each name a
    RuntimeClass name (a DNS-1123 subdomain) and each handler as upstream's RuntimeClass
    validation wants it (a DNS-1123 label). ``cluster``: joined to an API server, whose
    RuntimeClass objects name the handlers, a table of the node's own is refused."""
    if isinstance(value, str):
        classes: dict[str, str] = {}
        for pair in filter(None, (p.strip() for p in value.split(","))):
            name, equals, handler = pair.partition("=")
            if not equals:
                raise ConfigError(f'malformed pair "{pair}", expect string=string',
                                  field="runtimeClasses")
            classes[name.strip()] = handler.strip()
    else:
        classes = dict(value)
    if classes and cluster:
        raise ConfigError("with --kubeconfig the API server's RuntimeClass objects name the "
                          "runtime handlers; a table of the node's own is for a standalone "
                          "node", field="runtimeClasses")
    problems = [f'runtime class "{name}": metadata.name: Invalid value: "{name}": {why}'
                for name in classes if (why := dns1123_subdomain(name))]
    problems += [f'runtime class "{name}": handler: Invalid value: "{handler}": {why}'
                 for name, handler in classes.items() if (why := dns1123_label(handler))]
    if problems:
        raise ConfigError("; ".join(problems), field="runtimeClasses")
    return tuple(sorted(classes.items()))


def parse_allowed_unsafe_sysctls(value: str | list[str]) -> tuple[str, ...]:
    """``--allowed-unsafe-sysctls a,b.*`` (or the config file's list), as upstream's
    sysctl allowlist accepts them."""
    items = value.split(",") if isinstance(value, str) else value
    patterns = tuple(s.strip() for s in items if s.strip())
    if error := sysctl_allowlist_error(patterns):
        raise ConfigError(f"--allowed-unsafe-sysctls: {error}", field="allowedUnsafeSysctls",
                          rule=error)
    return patterns


def parse_cluster_dns(value: str | list[str]) -> tuple[str, ...]:
    """``--cluster-dns a,b`` (or the config file's clusterDNS list): as upstream, an
    entry that is not an IP address is logged and left out."""
    items = value.split(",") if isinstance(value, str) else value
    servers: list[str] = []
    for item in filter(None, (i.strip() for i in items)):
        try:
            servers.append(str(ipaddress.ip_address(item)))
        except ValueError:
            logger.warning("invalid clusterDNS IP {!r}, ignored", item)
    return tuple(servers)


def add_pod_flags(add: Callable[..., None]) -> None:
    """The flags, on build_parser's ``add``."""
    add("--node-labels", type=MAP_STRING_STRING, default="",
        help="labels of this node, key=value,key2=value2, for the nodeSelector and node "
             "affinity of its pods (kubernetes.io/hostname, os and arch are always set)")
    add("--allowed-unsafe-sysctls", type=STRINGS, default="",
        help="unsafe sysctls (or patterns ending in *) pods may set, comma-separated")
    add("--runtime-classes", type=MAP_STRING_STRING, default="",
        help="standalone: the runtime classes pods may name in spec.runtimeClassName, "
             "name=handler,name2=handler2, each handler a runtime handler of the CRI "
             f"runtime (the embedded containerd has {' and '.join(RUNTIME_HANDLERS)}); a "
             "pod naming another class gets no sandbox (with --kubeconfig the API server's "
             "RuntimeClass objects name the handlers)")
    add("--node-ip", default="",
        help="the node's IP address, shown as the pods' status.hostIP (default: the node "
             "name's address, else the address of the default route's interface)")
    add("--cluster-dns", type=STRINGS, default="",
        help="comma-separated DNS server IPs for pods with dnsPolicy ClusterFirst")
    add("--cluster-domain", default="",
        help="the cluster's DNS domain, searched by pods after their namespace's")
    add("--resolv-conf", default="/etc/resolv.conf",
        help='the resolver file pods with dnsPolicy Default get ("" for none)')
    add("--seccomp-default", action=GoBool, default=False,
        help="run containers that name no seccomp profile under the runtime's default "
             "profile (RuntimeDefault) instead of Unconfined")
