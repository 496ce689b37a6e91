"""``kubelet-actors explain`` on a real daemon's trace: a crash-looping pod and a pod its
liveness probe kills, on containerd, explained as a user would ask (a subprocess), first
from the running daemon's own trace (found through its --root-dir), then from the trace
directory once the daemon stopped; the evidence each finding quotes (exit codes, probe
outputs, pull errors, a failed preStop hook's output)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
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
    assert data["schema"] == 2
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


CRASH_WITH_MESSAGE = "echo 'bad config: /etc/app.conf' > /dev/termination-log; exit 42"
UNREADY = """    readinessProbe:
      exec: {command: ["sh", "-c", "echo warming up: 40%; exit 3"]}
      periodSeconds: 1
      failureThreshold: 1
"""
MISSING_IMAGE = "127.0.0.1:5000/kubelet-actors/no-such-image:404"


def evidence_of(daemon_trace: str, name: str, kind: str) -> dict[str, Any]:
    """The evidence of the newest finding of ``kind`` about pod ``name`` (``-o json``), by
    field (a pod of one container: one piece each)."""
    shown = explain(name, "--trace-dir", daemon_trace, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    found = [f for f in findings(shown.stdout, name) if f["kind"] == kind]
    return {piece["field"]: piece for piece in found[-1]["evidence"]} if found else {}


# As above: the fixtures may wait for the machine-wide lock first.
@pytest.mark.timeout(900)
def test_explain_quotes_exit_code_probe_output_and_pull_error(
    containerd: EmbeddedContainerd, cri: CRIClient
) -> None:
    """A crash loop with a termination message, a pod whose readiness probe fails, and a
    pod whose image does not exist: explain prints the exit code and the message, the
    probe's Unhealthy message and exit code, the pull error, and -o json holds them as
    fields, each with the trace message it was read from."""
    workdir = containerd.base_dir / "explain-evidence" / uuid.uuid4().hex[:8]
    manifests = workdir / "manifests"
    manifests.mkdir(parents=True)
    trace_dir = workdir / "trace"
    (manifests / "crash.yaml").write_text(manifest("crash", CRASH_WITH_MESSAGE))
    (manifests / "unready.yaml").write_text(manifest("unready", SERVE, extra=UNREADY))
    (manifests / "ghost.yaml").write_text(
        manifest("ghost", SERVE).replace(BUSYBOX_IMAGE, MISSING_IMAGE))
    daemon = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
                    "--trace-dir", str(trace_dir), "--trace-flush-frequency", "0.5s")
    crash, unready, ghost = "crash-e2e-node", "unready-e2e-node", "ghost-e2e-node"
    trace = str(trace_dir)
    try:
        daemon.start()
        wait_for(lambda: restarts(daemon, crash) >= 2, 90.0, "crash to restart twice")
        wait_for(lambda: "backOff" in evidence_of(trace, crash, "exit"), 60.0,
                 "crash to wait out a back-off")
        wait_for(lambda: "probeMessage" in evidence_of(trace, unready, "state"), 60.0,
                 "unready's probe to fail")
        wait_for(lambda: "pullMessage" in evidence_of(trace, ghost, "image"), 60.0,
                 "ghost's pull to fail")
    finally:
        daemon.stop()

    ids = {r["id"] for r in read_trace(trace_dir).records if r["k"] == "msg"}

    text = explain(crash, "--trace-dir", trace)
    assert text.returncode == 0, text.stderr
    print(text.stdout)
    assert "exited with code 42 (Error): \"bad config: /etc/app.conf\"" in text.stdout
    assert re.search(r"^ {12}exitCode: 42  \[#\d+ \d\d:\d\d:\d\d\]$", text.stdout, re.M)
    assert re.search(r'^ {12}terminationMessage: "bad config: /etc/app.conf"  \[#\d+ ',
                     text.stdout, re.M)
    assert re.search(r"^ {12}backOff: (10|20|40)  \[#\d+ ", text.stdout, re.M)
    assert "next start at " in text.stdout
    exit_ = evidence_of(trace, crash, "exit")
    assert exit_["exitCode"]["value"] == 42 and exit_["exitCode"]["seq"] in ids
    assert exit_["terminationMessage"]["value"] == "bad config: /etc/app.conf"
    assert exit_["nextStart"]["value"] > exit_["finishedAt"]["value"]

    text = explain(unready, "--trace-dir", trace)
    assert text.returncode == 0, text.stderr
    print(text.stdout)
    assert "now Running, not ready" in text.stdout
    assert "readiness probe failing since" in text.stdout
    assert 'probeMessage: "Readiness probe failed: warming up: 40%' in text.stdout
    state = evidence_of(trace, unready, "state")
    assert state["probeMessage"]["value"].startswith("Readiness probe failed: warming up: 40%")
    assert state["probeExitCode"]["value"] == 3 and state["probeExitCode"]["seq"] in ids

    text = explain(ghost, "--trace-dir", trace)
    assert text.returncode == 0, text.stderr
    print(text.stdout)
    assert "now Pending" in text.stdout
    assert f'pullMessage: "Failed to pull image \\"{MISSING_IMAGE}\\"' in text.stdout
    image = evidence_of(trace, ghost, "image")
    assert image["pullError"]["value"] == "ErrImagePull"
    assert image["image"]["value"] == MISSING_IMAGE
    assert image["pullMessage"]["value"].startswith(f'Failed to pull image "{MISSING_IMAGE}"')
    assert image["pullMessage"]["seq"] in ids
    as_yaml = explain(ghost, "--trace-dir", trace, "-o", "yaml")
    assert as_yaml.returncode == 0 and "field: pullError" in as_yaml.stdout

    # Without a trace: how to turn tracing on.
    none = explain(ghost, "--trace-dir", str(workdir / "manifests"))
    assert none.returncode == 1
    assert "start the daemon with --trace-dir DIR" in none.stderr


PRE_STOP_LINE = "prestop-e2e: draining 7 connections"
PRE_STOP = f"""    lifecycle:
      preStop:
        exec:
          command: ["sh", "-c", "echo '{PRE_STOP_LINE}'; echo 'queue busy' >&2; exit 3"]
