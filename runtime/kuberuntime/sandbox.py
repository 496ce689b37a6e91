"""The pod sandbox's CRI config (upstream generatePodSandboxConfig and DNS configurer)."""

from __future__ import annotations

from loguru import logger

from runtime.cri.types import DNSConfig, NamespaceMode, PodSandboxConfig, PodSandboxMetadata
from runtime.cri.types import PortMapping as CRIPortMapping
from runtime.cri.types import Protocol as CRIProtocol
from runtime.kuberuntime.labels import sandbox_annotations, sandbox_labels
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Pod

MAX_DNS_SEARCHES = 32
MAX_DNS_NAMESERVERS = 3


def parse_resolv_conf(text: str) -> DNSConfig:
    """nameserver, search and options lines of a resolv.conf."""
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].split(";", 1)[0].strip()
        fields = line.split()
        if not fields:
            continue
        key, values = fields[0], fields[1:]
        if key == "nameserver" and values:
            servers.append(values[0])
        elif key == "search":
            # The last search line wins, as in libc; upstream drops "." and trailing dots.
            searches = [s.rstrip(".") for s in values if s != "."]
        elif key == "options":
            options = _merge_options(options, values)
    return DNSConfig(tuple(servers), tuple(searches), tuple(options))


def _merge_options(existing: list[str], extra: list[str]) -> list[str]:
    """Options by name, a later one replacing an earlier one (upstream appendOptions)."""
    by_name = {o.split(":", 1)[0]: o for o in existing}
    for option in extra:
        by_name[option.split(":", 1)[0]] = option
    return list(by_name.values())


def _read_host_dns(path: str) -> DNSConfig:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse_resolv_conf(f.read())
    except OSError as err:
        logger.warning("cannot read {} for pod DNS: {}", path, err)
        return DNSConfig()


def pod_dns_config(pod: Pod, settings: NodeSettings) -> DNSConfig | None:
    """DNS for the sandbox by dnsPolicy; with no cluster DNS, ClusterFirst is the host's."""
    policy = pod.spec.dns_policy
    if pod.spec.host_network and policy == "ClusterFirst":
        policy = "Default"  # upstream: a host-network pod only gets cluster DNS if asked
    if policy in ("ClusterFirst", "ClusterFirstWithHostNet") and not settings.cluster_dns:
        policy = "Default"
    base = DNSConfig()
    if policy == "Default" and not settings.resolv_conf:
        # Upstream: with --resolv-conf="" a pod resolves through the node's localhost.
        base = DNSConfig(("127.0.0.1",), (".",))
    elif policy == "Default":
        base = _read_host_dns(settings.resolv_conf)
    elif policy in ("ClusterFirst", "ClusterFirstWithHostNet"):
        domain = settings.cluster_domain
        cluster: tuple[str, ...] = (
            (f"{pod.metadata.namespace}.svc.{domain}", f"svc.{domain}", domain) if domain else ()
        )
        host = _read_host_dns(settings.resolv_conf)
        base = DNSConfig(settings.cluster_dns, cluster + host.searches, ("ndots:5",))
    extra = pod.spec.dns_config
    servers, searches, options = list(base.servers), list(base.searches), list(base.options)
    if extra is not None:
        servers += extra.nameservers
        searches += extra.searches
        options = _merge_options(
            options, [f"{o.name}:{o.value}" if o.value else o.name for o in extra.options]
        )
    # Upstream omits duplicates and cuts to the limits whatever the policy.
    servers = list(dict.fromkeys(servers))[:MAX_DNS_NAMESERVERS]
    searches = list(dict.fromkeys(searches))[:MAX_DNS_SEARCHES]
    return DNSConfig(tuple(servers), tuple(searches), tuple(options))


def pod_hostname(pod: Pod) -> str:
    name = pod.spec.hostname or pod.metadata.name
    return name[:63].rstrip("-.")


def generate_sandbox_config(pod: Pod, attempt: int, settings: NodeSettings) -> PodSandboxConfig:
    """Everything RunPodSandbox needs to know about ``pod``."""
    ports: list[CRIPortMapping] = []
    for container in pod.spec.containers:
        for port in container.ports:
            ports.append(
                CRIPortMapping(
                    container_port=port.container_port,
                    host_port=port.host_port,
                    protocol=CRIProtocol[port.protocol.upper()],
                    host_ip=port.host_ip,
                )
            )
    sysctls: dict[str, str] = {}
    if pod.spec.security_context is not None:
        for entry in pod.spec.security_context.sysctls:
            sysctls[entry.name.replace("/", ".")] = entry.value
    return PodSandboxConfig(
        metadata=PodSandboxMetadata(
            name=pod.metadata.name,
            uid=pod.metadata.uid,
            namespace=pod.metadata.namespace,
            attempt=attempt,
        ),
        hostname="" if pod.spec.host_network else pod_hostname(pod),
        log_directory=settings.pod_log_dir(
            pod.metadata.namespace, pod.metadata.name, pod.metadata.uid
        ),
        dns_config=pod_dns_config(pod, settings),
        port_mappings=tuple(ports),
        labels=sandbox_labels(pod),
        annotations=sandbox_annotations(pod),
        network_mode=NamespaceMode.NODE if pod.spec.host_network else NamespaceMode.POD,
        pid_mode=NamespaceMode.NODE if pod.spec.host_pid else NamespaceMode.CONTAINER,
        ipc_mode=NamespaceMode.NODE if pod.spec.host_ipc else NamespaceMode.POD,
        sysctls=sysctls,
        # containerd refuses a privileged container in a sandbox not created privileged.
        privileged=any(
            c.security_context is not None and bool(c.security_context.privileged)
            for c in pod.all_containers()
        ),
    )
