"""The pod sandbox's CRI config (upstream generatePodSandboxConfig and DNS configurer)."""

from __future__ import annotations

from loguru import logger

from runtime.cm.container_resources import overhead_resources, sandbox_resources
from runtime.cm.names import pod_cgroup_parent
from runtime.cri.types import DNSConfig, PodSandboxConfig, PodSandboxMetadata
from runtime.cri.types import PortMapping as CRIPortMapping
from runtime.cri.types import Protocol as CRIProtocol
from runtime.kuberuntime.dns import form_pod_dns, parse_resolv_conf, read_resolv_conf
from runtime.kuberuntime.hostname import kernel_hostname, pod_hostname_and_domain
from runtime.kuberuntime.labels import sandbox_annotations, sandbox_labels
from runtime.kuberuntime.security_context import (
    namespace_modes,
    sandbox_security,
    sandbox_sysctls,
)
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Pod

__all__ = ["generate_sandbox_config", "parse_resolv_conf", "pod_dns_config", "pod_hostname"]


def pod_dns_config(pod: Pod, settings: NodeSettings, report: bool = True) -> DNSConfig:
    """DNS for the sandbox by dnsPolicy and dnsConfig (runtime.kuberuntime.dns); with
    ``report``, its warnings are logged as upstream's events (else at debug level: the
    config is made again for every container start). ResolvConfError when the node's
    resolver file cannot be read."""
    host = read_resolv_conf(settings.resolv_conf) if settings.resolv_conf else DNSConfig()
    config, events = form_pod_dns(pod, host, settings.resolv_conf, settings.cluster_dns,
                                  settings.cluster_domain)
    log = logger.bind(pod=pod.metadata.name, uid=pod.metadata.uid, container="")
    for event in events:
        log.log("WARNING" if report else "DEBUG", "{}: {}", event.reason, event.message)
    return config


def pod_hostname(pod: Pod, settings: NodeSettings | None = None) -> str:
    """The sandbox's host name (upstream GeneratePodHostNameAndDomain, then
    GetNodenameForKernel); HostnameError when it cannot be made."""
    hostname, domain = pod_hostname_and_domain(pod, settings.cluster_domain if settings else "")
    return kernel_hostname(hostname, domain, pod.spec.set_hostname_as_fqdn)


def generate_sandbox_config(pod: Pod, attempt: int, settings: NodeSettings,
                            report: bool = True) -> PodSandboxConfig:
    """Everything RunPodSandbox needs to know about ``pod``, in the pod's own cgroup when
    cgroupsPerQOS is on (upstream's generatePodSandboxLinuxConfig), with the pod's overhead
    and resources for runtimes that size the sandbox (upstream's applySandboxResources);
    ``report``: log the DNS warnings as events (when the sandbox is made)."""
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
    network, pid, ipc = namespace_modes(pod)
    return PodSandboxConfig(
        metadata=PodSandboxMetadata(
            name=pod.metadata.name,
            uid=pod.metadata.uid,
            namespace=pod.metadata.namespace,
            attempt=attempt,
        ),
        hostname="" if pod.spec.host_network else pod_hostname(pod, settings),
        log_directory=settings.pod_log_dir(
            pod.metadata.namespace, pod.metadata.name, pod.metadata.uid
        ),
        dns_config=pod_dns_config(pod, settings, report),
        port_mappings=tuple(ports),
        labels=sandbox_labels(pod),
        annotations=sandbox_annotations(pod),
        network_mode=network,
        pid_mode=pid,
        ipc_mode=ipc,
        sysctls=sandbox_sysctls(pod),
        security=sandbox_security(pod),
        cgroup_parent=(pod_cgroup_parent(pod, settings.cgroup_root, settings.cgroup_driver)
                       if settings.cgroups_per_qos else ""),
        overhead=overhead_resources(pod),
        resources=sandbox_resources(pod),
    )