"""


@pytest.mark.timeout(900)
def test_explain_quotes_a_failed_pre_stop_hook_s_output(
    containerd: EmbeddedContainerd, cri: CRIClient
) -> None:
    """A pod whose preStop hook prints a line and exits 3 is deleted (its manifest
    removed): the event stays upstream's "PreStopHook failed", and explain quotes what
    the hook said, and its exit code, under the deletion, naming the container."""
    workdir = containerd.base_dir / "explain-prestop" / uuid.uuid4().hex[:8]
    manifests = workdir / "manifests"
    manifests.mkdir(parents=True)
    trace_dir = workdir / "trace"
    (manifests / "drain.yaml").write_text(manifest("drain", SERVE, extra=PRE_STOP))
    daemon = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
                    "--trace-dir", str(trace_dir), "--trace-flush-frequency", "0.5s")
    drain = "drain-e2e-node"
    try:
        daemon.start()
        daemon.wait_running(drain, 60.0)
        (manifests / "drain.yaml").unlink()
        wait_for(lambda: daemon.pod(drain) is None, 60.0, "the pod to be removed")
    finally:
        daemon.stop()

    records = read_trace(trace_dir).records
    hooks = [r for r in records if r["k"] == "msg" and r.get("type") == "RecordEvent"
             and r["body"]["reason"] == "FailedPreStopHook"]
    assert [r["body"]["message"] for r in hooks] == ["PreStopHook failed"]
    assert PRE_STOP_LINE not in json.dumps(hooks[0]["body"]["message"])

    text = explain(drain, "--trace-dir", str(trace_dir))
    assert text.returncode == 0, text.stderr
    print(text.stdout)
    deletion = next(line for line in text.stdout.splitlines() if " deletion " in line)
    assert "removed from its source" in deletion
    assert f'main killed with 5 s grace, its preStop hook failed (exit code 3: "{PRE_STOP_LINE}' \
        in deletion
    assert re.search(r'^ {12}hookOutput: "' + re.escape(PRE_STOP_LINE) + r'\\nqueue busy"  '
                     r"\[#\d+ ", text.stdout, re.M), text.stdout
    assert re.search(r"^ {12}hookExitCode: 3  \[#\d+ ", text.stdout, re.M), text.stdout

    as_json = explain(drain, "--trace-dir", str(trace_dir), "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    (found,) = [f for f in findings(as_json.stdout, drain) if f["kind"] == "deletion"]
    pieces = {p["field"]: p for p in found["evidence"]}
    assert pieces["hookMessage"]["value"] == "PreStopHook failed"
    assert pieces["hookOutput"]["value"] == f"{PRE_STOP_LINE}\nqueue busy"
    assert pieces["hookExitCode"]["value"] == 3
    assert {p["container"] for p in found["evidence"]} == {"main"}
    assert pieces["hookOutput"]["seq"] == hooks[0]["id"] and hooks[0]["id"] in found["seqs"]
