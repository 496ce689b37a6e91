"""Upstream's flag habits on a real containerd, through the daemon as a unit file starts it:
``--v N`` picks the log lines written (klog's numbers: 4 adds DEBUG), a boolean flag takes
``=false``, ``=t`` and the bare form, and a bad value of any type (a number, a duration, an
IP, a map, a choice), an unknown flag or a missing value stops the start with upstream's
words and exit code 2 before anything runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.conftest import REPO
from tests.e2e.daemon import Daemon, daemon_on
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

POD = "habits-e2e-node"
TIMEOUT = 60.0


def _pod() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "habits"},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                                     "command": ["grep", "Seccomp:", "/proc/self/status"]}]}}


@pytest.fixture
def started(containerd: EmbeddedContainerd, cri: CRIClient,
            request: pytest.FixtureRequest) -> Iterator[Daemon]:
    """A daemon with the test's flags and one pod that prints its seccomp mode; stopped at
    the end (the ``cri`` fixture removes what it made)."""
    daemon = daemon_on(containerd, "flag-habits", *request.param)
    (daemon.manifests / "habits.yaml").write_text(json.dumps(_pod()))
    try:
        yield daemon.start()
    finally:
        daemon.stop()
        print(daemon.log())  # pytest shows it when the test failed


def _seccomp_mode(daemon: Daemon) -> str:
    def done() -> dict[str, Any] | None:
        pod = daemon.pod(POD)
        return pod if pod and pod["status"].get("phase") in ("Succeeded", "Failed") else None

    pod = wait_for(done, TIMEOUT, f"{POD} Succeeded or Failed")
    assert pod is not None
    code, body = daemon.get(f"/containerLogs/default/{POD}/main")
    assert code == 200 and pod["status"]["phase"] == "Succeeded", (pod["status"], body)
    match = re.search(r"^Seccomp:\s*(\d)", body, re.MULTILINE)
    assert match, body
    return match.group(1)


@pytest.mark.parametrize(("started", "mode", "debug"), [
    # upstream's spellings, as unit files write them; the last --v given wins
    (("--v=4", "--seccomp-default=t", "--cgroups-per-qos=true",
      "--local-storage-capacity-isolation=false"), "2", True),
    (("--v", "2", "--seccomp-default=false", "--cgroups-per-qos"), "0", False),
    (("-v", "0", "--seccomp-default"), "2", False),
], indirect=["started"], ids=["v4-seccomp-t", "v2-seccomp-false", "v0-seccomp-bare"])
def test_v_and_boolean_flags_as_upstream_writes_them(
        started: Daemon, mode: str, debug: bool) -> None:
    # seccomp mode 2 is a filter (RuntimeDefault), 0 none (Unconfined)
    assert _seccomp_mode(started) == mode
    log = started.log_path.read_text(errors="replace")
    watching = re.search(r"DEBUG .*watching .* for manifests", log)
    assert bool(watching) is debug, log[-3000:]
    assert (" DEBUG " in log) is debug


@pytest.mark.parametrize(("flags", "words"), [
    (["--v=high"], 'invalid argument "high" for "-v, --v" flag: strconv.ParseUint: parsing '
                   '"high": invalid syntax'),
    (["--seccomp-default=yes"], 'invalid argument "yes" for "--seccomp-default" flag: '
                                'strconv.ParseBool: parsing "yes": invalid syntax'),
    (["--max-pods", "abc"], 'invalid argument "abc" for "--max-pods" flag: strconv.ParseInt: '
                            'parsing "abc": invalid syntax'),
    (["--port=70000000000"], 'invalid argument "70000000000" for "--port" flag: '
                             'strconv.ParseInt: parsing "70000000000": value out of range'),
    (["--sync-frequency=90"], 'invalid argument "90" for "--sync-frequency" flag: time: '
                              'missing unit in duration "90"'),
    (["--address", "localhost"], 'invalid argument "localhost" for "--address" flag: '
                                 '"localhost" is not a valid IP address'),
    (["--eviction-hard", "memory.available=1Gi"],
     'invalid argument "memory.available=1Gi" for "--eviction-hard" flag: malformed pair, '
     "expect string<string"),
    (["--cgroup-driver", "cgroups"], 'invalid argument "cgroups" for "--cgroup-driver" flag: '
                                     'supported values: "cgroupfs", "systemd"'),
    (["--maxpods=3"], "unknown flag: --maxpods"),
    (["--max-pods"], "flag needs an argument: --max-pods"),
], ids=["v", "bool", "int32", "int32-range", "duration", "ip", "map", "choice", "unknown",
        "no-value"])
def test_a_bad_value_stops_the_start_in_pflag_s_words(tmp_path: Path, flags: list[str],
                                                       words: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bin.main", "--pod-manifest-path", str(tmp_path),
         "--root-dir", str(tmp_path / "root"), *flags],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2, proc.stderr
    # upstream's kubelet: "Error: failed to parse kubelet flag: <pflag's error>" first
    assert proc.stderr.splitlines()[0] == f"Error: failed to parse kubelet flag: {words}", (
        proc.stderr)
    assert not (tmp_path / "root").exists()  # nothing started


@pytest.mark.parametrize("started", [("--v=0", "--vmodule=fil?=4,routes=0")], indirect=True,
                         ids=["file-source-at-4"])
def test_vmodule_gives_matching_files_their_own_verbosity(started: Daemon) -> None:
    """klog's --vmodule: the file source (actors/kubelet/sources/file.py) writes its DEBUG
    lines at 4 while every other file keeps --v=0's INFO (routes=0 is dropped, as klog
    drops it: the HTTP routes the test calls write no DEBUG line)."""
    _seccomp_mode(started)  # the pod ran, the test's requests were served
    log = started.log_path.read_text(errors="replace")
    debug = [line for line in log.splitlines() if " DEBUG " in line]
    assert any(re.search(r"watching .* for manifests", line) for line in debug), log[-3000:]
    others = [line for line in debug
              if not re.search(r"watching .* for manifests|file source \(", line)]
    assert not others, others
