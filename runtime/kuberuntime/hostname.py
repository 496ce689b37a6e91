"""A pod's host name and domain, as upstream's kubelet makes them.

GeneratePodHostNameAndDomain (pkg/kubelet/kubelet_pods.go): the host name is
spec.hostname, else the pod's name, cut to 63 characters with any trailing '-' or '.'
dropped; the domain is ``<subdomain>.<namespace>.svc.<cluster domain>`` when the pod has
a subdomain. GetNodenameForKernel (pkg/kubelet/util): with setHostnameAsFQDN and a
domain, the kernel's host name (the sandbox's) is the FQDN, which must fit in 64
characters.
"""

from __future__ import annotations

import re

from runtime.pod.model import Pod

__all__ = [
    "FQDN_MAX_LEN",
    "HOSTNAME_MAX_LEN",
    "HostnameError",
    "kernel_hostname",
    "pod_hostname_and_domain",
    "truncate_hostname",
]

HOSTNAME_MAX_LEN = 63
FQDN_MAX_LEN = 64
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class HostnameError(ValueError):
    """The pod's host name or FQDN cannot be made; the message is upstream's."""


def _label_problem(value: str) -> str:
    if len(value) > HOSTNAME_MAX_LEN:
        return f"must be no more than {HOSTNAME_MAX_LEN} characters"
    if not _DNS1123_LABEL.match(value):
        return ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                "characters or '-', and must start and end with an alphanumeric character")
    return ""


def truncate_hostname(name: str) -> str:
    """upstream truncatePodHostnameIfNeeded: at most 63 characters, no trailing '-' or
    '.'."""
    if len(name) <= HOSTNAME_MAX_LEN:
        return name
    truncated = name[:HOSTNAME_MAX_LEN].rstrip("-.")
    if not truncated:
        raise HostnameError(f'hostname for pod "{name}" was invalid: "{name}"')
    return truncated


def pod_hostname_and_domain(pod: Pod, cluster_domain: str) -> tuple[str, str]:
    """(host name, domain) of ``pod``; the domain is "" without a subdomain."""
    spec = pod.spec
    hostname = pod.metadata.name
    if spec.hostname:
        if problem := _label_problem(spec.hostname):
            raise HostnameError(f'pod Hostname "{spec.hostname}" is not a valid DNS label: '
                                f"{problem}")
        hostname = spec.hostname
    hostname = truncate_hostname(hostname)
    domain = ""
    if spec.subdomain:
        if problem := _label_problem(spec.subdomain):
            raise HostnameError(f'pod Subdomain "{spec.subdomain}" is not a valid DNS label: '
                                f"{problem}")
        domain = f"{spec.subdomain}.{pod.metadata.namespace}.svc.{cluster_domain}"
    return hostname, domain


def kernel_hostname(hostname: str, domain: str, set_as_fqdn: bool | None) -> str:
    """The sandbox's host name: the FQDN with setHostnameAsFQDN and a domain, else the
    host name."""
    if domain and set_as_fqdn:
        fqdn = f"{hostname}.{domain}"
        if len(fqdn) > FQDN_MAX_LEN:
            raise HostnameError(
                f"failed to construct FQDN from pod hostname and cluster domain, FQDN {fqdn} "
                f"is too long ({FQDN_MAX_LEN} characters is the max, {len(fqdn)} characters "
                "requested)")
        return fqdn
    return hostname
