"""Running bin/kubelet-actors as a daemon for end-to-end tests, as a user would."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actors.app.testbed import cleanup_runtime_dir, new_embedded
from runtime.containerd.embedded import EmbeddedContainerd
from tests.helpers import wait_for

if TYPE_CHECKING:
    from tests.apiserver import EmulatedAPIServer

REPO = Path(__file__).resolve().parents[2]
NODE = "e2e-node"
"""The node name every daemon here runs as."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Daemon:
    """One kubelet-actors process with its own ports, dirs and log file."""

    def __init__(self, workdir: Path, manifests: Path, *flags: str) -> None:
        self.workdir = workdir
        self.manifests = manifests
        self.flags = flags
        self.port = free_port()
        self.read_only_port = free_port()
        self.healthz_port = free_port()
        self.log_path = workdir / "kubelet.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pod_logs(self) -> Path:
        return self.workdir / "logs"

    def start(self, wait: bool = True) -> Daemon:
        args = [
            sys.executable, "-m", "bin.main",
            "--pod-manifest-path", str(self.manifests),
            "--root-dir", str(self.workdir / "root"),
            "--pod-logs-dir", str(self.pod_logs),
            "--node-name", NODE,
            "--port", str(self.port), "--read-only-port", str(self.read_only_port),
            "--healthz-port", str(self.healthz_port),
            "--file-check-frequency", "2s", "--v=4",  # klog's DEBUG; a test's own --v wins
            *self.flags,
        ]
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(args, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONPATH": str(REPO)})
        log.close()
        if wait:
            wait_for(self._answers, 30.0, "the daemon's HTTP API", ignore=(OSError,))
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"the daemon exited with {self.proc.returncode}:\n{self.log()}")
        self.get("/healthz/ping")
        return True

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def get(self, path: str, port: int | None = None) -> tuple[int, str]:
        """GET from the read-only port, or ``port``: the main port (``self.port``) is
        HTTPS with the daemon's self-signed certificate, not checked here."""
        main = port == self.port
        url = f"{'https' if main else 'http'}://127.0.0.1:{port or self.read_only_port}{path}"
        context = ssl._create_unverified_context() if main else None
        try:
            with urllib.request.urlopen(url, timeout=5, context=context) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def pods(self) -> dict[str, dict[str, Any]]:
        """/pods, by pod name."""
        code, body = self.get("/pods")
        assert code == 200, body
        return {p["metadata"]["name"]: p for p in json.loads(body)["items"]}

    def pod(self, name: str) -> dict[str, Any] | None:
        return self.pods().get(name)

    def phase(self, name: str) -> str | None:
        pod = self.pod(name)
        return pod["status"].get("phase") if pod else None

    def wait_running(self, name: str, timeout: float = 30.0) -> dict[str, Any]:
        def running() -> dict[str, Any] | None:
            pod = self.pod(name)
            if pod is None or pod["status"].get("phase") != "Running":
                return None
            statuses = pod["status"].get("containerStatuses", [])
            return pod if statuses and all("running" in s["state"] for s in statuses) else None

        pod = wait_for(running, timeout, f"{name} Running in /pods")
        assert pod is not None, self.log()
        return pod

    def signal(self, sig: signal.Signals) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=60)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.signal(signal.SIGTERM)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=10)


def daemon_on(containerd: EmbeddedContainerd, group: str, *flags: str,
              config: str = "") -> Daemon:
    """A daemon (not started) on ``containerd``, its dirs in a fresh
    ``<containerd's dir>/<group>/<id>`` (removed with the containerd's); ``config``, the
    fields of a KubeletConfiguration (YAML), is given to it with ``--config``."""
    workdir = containerd.base_dir / group / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    if config:
        (workdir / "kubelet.yaml").write_text(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + config)
        flags = ("--config", str(workdir / "kubelet.yaml"), *flags)
    return Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
                  containerd.endpoint, *flags)


