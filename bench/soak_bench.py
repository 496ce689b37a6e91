"""A node that runs for a long time: does anything the daemon keeps grow?

    .venv/bin/python -m bench.soak_bench [--minutes 30] [--sample 15] [--daemon-arg ARG]...

One private embedded containerd (actors.app.testbed.SOAK, under the machine-wide lock unless
``--share-machine``: a soak measures growth, not speed, and its bed's dirs, bridge and
subnet are its own, so it may run beside drills and tests) and
``bin/kubelet-actors`` on it, running a mix of pods:

- crash-looping: containers that exit 1 at once under restartPolicy Always (the back-off
  ceiling set to 1 s, upstream's KubeletCrashLoopBackOffMax, so they restart every few
  seconds instead of every 5 minutes: the accelerated clock of this soak);
- log-heavy: containers writing about 250 KB/s to stdout (logs rotated at 1 MiB, 3 files);
- churned: pods created, waited for until Running, and deleted, one after another.

Every ``--sample`` seconds it prints the runtime's containers, sandboxes and images, the
bytes under the pod logs dir, and the daemon's RSS, threads and open files. At the end a
table compares each line's mean over the middle third of the run with the last third: a
line that keeps growing after warm-up shows it there. Container and image garbage
collection run on short periods (``--daemon-arg`` passes more flags). Not a test: nothing
here asserts; it prints.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.testbed import (
    SOAK,
    machine_lock,
    own_cgroup_root,
    private_containerd,
    serve_images,
)
from bench.daemon_bench import POLL_BULK, Bench, ProcStat, pod_uid, quiet_logs, running, wait

CRASH = "exit 1"
LOGS = 'while true; do yes "kubelet-actors soak: a line of log for rotation" | head -n 2500; ' \
       "sleep 0.5; done"
CHURN = "trap 'exit 0' TERM; sleep 2147483647 & wait"

CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates:
  KubeletCrashLoopBackOffMax: true
crashLoopBackOff:
  maxContainerRestartPeriod: 1s
containerLogMaxSize: 1Mi
containerLogMaxFiles: 3
containerLogMonitorInterval: 3s
imageMinimumGCAge: 10s
"""
"""Upstream's KubeletConfiguration fields for an accelerated soak."""


@dataclass(frozen=True)
class Sample:
    """One look at the node."""

    at: float
    containers: int
    sandboxes: int
    images: int
    log_bytes: int
    log_files: int
    log_largest: int
    rss_mib: float
    threads: int
    open_files: int


LINES = ("containers", "sandboxes", "images", "log_bytes", "log_files", "log_largest", "rss_mib",
         "threads", "open_files")


def log_usage(root: Path) -> tuple[int, int, int]:
    """Bytes, files and the largest file's bytes under the pod logs dir (the live logs,
    rotated ones and their .gz).

    The bytes follow the log-heavy pods' write rate (a log grows past the rotation size
    until the next check), so they swing with the machine's load; the files and the
    largest file show rotation's bound."""
    total = files = largest = 0
    for path, _, names in os.walk(root):
        for name in names:
            try:
                size = os.lstat(os.path.join(path, name)).st_size
            except OSError:
                continue
            total += size
            largest = max(largest, size)
            files += 1
    return total, files, largest


