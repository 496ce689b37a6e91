"""The daemon on containerd: the downward API (env and volumes), pod and host addresses,
the kubelet-managed /etc/hosts, host names and DNS (issue 10, items 3 and 4).

Each test is one of upstream's node conformance cases (test/e2e/common/node/downwardapi.go,
test/e2e/common/storage/downwardapi_volume.go, projected_downwardapi.go,
test/e2e/common/node/kubelet_etc_hosts.go, kubelet.go, pods.go, pod_hostnamefqdn.go,
test/e2e/network/dns.go), named after it with its title in the docstring, run against one
daemon started with cluster DNS flags. Pods come from static manifests, so their names
end in -e2e-node and their namespace is default.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.errors import CRINotFound
from runtime.machine import EVICTION_MEMORY_AVAILABLE, mem_total
from tests.e2e.daemon import Daemon, daemon_on, remove_every_pod, stopped_after
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NODE = "e2e-node"
CLUSTER_DNS = "10.96.0.10"
CLUSTER_DOMAIN = "cluster.local"


@pytest.fixture(scope="module")
def kubelet(containerd: EmbeddedContainerd) -> Iterator[Daemon]:
    """One daemon for the module, with cluster DNS flags; at the end its pods are
    removed through their manifests, then whatever it left in the runtime."""
    daemon = daemon_on(containerd, "daemon", "--cluster-dns", CLUSTER_DNS,
                       "--cluster-domain", CLUSTER_DOMAIN)
    client = CRIClient(containerd.endpoint, timeout=60.0)
    before = {p.id for p in client.list_pod_sandbox()}
    try:
        with stopped_after(daemon):
            daemon.start()
            yield daemon
            remove_every_pod(daemon, 60.0)
    finally:
        for sandbox in client.list_pod_sandbox():
            if sandbox.id not in before:
                with contextlib.suppress(CRINotFound):
                    client.stop_pod_sandbox(sandbox.id)
                    client.remove_pod_sandbox(sandbox.id)
        client.close()


def container(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": BUSYBOX_IMAGE, "command": ["sh", "-c", script], **extra}


def write_pod(daemon: Daemon, name: str, spec: dict[str, Any],
              metadata: dict[str, Any] | None = None) -> str:
    """Write a static pod manifest; the pod's name as the node reports it."""
    spec = {"terminationGracePeriodSeconds": 1, **spec}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **(metadata or {})},
           "spec": spec}
    (daemon.manifests / f"{name}.yaml").write_text(json.dumps(pod))
    return f"{name}-{NODE}"


def remove_pod(daemon: Daemon, name: str) -> None:
    (daemon.manifests / f"{name}.yaml").unlink()
    wait_for(lambda: f"{name}-{NODE}" not in daemon.pods(), 60.0, f"{name} removed")


def finished(daemon: Daemon, pod_name: str, timeout: float = 90.0) -> dict[str, Any]:
    """The pod once it Succeeded (it must not fail)."""
    def done() -> dict[str, Any] | None:
        pod = daemon.pod(pod_name)
        phase = pod["status"].get("phase") if pod else None
        assert phase != "Failed", json.dumps(pod, indent=1)
        return pod if phase == "Succeeded" else None

    pod = wait_for(done, timeout, f"{pod_name} Succeeded")
    assert pod is not None
    return pod


def logs(daemon: Daemon, pod_name: str, container_name: str = "main") -> str:
    code, text = daemon.get(f"/containerLogs/default/{pod_name}/{container_name}")
    assert code == 200, text
    return text


