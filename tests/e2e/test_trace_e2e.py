"""A real daemon run recorded with --trace-dir replays without divergence and inspects."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from actors.core.trace.reader import read_trace
from actors.kubelet import recorded
from actors.kubelet.tree import ReplayConfig
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import REPO, Daemon
from tests.e2e.test_daemon import manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e


def kubelet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bin.main", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_a_recorded_run_replays_shows_and_exports(
    containerd: EmbeddedContainerd, cri: CRIClient
) -> None:
    workdir = containerd.base_dir / "trace" / uuid.uuid4().hex[:8]
    manifests = workdir / "manifests"
    manifests.mkdir(parents=True)
    trace_dir = workdir / "trace"
    probed = """    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
"""
    (manifests / "a.yaml").write_text(manifest("alpha", extra=probed))
    (manifests / "b.yaml").write_text(manifest("beta", "echo once; exit 1"))
    daemon = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
                    "--trace-dir", str(trace_dir), "--trace-flush-frequency", "500ms")
    try:
        daemon.start()
        daemon.wait_running("alpha-e2e-node")
        (manifests / "c.yaml").write_text(manifest("gamma"))
        daemon.wait_running("gamma-e2e-node")
        (manifests / "a.yaml").unlink()
        wait_for(lambda: daemon.pod("alpha-e2e-node") is None, 30.0, "alpha to go")
    finally:
        daemon.stop()

    trace = read_trace(trace_dir)
    assert trace.header["write_every"] == 0.5  # the flag reached the writer
    # Every service the daemon recorded is a row of the table its configuration has, and
    # the replay below answers each from it (actors.kubelet.recorded).
    config = ReplayConfig.from_header(trace.header["config"])
    targets = {r["target"] for r in trace.records if r["k"] == "call"}
    assert targets - {"runtime"} <= {row.name for row in recorded.present(config)}
    assert {"runtime", "podcgroups", "volumemounts"} <= targets  # each pod's cgroup, and
    # its volume directories' mounts looked at when it is removed

    replayed = kubelet("trace", "replay", str(trace_dir))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence: replayed" in replayed.stdout

    shown = kubelet("trace", "show", str(trace_dir), "--pod", "gamma-e2e-node")
    assert shown.returncode == 0, shown.stderr
    assert "run_pod_sandbox" in shown.stdout and "UpdatePod" in shown.stdout

    out = Path(workdir / "trace.json")
    exported = kubelet("trace", "export", str(trace_dir), "-o", "perfetto", str(out))
    assert exported.returncode == 0, exported.stderr
    events = json.loads(out.read_text())["traceEvents"]
    threads = {e["args"]["name"] for e in events if e.get("ph") == "M"
               and e.get("name") == "thread_name"}
    assert {"supervisor", "pleg", "status"} <= threads
    assert any(e.get("ph") == "s" for e in events) and any(e.get("ph") == "f" for e in events)
