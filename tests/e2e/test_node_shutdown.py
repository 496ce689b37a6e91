"""Graceful node shutdown end to end: the daemon on a real containerd, a private system
D-Bus (dbus-daemon) and the logind stand-in (tests/logind) on it, the daemon pointed at that
bus with DBUS_SYSTEM_BUS_ADDRESS and configured with shutdownGracePeriod 20s and
shutdownGracePeriodCriticalPods 10s.

The stand-in starts with logind's InhibitDelayMaxSec below 20 s, so the daemon writes its
logind drop-in (into a directory of the test's) and reloads logind, which then allows 20 s;
the daemon takes a delay inhibitor lock. On PrepareForShutdown(true) the normal pod is
stopped before the critical one (priority 2000000000): their preStop hooks write their names
into one hostPath file in that order; both end Failed with upstream's reason, message and
DisruptionTarget condition; a pod added then is refused (NodeShutdown); the lock is
released (the stand-in reads end of file on it); ``<root-dir>/graceful_node_shutdown_state``
holds the shutdown's startTime and endTime as upstream writes them, and /metrics shows them
as ``kubelet_graceful_shutdown_start_time_seconds`` and ``..._end_time_seconds``.
PrepareForShutdown(false) (the shutdown cancelled) makes the daemon take a new lock. The
run, recorded, replays without divergence; the daemon started again shows the same two
metrics, read from the state file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import NODE, REPO, Daemon, daemon_on, stopped_after
from tests.helpers import wait_for
from tests.logind import LogindStandIn, PrivateBus

pytestmark = pytest.mark.e2e

CONFIG = "shutdownGracePeriod: 20s\nshutdownGracePeriodCriticalPods: 10s\n"
MESSAGE = "Pod was terminated in response to imminent node shutdown."


def pod(name: str, shared: Path, priority: int | None = None) -> str:
    """A pod whose preStop hook appends its name to ``shared``/order."""
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 5,
        "volumes": [{"name": "shared", "hostPath": {"path": str(shared),
                                                    "type": "DirectoryOrCreate"}}],
        "containers": [{
            "name": "main", "image": BUSYBOX_IMAGE,
            "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"],
            "volumeMounts": [{"name": "shared", "mountPath": "/shared"}],
            "lifecycle": {"preStop": {"exec": {
                "command": ["sh", "-c", f"echo {name} >> /shared/order"]}}},
        }],
    }
    if priority is not None:
        spec["priority"] = priority
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": spec})


@pytest.fixture
def logind(tmp_path: Path) -> Iterator[LogindStandIn]:
    with PrivateBus() as bus, LogindStandIn(bus.address, inhibit_delay_max=5.0,
                                            config_directory=str(tmp_path / "logind")) as li:
        yield li


def shutdown_daemon(containerd: EmbeddedContainerd, logind: LogindStandIn,
                    monkeypatch: pytest.MonkeyPatch) -> Daemon:
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", logind.address)
    daemon = daemon_on(containerd, "shutdown", "--kubelet-actors-logind-conf-dir",
                       logind.config_directory, config=CONFIG)
    daemon.flags = (*daemon.flags, "--trace-dir", str(daemon.workdir / "trace"))
    return daemon


def failed(daemon: Daemon, name: str) -> dict[str, Any]:
    """Pod ``name`` (of the node) once /pods shows it Failed."""

    def found() -> dict[str, Any] | None:
        pod = daemon.pod(f"{name}-{NODE}")
        return pod if pod is not None and pod["status"].get("phase") == "Failed" else None

    pod = wait_for(found, 30.0, f"{name} Failed in /pods")
    assert pod is not None
    return pod


def shutdown_metrics(daemon: Daemon) -> tuple[float, float]:
    """(start, end) of the last graceful shutdown as /metrics shows them."""
    code, text = daemon.get("/metrics")
    assert code == 200, text
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("kubelet_graceful_shutdown_start_time_seconds",
                    "kubelet_graceful_shutdown_end_time_seconds"):
            values[name] = float(value)
    assert "# HELP kubelet_graceful_shutdown_end_time_seconds Last graceful shutdown start " \
           "time since unix epoch in seconds" in text
    return (values["kubelet_graceful_shutdown_start_time_seconds"],
            values["kubelet_graceful_shutdown_end_time_seconds"])


def test_shutdown_stops_pods_by_priority_and_releases_the_lock(
        containerd: EmbeddedContainerd, cri: CRIClient, logind: LogindStandIn,
        monkeypatch: pytest.MonkeyPatch) -> None:
    daemon = shutdown_daemon(containerd, logind, monkeypatch)
    shared = daemon.workdir / "shared"
    (daemon.manifests / "normal.json").write_text(pod("normal", shared))
    (daemon.manifests / "critical.json").write_text(pod("critical", shared, 2000000000))
    with stopped_after(daemon.start()):
        lock = wait_for(logind.held, 30.0, "the daemon's inhibitor lock")[0]
        assert (lock.what, lock.who, lock.why, lock.mode) == (
            "shutdown", "kubelet", "Kubelet needs time to handle node shutdown", "delay")
        # logind allowed 5 s: the daemon wrote its drop-in and reloaded logind.
        dropin = Path(logind.config_directory) / "99-kubelet.conf"
        assert "InhibitDelayMaxSec=20" in dropin.read_text()
        assert logind.reloads == 1 and logind.inhibit_delay_max_usec == 20_000_000
        daemon.wait_running(f"normal-{NODE}", 60.0)
        daemon.wait_running(f"critical-{NODE}", 60.0)

        assert shutdown_metrics(daemon) == (0.0, 0.0)  # no shutdown yet
        before = time.time()
        logind.prepare_for_shutdown(True)
        wait_for(lock.released.is_set, 60.0, "the inhibitor lock released")
        after = time.time()
        for name in ("normal", "critical"):
            status = failed(daemon, name)["status"]
            assert (status["reason"], status["message"]) == ("Terminated", MESSAGE), status
            disruption = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
            assert [(c["status"], c["reason"], c["message"]) for c in disruption] == [
                ("True", "TerminationByKubelet", MESSAGE)], status["conditions"]
        # Lower priority first: the normal pod's preStop hook ran before the critical's.
        assert (shared / "order").read_text().split() == ["normal", "critical"]
        assert ("Shutdown manager completed processing shutdown event"
                in daemon.log_path.read_text())
        # upstream's state file: Go's RFC 3339 times, written before the lock was released.
        state = json.loads((daemon.workdir / "root" / "graceful_node_shutdown_state")
                           .read_text())
        assert sorted(state) == ["endTime", "startTime"], state
        started = datetime.fromisoformat(state["startTime"]).timestamp()
        ended = datetime.fromisoformat(state["endTime"]).timestamp()
        assert before <= started <= ended <= after, (before, state, after)
        # The metrics: the same times in whole seconds.
        recorded = (float(int(started)), float(int(ended)))
        assert shutdown_metrics(daemon) == recorded

        (daemon.manifests / "late.json").write_text(pod("late", shared))
        late = failed(daemon, "late")
        # Upstream's rejectPod puts "Pod was rejected: " before the admit handler's message.
        assert (late["status"]["reason"], late["status"]["message"]) == (
            "NodeShutdown", "Pod was rejected: Pod was rejected as the node is shutting down."
        ), late["status"]

        logind.prepare_for_shutdown(False)  # cancelled: a new lock is taken
        wait_for(lambda: len(logind.held()) == 1 and logind.held()[0] is not lock, 30.0,
                 "a new inhibitor lock after the cancellation")

    # The run replays: the shutdown manager's inputs (the watch's NodeShutdownEvent
    # included) are recorded messages.
    replayed = subprocess.run([sys.executable, "-m", "bin.main", "trace", "replay",
                               str(daemon.workdir / "trace")], cwd=REPO, capture_output=True,
                              text=True, timeout=300, check=False)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence: replayed" in replayed.stdout

    # Started again (no trace this time): the metrics come from the state file.
    daemon.flags = daemon.flags[:-2]
    with stopped_after(daemon.start()):
        wait_for(lambda: shutdown_metrics(daemon) == recorded, 30.0,
                 "the last shutdown's times in /metrics after the restart")


def test_shutdown_grace_period_refused_when_critical_exceeds_total(
        containerd: EmbeddedContainerd, tmp_path: Path) -> None:
    daemon = daemon_on(containerd, "shutdown", config="shutdownGracePeriod: 10s\n"
                       "shutdownGracePeriodCriticalPods: 20s\n")
    daemon.start(wait=False)
    assert daemon.proc is not None
    code = daemon.proc.wait(timeout=60)
    assert code != 0
    assert ("shutdownGracePeriodCriticalPods: invalid configuration: "
            "shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s"
            in daemon.log_path.read_text())