class Soak:
    def __init__(self, bench: Bench, console: Console, crash: int, logs: int) -> None:
        self.b = bench
        self.console = console
        self.crash = [f"crash-{i}" for i in range(crash)]
        self.logs = [f"logs-{i}" for i in range(logs)]
        self.stop = threading.Event()
        self.churned = 0
        self.churn_errors: list[str] = []

    def sample(self, started: float) -> Sample:
        client, proc = self.b.client, ProcStat(self.b.daemon.pid)
        return Sample(time.perf_counter() - started, len(client.list_containers()),
                      len(client.list_pod_sandbox()), len(client.list_images()),
                      *log_usage(self.b.daemon.logs_dir), proc.rss_mib(), proc.threads(),
                      len(os.listdir(f"/proc/{self.b.daemon.pid}/fd")))

    def churn(self) -> None:
        """Create a pod, wait until it runs, delete it, until told to stop."""
        d = self.b.daemon
        i = 0
        while not self.stop.is_set():
            name = f"churn-{i % 4}"
            uid = pod_uid(name, "daemon")
            try:
                d.write(name, script=CHURN)
                wait(functools.partial(lambda u: running(d.pods().get(u)), uid),
                     POLL_BULK * 5, 120, f"{name} Running")
                (d.manifests / f"{name}.yaml").unlink()
                wait(functools.partial(self.b.gone, {uid}), POLL_BULK * 5, 120, f"{name} gone")
                self.churned += 1
            except Exception as err:  # a stuck churn is a finding, printed at the end
                self.churn_errors.append(f"{name}: {err}")
                (d.manifests / f"{name}.yaml").unlink(missing_ok=True)
            i += 1
            self.stop.wait(1.0)

    def run(self, minutes: float, every: float) -> list[Sample]:
        d = self.b.daemon
        d.start()
        for name in self.crash:
            d.write(name, script=CRASH)
        for name in self.logs:
            d.write(name, script=LOGS)
        churner = threading.Thread(target=self.churn, name="churn", daemon=True)
        started = time.perf_counter()
        churner.start()
        samples: list[Sample] = []
        try:
            while time.perf_counter() - started < minutes * 60:
                samples.append(self.sample(started))
                s = samples[-1]
                self.console.print(
                    f"{s.at / 60:5.1f} min: {s.containers} containers, {s.sandboxes} "
                    f"sandboxes, {s.images} images, {s.log_bytes / 2**20:.1f} MiB of logs in "
                    f"{s.log_files} files (largest {s.log_largest / 2**20:.2f} MiB), "
                    f"RSS {s.rss_mib:.0f} MiB, {s.threads} threads, {s.open_files} files; "
                    f"{self.churned} churned")
                self.stop.wait(every)
        finally:
            self.stop.set()
            churner.join(timeout=300)
            for name in (*self.crash, *self.logs):
                (d.manifests / f"{name}.yaml").unlink(missing_ok=True)
            wait(lambda: not self.b.client.list_pod_sandbox(), POLL_BULK * 10, 300,
                 "every pod gone")
        return samples


def trend_table(samples: list[Sample]) -> Table:
    third = max(len(samples) // 3, 1)
    middle, last = samples[third:2 * third], samples[-third:]
    t = Table(title=f"each line after warm-up: mean of the middle third ({len(middle)} "
                    f"samples) against the last third ({len(last)})")
    for col in ("line", "first", "middle third", "last third", "growth", "max"):
        t.add_column(col, justify="left" if col == "line" else "right")
    for line in LINES:
        first = float(getattr(samples[0], line))
        mid = statistics.mean(float(getattr(s, line)) for s in middle)
        end = statistics.mean(float(getattr(s, line)) for s in last)
        top = max(float(getattr(s, line)) for s in samples)
        growth = f"{(end - mid) / mid * 100:+.1f}%" if mid else "-"
        t.add_row(line, f"{first:.0f}", f"{mid:.1f}", f"{end:.1f}", growth, f"{top:.0f}")
    return t


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="how long (default 30)")
    parser.add_argument("--sample", type=float, default=15.0,
                        help="seconds between samples (default 15)")
    parser.add_argument("--crash", type=int, default=3, help="crash-looping pods (default 3)")
    parser.add_argument("--logs", type=int, default=3, help="log-heavy pods (default 3)")
    parser.add_argument("--daemon-arg", action="append", default=[], metavar="ARG",
                        help="one more flag for the daemon (repeatable)")
    parser.add_argument("--share-machine", action="store_true",
                        help="run without the machine-wide lock, beside other users")
    args = parser.parse_args(argv)
    console = Console(width=170)
    if os.geteuid() != 0:
        console.print("run as root: it starts containerd and makes a bridge")
        return 2
    logger.remove()
    logger.add(sys.stderr, level="INFO")
    lock = contextlib.nullcontext() if args.share_machine else machine_lock(SOAK)
    # Its own cgroup root: the QoS cgroups under / belong to the kubelets it runs beside.
    with lock, serve_images(), own_cgroup_root(SOAK) as cgroup_root, \
            private_containerd(SOAK) as emb:
        config = emb.base_dir / "soak-kubelet-config.yaml"
        config.write_text(CONFIG)
        bench = Bench(emb, console, quick=True,
                      daemon_args=("--config", str(config), "--cgroup-root", cgroup_root,
                                   *args.daemon_arg))
        soak = Soak(bench, console, args.crash, args.logs)
        try:
            with quiet_logs(bench.work / "bench.log"):
                bench.prepare()
                samples = soak.run(args.minutes, args.sample)
        finally:
            bench.daemon.stop()
            bench.client.close()
    console.print(trend_table(samples))
    console.print(f"{soak.churned} pods churned; churn problems: "
                  + ("; ".join(soak.churn_errors[:5]) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
