"""Probe results across a daemon restart, on containerd: a ready pod never reads not ready.

A poller thread GETs /pods on the read-only port every 50 ms across the restart and notes
what it saw of the pod. What counts as a flip: any answer that shows the pod with its
Ready condition not True after the first answer that showed it True. While the daemon is
down the poller gets connection errors ("down"); right after the start the pod may be
absent from /pods until its first sync ("missing"): neither is a flip, as long as the
pod is Ready when it shows again.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.drills.probe_drills import ReadyWatch
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerFilter, ContainerState
from runtime.kuberuntime import labels as L
from runtime.prober.state import STATE_FILE
from tests.e2e.daemon import REPO, Daemon
from tests.e2e.test_daemon import manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

POD = "probed-e2e-node"


def probed(initial_delay: int = 0) -> str:
    # periodSeconds 10: the restart falls between two probes of the same container.
    return manifest("probed", extra=f"""    readinessProbe:
      exec: {{command: ["true"]}}
      periodSeconds: 10
      initialDelaySeconds: {initial_delay}
""")


@pytest.fixture
def workdir(containerd: EmbeddedContainerd) -> Path:
    path = containerd.base_dir / "probe-state" / uuid.uuid4().hex[:8]
    (path / "manifests").mkdir(parents=True)
    return path


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient, workdir: Path) -> Iterator[Daemon]:
    d = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
               containerd.endpoint)
    yield d
    d.stop()


@pytest.fixture
def poller(daemon: Daemon) -> Iterator[ReadyWatch]:
    p = ReadyWatch(daemon.read_only_port, POD)
    thread = threading.Thread(target=p.run, name="poller", daemon=True)
    thread.start()
    yield p
    p.stop.set()
    thread.join(10)


def ready_in_pods(daemon: Daemon) -> bool:
    pod = daemon.pod(POD)
    return pod is not None and any(c["type"] == "Ready" and c["status"] == "True"
                                   for c in pod["status"].get("conditions", []))


def restart(daemon: Daemon, trace_dir: Path) -> None:
    """SIGTERM (pods keep running), then the same daemon again, recording a trace."""
    assert daemon.signal(signal.SIGTERM) == 0
    daemon.flags = (*daemon.flags, "--trace-dir", str(trace_dir))
    daemon.start()


def replays(trace_dir: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "bin.main", "trace", "replay", str(trace_dir)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_ready_pod_stays_ready_across_a_restart(
        daemon: Daemon, cri: CRIClient, poller: ReadyWatch, workdir: Path) -> None:
    (daemon.manifests / "probed.yaml").write_text(probed())
    daemon.start()
    wait_for(lambda: ready_in_pods(daemon), 30.0, "the pod Ready")
    uid = daemon.pod(POD)["metadata"]["uid"]  # type: ignore[index]
    (before,) = cri.list_containers(ContainerFilter(label_selector={L.POD_UID: uid}))

    def saved() -> list[tuple[str, str, str]]:
        state = json.loads((workdir / "root" / STATE_FILE).read_text())
        return [(p["container_id"], p["kind"], p["result"]) for p in state["probes"]]

    wait_for(lambda: saved() == [(before.id, "readiness", "Success")], 10.0,
             "the saved readiness Success", ignore=(OSError, ValueError))

    restart(daemon, workdir / "trace")
    mark = time.monotonic()
    wait_for(lambda: ready_in_pods(daemon), 30.0, "the pod Ready after the restart")
    # Two more seconds of answers: well past the restarted probe manager's first attempt
    # (a new worker probes at once).
    served = len(poller.since(mark))
    wait_for(lambda: len(poller.since(mark)) >= served + 40, 20.0, "more answers")

    assert poller.flips(tolerated=("down", "missing")) == [], poller.seen
    assert "ready" in poller.since(mark)
    assert not [s for s in poller.since(mark) if s.startswith("not-ready")]
    assert ("readiness probe result Success continued from the previous run"
            in daemon.log_path.read_text())
    (status,) = daemon.pod(POD)["status"]["containerStatuses"]  # type: ignore[index]
    assert status["containerID"] == f"containerd://{before.id}"
    assert status["restartCount"] == 0 and status["ready"] is True
    daemon.stop()
    assert "no divergence: replayed" in replays(workdir / "trace")


def test_a_container_replaced_while_the_kubelet_is_down_starts_over(
        daemon: Daemon, cri: CRIClient, poller: ReadyWatch, workdir: Path) -> None:
    # initialDelaySeconds 5: the replacement reads not ready long enough to be seen.
    (daemon.manifests / "probed.yaml").write_text(probed(initial_delay=5))
    daemon.start()
    wait_for(lambda: ready_in_pods(daemon), 30.0, "the pod Ready")
    uid = daemon.pod(POD)["metadata"]["uid"]  # type: ignore[index]
    selector = ContainerFilter(label_selector={L.POD_UID: uid})
    (before,) = cri.list_containers(selector)

    assert daemon.signal(signal.SIGTERM) == 0
    cri.stop_container(before.id, 0)  # gone while the kubelet is down
    daemon.flags = (*daemon.flags, "--trace-dir", str(workdir / "trace"))
    daemon.start()
    mark = time.monotonic()

    def replaced() -> bool:
        running = cri.list_containers(ContainerFilter(label_selector={L.POD_UID: uid},
                                                      state=ContainerState.RUNNING))
        return bool(running) and running[0].id != before.id

    wait_for(replaced, 30.0, "the kubelet to start a new container")
    wait_for(lambda: ready_in_pods(daemon), 30.0, "the new container Ready")
    seen = poller.since(mark)
    assert any(s.startswith("not-ready") for s in seen), seen  # the stored Success not reused
    assert f"container {before.id} no longer runs" in daemon.log_path.read_text()
    daemon.stop()
    assert "no divergence: replayed" in replays(workdir / "trace")
