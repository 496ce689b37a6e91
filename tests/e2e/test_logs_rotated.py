"""Logs never hidden by a rotation, end to end on a real containerd: a busybox writes a
burst of about 1.6 MiB ending in a known last line and then writes nothing; the daemon
runs with ``--container-log-max-size 1Mi`` and a 3 s containerLogMonitorInterval, so a
pass rotates the burst away and the current file is left empty. ``tailLines=1`` (and
``kubelet-actors logs --tail 1``) still return the last line written, where upstream's
reader, which opens the current file only, returns nothing; then the container exits,
is restarted, and ``previous=true&tailLines=1`` reads the last line back from the first
instance's rotated file.

A pass may come in the middle of a burst and rotate only its first part, leaving the
rest (the last line with it) in a current file under the size, which no later pass
rotates. So the writer goes in steps released by the test (through a file in a hostPath
volume), each a burst and its own last line: the test releases the next step only when
the current one's last line stayed in a current file under the size (at most a few).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import Daemon, remove_every_pod, stopped_after
from tests.e2e.test_log_rotation import rotating_daemon
from tests.e2e.test_logs import cli
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

POD = "burst-e2e-node"  # tests.e2e.daemon names its node e2e-node
MAX_SIZE = 2**20
STEPS = 5
"""Steps the test releases at most: each one's last line ends up rotated away unless a
pass splits its burst (it takes about a second; a pass comes every 3 s)."""

# First instance: a burst and its last line per step, each released by the test, until
# told to exit (1: OnFailure restarts it). Second instance: one line, then runs on.
WRITER = """n=$(cat /ctl/runs 2>/dev/null || echo 0); n=$((n+1)); echo $n > /ctl/runs
trap 'exit 0' TERM
if [ $n -gt 1 ]; then echo second-run; while true; do sleep 1; done; fi
i=0
while true; do
  while [ ! -e /ctl/go-$i ]; do [ -e /ctl/exit ] && exit 1; sleep 0.05; done
  head -c 800000 /dev/urandom | base64; echo last-$i; touch /ctl/done-$i; i=$((i+1))
done"""


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    with stopped_after(rotating_daemon(containerd, "logs-rotated", "burst", WRITER, "1Mi", 5,
                                       "OnFailure")) as d:
        d.start()
        d.wait_running(POD, 60.0)
        yield d
        remove_every_pod(d)


def _tail(daemon: Daemon, **query: str) -> tuple[int, str]:
    return daemon.get(f"/containerLogs/default/{POD}/writer?"
                      + urllib.parse.urlencode(query))


def _rotated_away(log: Path, line: str) -> bool:
    """Whether the burst ending in ``line`` was rotated away: the current file empty,
    the newest rotated one ending with it."""
    rotated = sorted(log.parent.glob(f"{log.name}.*"))
    try:
        return log.stat().st_size == 0 and bool(rotated) and (
            rotated[-1].read_bytes().endswith(f" {line}\n".encode()))
    except FileNotFoundError:  # between a rotation's rename and the runtime's reopen
        return False


def _size(log: Path) -> int:
    """The current file's size; counted as due between a rotation's rename and the
    runtime's reopen (the rotation is under way)."""
    try:
        return log.stat().st_size
    except FileNotFoundError:
        return MAX_SIZE


def _written(log: Path, line: str) -> Callable[[], bool]:
    """Whether ``line`` is the last one of the log: at the current file's end, or at the
    newest rotated one's with the current file empty."""
    def written() -> bool:
        try:
            return _rotated_away(log, line) or log.read_bytes().endswith(f" {line}\n".encode())
        except FileNotFoundError:
            return False
    return written


def _restarted(daemon: Daemon) -> bool:
    pod = daemon.pod(POD)
    statuses = pod["status"].get("containerStatuses", ()) if pod else ()
    return any(s["restartCount"] == 1 and "running" in s["state"] for s in statuses)


@pytest.mark.timeout(300)
def test_the_last_line_comes_back_after_its_burst_was_rotated_away(daemon: Daemon) -> None:
    ctl = daemon.workdir / "ctl"
    found = wait_for(lambda: next(daemon.pod_logs.glob(f"default_{POD}_*/writer"), None),
                     30.0, "the writer's log directory")
    assert found is not None
    log = found / "0.log"
    last = ""
    for step in range(STEPS):
        last = f"last-{step}"
        (ctl / f"go-{step}").touch()
        wait_for((ctl / f"done-{step}").exists, 60.0, f"step {step} written")
        wait_for(_written(log, last), 30.0, f"{last} in the log")
        if _rotated_away(log, last) or _size(log) >= MAX_SIZE:
            break  # rotated, or due: the next pass rotates it (nothing more is written)
        # A pass split the burst: the rest stays under the size; one more step.
    else:
        pytest.fail(f"no burst of {STEPS} was rotated away whole")
    wait_for(lambda: _rotated_away(log, last), 30.0, f"the burst ending in {last} rotated")

    # The current file is empty: upstream's reader would return nothing.
    assert _tail(daemon, tailLines="1") == (200, f"{last}\n")
    assert _tail(daemon, tailLines="1", limitBytes="4") == (200, "last")
    code, since = _tail(daemon, sinceSeconds="3600")
    assert code == 200 and since.endswith(f"\n{last}\n"), since[-200:]
    done = cli(POD, "-c", "writer", "--tail", "1", "--server",
               f"http://127.0.0.1:{daemon.read_only_port}")
    assert (done.returncode, done.stdout) == (0, f"{last}\n"), done.stderr

    # The first instance exits and is restarted: its log, rotated away, is the previous.
    (ctl / "exit").touch()
    wait_for(lambda: _restarted(daemon), 90.0, "the writer restarted once")
    wait_for(lambda: _tail(daemon, tailLines="1") == (200, "second-run\n"), 30.0,
             "the second instance's line")
    assert _tail(daemon, previous="true", tailLines="1") == (200, f"{last}\n")
    done = cli(POD, "-c", "writer", "--previous", "--tail", "1", "--server",
               f"http://127.0.0.1:{daemon.read_only_port}")
    assert (done.returncode, done.stdout) == (0, f"{last}\n"), done.stderr
