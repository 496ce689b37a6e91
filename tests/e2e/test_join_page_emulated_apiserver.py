"""docs/install.md's join, followed as written, against the emulated API server.

The blocks of the page marked ``<!-- join-test -->`` run in bash, in order, as the page
says: the files of ``deploy/`` installed, the bootstrap kubeconfig written by the real
``kubectl config``, the service started, the node's serving CSR approved by the real
``kubectl certificate approve``. What the test changes, and only that:
- the page's paths (``/etc/...``, ``/var/lib/kubelet-actors``) are moved under a temporary
  directory, in the commands and in the installed files, and ``/opt/src/kubelet-actors`` is
  this checkout;
- the two values the page says to change (APISERVER, TOKEN) are the emulated server's
  address and a bootstrap token it made (what ``kubeadm token create`` would print), and the
  cluster CA is put where the page's ``scp`` puts it;
- ``systemctl`` is a shell function that writes down what it is asked; "enable --now
  kubelet-actors" is then done by running the installed unit's ExecStart as it is, with its
  EnvironmentFile's KUBELET_EXTRA_ARGS (the sandbox image set to this machine's mirror, as the
  page tells a user to), adding only this run's ports and node name and a CNI bridge of its
  own (tests.e2e.daemon.embedded_dir), so the kubelet runs its own embedded containerd under
  the moved ``/var/lib/kubelet-actors`` beside the other tests' containerds;
- the control plane's commands run with an admin's kubeconfig in KUBECONFIG, and the test
  does kube-controller-manager's node-ipam part of a cluster made with
  ``--pod-network-cidr``: once the Node registered, it sets its spec.podCIDR(s).

The node then has nothing but a bootstrap token: it must get its client certificate from a
CSR the emulated kube-controller-manager approves and signs, register NotReady (no pod
network yet), turn Ready once its range reached its containerd (the page's "kubelet's own
bridge"), get its serving certificate once the page's approval ran, give its pod an address
from its range, and serve ``kubectl logs`` to an API server that checks that certificate
against the cluster CA. Everything the kubelet's containerd made goes at the end.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from actors.app.config.flags import DEFAULT_PAUSE_IMAGE
from actors.app.testbed import BUSYBOX_IMAGE, HeldLock, Registry
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.kubectl import Kubectl, kubectl_binary
from tests.e2e.daemon import NODE, Daemon, embedded_dir, stopped_after
from tests.helpers import wait_for
from tests.install_page import PAGE, UNIT, Host, join_blocks, run_block, unit_command

pytestmark = pytest.mark.e2e

SERVING_SIGNER = "kubernetes.io/kubelet-serving"
ROOT_DIR = "/var/lib/kubelet-actors"
"""The page's --root-dir, under which the kubelet runs its containerd."""
BRIDGE = "katj1"
POD_CIDR = "10.85.20.0/24"
"""This test's bridge, and the range its node-ipam gives the Node: no other test's."""


def _ready_condition(kubectl: Kubectl) -> dict[str, Any] | None:
    """The Node's Ready condition, once it registered with one."""
    result = kubectl.run("get", "node", NODE, "-o", "json", check=False)
    if result.returncode != 0:
        return None
    conditions = json.loads(result.stdout)["status"].get("conditions") or []
    ready = [c for c in conditions if c["type"] == "Ready"]
    return ready[0] if ready else None


def _csrs(kubectl: Kubectl, signer: str) -> list[dict[str, Any]]:
    result = kubectl.run("get", "csr", "-o", "json")
    items: list[dict[str, Any]] = json.loads(result.stdout)["items"]
    return [c for c in items if c["spec"]["signerName"] == signer]


@dataclass
class Joined:
    host: Host
    server: EmulatedAPIServer
    daemon: Daemon
    kubectl: Kubectl
    env: dict[str, str]
    blocks: list[str]


