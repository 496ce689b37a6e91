"""Pod networking per node, end to end: each daemon embeds its own containerd (its own
root, socket, bridge and host-local data dir under its own root dir), so its pods get
addresses from its own range.

- Cluster mode: the Node's spec.podCIDR(s), set as the node-ipam controller sets them
  (patched after registration, or on a Node created beforehand), reach containerd through
  CRI UpdateRuntimeConfig; containerd renders its CNI network from the template; until then
  the Node is NotReady (NetworkReady=false) and a pod waits (its NetworkNotReady event).
- Standalone: ``--pod-cidr`` is the fixed network's subnet; ``--cni-conf-dir`` names the
  operator's network, which the kubelet leaves as it is.

The ranges (10.85.7.0/24 and up) and bridges (katc*) are this file's own.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE, HeldLock, Registry
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.kubectl import Kubectl
from tests.e2e.daemon import NODE, Daemon, embedded_node
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

SERVE = "trap 'exit 0' TERM; while true; do sleep 1; done"


def _containerd_dir(daemon: Daemon) -> Path:
    return daemon.workdir / "root" / "containerd"


def _in(ip: str | None, subnet: str) -> bool:
    return bool(ip) and ipaddress.ip_address(str(ip)) in ipaddress.ip_network(subnet)


def _static_pod(name: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"terminationGracePeriodSeconds": 2, "containers": [
                           {"name": "main", "image": BUSYBOX_IMAGE,
                            "command": ["sh", "-c", SERVE]}]}})


class Node:
    """One joined daemon's view through kubectl (as an admin)."""

    def __init__(self, kubectl: Kubectl, name: str, workdir: Path) -> None:
        self.kubectl = kubectl
        self.name = name
        self.workdir = workdir

    def get(self, *args: str) -> Any:
        return self.kubectl.json("get", *args)

    def ready(self) -> dict[str, Any] | None:
        result = self.kubectl.run("get", "node", self.name, "-o", "json", check=False)
        if result.returncode != 0:
            return None
        conditions = json.loads(result.stdout)["status"].get("conditions") or []
        ready = [c for c in conditions if c["type"] == "Ready"]
        return ready[0] if ready else None

    def apply(self, obj: dict[str, Any]) -> None:
        path = self.workdir / f"{uuid.uuid4().hex[:6]}.json"
        path.write_text(json.dumps(obj))
        self.kubectl.run("apply", "-f", str(path))

    def run_pod(self, pod: str) -> None:
        self.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod},
                    "spec": {"nodeName": self.name, "automountServiceAccountToken": False,
                             "terminationGracePeriodSeconds": 2,
                             "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                                             "command": ["sh", "-c", SERVE]}]}})

    def pod_ip(self, pod: str) -> str | None:
        result = self.kubectl.run("get", "pod", pod, "-o", "json", check=False)
        if result.returncode != 0:
            return None
        status = json.loads(result.stdout).get("status") or {}
        ip = status.get("podIP") if status.get("phase") == "Running" else None
        return str(ip) if ip else None

    def events_of(self, pod: str, reason: str) -> list[dict[str, Any]]:
        listed = self.kubectl.json("get", "events", "--field-selector",
                                   f"involvedObject.name={pod},reason={reason}")
        return list(listed["items"])

    def delete_pod(self, pod: str) -> None:
        self.kubectl.run("delete", "pod", pod, "--wait=false", check=False)
        wait_for(lambda: self.kubectl.run("get", "pod", pod, check=False).returncode != 0,
                 60, f"pod {pod} gone")


def joined_flags(server: EmulatedAPIServer, name: str, workdir: Path) -> tuple[str, ...]:
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = server.write_kubeconfig(workdir / f"{name}.kubeconfig",
                                         f"system:node:{name}", groups=("system:nodes",))
    return ("--node-name", name, "--kubeconfig", str(kubeconfig),
            "--node-status-update-frequency", "1s")


def test_the_nodes_pod_cidr_set_after_registration_reaches_containerd_emulated_apiserver(
        registry: Registry, e2e_lock: HeldLock, tmp_path: Path) -> None:
    subnet = "10.85.7.0/24"
    with EmulatedAPIServer(bookmark_interval=0.5) as server:
        kubectl = Kubectl(server.write_kubeconfig(tmp_path / "admin.kubeconfig"))
        node = Node(kubectl, "cidr-a", tmp_path)
        with embedded_node("katc1", subnet,
                           *joined_flags(server, node.name, tmp_path)) as daemon:
            daemon.start()
            # No pod CIDR yet: containerd has no network, and says so.
            ready = wait_for(node.ready, 60, "the Node registered with a Ready condition")
            assert ready is not None and ready["status"] == "False", ready
            assert "NetworkReady=false" in ready["message"], ready
            conf_dir = _containerd_dir(daemon) / "cni" / "net.d"
            assert not list(conf_dir.iterdir())
            node.run_pod("web")
            # The pod waits, as upstream's: no sandbox without the network.
            warned = wait_for(lambda: node.events_of("web", "NetworkNotReady"), 60,
                              "web's NetworkNotReady event")
            assert warned[0]["message"].startswith(
                "network is not ready: container runtime network not ready: "
                "NetworkReady=false"), warned
            assert node.pod_ip("web") is None
            # As the node-ipam controller does: both fields, after registration.
            kubectl.run("patch", "node", node.name, "-p", json.dumps(
                {"spec": {"podCIDR": subnet, "podCIDRs": [subnet]}}))
            wait_for(lambda: (node.ready() or {}).get("status") == "True", 60,
                     "the Node Ready once containerd has its network")
            ip = wait_for(functools.partial(node.pod_ip, "web"), 90, "web Running with an IP")
            assert _in(ip, subnet), ip
            rendered = json.loads((conf_dir / "10-containerd-net.conflist").read_text())
            bridge = rendered["plugins"][0]
            assert bridge["bridge"] == "katc1"
            assert bridge["ipam"]["ranges"] == [[{"subnet": subnet}]]
            assert bridge["ipam"]["dataDir"] == str(_containerd_dir(daemon) / "cni" / "ipam")
            # Sent once: the status loop's later rounds find it unchanged.
            assert daemon.log_path.read_text().count("Updating Pod CIDR") == 1
            node.delete_pod("web")


def test_two_nodes_give_their_pods_addresses_from_their_own_ranges_emulated_apiserver(
        registry: Registry, e2e_lock: HeldLock, tmp_path: Path) -> None:
    ranges = {"cidr-b": ("katc2", "10.85.8.0/24"), "cidr-c": ("katc3", "10.85.9.0/24")}
    with EmulatedAPIServer(bookmark_interval=0.5) as server, contextlib.ExitStack() as stack:
        kubectl = Kubectl(server.write_kubeconfig(tmp_path / "admin.kubeconfig"))
        nodes = {}
        for name, (bridge, subnet) in ranges.items():
            node = Node(kubectl, name, tmp_path)
            # The Node made beforehand, its range assigned (as a provisioner would).
            node.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                        "spec": {"podCIDR": subnet, "podCIDRs": [subnet]}})
            daemon = stack.enter_context(
                embedded_node(bridge, subnet, *joined_flags(server, name, tmp_path)))
            daemon.start()
            nodes[name] = node
        for node in nodes.values():
            node.run_pod(f"web-{node.name}")
        ips = {name: wait_for(functools.partial(node.pod_ip, f"web-{name}"), 90,
                              f"web-{name} Running with an IP")
               for name, node in nodes.items()}
        for name, (_bridge, subnet) in ranges.items():
            assert _in(ips[name], subnet), (name, ips)
        for node in nodes.values():
            node.delete_pod(f"web-{node.name}")


