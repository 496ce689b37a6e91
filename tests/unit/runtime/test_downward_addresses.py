"""The downward API's values (runtime.kuberuntime.downward: upstream's
podFieldSelectorRuntimeValue, ExtractContainerResourceValue with node-allocatable defaults,
downwardapi CollectData), the node's IP (runtime.node_address: upstream's NodeAddress
setter order) and the pod status addresses (hostIP, hostIPs, host-network pod IPs)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from runtime.errors import ConfigError
from runtime.kuberuntime.downward import (
    DownwardAPIError,
    env_field_value,
    limits_with_allocatable,
    resource_value,
    volume_file_values,
)
from runtime.kuberuntime.podstatus import RuntimePodStatus
from runtime.node_address import check_node_ip, choose_node_ip, valid_node_ip
from runtime.pod.model import (
    Container,
    DownwardAPIVolumeFile,
    ObjectFieldSelector,
    ObjectMeta,
    Pod,
    PodSpec,
    ResourceFieldSelector,
    ResourceRequirements,
)
from runtime.status.generate import generate_pod_status

ALLOCATABLE = {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "pods": "110"}


def make_pod(*containers: Container, **spec: Any) -> Pod:
    return Pod(metadata=ObjectMeta(name="web", namespace="prod", uid="uid-1",
                                   labels={"app": "web"}, annotations={"a": "1"}),
               spec=PodSpec(containers=containers or (Container(name="c"),),
                            node_name="node-a", service_account_name="robot", **spec))


@pytest.mark.parametrize(("path", "pod_ips", "host_ips", "value"), [
    ("metadata.name", (), (), "web"),
    ("metadata.namespace", (), (), "prod"),
    ("metadata.uid", (), (), "uid-1"),
    ("metadata.labels['app']", (), (), "web"),
    ("metadata.annotations['a']", (), (), "1"),
    ("metadata.annotations['none']", (), (), ""),
    ("spec.nodeName", (), (), "node-a"),
    ("spec.serviceAccountName", (), (), "robot"),
    ("status.podIP", ("10.88.0.2", "fd00::2"), (), "10.88.0.2"),
    ("status.podIPs", ("10.88.0.2", "fd00::2"), (), "10.88.0.2,fd00::2"),
    ("status.podIP", (), (), ""),
    ("status.hostIP", (), ("192.0.2.2", "fd00::1"), "192.0.2.2"),
    ("status.hostIPs", (), ("192.0.2.2", "fd00::1"), "192.0.2.2,fd00::1"),
])
def test_env_field_value(path: str, pod_ips: tuple[str, ...], host_ips: tuple[str, ...],
                         value: str) -> None:
    assert env_field_value(make_pod(), path, pod_ips, host_ips) == value


@pytest.mark.parametrize(("path", "message"), [
    ("metadata.labels", "field label not supported: metadata.labels"),
    ("metadata.annotations", "field label not supported: metadata.annotations"),
    ("status.phase", "field label not supported: status.phase"),
    ("status.hostIP", "host IP unknown; known addresses: []"),
])
def test_env_field_value_refused(path: str, message: str) -> None:
    with pytest.raises(DownwardAPIError, match=message.replace("[", r"\[").replace("]", r"\]")):
        env_field_value(make_pod(), path, (), ())


LIMITED = Container(name="limited", resources=ResourceRequirements(
    limits={"cpu": "1250m", "memory": "64Mi"}, requests={"cpu": "250m", "memory": "32Mi",
                                                         "hugepages-2Mi": "4Mi"}))
BARE = Container(name="bare")


@pytest.mark.parametrize(("container", "resource", "divisor", "value"), [
    (LIMITED, "limits.cpu", "1", "2"),
    (LIMITED, "limits.cpu", "1m", "1250"),
    (LIMITED, "limits.memory", "1", "67108864"),
    (LIMITED, "limits.memory", "1Mi", "64"),
    (LIMITED, "requests.cpu", "1", "1"),
    (LIMITED, "requests.memory", "1", "33554432"),
    (LIMITED, "requests.hugepages-2Mi", "1Mi", "4"),
    (LIMITED, "limits.ephemeral-storage", "1Gi", "100"),  # not set: the node's
    (BARE, "limits.cpu", "1", "4"),
    (BARE, "limits.cpu", "1m", "4000"),
    (BARE, "limits.memory", "1Gi", "8"),
    (BARE, "requests.cpu", "1", "0"),  # requests are not defaulted
    (BARE, "requests.memory", "1", "0"),
    (BARE, "limits.cpu", "0", "4"),  # a zero divisor is 1
])
def test_resource_value(container: Container, resource: str, divisor: str,
                        value: str) -> None:
    ref = ResourceFieldSelector(resource=resource, divisor=divisor)
    assert resource_value(make_pod(container), container, ref, ALLOCATABLE) == value


def test_resource_value_by_container_name_and_errors() -> None:
    pod = make_pod(LIMITED, BARE)
    by_name = ResourceFieldSelector(resource="limits.cpu", container_name="bare")
    assert resource_value(pod, LIMITED, by_name, ALLOCATABLE) == "4"
    assert resource_value(pod, LIMITED, by_name, {}) == "0"  # no allocatable known
    with pytest.raises(DownwardAPIError, match="container ghost not found"):
        resource_value(pod, None, ResourceFieldSelector(resource="limits.cpu",
                                                        container_name="ghost"))
    with pytest.raises(DownwardAPIError, match=r"unsupported container resource : limits\.gpu"):
        resource_value(pod, LIMITED, ResourceFieldSelector(resource="limits.gpu"))


def test_limits_with_allocatable_only_fills_what_is_missing() -> None:
    assert limits_with_allocatable(LIMITED, ALLOCATABLE) == {
        "cpu": "1250m", "memory": "64Mi", "ephemeral-storage": "100Gi"}


def test_volume_file_values() -> None:
    pod = make_pod(LIMITED)
    items = (
        DownwardAPIVolumeFile(path="labels", field_ref=ObjectFieldSelector(
            field_path="metadata.labels")),
        DownwardAPIVolumeFile(path="name", mode=0o400, field_ref=ObjectFieldSelector(
            field_path="metadata.name")),
        DownwardAPIVolumeFile(path="cpu", resource_field_ref=ResourceFieldSelector(
            container_name="limited", resource="limits.cpu", divisor="1m")),
        DownwardAPIVolumeFile(path="bad", field_ref=ObjectFieldSelector(
            field_path="spec.nodeName")),
    )
    files, errors = volume_file_values(pod, items, ALLOCATABLE)
    assert files == {"labels": ('app="web"\n', None), "name": ("web", 0o400),
                     "cpu": ("1250", None), "bad": ("", None)}
    # Volumes may read only the pod's metadata (fieldpath.ExtractFieldPathAsString).
    assert errors == ["unsupported fieldPath: spec.nodeName"]


# --- the node's address ---------------------------------------------------------------------

LOCAL = ("127.0.0.1", "192.0.2.2", "10.0.0.5", "fd00::2", "::1", "fe80::1")


@pytest.mark.parametrize(("flag", "name", "resolved", "route", "expected"), [
    ("198.51.100.9", "node", ("192.0.2.2",), "10.0.0.5", "198.51.100.9"),  # --node-ip wins
    ("", "203.0.113.4", (), "10.0.0.5", "203.0.113.4"),  # the node name is an IP
    ("", "node", ("192.0.2.2",), "10.0.0.5", "192.0.2.2"),
    ("", "node", ("127.0.0.1",), "10.0.0.5", "10.0.0.5"),  # loopback: default route
    ("", "node", ("fd00::2", "192.0.2.2"), "", "192.0.2.2"),  # IPv4 first
    ("", "node", ("fd00::2",), "", "fd00::2"),
    ("::", "node", ("192.0.2.2", "fd00::2"), "", "fd00::2"),  # "::" prefers IPv6
    ("0.0.0.0", "node", ("192.0.2.2",), "", "192.0.2.2"),
    ("", "node", ("198.51.100.1",), "10.0.0.5", "10.0.0.5"),  # not on this node
    ("", "node", ("fe80::1",), "", ""),  # link-local only, no route: unknown
])
def test_choose_node_ip(flag: str, name: str, resolved: tuple[str, ...], route: str,
                        expected: str) -> None:
    assert choose_node_ip(flag, name, resolved, LOCAL, route) == expected


@pytest.mark.parametrize(("address", "valid"), [
    ("192.0.2.2", True), ("127.0.0.1", False), ("0.0.0.0", False), ("224.0.0.1", False),
    ("169.254.1.1", False), ("198.51.100.1", False), ("not-an-ip", False), ("fd00::2", True),
])
def test_valid_node_ip(address: str, valid: bool) -> None:
    assert valid_node_ip(address, LOCAL) is valid


@pytest.mark.parametrize(("flag", "why"), [
    ("not-an-ip", "nodeIP must be a valid IP address"),
    ("127.0.0.1", "nodeIP can't be loopback address"),
    ("224.0.0.1", "nodeIP can't be a multicast address"),
    ("169.254.1.1", "nodeIP can't be a link-local unicast address"),
    ("10.7.7.7", "not found in the host's network interfaces"),
])
def test_a_given_node_ip_is_checked_as_upstreams_validate_node_ip(flag: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        check_node_ip(flag, (*LOCAL, "224.0.0.1", "169.254.1.1"))


def test_a_given_node_ip_on_this_host_is_kept() -> None:
    assert check_node_ip("192.0.2.2", LOCAL) == "192.0.2.2"
    assert check_node_ip("fd00:0::2", LOCAL) == "fd00::2"  # in canonical form


# --- the pod status's addresses -------------------------------------------------------------


def runtime_status(ips: tuple[str, ...]) -> RuntimePodStatus:
    return msgspec.convert({"uid": "uid-1", "name": "web", "namespace": "prod",
                            "ips": list(ips)}, RuntimePodStatus)


@pytest.mark.parametrize(("host_network", "ips", "host_ip", "expected"), [
    (False, ("10.88.0.2",), "192.0.2.2",
     ("192.0.2.2", [{"ip": "192.0.2.2"}], "10.88.0.2", [{"ip": "10.88.0.2"}])),
    (True, (), "192.0.2.2",
     ("192.0.2.2", [{"ip": "192.0.2.2"}], "192.0.2.2", [{"ip": "192.0.2.2"}])),
    (False, (), "", ("", [], "", [])),
])
def test_status_addresses(host_network: bool, ips: tuple[str, ...], host_ip: str,
                          expected: tuple[str, list[dict[str, str]], str,
                                          list[dict[str, str]]]) -> None:
    status = generate_pod_status(make_pod(host_network=host_network), runtime_status(ips),
                                 host_ip=host_ip)
    encoded = msgspec.json.decode(msgspec.json.encode(status))
    assert (encoded.get("hostIP", ""), encoded.get("hostIPs", []), encoded.get("podIP", ""),
            encoded.get("podIPs", [])) == expected
