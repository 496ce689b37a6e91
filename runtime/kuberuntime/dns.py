"""A pod's DNS (its /etc/resolv.conf, which the runtime writes from the sandbox config),
as upstream's DNS configurer forms it (pkg/kubelet/network/dns/dns.go).

The base is the node's resolver file (``--resolv-conf``); by dnsPolicy:
- ``ClusterFirst`` (``ClusterFirstWithHostNet`` on the host network): the ``--cluster-dns``
  servers alone, the search list ``<ns>.svc.<domain> svc.<domain> <domain>`` followed by the
  node's, and ``ndots:5``. ``ClusterFirst`` on the host network is ``Default``. Without
  ``--cluster-dns`` the pod falls back to ``Default`` with a MissingClusterDNS event.
- ``Default``: the node's file; with ``--resolv-conf ""``, 127.0.0.1 (::1 on an IPv6 node)
  and the search list ".", so the resolver asks the node itself.
- ``None``: nothing but the pod's dnsConfig.
Then the pod's dnsConfig is appended (duplicates dropped; an option of the same name
replaces the base's), and the result is cut to the resolver's limits: 3 nameservers, 32
search domains, none longer than 253 characters, 2048 characters in all, each cut
reported as a DNSConfigForming event.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

from runtime.cri.types import DNSConfig
from runtime.pod.model import Pod, PodDNSConfig

__all__ = ["DEFAULT_DNS_OPTIONS", "MAX_DNS_NAMESERVERS", "MAX_DNS_SEARCHES",
           "MAX_DNS_SEARCH_CHARS", "DNSEvent", "ResolvConfError", "form_pod_dns",
           "merge_dns_options", "parse_resolv_conf", "read_resolv_conf",
           "resolv_conf_limit_problem"]

MAX_DNS_NAMESERVERS = 3
MAX_DNS_SEARCHES = 32
MAX_DNS_SEARCH_CHARS = 2048
MAX_SEARCH_DOMAIN_LEN = 253  # DNS1123SubdomainMaxLength: longer ones abort glibc's resolver
MAX_RESOLV_CONF_BYTES = 10 * 1 << 20
DEFAULT_DNS_OPTIONS = ("ndots:5",)


class ResolvConfError(Exception):
    """The node's resolver file cannot be read: the pod's sandbox cannot be made."""


class DNSEvent(Struct, frozen=True):
    """A warning event about the pod's DNS (upstream records it on the pod)."""

    reason: str
    message: str


def parse_resolv_conf(text: str) -> DNSConfig:
    """upstream parseResolvConf: nameserver lines add up, the last search line and the
    last options line win; lines starting with '#' are comments; search domains lose a
    trailing '.', and the root domain "." alone is dropped."""
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith("#"):
            continue
        fields = line.split()
        if not fields:
            continue
        key, values = fields[0], fields[1:]
        if key == "nameserver" and values:
            servers.append(values[0])
        elif key == "search":
            searches = [s.removesuffix(".") for s in values if s != "."]
        elif key == "options":
            options = values
    return DNSConfig(tuple(servers), tuple(searches), tuple(options))


