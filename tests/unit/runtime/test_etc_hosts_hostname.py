"""The kubelet-managed /etc/hosts (runtime.kuberuntime.etc_hosts) and pod host names
(runtime.kuberuntime.hostname): upstream's TestManagedHostsFileContent,
TestNodeHostsFileContent, TestGeneratePodHostNameAndDomain, TestTruncatePodHostname and
TestGetNodenameForKernel as tables."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from runtime.errors import SyncError
from runtime.kuberuntime.etc_hosts import (
    hosts_entries_from_aliases,
    hosts_mount,
    managed_hosts_content,
    node_hosts_content,
    pod_hosts_mount,
    should_mount_hosts_file,
)
from runtime.kuberuntime.hostname import (
    HostnameError,
    kernel_hostname,
    pod_hostname_and_domain,
    truncate_hostname,
)
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Container, HostAlias, ObjectMeta, Pod, PodSpec, VolumeMount

LOCAL = ("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"
         "::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n"
         "fe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
ALIASES = (HostAlias(ip="123.45.67.89", hostnames=("foo", "bar", "baz")),
           HostAlias(ip="456.78.90.123", hostnames=("park", "doo", "boo")))
ALIAS_LINES = ("\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n"
               "456.78.90.123\tpark\tdoo\tboo\n")


@pytest.mark.parametrize(("ips", "hostname", "domain", "aliases", "expected"), [
    (("123.45.67.89",), "podFoo", "", (), LOCAL + "123.45.67.89\tpodFoo\n"),
    (("203.0.113.1",), "podFoo", "domainFoo", (),
     LOCAL + "203.0.113.1\tpodFoo.domainFoo\tpodFoo\n"),
    (("203.0.113.1",), "podFoo", "domainFoo", ALIASES[:1],
     LOCAL + "203.0.113.1\tpodFoo.domainFoo\tpodFoo\n\n# Entries added by HostAliases.\n"
             "123.45.67.89\tfoo\tbar\tbaz\n"),
    (("203.0.113.1",), "podFoo", "domainFoo", ALIASES,
     LOCAL + "203.0.113.1\tpodFoo.domainFoo\tpodFoo\n" + ALIAS_LINES),
    (("203.0.113.1", "fd00::6"), "podFoo", "domainFoo", (),
     LOCAL + "203.0.113.1\tpodFoo.domainFoo\tpodFoo\nfd00::6\tpodFoo.domainFoo\tpodFoo\n"),
    ((), "podFoo", "", (), LOCAL),
], ids=["ip", "domain", "one-alias", "aliases", "dual-stack", "no-ip"])
def test_managed_hosts_content(ips: tuple[str, ...], hostname: str, domain: str,
                               aliases: tuple[HostAlias, ...], expected: str) -> None:
    assert managed_hosts_content(ips, hostname, domain, aliases) == expected


@pytest.mark.parametrize(("node", "aliases", "expected"), [
    ("127.0.0.1\tlocalhost\n", (),
     "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n"),
    ("127.0.0.1\tlocalhost\n", ALIASES,
     "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n" + ALIAS_LINES),
    ("", (), "# Kubernetes-managed hosts file (host network).\n"),
], ids=["node", "node-aliases", "empty"])
def test_node_hosts_content(node: str, aliases: tuple[HostAlias, ...], expected: str) -> None:
    assert node_hosts_content(node, aliases) == expected


def test_no_aliases_add_nothing() -> None:
    assert hosts_entries_from_aliases(()) == ""


def pod(host_network: bool = False, **spec: object) -> Pod:
    return Pod(metadata=ObjectMeta(name="web", namespace="prod", uid="uid-1"),
               spec=PodSpec(host_network=host_network, **spec))  # type: ignore[arg-type]


OWN = Container(name="own", volume_mounts=(VolumeMount(name="h", mount_path="/etc/hosts"),))


@pytest.mark.parametrize(("host_network", "ips", "container", "mounted"), [
    (False, ("10.88.0.2",), Container(name="c"), True),
    (False, (), Container(name="c"), False),  # no pod IP yet
    (True, (), Container(name="c"), True),
    (False, ("10.88.0.2",), OWN, False),  # mounts its own
    (True, (), OWN, False),
])
def test_should_mount_hosts_file(host_network: bool, ips: tuple[str, ...],
                                 container: Container, mounted: bool) -> None:
    assert should_mount_hosts_file(pod(host_network), container, ips) is mounted


def test_hosts_mount_writes_the_pod_s_file(tmp_path: Path) -> None:
    mount = hosts_mount(pod(host_aliases=ALIASES[:1]), Container(name="c"), str(tmp_path / "p"),
                        ("10.88.0.2",), "web", "")
    assert mount is not None
    assert (mount.container_path, mount.host_path, mount.readonly) == (
        "/etc/hosts", str(tmp_path / "p" / "etc-hosts"), False)
    text = Path(mount.host_path).read_text()
    assert text.startswith(LOCAL + "10.88.0.2\tweb\n\n# Entries added by HostAliases.")
    assert stat.S_IMODE(os.stat(mount.host_path).st_mode) == 0o644
    node = tmp_path / "hosts"
    node.write_text("192.0.2.2\tnode\n")
    hosted = hosts_mount(pod(True), Container(name="c"), str(tmp_path / "p"), (), "web", "",
                         node_hosts_file=str(node))
    assert hosted is not None
    assert Path(hosted.host_path).read_text() == (
        "# Kubernetes-managed hosts file (host network).\n192.0.2.2\tnode\n")


def test_pod_hosts_mount_failure_is_a_container_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "root"
    blocker.write_text("a file where the root dir should be")
    settings = NodeSettings("n", root_dir=str(blocker))
    with pytest.raises(SyncError) as err:
        pod_hosts_mount(pod(), Container(name="c"), settings, "10.88.0.2")
    assert err.value.reason == "CreateContainerConfigError"


# --- host names ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "expected"), [
    ("test", "test"),
    ("1" * 63, "1" * 63),
    ("1" * 64, "1" * 63),
    ("1" * 62 + "-" + "2", "1" * 62),
    ("1" * 61 + ".-" + "2", "1" * 61),
    ("1" * 62 + "." + "2", "1" * 62),
])
def test_truncate_hostname(name: str, expected: str) -> None:
    assert truncate_hostname(name) == expected


@pytest.mark.parametrize(("name", "hostname", "subdomain", "expected"), [
    ("test-pod", "", "", ("test-pod", "")),
    ("test-pod", "test-hostname", "", ("test-hostname", "")),
    ("test-pod", "test-hostname", "test-subdomain",
     ("test-hostname", "test-subdomain.test-namespace.svc.cluster.local")),
    ("test-pod", "", "test-subdomain",
     ("test-pod", "test-subdomain.test-namespace.svc.cluster.local")),
    ("a" * 70, "", "", ("a" * 63, "")),
])
def test_pod_hostname_and_domain(name: str, hostname: str, subdomain: str,
                                 expected: tuple[str, str]) -> None:
    p = Pod(metadata=ObjectMeta(name=name, namespace="test-namespace"),
            spec=PodSpec(hostname=hostname, subdomain=subdomain))
    assert pod_hostname_and_domain(p, "cluster.local") == expected


@pytest.mark.parametrize(("hostname", "subdomain", "message"), [
    ("hostname_with_underscore", "", 'pod Hostname "hostname_with_underscore" is not a valid'),
    ("ok", "Sub.Domain", 'pod Subdomain "Sub.Domain" is not a valid DNS label'),
])
def test_invalid_hostname_or_subdomain(hostname: str, subdomain: str, message: str) -> None:
    p = Pod(metadata=ObjectMeta(name="p", namespace="ns"),
            spec=PodSpec(hostname=hostname, subdomain=subdomain))
    with pytest.raises(HostnameError) as err:
        pod_hostname_and_domain(p, "cluster.local")
    assert str(err.value).startswith(message)


@pytest.mark.parametrize(("hostname", "domain", "fqdn", "expected"), [
    ("test", "", None, "test"),
    ("test", "", True, "test"),
    ("test", "sub.ns.svc.cluster.local", False, "test"),
    ("test", "sub.ns.svc.cluster.local", None, "test"),
    ("test", "sub.ns.svc.cluster.local", True, "test.sub.ns.svc.cluster.local"),
    ("a" * 20, "b" * 43, True, "a" * 20 + "." + "b" * 43),  # exactly 64
])
def test_kernel_hostname(hostname: str, domain: str, fqdn: bool | None, expected: str) -> None:
    assert kernel_hostname(hostname, domain, fqdn) == expected


def test_an_fqdn_longer_than_64_is_refused() -> None:
    with pytest.raises(HostnameError, match=r"is too long \(64 characters is the max, 65 "):
        kernel_hostname("a" * 20, "b" * 44, True)
