"""``kubelet-actors get pods`` end to end on a real containerd, standalone: a running pod
and a crash-looping one as kubectl prints them (table, wide, json, yaml), read from the
daemon's main port (HTTPS) as a person would run the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
import yaml_rs

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import REPO, Daemon, daemon_on, remove_every_pod, stopped_after
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NODE = "e2e-node"  # tests.e2e.daemon names its node so
WEB = f"web-{NODE}"
CRASH = f"crash-{NODE}"


def manifest(name: str, command: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                                 "command": ["sh", "-c", command]}]}})


def get(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bin.main", "get", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def crash_looping(daemon: Daemon) -> dict[str, Any] | None:
    """The crashing pod once it waits in CrashLoopBackOff after at least two restarts
    (the back-off then lasts long enough for a command to see it)."""
    pod = daemon.pod(CRASH)
    statuses = (pod or {}).get("status", {}).get("containerStatuses") or ()
    if not statuses or statuses[0].get("restartCount", 0) < 2:
        return None
    waiting = statuses[0]["state"].get("waiting") or {}
    return pod if waiting.get("reason") == "CrashLoopBackOff" else None


def test_get_pods_prints_them_as_kubectl_does(containerd: EmbeddedContainerd,
                                              cri: CRIClient) -> None:
    daemon = daemon_on(containerd, "get-pods")
    (daemon.manifests / "web.json").write_text(
        manifest("web", "trap 'exit 0' TERM; while true; do sleep 1; done"))
    (daemon.manifests / "crash.json").write_text(manifest("crash", "exit 3"))
    with stopped_after(daemon):
        daemon.start()
        web = daemon.wait_running(WEB, 60)
        crash = wait_for(lambda: crash_looping(daemon), 120, "crash in CrashLoopBackOff")
        assert crash is not None
        server = ("--server", f"https://127.0.0.1:{daemon.port}", "--insecure-skip-tls-verify")

        done = get("pods", *server)
        assert done.returncode == 0, done.stderr
        lines = [line.split() for line in done.stdout.splitlines()]
        assert lines[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        rows = {line[0]: line for line in lines[1:]}
        assert set(rows) == {WEB, CRASH}
        assert rows[WEB][1:4] == ["1/1", "Running", "0"]
        restarts = crash["status"]["containerStatuses"][0]["restartCount"]
        # "2 (15s ago)": the count, then the age of the last restart.
        assert rows[CRASH][1:3] == ["0/1", "CrashLoopBackOff"]
        assert rows[CRASH][3] == str(restarts) and rows[CRASH][4].startswith("(")
        assert rows[CRASH][5] == "ago)"
        # The columns line up: each header starts where its cells start.
        header = done.stdout.splitlines()[0]
        for line in done.stdout.splitlines()[1:]:
            assert line.index(" 0/1 " if CRASH in line else " 1/1 ") + 1 == header.index(
                "READY")

        wide = get("pods", "-o", "wide", *server)
        assert wide.returncode == 0, wide.stderr
        wide_lines = [line.split() for line in wide.stdout.splitlines()]
        assert " ".join(wide_lines[0]) == (
            "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES")
        web_row = next(line for line in wide_lines if line[0] == WEB)
        assert web_row[5:] == [web["status"]["podIPs"][0]["ip"], NODE, "<none>", "<none>"]

        listed = get("pods", "-o", "json", *server)
        assert listed.returncode == 0, listed.stderr
        document = json.loads(listed.stdout)
        assert (document["apiVersion"], document["kind"]) == ("v1", "List")
        assert sorted(p["metadata"]["name"] for p in document["items"]) == [CRASH, WEB]
        as_yaml = get("pods", "-o", "yaml", *server)
        assert as_yaml.returncode == 0, as_yaml.stderr
        parsed = yaml_rs.loads(as_yaml.stdout, parse_datetime=False)
        assert isinstance(parsed, dict)
        assert sorted(p["metadata"]["name"] for p in parsed["items"]) == [CRASH, WEB]

        one = get("pods", WEB, "-o", "json", *server)
        assert one.returncode == 0, one.stderr
        pod = json.loads(one.stdout)
        assert (pod["kind"], pod["metadata"]["name"]) == ("Pod", WEB)
        everywhere = get("pods", "-A", *server)
        assert everywhere.stdout.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
        assert {line.split()[0] for line in everywhere.stdout.splitlines()[1:]} == {"default"}

        missing = get("pods", "nosuch", *server)
        assert (missing.returncode, missing.stderr.strip()) == (
            1, 'Error from server (NotFound): pods "nosuch" not found')
        empty = get("pods", "-n", "other", *server)
        assert (empty.returncode, empty.stdout, empty.stderr) == (
            0, "", "No resources found in other namespace.\n")
        gone = get("pods", "--server", "https://127.0.0.1:1")
        assert gone.returncode == 1 and "cannot reach the kubelet" in gone.stderr
        remove_every_pod(daemon)