def run_to_completion(daemon: Daemon, name: str, spec: dict[str, Any],
                      metadata: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
    """Run a one-container pod (restartPolicy Never) to its end; its status and output.
    The pod is removed afterwards."""
    pod_name = write_pod(daemon, name, {"restartPolicy": "Never", **spec}, metadata)
    try:
        pod = finished(daemon, pod_name)
        return pod, logs(daemon, pod_name)
    finally:
        remove_pod(daemon, name)


def env_lines(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


def field_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def resource_env(name: str, resource: str, divisor: str = "") -> dict[str, Any]:
    ref: dict[str, Any] = {"resource": resource}
    if divisor:
        ref["divisor"] = divisor
    return {"name": name, "valueFrom": {"resourceFieldRef": ref}}


# --- the downward API as env vars (test/e2e/common/node/downwardapi.go) ----------------------


def test_downward_api_should_provide_pod_name_namespace_and_ip_address_as_env_vars(
        kubelet: Daemon) -> None:
    """[sig-node] Downward API should provide pod name, namespace and IP address as env
    vars [NodeConformance] [Conformance]"""
    pod, output = run_to_completion(kubelet, "dapi-name", {"containers": [container(
        "main", "env", env=[field_env("POD_NAME", "metadata.name"),
                            field_env("POD_NAMESPACE", "metadata.namespace"),
                            field_env("POD_IP", "status.podIP")])]})
    env = env_lines(output)
    assert env["POD_NAME"] == f"dapi-name-{NODE}"
    assert env["POD_NAMESPACE"] == "default"
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", env["POD_IP"])
    assert env["POD_IP"] == pod["status"]["podIP"]


def test_downward_api_should_provide_host_ip_as_an_env_var(kubelet: Daemon) -> None:
    """[sig-node] Downward API should provide host IP as an env var [NodeConformance]
    [Conformance]"""
    pod, output = run_to_completion(kubelet, "dapi-hostip", {"containers": [container(
        "main", "env", env=[field_env("HOST_IP", "status.hostIP"),
                            field_env("HOST_IPS", "status.hostIPs")])]})
    env = env_lines(output)
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", env["HOST_IP"])
    assert env["HOST_IP"] == env["HOST_IPS"] == pod["status"]["hostIP"]
    assert pod["status"]["hostIPs"] == [{"ip": env["HOST_IP"]}]


def test_downward_api_should_provide_pod_and_host_ip_as_an_env_var_if_pod_uses_host_network(
        kubelet: Daemon) -> None:
    """[sig-node] Downward API should provide pod and host IP as an env var if pod uses
    host network [LinuxOnly]"""
    pod, output = run_to_completion(kubelet, "dapi-hostnet", {
        "hostNetwork": True, "containers": [container(
            "main", "env", env=[field_env("POD_IP", "status.podIP"),
                                field_env("POD_IPS", "status.podIPs"),
                                field_env("HOST_IP", "status.hostIP")])]})
    env = env_lines(output)
    assert env["POD_IP"] == env["POD_IPS"] == env["HOST_IP"] == pod["status"]["hostIP"]
    assert pod["status"]["podIP"] == pod["status"]["hostIP"]


def test_downward_api_should_provide_container_s_limits_and_requests_as_env_vars(
        kubelet: Daemon) -> None:
    """[sig-node] Downward API should provide container's limits.cpu/memory and
    requests.cpu/memory as env vars [NodeConformance] [Conformance]"""
    _, output = run_to_completion(kubelet, "dapi-resources", {"containers": [container(
        "main", "env",
        resources={"requests": {"cpu": "250m", "memory": "32Mi"},
                   "limits": {"cpu": "1250m", "memory": "64Mi"}},
        env=[resource_env("CPU_LIMIT", "limits.cpu"),
             resource_env("MEMORY_LIMIT", "limits.memory"),
             resource_env("CPU_REQUEST", "requests.cpu"),
             resource_env("MEMORY_REQUEST", "requests.memory"),
             resource_env("CPU_LIMIT_MILLI", "limits.cpu", "1m"),
             resource_env("MEMORY_REQUEST_MI", "requests.memory", "1Mi")])]})
    env = env_lines(output)
    assert {k: env[k] for k in ("CPU_LIMIT", "MEMORY_LIMIT", "CPU_REQUEST", "MEMORY_REQUEST",
                                "CPU_LIMIT_MILLI", "MEMORY_REQUEST_MI")} == {
        "CPU_LIMIT": "2", "MEMORY_LIMIT": "67108864", "CPU_REQUEST": "1",
        "MEMORY_REQUEST": "33554432", "CPU_LIMIT_MILLI": "1250", "MEMORY_REQUEST_MI": "32"}


def test_downward_api_should_provide_default_limits_from_node_allocatable(
        kubelet: Daemon) -> None:
    """[sig-node] Downward API should provide default limits.cpu/memory from node
    allocatable [NodeConformance] [Conformance]"""
    _, output = run_to_completion(kubelet, "dapi-defaults", {"containers": [container(
        "main", "env", env=[resource_env("CPU_LIMIT", "limits.cpu"),
                            resource_env("MEMORY_LIMIT", "limits.memory")])]})
    env = env_lines(output)
    assert re.fullmatch(r"[1-9]\d*", env["CPU_LIMIT"])
    assert re.fullmatch(r"[1-9]\d*", env["MEMORY_LIMIT"])
    # The node's allocatable, as its admission counts it: online CPUs, MemTotal less the
    # default memory.available<100Mi hard eviction threshold.
    assert int(env["CPU_LIMIT"]) == os.cpu_count()
    assert int(env["MEMORY_LIMIT"]) == mem_total() - EVICTION_MEMORY_AVAILABLE


def test_downward_api_should_provide_pod_uid_as_env_vars(kubelet: Daemon) -> None:
    """[sig-node] Downward API should provide pod UID as env vars [NodeConformance]
    [Conformance]"""
    pod, output = run_to_completion(kubelet, "dapi-uid", {"containers": [container(
        "main", "env", env=[field_env("POD_UID", "metadata.uid")])]})
    assert env_lines(output)["POD_UID"] == pod["metadata"]["uid"]


def test_pods_should_get_a_host_ip(kubelet: Daemon) -> None:
    """[sig-node] Pods should get a host IP [NodeConformance] [Conformance]"""
    pod_name = write_pod(kubelet, "hostip", {"containers": [container("main", "sleep 3600")]})
    try:
        pod = kubelet.wait_running(pod_name, timeout=90.0)
        assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", pod["status"]["hostIP"])
        assert pod["status"]["hostIPs"] == [{"ip": pod["status"]["hostIP"]}]
    finally:
        remove_pod(kubelet, "hostip")


# --- downwardAPI and projected volumes --------------------------------------------------------


def podinfo_volume(items: list[dict[str, Any]], projected: bool = False,
                   **source: Any) -> dict[str, Any]:
    if projected:
        return {"name": "podinfo", "projected": {
            "sources": [{"downwardAPI": {"items": items}}], **source}}
    return {"name": "podinfo", "downwardAPI": {"items": items, **source}}


def volume_pod(script: str, volume: dict[str, Any]) -> dict[str, Any]:
    return {"containers": [container(
        "main", script, volumeMounts=[{"name": "podinfo", "mountPath": "/etc/podinfo"}])],
        "volumes": [volume]}


@pytest.mark.parametrize("projected", [False, True], ids=["downwardAPI", "projected"])
def test_downward_api_volume_should_provide_podname_only(kubelet: Daemon,
                                                         projected: bool) -> None:
    """[sig-storage] Downward API volume should provide podname only [NodeConformance]
    [Conformance]; [sig-storage] Projected downwardAPI should provide podname only
    [NodeConformance] [Conformance]"""
    name = f"vol-podname-{'p' if projected else 'd'}"
    _, output = run_to_completion(kubelet, name, volume_pod(
        "cat /etc/podinfo/podname; echo; ls -a /etc/podinfo; readlink /etc/podinfo/..data",
        podinfo_volume([{"path": "podname", "fieldRef": {"fieldPath": "metadata.name"}}],
                       projected)))
    lines = output.splitlines()
    assert lines[0] == f"{name}-{NODE}"
    # Upstream's AtomicWriter layout: the visible name, ..data and one timestamped dir.
    listing = set(lines[1:-1]) - {".", ".."}
    timestamped = [n for n in listing if re.fullmatch(r"\.\.\d{4}(_\d\d){5}\.\d+", n)]
    assert listing == {"podname", "..data", *timestamped} and len(timestamped) == 1
    assert lines[-1] == timestamped[0]


@pytest.mark.parametrize("projected", [False, True], ids=["downwardAPI", "projected"])
def test_downward_api_volume_should_set_default_mode_on_files(kubelet: Daemon,
                                                              projected: bool) -> None:
    """[sig-storage] Downward API volume should set DefaultMode on files [LinuxOnly]
    [NodeConformance] [Conformance]; [sig-storage] Projected downwardAPI should set
    DefaultMode on files [LinuxOnly] [NodeConformance] [Conformance]"""
    name = f"vol-defaultmode-{'p' if projected else 'd'}"
    _, output = run_to_completion(kubelet, name, volume_pod(
        "stat -L -c %A /etc/podinfo/podname",
        podinfo_volume([{"path": "podname", "fieldRef": {"fieldPath": "metadata.name"}}],
                       projected, defaultMode=0o400)))
    assert output.strip() == "-r--------"


@pytest.mark.parametrize("projected", [False, True], ids=["downwardAPI", "projected"])
def test_downward_api_volume_should_set_mode_on_item_file(kubelet: Daemon,
                                                          projected: bool) -> None:
    """[sig-storage] Downward API volume should set mode on item file [LinuxOnly]
    [NodeConformance] [Conformance]; [sig-storage] Projected downwardAPI should set mode
    on item file [LinuxOnly] [NodeConformance] [Conformance]"""
    name = f"vol-itemmode-{'p' if projected else 'd'}"
    _, output = run_to_completion(kubelet, name, volume_pod(
        "stat -L -c %A /etc/podinfo/podname; stat -L -c %A /etc/podinfo/uid",
        podinfo_volume([{"path": "podname", "mode": 0o400,
                         "fieldRef": {"fieldPath": "metadata.name"}},
                        {"path": "uid", "fieldRef": {"fieldPath": "metadata.uid"}}],
                       projected)))
    assert output.split() == ["-r--------", "-rw-r--r--"]


def test_downward_api_volume_should_provide_container_s_limits_and_node_allocatable(
        kubelet: Daemon) -> None:
    """[sig-storage] Downward API volume should provide container's cpu limit and memory
    request [NodeConformance] [Conformance]; ... should provide node allocatable (cpu) as
    default cpu limit if the limit is not set [NodeConformance] [Conformance]"""
    _, output = run_to_completion(kubelet, "vol-resources", {
        "containers": [container(
            "main", "cat /etc/podinfo/cpu_limit; echo; cat /etc/podinfo/memory_request; echo; "
                    "cat /etc/podinfo/default_cpu_limit",
            resources={"requests": {"memory": "32Mi"}, "limits": {"cpu": "1250m"}},
            volumeMounts=[{"name": "podinfo", "mountPath": "/etc/podinfo"}]),
            container("other", "true")],
        "volumes": [podinfo_volume([
            {"path": "cpu_limit", "resourceFieldRef": {
                "containerName": "main", "resource": "limits.cpu", "divisor": "1m"}},
            {"path": "memory_request", "resourceFieldRef": {
                "containerName": "main", "resource": "requests.memory"}},
            {"path": "default_cpu_limit", "resourceFieldRef": {
                "containerName": "other", "resource": "limits.cpu"}}])]})
    assert output.split() == ["1250", "33554432", str(os.cpu_count())]


def rewrite_metadata(daemon: Daemon, name: str, uid: str, spec: dict[str, Any],
                     labels: dict[str, str], annotations: dict[str, str]) -> None:
    write_pod(daemon, name, spec, {"uid": uid, "labels": labels, "annotations": annotations})


@pytest.mark.parametrize(("what", "projected"), [
    ("labels", False), ("annotations", False), ("labels", True), ("annotations", True)],
    ids=["downwardAPI-labels", "downwardAPI-annotations", "projected-labels",
         "projected-annotations"])
def test_downward_api_volume_should_update_on_modification(kubelet: Daemon, what: str,
                                                           projected: bool) -> None:
    """[sig-storage] Downward API volume should update labels on modification
    [NodeConformance] [Conformance]; ... should update annotations on modification
    [NodeConformance] [Conformance]; the same two of [sig-storage] Projected downwardAPI.

    Without an API server, the pod is a static one whose manifest names its UID: an edit
    of its labels or annotations alone is an UPDATE of the same pod (upstream's pod config
    checkAndUpdatePod), and the next sync rewrites the volume."""
    name = f"vol-update-{what[:5]}-{'p' if projected else 'd'}"
    uid = str(uuid.uuid4())
    spec = volume_pod(
        f"while true; do cat /etc/podinfo/{what}; echo; sleep 1; done",
        podinfo_volume([{"path": what, "fieldRef": {"fieldPath": f"metadata.{what}"}}],
                       projected))
    before = {"key1": "value1", "key2": "value2"} if what == "labels" else {"builder": "bar"}
    after = {"key3": "value3"} if what == "labels" else {"builder": "foo"}
    rewrite_metadata(kubelet, name, uid, spec, before if what == "labels" else {},
                     before if what == "annotations" else {})
    pod_name = f"{name}-{NODE}"
    try:
        kubelet.wait_running(pod_name, timeout=90.0)
        first = next(iter(before.items()))
        wait_for(lambda: f'{first[0]}="{first[1]}"' in logs(kubelet, pod_name), 30.0,
                 f"the {what} in the volume")
        started = kubelet.pod(pod_name)
        assert started is not None
        container_id = started["status"]["containerStatuses"][0]["containerID"]
        rewrite_metadata(kubelet, name, uid, spec, after if what == "labels" else {},
                         after if what == "annotations" else {})
        key, value = next(iter(after.items()))
        wait_for(lambda: f'{key}="{value}"' in logs(kubelet, pod_name), 60.0,
                 f"the new {what} in the volume")
        # The same pod and container: only the volume changed.
        now = kubelet.pod(pod_name)
        assert now is not None and now["metadata"]["uid"] == uid
        assert now["status"]["containerStatuses"][0]["containerID"] == container_id
    finally:
        remove_pod(kubelet, name)


# --- /etc/hosts (test/e2e/common/node/kubelet_etc_hosts.go, kubelet.go) ------------------------


MANAGED = "# Kubernetes-managed hosts file."


def test_kubelet_managed_etc_hosts_should_test_kubelet_managed_etc_hosts_file(
        kubelet: Daemon) -> None:
    """[sig-node] KubeletManagedEtcHosts should test kubelet managed /etc/hosts file
    [LinuxOnly] [NodeConformance] [Conformance]"""
    show = "cat /etc/hosts; echo ===; hostname"
    pod_name = write_pod(kubelet, "etc-hosts", {"restartPolicy": "Never", "containers": [
        container("busybox-1", show), container("busybox-2", show),
        container("busybox-3", show, volumeMounts=[
            {"name": "host-etc-hosts", "mountPath": "/etc/hosts"}])],
        "volumes": [{"name": "host-etc-hosts",
                     "hostPath": {"path": "/etc/hosts", "type": "File"}}]})
    host_pod = write_pod(kubelet, "etc-hosts-hostnet", {
        "restartPolicy": "Never", "hostNetwork": True, "containers": [
            container("busybox-1", show), container("busybox-2", show, volumeMounts=[
                {"name": "host-etc-hosts", "mountPath": "/etc/hosts"}])],
        "volumes": [{"name": "host-etc-hosts",
                     "hostPath": {"path": "/etc/hosts", "type": "File"}}]})
    node_hosts = Path("/etc/hosts").read_text()
    try:
        pod = finished(kubelet, pod_name)
        ip = pod["status"]["podIP"]
        expected = (f"{MANAGED}\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost "
                    "ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\n"
                    "fe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
                    f"{ip}\t{pod_name}\n===\n{pod_name}\n")
        assert logs(kubelet, pod_name, "busybox-1") == expected
        assert logs(kubelet, pod_name, "busybox-2") == expected
        # A container that mounts its own /etc/hosts keeps it.
        assert logs(kubelet, pod_name, "busybox-3").startswith(node_hosts + "===\n")
        finished(kubelet, host_pod)
        hosted = logs(kubelet, host_pod, "busybox-1")
        assert not hosted.startswith(MANAGED)
        assert hosted.startswith("# Kubernetes-managed hosts file (host network).\n"
                                 + node_hosts + "===\n")
        assert logs(kubelet, host_pod, "busybox-2").startswith(node_hosts + "===\n")
    finally:
        remove_pod(kubelet, "etc-hosts")
        remove_pod(kubelet, "etc-hosts-hostnet")


def test_kubelet_when_scheduling_a_busybox_pod_with_host_aliases_should_write_entries_to_etc_hosts(
        kubelet: Daemon) -> None:
    """[sig-node] Kubelet when scheduling a busybox Pod with hostAliases should write
    entries to /etc/hosts [NodeConformance] [Conformance]"""
    aliases = [{"ip": "123.45.67.89", "hostnames": ["foo", "bar"]}]
    _, output = run_to_completion(kubelet, "host-aliases", {
        "hostAliases": aliases, "containers": [container("main", "cat /etc/hosts")]})
    assert "123.45.67.89\tfoo\tbar" in output
    assert output.endswith("\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n")
    _, hosted = run_to_completion(kubelet, "host-aliases-hostnet", {
        "hostNetwork": True, "hostAliases": aliases,
        "containers": [container("main", "cat /etc/hosts")]})
    assert hosted.endswith("\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n")


# --- host names (test/e2e/common/node/pod_hostnamefqdn.go) -------------------------------------


def test_hostname_and_fqdn(kubelet: Daemon) -> None:
    """[sig-node] Hostname of Pod [NodeConformance] should create a Pod with hostname and
    subdomain, and (with setHostnameAsFQDN) the FQDN as its host name: the cases "a pod
    without subdomain field does not have FQDN", "a pod with subdomain field has FQDN,
    hostname is shortname", "a pod with subdomain field has FQDN, when setHostnameAsFQDN is
    set to true, the FQDN is set as hostname"."""
    show = "hostname; grep -v '^#' /etc/hosts | tail -n 1"
    fqdn = f"web.sub.default.svc.{CLUSTER_DOMAIN}"
    _, plain = run_to_completion(kubelet, "fqdn-none", {"containers": [container("main", show)]})
    assert plain.splitlines()[0] == f"fqdn-none-{NODE}"
    assert plain.splitlines()[1].endswith(f"\tfqdn-none-{NODE}")
    _, short = run_to_completion(kubelet, "fqdn-short", {
        "hostname": "web", "subdomain": "sub", "containers": [container("main", show)]})
    assert short.splitlines()[0] == "web"
    assert short.splitlines()[1].endswith(f"\t{fqdn}\tweb")
    _, full = run_to_completion(kubelet, "fqdn-full", {
        "hostname": "web", "subdomain": "sub", "setHostnameAsFQDN": True,
        "containers": [container("main", show)]})
    assert full.splitlines()[0] == fqdn


def test_a_pod_is_created_with_fqdn_longer_than_64_bytes_fails(kubelet: Daemon) -> None:
    """[sig-node] Hostname of Pod [NodeConformance] a pod configured to set FQDN as
    hostname will remain in Pending state generating FailedCreatePodSandBox events when
    the FQDN is longer than 64 bytes"""
    pod_name = write_pod(kubelet, "fqdn-long", {
        "hostname": "h" * 40, "subdomain": "s" * 20, "setHostnameAsFQDN": True,
        "containers": [container("main", "true")]})
    try:
        wait_for(lambda: "is too long (64 characters is the max" in kubelet.log_path.read_text(),
                 60.0, "the sandbox error in the log")
        pod = kubelet.pod(pod_name)
        assert pod is not None and pod["status"]["phase"] == "Pending"
    finally:
        remove_pod(kubelet, "fqdn-long")


# --- DNS (test/e2e/network/dns.go, dns_configmap.go) -----------------------------------------


def resolv_conf(daemon: Daemon, name: str, spec: dict[str, Any]) -> list[str]:
    _, output = run_to_completion(daemon, name, {
        **spec, "containers": [container("main", "cat /etc/resolv.conf")]})
    return output.splitlines()


def test_dns_should_support_configurable_pod_resolv_conf(kubelet: Daemon) -> None:
    """[sig-network] DNS should support configurable pod resolv.conf: dnsPolicy None with
    a dnsConfig (the part that needs no cluster DNS server)."""
    lines = resolv_conf(kubelet, "dns-none", {"dnsPolicy": "None", "dnsConfig": {
        "nameservers": ["1.1.1.1"], "searches": ["resolv.conf.local"],
        "options": [{"name": "ndots", "value": "2"}]}})
    assert "nameserver 1.1.1.1" in lines
    assert "search resolv.conf.local" in lines
    assert "options ndots:2" in lines
    assert sum(line.startswith("nameserver") for line in lines) == 1


def test_dns_policies_with_cluster_dns_and_the_node_s_resolver(kubelet: Daemon) -> None:
    """dnsPolicy ClusterFirst (with --cluster-dns and --cluster-domain), Default (the
    node's --resolv-conf), ClusterFirst on the host network (Default), and the limits:
    more than 3 nameservers are cut with a DNSConfigForming event."""
    cluster = resolv_conf(kubelet, "dns-cluster", {})
    assert f"nameserver {CLUSTER_DNS}" in cluster
    assert any(line.startswith(f"search default.svc.{CLUSTER_DOMAIN} svc.{CLUSTER_DOMAIN} "
                               f"{CLUSTER_DOMAIN}") for line in cluster)
    assert "options ndots:5" in cluster
    node_servers = [line for line in Path("/etc/resolv.conf").read_text().splitlines()
                    if line.startswith("nameserver")]
    default = resolv_conf(kubelet, "dns-default", {"dnsPolicy": "Default"})
    assert [line for line in default if line.startswith("nameserver")] == node_servers[:3]
    hostnet = resolv_conf(kubelet, "dns-hostnet", {"hostNetwork": True})
    assert [line for line in hostnet if line.startswith("nameserver")] == node_servers[:3]
    many = resolv_conf(kubelet, "dns-many", {"dnsConfig": {
        "nameservers": ["1.1.1.1", "2.2.2.2", "3.3.3.3"]}})
    assert [line for line in many if line.startswith("nameserver")] == [
        f"nameserver {CLUSTER_DNS}", "nameserver 1.1.1.1", "nameserver 2.2.2.2"]
    assert ("DNSConfigForming: Nameserver limits were exceeded, some nameservers have been "
            f"omitted, the applied nameserver line is: {CLUSTER_DNS} 1.1.1.1 2.2.2.2"
            in kubelet.log_path.read_text())
