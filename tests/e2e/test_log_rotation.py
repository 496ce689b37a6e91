"""Container log rotation end to end on a real containerd: a busybox writes 60 MiB of
base64 to stdout while the daemon runs with ``--container-log-max-size 10Mi
--container-log-max-files 5`` and a 3 s containerLogMonitorInterval (upstream's
minimum); at the end at most 5 files are left in the container's log directory, the
older rotated ones gzip-compressed, the newest rotated one not, and the newest lines
are read through /containerLogs and ``kubelet-actors logs``; a follow started before the
first line reads every line once, in order, across every rotation.

What can be asserted honestly: upstream rotates a log once a pass finds it at or over
the size, so a rotated file is never under 10 MiB, and is over it by what the container
wrote since the last pass. A writer left to itself would write the 60 MiB between two
passes on a fast machine (one 60 MiB rotated file) or not on a slow one. So the writer
goes in steps of 1 MiB of random bytes (about 2 MiB of log file once base64-encoded and
framed as CRI records), each released by the test through a file in a hostPath
volume, and the test releases the next step only once the current log is under the
size again (a pass has rotated it, or it was not due). Every rotated file then holds
at least 10 MiB and at most 10 MiB + one step + what was still on its way from the
pipe into the file when the test looked (at most a pipe's and containerd's buffers):
10 MiB + 3 MiB is the bound, whatever the machine's speed. The current log is under
10 MiB at the end, when the last pass has run. The test also waits, before each
release, for the follow to have read the step: it then has at most one rotation to
cross between two reads, which is what a follow must handle (one that lags several
rotations behind goes on in the file at the log's path, skipping the files between, as
upstream's does).
"""

from __future__ import annotations

import gzip
import http.client
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import Daemon, daemon_on, stopped_after
from tests.e2e.test_logs import cli, scripted_pod
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

POD = "logrot-e2e-node"  # tests.e2e.daemon names its node e2e-node
MAX_SIZE = 10 * 2**20
MAX_FILES = 5
STEPS = 45
STEP_RAW = 2**20  # random bytes per step: 45 MiB, 60 MiB once base64-encoded
BOUND = MAX_SIZE + 3 * 2**20
"""A rotated file's most: the size, one step of log (about 2 MiB), and what was in
flight when the test looked (see the module)."""
END = "the-end"
STARTED = len("started\n")
_ENCODED = (STEP_RAW + 2) // 3 * 4
STEP_BYTES = _ENCODED + -(-_ENCODED // 76)
"""What a follow reads of one step: base64 in lines of 76 characters."""

WRITER = f"""echo started; i=0
while [ $i -lt {STEPS} ]; do
  while [ ! -e /ctl/go-$i ]; do sleep 0.05; done
  head -c {STEP_RAW} /dev/urandom | base64
  touch /ctl/done-$i; i=$((i+1))
done
while [ ! -e /ctl/go-end ]; do sleep 0.05; done
echo {END}; touch /ctl/finished
trap 'exit 0' TERM; while true; do sleep 1; done"""


def rotating_daemon(containerd: EmbeddedContainerd, group: str, name: str, writer: str,
                    max_size: str, max_files: int, restart_policy: str = "") -> Daemon:
    """A daemon (not started) whose rotation pass runs every 3 s (upstream's least
    containerLogMonitorInterval) and rotates a container's log at ``max_size``, keeping
    ``max_files``; its one pod, ``name``, runs ``writer`` in its container ``writer``,
    with <workdir>/ctl at /ctl."""
    daemon = daemon_on(containerd, group, "--container-log-max-size", max_size,
                       "--container-log-max-files", str(max_files),
                       config="containerLogMonitorInterval: 3s\n")
    (daemon.manifests / f"{name}.yaml").write_text(scripted_pod(
        name, daemon.workdir / "ctl", {"writer": writer}, restart_policy))
    return daemon


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    with stopped_after(rotating_daemon(containerd, "logrot", "logrot", WRITER, "10Mi",
                                       MAX_FILES)) as d:
        d.start()
        d.wait_running(POD, 60.0)
        yield d


class Follower:
    """``/containerLogs?follow=true`` read on a thread until the writer's last line."""

    def __init__(self, daemon: Daemon) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", daemon.read_only_port,
                                               timeout=120)
        self.conn.request("GET", f"/containerLogs/default/{POD}/writer?follow=true")
        self.response = self.conn.getresponse()
        self.data = bytearray()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while not self.data.endswith(f"{END}\n".encode()):
                chunk = self.response.read1(1 << 20)
                if not chunk:
                    return
                self.data += chunk
        except BaseException as err:  # shown by the test
            self.error = err

    def has(self, size: int) -> Callable[[], bool]:
        """Whether the follow has read ``size`` bytes (a condition to wait for)."""
        return lambda: len(self.data) >= size

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def follower(daemon: Daemon) -> Iterator[Follower]:
    """A follow from the start (the writer's first line, then it waits for its first
    go; the response begins with the first line): it must go on in each new file after
    each rotation."""
    f = Follower(daemon)
    try:
        yield f
    finally:
        f.close()


