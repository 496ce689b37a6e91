"""A log follow of a container writing ~10 MB/s: what the daemon's CPU pays for it,
against a reader of the log file itself.

    .venv/bin/python -m bench.log_follow_bench [--seconds S] [--line-bytes N ...]

One private embedded containerd (actors.app.testbed, under the machine-wide lock) and
``bin/kubelet-actors`` against it. For each line length, two static pods run a busybox
that waits for its go file (a hostPath), then writes 1 MiB blocks of N-byte lines with
a 100 ms pause after each (about 10 MB/s) for S seconds, and exits.

1. ``GET /containerLogs/...?follow=true`` on the read-only port from this process,
   started before the go: the bytes received against the bytes written (the follow must
   keep up and miss nothing), the daemon's CPU (utime+stime of its /proc/<pid>/stat)
   while it runs, less the daemon's idle CPU over as long a window measured just before.
2. The same container, read directly: a child process follows the log file as the
   daemon's reader waits for it (1 MiB reads, inotify and a 10 ms pause between them, a
   CRI check every 0.5 s whether the container runs) without parsing or sending it, and
   its CPU is measured the same way.

Printed: the rate written, bytes received == written, the daemon's added CPU in cores
(the issue's target: <= 0.05 of a core over reading the file directly) and the direct
reader's. Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from actors.app.testbed import BENCH, BUSYBOX_IMAGE, machine_lock, private_containerd, serve_images

REPO = Path(__file__).resolve().parents[1]
NODE = "bench-node"
BLOCK = 1 << 20
TICK = os.sysconf("SC_CLK_TCK")

WRITER = """yes "$(head -c $(({line} - 1)) /dev/zero | tr '\\0' x)" \\
    | head -n $((1048576 / {line})) > /tmp/block
while [ ! -f /ctl/go-{name} ]; do usleep 20000; done
i=0; while [ $i -lt $(({seconds} * 10)) ]; do cat /tmp/block; usleep 80000; i=$((i+1)); done"""

DIRECT = """
import os, sys, time
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerState
from runtime.kuberuntime.inotify import DirectoryWatch
path, endpoint, cid = sys.argv[1:4]
cri = CRIClient(endpoint)
watch = DirectoryWatch(os.path.dirname(path))
total = 0
checked = time.monotonic()
with open(path, "rb") as f:
    alive = True
    while True:
        data = f.read(1 << 20)
        if data:
            total += len(data)
            continue
        if not alive:
            break
        if time.monotonic() - checked >= 0.5:
            checked = time.monotonic()
            if cri.container_status(cid).state != ContainerState.RUNNING:
                alive = False
                continue
        if watch.wait(0.5):
            time.sleep(0.01)
print(total)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def manifest(name: str, line: int, seconds: int, ctl: Path) -> str:
    script = WRITER.format(line=line, name=name, seconds=seconds)
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes: [{{name: ctl, hostPath: {{path: {ctl}, type: DirectoryOrCreate}}}}]
  containers:
  - name: w
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(script)}]
    volumeMounts: [{{name: ctl, mountPath: /ctl}}]
"""


class Daemon:
    def __init__(self, work: Path, endpoint: str) -> None:
        self.work = work
        self.manifests = work / "manifests"
        self.manifests.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.endpoint = endpoint
        args = [sys.executable, "-m", "bin.main", "--container-runtime-endpoint", endpoint,
                "--pod-manifest-path", str(self.manifests), "--root-dir", str(work / "root"),
                "--pod-logs-dir", str(work / "logs"), "--node-name", NODE,
                "--port", str(free_port()), "--read-only-port", str(self.port),
                "--healthz-port", str(free_port()), "--log-level", "INFO"]
        with (work / "kubelet.log").open("ab") as log:
            self.proc = subprocess.Popen(args, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                         env={**os.environ, "PYTHONPATH": str(REPO)})
        self.wait(lambda: self.get("/healthz/ping")[0] == 200, "the daemon")

    def get(self, path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def wait(self, predicate: object, what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, http.client.HTTPException, KeyError, ValueError):
                if predicate():  # type: ignore[operator]
                    return
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what}; see {self.work / 'kubelet.log'}")

    def container(self, pod: str) -> dict[str, object]:
        """The running container's status in /pods, or {}."""
        items = json.loads(self.get("/pods")[1])["items"]
        for item in items:
            if item["metadata"]["name"] == f"{pod}-{NODE}":
                for status in item["status"].get("containerStatuses", ()):
                    if "running" in status["state"]:
                        return dict(status)
        return {}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Row:
    line: int
    written: int
    seconds: float
    received: int
    daemon_added: float
    direct_received: int
    direct_cpu: float
    direct_seconds: float


