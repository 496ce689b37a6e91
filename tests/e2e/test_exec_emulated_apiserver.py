"""kubectl exec, attach and port-forward through the emulated API server's node proxy to
the daemon, on a real containerd: as in a cluster, kubectl talks to the API server, which
opens the stream to the kubelet with its kubelet-client certificate (authorized on
nodes/proxy by a SubjectAccessReview) and proxies the upgraded connection.

Both kubectl generations are driven: 1.27 speaks SPDY; 1.30 and later try websockets
first and fall back to SPDY. The API server rewrites kubectl's query (``stdin=true``,
``stdout=true``, ``tty=true``...) into the kubelet's own words (``input=1``, ``output=1``,
``tty=1``...) as upstream's pod strategy does, and the kubelet reads only those: passed
through unrewritten, every session here would be refused with "you must specify at least
1 of stdin, stdout, stderr".
"""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.auth import Rules
from tests.apiserver.kubectl import SDK, Kubectl, kubectl_binary
from tests.e2e.daemon import Daemon
from tests.e2e.streams import answer, on_terminal, read_until, upgrade
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NODE = "e2e-node"
MAIN = ("trap 'exit 0' TERM; mkdir -p /www; echo hello-forward > /www/index.html; "
        "httpd -p 8080 -h /www; while true; do sleep 1; done")
POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shell"},
    "spec": {"nodeName": NODE, "automountServiceAccountToken": False,
             "terminationGracePeriodSeconds": 1,
             "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                             "command": ["sh", "-c", MAIN]},
                            {"name": "reader", "image": BUSYBOX_IMAGE, "stdin": True,
                             "command": ["sh", "-c",
                                         'while read line; do echo "got $line"; done']}]}}
# The oldest kubectl the machine carries (SPDY only) and the default one (websockets first).
KUBECTLS = [str(SDK / "kubectl.1.27")] if (SDK / "kubectl.1.27").is_file() else []
KUBECTLS.append(kubectl_binary())


class Joined:
    def __init__(self, server: EmulatedAPIServer, daemon: Daemon, workdir: Path) -> None:
        self.server = server
        self.daemon = daemon
        self.admin = server.write_kubeconfig(workdir / "admin.kubeconfig")


@pytest.fixture(scope="module")
def joined(containerd: EmbeddedContainerd) -> Iterator[Joined]:
    workdir = containerd.base_dir / "exec-cluster" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    rules = Rules().allow("kube-apiserver-kubelet-client", verbs=("get", "create"),
                          subresources=("proxy",), name=NODE)
    with EmulatedAPIServer(sar_policy=rules) as server:
        kubeconfig = server.write_kubeconfig(workdir / "kubelet.kubeconfig",
                                             f"system:node:{NODE}", groups=("system:nodes",))
        ca = workdir / "ca.crt"
        ca.write_bytes(server.ca.cert_pem)
        daemon = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
                        containerd.endpoint, "--kubeconfig", str(kubeconfig),
                        "--client-ca-file", str(ca))
        # The daemon listens on loopback, not on the node's InternalIP.
        server.node_urls[NODE] = f"https://127.0.0.1:{daemon.port}"
        joined = Joined(server, daemon, workdir)
        kubectl = Kubectl(joined.admin)
        try:
            daemon.start()
            path = workdir / "shell.json"
            path.write_text(json.dumps(POD))
            kubectl.run("apply", "-f", str(path))
            wait_for(lambda: _running(kubectl), 90, "the pod Running in the API",
                     interval=0.5)
            yield joined
        finally:
            kubectl.run("delete", "pod", "shell", "--wait=true", check=False, timeout=60)
            daemon.stop()
            print(daemon.log())
            with CRIClient(containerd.endpoint, timeout=60) as cri:
                for sandbox in cri.list_pod_sandbox():
                    if sandbox.metadata.name == "shell":
                        cri.stop_pod_sandbox(sandbox.id)
                        cri.remove_pod_sandbox(sandbox.id)