@contextlib.contextmanager
def embedded_dir(bridge: str, subnet: str, root: str = "root") -> Iterator[Path]:
    """A fresh dir under /var/tmp for a daemon that runs its own embedded containerd on
    ``bridge``, with ``<dir>/<root>`` as its --root-dir; at the end (the daemon stopped),
    the pods it left and containerd's leftovers (shims, mounts, CNI caches, the bridge) go
    with the dir."""
    base = Path("/var/tmp") / f"kat-e2e-{bridge}-{uuid.uuid4().hex[:6]}"
    base.mkdir(parents=True)
    try:
        yield base
    finally:
        # The daemon stopped its containerd (its pods run on): one more removes them.
        emb = new_embedded(base / root, bridge, subnet)
        try:
            emb.start()
        finally:
            cleanup_runtime_dir(base / root, bridge, emb)
            shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def embedded_node(bridge: str, subnet: str, *flags: str,
                  manifests: dict[str, str] | None = None) -> Iterator[Daemon]:
    """A daemon (not started) with its own embedded containerd on ``bridge`` in an
    ``embedded_dir``; at the end the daemon stops, its log is printed, and everything its
    containerd made goes with the dir."""
    with embedded_dir(bridge, subnet) as base:
        (base / "manifests").mkdir()
        for name, text in (manifests or {}).items():
            (base / "manifests" / name).write_text(text)
        daemon = Daemon(base, base / "manifests", "--cni-bridge-name", bridge, *flags)
        with stopped_after(daemon):
            yield daemon


@dataclass(frozen=True, slots=True)
class Joining:
    """What a daemon joined to an emulated API server is given, written in its workdir:
    its kubeconfig (as ``system:node:NODE``), the API server's CA (``ca``: the daemon
    checks clients' certificates against it; a client checks the serving one with it)
    and a serving pair that CA signed for 127.0.0.1."""

    ca: Path
    flags: tuple[str, ...]


def joining(server: EmulatedAPIServer, workdir: Path) -> Joining:
    kubeconfig = server.write_kubeconfig(workdir / "kubelet.kubeconfig",
                                         f"system:node:{NODE}", groups=("system:nodes",))
    ca = workdir / "ca.crt"
    ca.write_bytes(server.ca.cert_pem)
    serving = server.ca.issue(NODE, dns_names=(NODE,), ips=("127.0.0.1",), server=True)
    (workdir / "serving.crt").write_bytes(serving.cert_pem)
    (workdir / "serving.key").write_bytes(serving.key_pem)
    return Joining(ca, ("--kubeconfig", str(kubeconfig), "--client-ca-file", str(ca),
                        "--tls-cert-file", str(workdir / "serving.crt"),
                        "--tls-private-key-file", str(workdir / "serving.key")))


def client_pair(server: EmulatedAPIServer, workdir: Path, user: str) -> tuple[str, ...]:
    """The ``--client-certificate`` and ``--client-key`` flags of a command acting as
    ``user``: a pair the API server's CA signed, written in ``workdir``."""
    pair = server.client_cert(user)
    (workdir / f"{user}.crt").write_bytes(pair.cert_pem)
    (workdir / f"{user}.key").write_bytes(pair.key_pem)
    return ("--client-certificate", str(workdir / f"{user}.crt"),
            "--client-key", str(workdir / f"{user}.key"))


def remove_every_pod(daemon: Daemon, timeout: float = 90.0) -> None:
    """Remove every manifest and wait until the running daemon shows no pod: its pods go
    through it (what it mounted for them with them)."""
    for path in daemon.manifests.iterdir():
        path.unlink()
    if daemon.proc is not None and daemon.proc.poll() is None:
        wait_for(lambda: not daemon.pods(), timeout, "every pod to go")


@contextlib.contextmanager
def stopped_after(daemon: Daemon) -> Iterator[Daemon]:
    """Yield ``daemon``; then stop it and print its log (pytest shows it when the test
    failed). The ``cri`` fixture removes the pods it left running."""
    try:
        yield daemon
    finally:
        daemon.stop()
        if daemon.log_path.exists():
            print(daemon.log())