def run(daemon: Daemon, line: int, seconds: int) -> Row:
    ctl = daemon.work / "ctl"
    names = (f"follow{line}", f"direct{line}")
    for name in names:
        (daemon.manifests / f"{name}.yaml").write_text(manifest(name, line, seconds, ctl))
    for name in names:
        daemon.wait(lambda n=name: daemon.container(n), f"{name} running")
    block = (BLOCK // line) * line
    written = block * seconds * 10

    # 1. Through the daemon: idle CPU first, over as long a window.
    idle_start, started = cpu_seconds(daemon.proc.pid), time.monotonic()
    time.sleep(seconds)
    idle_rate = (cpu_seconds(daemon.proc.pid) - idle_start) / (time.monotonic() - started)
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=60)
    conn.request("GET", f"/containerLogs/default/{names[0]}-{NODE}/w?follow=true")
    cpu0, t0 = cpu_seconds(daemon.proc.pid), time.monotonic()
    # The answer starts with the first line (the daemon sends its headers with it).
    (ctl / f"go-{names[0]}").touch()
    resp = conn.getresponse()
    received = 0
    while chunk := resp.read1(1 << 20):
        received += len(chunk)
    elapsed = time.monotonic() - t0
    used = cpu_seconds(daemon.proc.pid) - cpu0
    conn.close()

    # 2. The file itself, by a child process.
    status = daemon.container(names[1])
    cid = str(status["containerID"]).partition("://")[2]
    uid = next(p for p in (daemon.work / "logs").iterdir() if names[1] in p.name)
    path = uid / "w" / "0.log"
    child = subprocess.Popen([sys.executable, "-c", DIRECT, str(path), daemon.endpoint, cid],
                             cwd=REPO, stdout=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    time.sleep(0.5)  # its imports, out of the measured window
    d_cpu0, d0 = cpu_seconds(child.pid), time.monotonic()
    (ctl / f"go-{names[1]}").touch()
    # CPU read while the process still exists: wait for its output to close first.
    assert child.stdout is not None
    out = child.stdout.read()
    d_elapsed = time.monotonic() - d0
    direct_cpu = cpu_seconds(child.pid) - d_cpu0 if Path(f"/proc/{child.pid}").exists() else 0.0
    child.wait()
    for name in names:
        (daemon.manifests / f"{name}.yaml").unlink()
    return Row(line, written, elapsed, received, used - idle_rate * elapsed,
               int(out or 0), direct_cpu, d_elapsed)


@contextlib.contextmanager
def bench_daemon(base: Path, endpoint: str) -> Iterator[Daemon]:
    daemon = Daemon(base / "log-follow", endpoint)
    try:
        yield daemon
    finally:
        daemon.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.log_follow_bench",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=10, help="seconds of writing (10)")
    parser.add_argument("--line-bytes", type=int, nargs="+", default=[1000, 200],
                        help="line lengths to try (1000 200)")
    args = parser.parse_args(argv)
    console = Console()
    rows: list[Row] = []
    with machine_lock(BENCH), serve_images(), private_containerd(BENCH) as emb, \
            bench_daemon(emb.base_dir, emb.endpoint) as daemon:
        for line in args.line_bytes:
            rows.append(run(daemon, line, args.seconds))
    table = Table(title="log follow of a container writing ~10 MB/s")
    for column in ("line bytes", "written MB/s", "received == written", "daemon added CPU",
                   "direct reader CPU", "added - direct"):
        table.add_column(column)
    for r in rows:
        added = r.daemon_added / r.seconds
        direct = r.direct_cpu / r.direct_seconds
        table.add_row(str(r.line), f"{r.written / r.seconds / 1e6:.1f}",
                      f"{r.received == r.written} ({r.received / 1e6:.1f} MB)",
                      f"{added:.3f} cores", f"{direct:.3f} cores", f"{added - direct:+.3f} cores")
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
