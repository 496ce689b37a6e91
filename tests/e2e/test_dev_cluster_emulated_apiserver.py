"""scripts/dev-cluster.sh tried as a new user would, against the emulated API server it
starts: the admin kubeconfig appears once the node is Ready, and real kubectl gets the node,
runs a pod, reads its log through the API server's proxy to the kubelet's HTTPS 10250 and
deletes it; SIGTERM, or Ctrl-C, then stops everything the script started.

The script uses the default ports (10250, 10248) and its own embedded containerd (under a
temporary --root-dir); the machine-wide e2e lock keeps other e2e runs away meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from actors.app.testbed.lock import HeldLock
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerFilter
from runtime.kuberuntime import labels as L
from tests.apiserver.kubectl import Kubectl
from tests.e2e.daemon import REPO, free_port
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NODE = "dev-node"
LINE = "hello from the dev cluster"


def processes_mentioning(marker: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live process whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append((int(entry.name), cmdline.strip()))
    return found


def port_free(port: int) -> bool:
    """No one listens on ``port`` (connections in TIME_WAIT do not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


class DevCluster:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.root = workdir / "root"
        self.kubeconfig = workdir / "kube" / "config"
        self.log_path = workdir / "dev-cluster.log"
        self.apiserver_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(REPO / "scripts" / "dev-cluster.sh"), str(self.kubeconfig),
                 "--root-dir", str(self.root), "--node-name", NODE,
                 "--apiserver-port", str(self.apiserver_port)],
                cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-8000:]

    def kubeconfig_written(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"dev-cluster.sh exited with {self.proc.returncode}:\n"
                                 f"{self.log()}")
        return self.kubeconfig.exists()

    def ours(self) -> list[tuple[int, str]]:
        """Processes it started: the daemon and containerd name the root dir, the API
        server the kubeconfig path."""
        return processes_mentioning(str(self.root)) + processes_mentioning(
            f"--admin-kubeconfig {self.kubeconfig}")

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        """SIGTERM to the script, or SIGINT to its whole process group as Ctrl-C in a
        terminal sends it."""
        assert self.proc is not None
        if self.proc.poll() is None:
            if sig == signal.SIGINT:
                os.killpg(self.proc.pid, sig)
            else:
                self.proc.send_signal(sig)
        return self.proc.wait(timeout=180)


@pytest.fixture
def dev_cluster(e2e_lock: HeldLock, tmp_path: Path) -> Iterator[DevCluster]:
    for port in (10250, 10248):
        assert port_free(port), f"port {port} is taken: dev-cluster.sh needs the defaults"
    cluster = DevCluster(tmp_path)
    try:
        yield cluster
    finally:
        if cluster.proc is not None and cluster.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                cluster.stop()
            if cluster.proc.poll() is None:
                os.killpg(cluster.proc.pid, signal.SIGKILL)
                cluster.proc.wait(timeout=10)
        for pid, _ in cluster.ours():  # only if the script failed to stop them
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if (cluster.root / "containerd" / "config.toml").exists() and not cluster.ours():
            subprocess.run([str(REPO / ".venv" / "bin" / "python"),
                            str(REPO / "scripts" / "clean.py"), str(cluster.root)],
                           check=False, capture_output=True, timeout=120)
        print(cluster.log())  # shown when the test failed
        shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT],
                         ids=["sigterm", "ctrl-c"])
def test_dev_cluster_script_runs_a_pod_for_kubectl_and_stops_everything_emulated_apiserver(
        dev_cluster: DevCluster, stop_signal: signal.Signals) -> None:
    dev_cluster.start()
    wait_for(dev_cluster.kubeconfig_written, 600, "the admin kubeconfig (node Ready)",
             interval=0.5)
    kubectl = Kubectl(dev_cluster.kubeconfig)

    nodes = kubectl.run("get", "nodes").stdout
    assert any(line.split()[:2] == [NODE, "Ready"] for line in nodes.splitlines()), nodes

    # With the service account token the emulator's admission mounts (kube-api-access).
    kubectl.run("run", "hello", f"--image={BUSYBOX_IMAGE}", "--restart=Never",
                "--command", "--", "echo", LINE)

    def started() -> Any:
        pod = kubectl.json("get", "pod", "hello")
        return pod if pod["status"].get("phase") in ("Running", "Succeeded") else None

    pod = wait_for(started, 120, "hello Running or Succeeded", interval=0.5)
    assert pod["spec"]["nodeName"] == NODE  # bound by the emulator's one-node scheduler
    uid = pod["metadata"]["uid"]
    endpoint = f"unix://{dev_cluster.root}/containerd/containerd.sock"
    with CRIClient(endpoint, timeout=30.0) as cri:
        def containers() -> tuple[Any, ...]:
            return tuple(cri.list_containers(ContainerFilter(label_selector={L.POD_UID: uid})))

        assert containers(), "hello has no container on the script's containerd"
        wait_for(lambda: LINE in kubectl.run("logs", "hello", check=False).stdout, 30,
                 "hello's line in kubectl logs", interval=0.5)

        kubectl.run("delete", "pod", "hello", "--wait=true", timeout=90)
        gone = kubectl.run("get", "pod", "hello", check=False)
        assert gone.returncode != 0 and "NotFound" in gone.stderr, gone
        wait_for(lambda: not containers(), 60, "hello's containers removed", interval=0.5)

    ours = dev_cluster.ours()
    assert any("tests.apiserver" in cmd for _, cmd in ours), ours
    assert any(cmd.split()[0].endswith("/containerd") for _, cmd in ours), ours

    assert dev_cluster.stop(stop_signal) == 0, dev_cluster.log()
    assert dev_cluster.ours() == [], f"still running after {stop_signal.name}"
    assert not dev_cluster.kubeconfig.exists()
    assert not Path(endpoint.removeprefix("unix://")).exists()
    assert port_free(10250) and port_free(10248) and port_free(dev_cluster.apiserver_port)