def read_resolv_conf(path: str) -> DNSConfig:
    """The node's resolver file parsed; ResolvConfError when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(MAX_RESOLV_CONF_BYTES + 1)
    except OSError as err:
        raise ResolvConfError(f"open {path}: {(err.strerror or str(err)).lower()}") from err
    if len(text) > MAX_RESOLV_CONF_BYTES:
        raise ResolvConfError(f"{path}: input exceeds the {MAX_RESOLV_CONF_BYTES} byte limit")
    return parse_resolv_conf(text)


def merge_dns_options(existing: Sequence[str], extra: PodDNSConfig) -> tuple[str, ...]:
    """upstream mergeDNSOptions: options by name, the pod's replacing the base's."""
    by_name: dict[str, str] = {}
    for option in existing:
        name, _, value = option.partition(":")
        by_name[name] = value
    for pod_option in extra.options:
        by_name[pod_option.name] = pod_option.value or ""
    return tuple(f"{k}:{v}" if v else k for k, v in by_name.items())


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _fit_searches(searches: list[str]) -> tuple[list[str], bool]:
    """upstream formDNSSearchFitsLimits: (the search list within limits, whether cut)."""
    cut = False
    if len(searches) > MAX_DNS_SEARCHES:
        searches, cut = searches[:MAX_DNS_SEARCHES], True
    kept = [s for s in searches if len(s) <= MAX_SEARCH_DOMAIN_LEN]
    cut = cut or len(kept) != len(searches)
    length = len(" ".join(kept))
    if length > MAX_DNS_SEARCH_CHARS:
        # Drop domains from the end until the line fits.
        dropped = 0
        for domain in reversed(kept):
            length -= len(domain) + 1
            dropped += 1
            if length <= MAX_DNS_SEARCH_CHARS:
                break
        kept, cut = kept[:len(kept) - dropped], True
    return kept, cut


def _pod_ref(pod: Pod) -> str:
    """upstream format.Pod: name_namespace(uid)."""
    meta = pod.metadata
    return f"{meta.name}_{meta.namespace}({meta.uid})"


def form_pod_dns(pod: Pod, host: DNSConfig, resolv_conf: str,
                 cluster_dns: Sequence[str], cluster_domain: str, node_ipv6: bool = False
                 ) -> tuple[DNSConfig, tuple[DNSEvent, ...]]:
    """The sandbox's DNS config for ``pod`` and the warning events to record (see the
    module's docstring). ``host``: the node's resolver file parsed (empty when
    ``resolv_conf`` is "")."""
    events: list[DNSEvent] = []
    policy = pod.spec.dns_policy or "ClusterFirst"
    if policy == "ClusterFirst" and pod.spec.host_network:
        policy = "Default"
    servers, searches, options = list(host.servers), list(host.searches), list(host.options)
    if policy == "None":
        servers, searches, options = [], [], []
    elif policy in ("ClusterFirst", "ClusterFirstWithHostNet") and cluster_dns:
        servers = list(cluster_dns)
        if cluster_domain:
            searches = _unique([f"{pod.metadata.namespace}.svc.{cluster_domain}",
                                f"svc.{cluster_domain}", cluster_domain, *searches])
        options = list(DEFAULT_DNS_OPTIONS)
    else:
        if policy != "Default":
            # ClusterFirst (or an unknown policy, which upstream treats as ClusterFirst)
            # without cluster DNS: the node's DNS, with a warning.
            message = ('kubelet does not have ClusterDNS IP configured and cannot create Pod '
                       'using "ClusterFirst" policy. Falling back to "Default" policy.')
            events.append(DNSEvent("MissingClusterDNS", f'pod: "{_pod_ref(pod)}". {message}'))
        if not resolv_conf:
            servers, searches = ["::1" if node_ipv6 else "127.0.0.1"], ["."]
    extra = pod.spec.dns_config
    if extra is not None:
        servers = _unique([*servers, *extra.nameservers])
        searches = _unique([*searches, *extra.searches])
        options = list(merge_dns_options(options, extra))
    if len(servers) > MAX_DNS_NAMESERVERS:
        servers = servers[:MAX_DNS_NAMESERVERS]
        events.append(DNSEvent("DNSConfigForming", (
            "Nameserver limits were exceeded, some nameservers have been omitted, the applied "
            f"nameserver line is: {' '.join(servers)}")))
    searches, cut = _fit_searches(searches)
    if cut:
        events.append(DNSEvent("DNSConfigForming", (
            "Search Line limits were exceeded, some search paths have been omitted, the "
            f"applied search line is: {' '.join(searches)}")))
    return DNSConfig(tuple(servers), tuple(searches), tuple(options)), tuple(events)


def resolv_conf_limit_problem(path: str, cluster_domain: str) -> str:
    """upstream CheckLimitsForResolvConf, run once at start: what is wrong with the node's
    resolver file for pods ("" when nothing), reported as a CheckLimitsForResolvConf
    warning."""
    try:
        searches = read_resolv_conf(path).searches
    except ResolvConfError as err:
        return str(err)
    limit = MAX_DNS_SEARCHES - (3 if cluster_domain else 0)
    if len(searches) > limit:
        return (f"Resolv.conf file '{path}' contains search line consisting of more than "
                f"{limit} domains!")
    if any(len(s) > MAX_SEARCH_DOMAIN_LEN for s in searches):
        return (f'Resolv.conf file "{path}" contains a search path which length is more '
                f"than allowed {MAX_SEARCH_DOMAIN_LEN} chars!")
    if len(" ".join(searches)) > MAX_DNS_SEARCH_CHARS:
        return (f"Resolv.conf file '{path}' contains search line which length is more than "
                f"allowed {MAX_DNS_SEARCH_CHARS} chars!")
    return ""
