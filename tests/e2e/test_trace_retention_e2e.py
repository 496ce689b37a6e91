"""A daemon's trace kept small by --trace-max-bytes and --trace-max-files, on containerd:
the oldest files go, and what is kept still shows and replays (what it can, said plainly)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import REPO, Daemon
from tests.e2e.test_daemon import manifest

pytestmark = pytest.mark.e2e

MAX_FILES = 4


def kubelet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bin.main", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_old_trace_files_are_deleted_and_the_rest_replays_or_says_why_not(
        containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    workdir = containerd.base_dir / "trace-retention" / uuid.uuid4().hex[:8]
    manifests = workdir / "manifests"
    manifests.mkdir(parents=True)
    trace_dir = workdir / "trace"
    (manifests / "a.yaml").write_text(manifest("alpha"))
    daemon = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
                    "--trace-dir", str(trace_dir), "--trace-max-bytes", "4096",
                    "--trace-max-files", str(MAX_FILES))
    try:
        daemon.start()
        daemon.wait_running("alpha-e2e-node")
        (manifests / "b.yaml").write_text(manifest("beta"))
        daemon.wait_running("beta-e2e-node")
    finally:
        daemon.stop()

    files = sorted(trace_dir.glob("trace-*.jsonl"))
    assert len(files) == MAX_FILES
    headers = [json.loads(f.read_text().split("\n", 1)[0]) for f in files]
    assert all(h["k"] == "header" and h["config"] for h in headers)
    assert headers[0]["part"] > 1  # the run's first files were deleted

    replayed = kubelet("trace", "replay", str(trace_dir))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.startswith("no divergence: replayed"), replayed.stdout
    assert "started before the first kept trace file" in replayed.stdout
    assert "deleted (--trace-max-files)" in replayed.stdout

    shown = kubelet("trace", "show", str(trace_dir), "--limit", "3")
    assert shown.returncode == 0, shown.stderr
    assert "deleted (--trace-max-files)" in shown.stdout
