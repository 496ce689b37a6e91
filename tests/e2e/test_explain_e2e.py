"""``kubelet-actors explain`` on a real daemon's trace: a crash-looping pod and a pod its
liveness probe kills, on containerd, explained as a user would ask (a subprocess), first
from the running daemon's own trace (found through its --root-dir), then from the trace
directory once the daemon stopped."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from typing import Any

import pytest

from actors.core.trace.reader import read_trace
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import REPO, Daemon
from tests.e2e.test_daemon import SERVE, manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

LIVENESS = """    livenessProbe:
      exec: {command: ["sh", "-c", "echo HTTP 500 from /healthz; exit 1"]}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 2
"""


def explain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bin.main", "explain", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def restarts(daemon: Daemon, name: str) -> int:
    pod = daemon.pod(name)
    statuses = pod["status"].get("containerStatuses", []) if pod else []
    return int(statuses[0].get("restartCount", 0)) if statuses else 0


def findings(out: str, name: str) -> list[dict[str, Any]]:
    data = json.loads(out)
    assert data["schema"] == 1
    (pod,) = data["pods"]
    assert pod["name"] == name
    found: list[dict[str, Any]] = pod["findings"]
    return found


# Run alone, it is the session's first e2e test: its fixtures wait for the machine-wide
# lock (up to testbed's LOCK_WAIT_S, 600 s) before its own minute or so.
@pytest.mark.timeout(900)
def test_explain_tells_crash_loop_and_liveness_restarts(
    containerd: EmbeddedContainerd, cri: CRIClient
) -> None:
    workdir = containerd.base_dir / "explain" / uuid.uuid4().hex[:8]
    manifests = workdir / "manifests"
    manifests.mkdir(parents=True)
    trace_dir = workdir / "trace"
    (manifests / "crash.yaml").write_text(manifest("crash", "echo dying; exit 3"))
    (manifests / "live.yaml").write_text(manifest("live", SERVE, extra=LIVENESS))
    daemon = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
                    "--trace-dir", str(trace_dir))
    crash, live = "crash-e2e-node", "live-e2e-node"
    try:
        daemon.start()
        # Restart 1 comes at once, restart 2 after a 10 s back-off.
        wait_for(lambda: restarts(daemon, crash) >= 2, 90.0, "crash to restart twice")
        wait_for(lambda: restarts(daemon, live) >= 1, 60.0, "live to be restarted")

        # While the daemon runs: its trace is found through its root dir.
        running = explain(crash, "--root-dir", str(workdir / "root"))
        assert running.returncode == 0, running.stdout + running.stderr
        assert "restart 1 of main" in running.stdout, running.stdout
        assert "exited with code 3 (Error)" in running.stdout, running.stdout
    finally:
        daemon.stop()

    shown = explain(crash, "--trace-dir", str(trace_dir))
    assert shown.returncode == 0, shown.stderr
    print(shown.stdout)
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"pod default/{crash} (uid ")
    first = next(line for line in lines if "restart 1 of main at" in line)
    second = next(line for line in lines if "restart 2 of main at" in line)
    assert "exited with code 3 (Error)" in first and "no back-off" in first
    assert "exited with code 3 (Error)" in second and "back-off 10 s" in second
    assert "started " in second and "[#" in second

    ids = {r["id"] for r in read_trace(trace_dir).records if r["k"] == "msg"}
    as_json = explain(crash, "--trace-dir", str(trace_dir), "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    crash_restarts = [f for f in findings(as_json.stdout, crash) if f["kind"] == "restart"]
    assert len(crash_restarts) >= 2
    assert all(f["container"] == "main" and f["seqs"] and set(f["seqs"]) <= ids
               for f in crash_restarts)

    liveness = explain(live, "--trace-dir", str(trace_dir))
    assert liveness.returncode == 0, liveness.stderr
    print(liveness.stdout)
    killed = next(line for line in liveness.stdout.splitlines()
                  if "restart 1 of main at" in line)
    assert "liveness probe failed 2 times" in killed
    assert "HTTP 500 from /healthz" in killed
    assert "threshold 2, every 1 s" in killed
    assert "container killed with 5 s grace" in killed

    unknown = explain("nosuchpod", "--trace-dir", str(trace_dir))
    assert unknown.returncode == 1
    assert "names no pod 'nosuchpod'" in unknown.stderr and crash in unknown.stderr