def test_standalone_pods_get_addresses_from_the_pod_cidr_flag(
        registry: Registry, e2e_lock: HeldLock) -> None:
    subnet = "10.85.10.0/24"
    with embedded_node("katc4", subnet, "--pod-cidr", subnet, "--cni-bin-dir", "/usr/lib/cni",
                       manifests={"web.json": _static_pod("web")}) as daemon:
        daemon.start()
        pod = daemon.wait_running(f"web-{NODE}", timeout=90)
        assert _in(pod["status"].get("podIP"), subnet), pod["status"]
        conf = _containerd_dir(daemon) / "cni" / "net.d" / "10-kubelet-actors-katc4.conflist"
        assert json.loads(conf.read_text())["plugins"][0]["ipam"]["ranges"] == [
            [{"subnet": subnet}]]


def test_standalone_with_the_operators_cni_conf_dir_uses_its_network(
        registry: Registry, e2e_lock: HeldLock, tmp_path: Path) -> None:
    subnet = "10.85.11.0/24"
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    ipam_dir = tmp_path / "ipam"
    # The operator's network: its own bridge name, so cleanup of katc5 removes it.
    network = {"cniVersion": "1.0.0", "name": "kubelet-actors-katc5", "plugins": [
        {"type": "bridge", "bridge": "katc5", "isGateway": True, "ipMasq": False,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": subnet}]],
                  "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(ipam_dir)}}]}
    (conf_dir / "50-operator.conflist").write_text(json.dumps(network))
    with embedded_node("katc5", subnet, "--cni-conf-dir", str(conf_dir),
                       manifests={"web.json": _static_pod("web")}) as daemon:
        daemon.start()
        pod = daemon.wait_running(f"web-{NODE}", timeout=90)
        assert _in(pod["status"].get("podIP"), subnet), pod["status"]
        assert sorted(p.name for p in conf_dir.iterdir()) == ["50-operator.conflist"]
        assert not (_containerd_dir(daemon) / "cni" / "net.d").exists()
