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
  kubelet-actors" is then done by running the installed unit's ExecStart, with its
  EnvironmentFile's KUBELET_EXTRA_ARGS (the sandbox image set to this machine's mirror, as the
  page tells a user to), on this run's containerd and ports (tests.e2e.daemon);
- the control plane's commands run with an admin's kubeconfig in KUBECONFIG.

The node then has nothing but a bootstrap token: it must get its client certificate from a
CSR the emulated kube-controller-manager approves and signs, register, become Ready, get its
serving certificate once the page's approval ran, and serve ``kubectl logs`` to an API server
that checks that certificate against the cluster CA.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from actors.app.config.flags import DEFAULT_PAUSE_IMAGE
from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.kubectl import Kubectl, kubectl_binary
from tests.e2e.daemon import NODE, Daemon
from tests.helpers import wait_for
from tests.install_page import PAGE, UNIT, Host, join_blocks, run_block, unit_command

pytestmark = pytest.mark.e2e

SERVING_SIGNER = "kubernetes.io/kubelet-serving"


def _node_ready(kubectl: Kubectl) -> bool:
    result = kubectl.run("get", "node", NODE, "-o", "json", check=False)
    if result.returncode != 0:
        return False
    conditions = json.loads(result.stdout)["status"].get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


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
def joined_by_the_page(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Joined]:
    """The node joined as the page says (``cri`` removes what it left running)."""
    workdir = containerd.base_dir / "join-page" / uuid.uuid4().hex[:8]
    host = Host.debian(workdir / "host")
    blocks = join_blocks(PAGE.read_text())
    assert len(blocks) == 3, "the page's join has three marked blocks: install, join, approve"
    with EmulatedAPIServer() as server:
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
        daemon = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
                        containerd.endpoint, *unit_command(unit, host))
        (workdir / "manifests").mkdir()
        try:
            daemon.start()
            yield Joined(host, server, daemon, admin,
                         {**env, "KUBECONFIG": str(admin.kubeconfig)}, blocks)
        finally:
            admin.run("delete", "pod", "joined", "--wait=true", check=False, timeout=60)
            daemon.stop()
            print(daemon.log())


def test_a_node_joins_with_only_a_bootstrap_token_as_the_install_page_says_emulated_apiserver(
        joined_by_the_page: Joined) -> None:
    joined = joined_by_the_page
    host, kubectl = joined.host, joined.kubectl
    wait_for(lambda: _node_ready(kubectl), 60, "the node Ready in the API", interval=0.5)

    # The client certificate came from a CSR the bootstrap token made, auto-approved.
    clients = _csrs(kubectl, "kubernetes.io/kube-apiserver-client-kubelet")
    assert len(clients) == 1, clients
    assert clients[0]["spec"]["username"].startswith("system:bootstrap:")
    current = host.path("/var/lib/kubelet-actors/pki/kubelet-client-current.pem")
    assert current.is_symlink() and current.resolve().is_file()
    kubelet_conf = host.path("/etc/kubernetes/kubelet.conf").read_text()
    assert str(current) in kubelet_conf and "token" not in kubelet_conf

    # The page's approval of the serving certificate, once the kubelet asked for it.
    wait_for(lambda: _csrs(kubectl, SERVING_SIGNER), 60, "the kubelet's serving CSR")
    printed = run_block(joined.blocks[2], host, joined.env)
    assert NODE in printed and " Ready " in printed, printed
    wait_for(lambda: all(c["status"].get("certificate")
                         for c in _csrs(kubectl, SERVING_SIGNER)), 30, "the serving cert issued")

    # kubectl logs reaches the pod through port 10250, whose certificate the API server
    # now checks against the cluster CA.
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