def _running(kubectl: Kubectl) -> bool:
    result = kubectl.run("get", "pod", "shell", "-o", "json", check=False)
    if result.returncode != 0:
        return False
    statuses = json.loads(result.stdout).get("status", {}).get("containerStatuses", [])
    return bool(statuses) and all("running" in s["state"] for s in statuses)


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_exec_through_the_api_server_emulated_apiserver(joined: Joined,
                                                                binary: str) -> None:
    kubectl = Kubectl(joined.admin, binary)
    done = kubectl.run("exec", "shell", "-c", "main", "--", "sh", "-c",
                       "echo out; echo err >&2; exit 3", check=False)
    assert done.returncode == 3, done
    assert done.stdout == "out\n"
    assert done.stderr.startswith("err\n")
    fed = subprocess.run(kubectl.argv("exec", "-i", "shell", "-c", "main", "--", "sh", "-c",
                                      'read line; echo "got $line"'),
                         input="hello\n", capture_output=True, text=True, timeout=60,
                         check=False)
    assert (fed.returncode, fed.stdout) == (0, "got hello\n"), fed


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_port_forward_through_the_api_server_emulated_apiserver(
        joined: Joined, binary: str) -> None:
    import urllib.request

    kubectl = Kubectl(joined.admin, binary)
    proc = subprocess.Popen(kubectl.argv("port-forward", "pod/shell", ":8080"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        line = read_until(proc.stdout.fileno(), b" -> 8080\n", 30, "kubectl's forwarding line")
        local = int(line.split(b"127.0.0.1:")[1].split(b" ")[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{local}/index.html",
                                    timeout=30) as answer:
            assert answer.read() == b"hello-forward\n"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_attach_through_the_api_server_emulated_apiserver(joined: Joined,
                                                                  binary: str) -> None:
    kubectl = Kubectl(joined.admin, binary)
    proc = subprocess.Popen(kubectl.argv("attach", "shell", "-c", "reader", "-i"),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"ping\n")
        proc.stdin.flush()
        read_until(proc.stdout.fileno(), b"got ping\n", 30, "the reader's answer")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_exec_with_a_terminal_through_the_api_server_emulated_apiserver(
        joined: Joined, binary: str) -> None:
    """``kubectl exec -it``: kubectl asks for a TTY only when its stdin is a terminal (a
    pseudo-terminal here); the API server writes ``tty=1`` and the process gets one."""
    kubectl = Kubectl(joined.admin, binary)
    with on_terminal(kubectl.argv("exec", "-it", "shell", "-c", "main", "--", "sh", "-c",
                                  "tty; echo done-$((6*7))")) as (proc, leader):
        seen = read_until(leader, b"done-42", 60, "the session's answer")
        assert b"/dev/pts/" in seen, seen
        assert b"not a tty" not in seen, seen
        assert proc.wait(timeout=30) == 0


def test_kubectl_exec_names_the_containers_when_none_is_given_emulated_apiserver(
        joined: Joined) -> None:
    """kubectl picks a container itself; a client that does not gets the API server's
    refusal, which lists the pod's containers."""
    done = Kubectl(joined.admin).run(
        "get", "--raw", "/api/v1/namespaces/default/pods/shell/exec?command=true&stdout=true",
        check=False)
    assert done.returncode == 1
    assert ("a container name must be specified for pod shell, choose one of: [main reader]"
            in done.stderr), done.stderr


def test_an_unauthenticated_exec_on_the_kubelet_is_401_emulated_apiserver(
        joined: Joined) -> None:
    path = "/exec/default/shell/main?command=true&output=1"
    assert answer(*upgrade(joined.daemon.port, path)) == (401, b"Unauthorized")
    assert answer(*upgrade(joined.daemon.port, path, token="not-a-token")) == (
        401, b"Unauthorized")