@pytest.fixture
def joined_by_the_page(registry: Registry, e2e_lock: HeldLock) -> Iterator[Joined]:
    """The node joined as the page says, on its own embedded containerd (removed at the
    end with everything it made)."""
    blocks = join_blocks(PAGE.read_text())
    assert len(blocks) == 3, "the page's join has three marked blocks: install, join, approve"
    with (embedded_dir(BRIDGE, POD_CIDR, root=f"host{ROOT_DIR}") as workdir,
          EmulatedAPIServer() as server):
        host = Host.debian(workdir / "host")
        # The API server checks the kubelet's serving certificate against the cluster CA, as
        # kube-apiserver with --kubelet-certificate-authority does.
        server.kubelet_ca = server.ca.cert_pem
        admin = Kubectl(server.write_kubeconfig(workdir / "admin.kubeconfig"))
        env = {**os.environ, "SYSTEMCTL_LOG": str(workdir / "systemctl.log"),
               "PATH": f"{Path(kubectl_binary()).parent}:{os.environ.get('PATH', '')}"}
        env.pop("KUBECONFIG", None)
        # Configure: the page's first block installs deploy/'s files.
        run_block(blocks[0], host, env)
        host.move_file("/etc/kubelet-actors/config.yaml")
        unit = host.move_file(f"/etc/systemd/system/{UNIT}")
        defaults = host.path("/etc/default/kubelet-actors")
        assert "KUBELET_EXTRA_ARGS=--pod-infra-container-image=" in defaults.read_text()
        defaults.write_text(
            f"KUBELET_EXTRA_ARGS=--pod-infra-container-image={DEFAULT_PAUSE_IMAGE}\n")
        # The control plane's part: a token, and the CA copied to the node.
        token = server.create_bootstrap_token()
        host.path("/etc/kubernetes/pki/ca.crt").write_bytes(server.ca.cert_pem)
        join = blocks[1]
        join = re.sub(r"^APISERVER=.*$", f"APISERVER={server.url}", join, flags=re.M)
        join = re.sub(r"^TOKEN=.*$", f"TOKEN={token}", join, flags=re.M)
        run_block(join, host, env)
        asked = (workdir / "systemctl.log").read_text().splitlines()
        assert asked == ["daemon-reload", "enable --now kubelet-actors"], asked
        # The unit's command line as it is (its --root-dir wins over the Daemon's), on the
        # page's static pod path; the bridge is this test's, beside other tests' containerds.
        daemon = Daemon(workdir, host.path("/etc/kubernetes/manifests"),
                        "--cni-bridge-name", BRIDGE, *unit_command(unit, host))
        with stopped_after(daemon):
            try:
                daemon.start()
                yield Joined(host, server, daemon, admin,
                             {**env, "KUBECONFIG": str(admin.kubeconfig)}, blocks)
            finally:
                admin.run("delete", "pod", "joined", "--wait=true", check=False, timeout=60)


def test_a_node_joins_with_only_a_bootstrap_token_as_the_install_page_says_emulated_apiserver(
        joined_by_the_page: Joined) -> None:
    joined = joined_by_the_page
    host, kubectl = joined.host, joined.kubectl
    registered = wait_for(lambda: _ready_condition(kubectl), 60,
                          "the Node registered with its Ready condition", interval=0.5)

    # The client certificate came from a CSR the bootstrap token made, auto-approved.
    clients = _csrs(kubectl, "kubernetes.io/kube-apiserver-client-kubelet")
    assert len(clients) == 1, clients
    assert clients[0]["spec"]["username"].startswith("system:bootstrap:")
    current = host.path(f"{ROOT_DIR}/pki/kubelet-client-current.pem")
    assert current.is_symlink() and current.resolve().is_file()
    kubelet_conf = host.path("/etc/kubernetes/kubelet.conf").read_text()
    assert str(current) in kubelet_conf and "token" not in kubelet_conf

    # The kubelet's own bridge: until the Node has a range, its containerd has no network
    # and the Node is NotReady, as the page says.
    assert registered is not None and registered["status"] == "False", registered
    assert "NetworkReady=false" in registered["message"], registered
    conf_dir = host.path(f"{ROOT_DIR}/containerd/cni/net.d")
    assert not list(conf_dir.iterdir())
    # kube-controller-manager's node-ipam controller (the cluster made with
    # --pod-network-cidr) sets both fields once the Node registered.
    kubectl.run("patch", "node", NODE, "-p", json.dumps(
        {"spec": {"podCIDR": POD_CIDR, "podCIDRs": [POD_CIDR]}}))
    wait_for(lambda: (_ready_condition(kubectl) or {}).get("status") == "True", 60,
             "the Node Ready once its containerd has the range", interval=0.5)
    network = json.loads((conf_dir / "10-containerd-net.conflist").read_text())["plugins"][0]
    assert (network["bridge"], network["ipam"]["ranges"]) == (BRIDGE, [[{"subnet": POD_CIDR}]])

    # The page's approval of the serving certificate, once the kubelet asked for it.
    wait_for(lambda: _csrs(kubectl, SERVING_SIGNER), 60, "the kubelet's serving CSR")
    printed = run_block(joined.blocks[2], host, joined.env)
    assert NODE in printed and " Ready " in printed, printed
    wait_for(lambda: all(c["status"].get("certificate")
                         for c in _csrs(kubectl, SERVING_SIGNER)), 30, "the serving cert issued")

    # kubectl logs reaches the pod through port 10250, whose certificate the API server
    # now checks against the cluster CA; the pod's address is from the Node's range.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "joined"},
           "spec": {"nodeName": NODE, "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                                    "command": ["sh", "-c",
                                                "echo joined by the page; sleep 3600"]}]}}
    manifest = joined.daemon.workdir / "joined.json"
    manifest.write_text(json.dumps(pod))
    kubectl.run("apply", "-f", str(manifest))

    def logged() -> bool:
        result = kubectl.run("logs", "joined", check=False)
        return result.returncode == 0 and "joined by the page" in result.stdout

    wait_for(logged, 90, "kubectl logs of the pod through the API server", interval=0.5)
    pod_ip = kubectl.json("get", "pod", "joined")["status"]["podIP"]
    assert ipaddress.ip_address(pod_ip) in ipaddress.ip_network(POD_CIDR), pod_ip