def _uncompressed_size(path: Path) -> int:
    with gzip.open(path, "rb") as f:
        return sum(len(chunk) for chunk in iter(lambda: f.read(1 << 20), b""))


@pytest.mark.timeout(900)  # 60 MiB in 45 steps through containerd, a pass per rotation
def test_a_60_mib_writer_is_rotated_compressed_and_capped(daemon: Daemon,
                                                         follower: Follower) -> None:
    ctl = daemon.workdir / "ctl"
    found = wait_for(lambda: next(daemon.pod_logs.glob(f"default_{POD}_*/writer"), None),
                     30.0, "the writer's log directory")
    assert found is not None
    log_dir: Path = found
    current = log_dir / "0.log"

    def under_the_size() -> bool:
        try:
            return current.stat().st_size < MAX_SIZE
        except FileNotFoundError:  # between a rotation's rename and the runtime's reopen
            return False

    for step in range(STEPS):
        (ctl / f"go-{step}").touch()
        done_file = ctl / f"done-{step}"
        wait_for(done_file.exists, 60.0, f"step {step} written")
        # The follow has read the step before the next one: at most one rotation
        # between two of its reads (a follow that lags further would skip a whole file,
        # as upstream's would: it goes on in the file at the log's path).
        wait_for(follower.has(STARTED + (step + 1) * STEP_BYTES), 60.0,
                 f"the follow to read step {step}")
        wait_for(under_the_size, 30.0, f"the log under the size after step {step}")
    # The last line once the log is under the size: it lands in the current file (a few
    # bytes more could only reach the size if the file were within them of it).
    (ctl / "go-end").touch()
    wait_for(lambda: (ctl / "finished").exists(), 30.0, "the writer to finish")
    wait_for(lambda: current.read_bytes().endswith(f" {END}\n".encode()), 30.0,
             "the last line in the current log")

    files = sorted(p.name for p in log_dir.iterdir())
    rotated = [n for n in files if n != "0.log"]
    assert "0.log" in files and len(files) <= MAX_FILES, files
    assert all(re.fullmatch(r"0\.log\.\d{8}-\d{6}(\.gz)?", n) for n in rotated), files
    assert not rotated[-1].endswith(".gz"), f"the newest rotated one stays plain: {files}"
    assert all(n.endswith(".gz") for n in rotated[:-1]), f"the older ones compressed: {files}"
    sizes = {n: _uncompressed_size(log_dir / n) if n.endswith(".gz")
             else (log_dir / n).stat().st_size for n in rotated}
    assert all(MAX_SIZE <= s <= BOUND for s in sizes.values()), sizes
    assert current.stat().st_size < MAX_SIZE
    # About 90 MiB of log went through: more rotations than files kept, so old ones were
    # removed (each rotation is logged with the pod and container).
    rotations = [line for line in daemon.log_path.read_text(errors="replace").splitlines()
                 if "rotated container log" in line]
    assert len(rotations) > MAX_FILES, rotations
    assert all(f"{POD} [" in line and " writer: " in line for line in rotations), rotations[:2]

    # The newest lines, through the HTTP API and the CLI; the whole log is what the
    # files kept hold, the rotated ones first (the first lines went with the oldest).
    query = urllib.parse.urlencode({"tailLines": "1"})
    assert daemon.get(f"/containerLogs/default/{POD}/writer?{query}") == (200, f"{END}\n")
    code, body = daemon.get(f"/containerLogs/default/{POD}/writer")
    assert code == 200
    *data, last, tail = body.split("\n")
    assert (last, tail) == (END, ""), body[-300:]
    assert all(re.fullmatch(r"[A-Za-z0-9+/=]{1,76}", line) for line in data)
    done = cli(POD, "-c", "writer", "--tail", "1", "--server",
               f"http://127.0.0.1:{daemon.read_only_port}")
    assert (done.returncode, done.stdout) == (0, f"{END}\n"), done.stderr

    # The follow saw every line once, in order, across every rotation.
    follower.thread.join(120.0)
    assert follower.error is None and not follower.thread.is_alive()
    assert len(follower.data) == STARTED + STEPS * STEP_BYTES + len(END) + 1
    lines = bytes(follower.data).split(b"\n")
    assert lines[0] == b"started" and lines[-2:] == [END.encode(), b""]
    assert all(re.fullmatch(rb"[A-Za-z0-9+/=]{1,76}", line) for line in lines[1:-2])
