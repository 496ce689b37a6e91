"""The kubelet-managed /etc/hosts of a pod, bind-mounted into each of its containers.

As upstream's kubelet (pkg/kubelet/kubelet_pods.go makeHostsMount, ensureHostsFile,
managedHostsFileContent, nodeHostsFileContent, hostsEntriesFromHostAliases): the file is
``<pod dir>/etc-hosts``, mode 0644, rewritten before each container starts. A pod on the
pod network gets the localhost entries, one line per pod IP with its hostname (and FQDN
with a subdomain), then its hostAliases; a host-network pod gets the node's own
/etc/hosts under a header, then its hostAliases. It is mounted only once the pod has an
IP (or is on the host network), and never into a container that mounts something of its
own at /etc/hosts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from runtime.cri.types import Mount
from runtime.errors import SyncError
from runtime.kuberuntime.hostname import HostnameError, pod_hostname_and_domain
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Container, HostAlias, Pod

__all__ = ["ETC_HOSTS_PATH", "hosts_entries_from_aliases", "hosts_mount",
           "managed_hosts_content", "node_hosts_content", "pod_hosts_mount",
           "should_mount_hosts_file"]

ETC_HOSTS_PATH = "/etc/hosts"
MANAGED_HEADER = "# Kubernetes-managed hosts file.\n"
MANAGED_HEADER_HOST_NETWORK = "# Kubernetes-managed hosts file (host network).\n"


def hosts_entries_from_aliases(aliases: Sequence[HostAlias]) -> str:
    """The hostAliases block: a blank line, a header, one ``ip<TAB>names`` line each."""
    if not aliases:
        return ""
    lines = "".join(f"{a.ip}\t{chr(9).join(a.hostnames)}\n" for a in aliases)
    return "\n# Entries added by HostAliases.\n" + lines


def managed_hosts_content(pod_ips: Sequence[str], hostname: str, domain: str,
                          aliases: Sequence[HostAlias]) -> str:
    """The hosts file of a pod on the pod network."""
    text = (MANAGED_HEADER
            + "127.0.0.1\tlocalhost\n"
            + "::1\tlocalhost ip6-localhost ip6-loopback\n"
            + "fe00::0\tip6-localnet\n"
            + "fe00::0\tip6-mcastprefix\n"
            + "fe00::1\tip6-allnodes\n"
            + "fe00::2\tip6-allrouters\n")
    for ip in pod_ips:
        text += f"{ip}\t{hostname}.{domain}\t{hostname}\n" if domain else f"{ip}\t{hostname}\n"
    return text + hosts_entries_from_aliases(aliases)


def node_hosts_content(node_hosts: str, aliases: Sequence[HostAlias]) -> str:
    """The hosts file of a host-network pod: the node's own, under a header."""
    return MANAGED_HEADER_HOST_NETWORK + node_hosts + hosts_entries_from_aliases(aliases)


def should_mount_hosts_file(pod: Pod, container: Container, pod_ips: Sequence[str]) -> bool:
    """Upstream shouldMountHostsFile plus makeMounts' check for a mount of its own."""
    if not pod_ips and not pod.spec.host_network:
        return False
    return all(m.mount_path != ETC_HOSTS_PATH for m in container.volume_mounts)


def hosts_mount(pod: Pod, container: Container, pod_dir: str, pod_ips: Sequence[str],
                hostname: str, domain: str, node_hosts_file: str = ETC_HOSTS_PATH
                ) -> Mount | None:
    """Write ``<pod_dir>/etc-hosts`` and return its mount, or None when ``container``
    gets none. OSError when the file cannot be read or written."""
    if not should_mount_hosts_file(pod, container, pod_ips):
        return None
    if pod.spec.host_network:
        with open(node_hosts_file, encoding="utf-8", errors="surrogateescape") as f:
            content = node_hosts_content(f.read(), pod.spec.host_aliases)
    else:
        content = managed_hosts_content(pod_ips, hostname, domain, pod.spec.host_aliases)
    os.makedirs(pod_dir, mode=0o750, exist_ok=True)
    path = os.path.join(pod_dir, "etc-hosts")
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(content)
    os.chmod(path, 0o644)
    return Mount(container_path=ETC_HOSTS_PATH, host_path=path)


def pod_hosts_mount(pod: Pod, container: Container, settings: NodeSettings, pod_ip: str
                    ) -> Mount | None:
    """``hosts_mount`` for a container being created: the pod's host name and domain
    from its spec, its file in the pod's directory; SyncError(CreateContainerConfigError)
    when the file cannot be made."""
    try:
        hostname, domain = pod_hostname_and_domain(pod, settings.cluster_domain)
        return hosts_mount(pod, container, settings.pod_dir(pod.metadata.uid),
                           (pod_ip,) if pod_ip else (), hostname, domain)
    except (HostnameError, OSError) as err:
        raise SyncError("CreateContainerConfigError", str(err)) from err
