"""A restarted daemon adopts its running pods on containerd, and handles one that died.

The daemon runs three pods and stops (SIGTERM: the pods keep running); while it is down one
pod's container is stopped. The next daemon keeps the two running containers (same IDs, no
restart) and restarts the dead one as upstream does (restartPolicy Always: a new container,
restartCount 1). Its first syncs read their status from the PLEG's first relist
(actors.kubelet.pleg, Relisted.listings), and wait for it when the manifests came first,
so none lists for itself; its trace replays without divergence.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from typing import Any

import pytest

from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import read_trace
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerState
from runtime.ids import ContainerID
from tests.e2e.daemon import REPO, Daemon
from tests.e2e.test_daemon import manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NAMES = ("keep-a", "keep-b", "dies")


def containers(daemon: Daemon) -> dict[str, tuple[str, int]]:
    """(containerID, restartCount) of each pod's one container, by pod name."""
    out: dict[str, tuple[str, int]] = {}
    for pod in daemon.pods().values():
        (status,) = pod["status"]["containerStatuses"]
        out[pod["metadata"]["name"]] = (status.get("containerID", ""),
                                        status.get("restartCount", 0))
    return out


def all_running(daemon: Daemon) -> dict[str, Any] | None:
    pods = {p["metadata"]["name"]: p for p in daemon.pods().values()}
    ok = len(pods) == len(NAMES) and all(
        p["status"].get("phase") == "Running"
        and all(s.get("state", {}).get("running") for s in p["status"]["containerStatuses"])
        for p in pods.values())
    return pods if ok else None


def test_a_restart_keeps_running_containers_and_restarts_one_that_died_while_down(
    containerd: EmbeddedContainerd, cri: CRIClient
) -> None:
    workdir = containerd.base_dir / "adopt" / uuid.uuid4().hex[:8]
    manifests = workdir / "manifests"
    manifests.mkdir(parents=True)
    trace_dir = workdir / "trace"
    for name in NAMES:
        (manifests / f"{name}.yaml").write_text(manifest(name))
    daemon = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
                    "--trace-dir", str(trace_dir))
    try:
        daemon.start()
        wait_for(lambda: all_running(daemon), 60.0, "the three pods to run")
        before = {name.removesuffix("-e2e-node"): ids for name, ids in
                  containers(daemon).items()}
        assert daemon.signal(signal.SIGTERM) == 0
        dead = ContainerID(before["dies"][0].removeprefix("containerd://"))
        cri.stop_container(dead, 0)
        assert cri.container_status(dead).state == ContainerState.EXITED

        daemon.start()
        wait_for(lambda: (all_running(daemon) and containers(daemon)["dies-e2e-node"][1] == 1),
                 60.0, "the dead container restarted and every pod running")
        after = {name.removesuffix("-e2e-node"): ids for name, ids in
                 containers(daemon).items()}
        assert after["keep-a"] == before["keep-a"] and after["keep-b"] == before["keep-b"]
        assert after["dies"][0] != before["dies"][0] and after["dies"][1] == 1
    finally:
        daemon.stop()

    # Every pod's first sync (both daemons') waited for the PLEG's first
    # relist and adopted from its listing, whichever of it and the manifests came first.
    firsts: dict[str, dict[str, Any]] = {}
    for record in read_trace(trace_dir).messages():
        if MESSAGES.short(record["type"]) == "UpdatePod":
            body = record["body"]
            if body["kind"] == "create":
                firsts.setdefault(f'{record["m"]}', body)
    creates = list(firsts.values())
    assert len(creates) == 2 * len(NAMES), len(creates)
    assert all(body.get("listing") is not None for body in creates), creates

    replayed = subprocess.run([sys.executable, "-m", "bin.main", "trace", "replay",
                               str(trace_dir)], cwd=REPO, capture_output=True, text=True,
                              timeout=300)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence" in replayed.stdout
