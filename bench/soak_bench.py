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
- log-heavy and crash-looping (``--loud``): 1.3 MiB of log in 3 s, then exit 1: each
  instance's log is rotated while it runs, and container GC must take the rotated files
  with the instance (upstream's removeContainer cleans them; without that they piled up
  in the pod's log dir, a few MiB a minute, until the pod was deleted);
- churned: pods created, waited for until Running, and deleted, one after another.

Every ``--sample`` seconds (jittered by +-50%) it prints the runtime's containers,
sandboxes and images, the bytes under the pod logs dir, and the daemon's RSS, threads and
open files. At the end a table compares each line's mean over the middle third of the run
with the last third: a line that keeps growing after warm-up shows it there. Container and
image garbage collection run on short periods (``--daemon-arg`` passes more flags). Not a
test: nothing here asserts; it prints.

The log bytes are a sawtooth: each log-heavy pod's current log grows to the rotation size
and is renamed at the next 3 s pass, every 5 s or so, and the pods write in step. Sampled
every 15-20 s, a period close to a multiple of the rotation passes', the samples fall at
nearly the same point of the teeth for minutes at a time: their thirds' means moved by 6 to
8% with nothing growing (on 2026-11-26, 14 minutes: the 15 s samples of the current logs
averaged half the 1 s looks' mean, and the 15 s samples' total rose 3.4% from the middle
third to the last while the 1 s looks' fell 2.9%). So the log lines are also looked at
every ``--log-every`` second (jittered too) on a thread of their own, and their thirds
come from those; the sparse samples' log bytes stay beside them. A second table breaks the
bytes down by pod kind and file kind (the current log, an older instance's log kept for
``--previous``, rotated plain, rotated .gz, a compression's .tmp, and any file of a pod the
runtime has no sandbox of any more), each third's mean, min and max; a third lists the
rotations the daemon logged, per third: how many and the sizes of the files renamed
(rotation falling behind would show there). ``--series CSV`` keeps every look.

A third's mean still moves with a sawtooth slower than the looks: the crash-looping
log-heavy pod's dead instances pile up between two container GC rounds (a minute) and go
at once, 1.3 to 17 MiB, and how many restarts fall in a round follows the machine's load:
in a 30-minute run their thirds' means differed by 6 to 11% with the same min and max in
both thirds, and their minute means had no trend (+33 KiB a minute, standard error 31).
Growth shows as a min and a max that rise, not as a mean alone; the log table's last
column fits a line to the minute means after warm-up: its slope, per minute, and the
slope's standard error.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import functools
import os
import random
import re
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
LOUD_CRASH = 'i=0; while [ $i -lt 6 ]; do yes "kubelet-actors soak: a line of log for rotation" ' \
             '| head -n 2500; sleep 0.5; i=$((i+1)); done; exit 1'
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
    log: LogUsage


LINES = ("containers", "sandboxes", "images", "log_bytes", "log_files", "log_largest", "rss_mib",
         "threads", "open_files")


POD_KINDS = ("logs", "crash", "loud", "churn", "other")
"""The pods' kinds, told by their names' prefix (log-heavy, crash-looping, log-heavy and
crash-looping, churned)."""
FILE_KINDS = ("live", "older", "rotated", "gz", "tmp", "gone-pod")
"""What a file under the pod logs dir is: the newest instance's ``<n>.log`` of a container
(the one being written), an older instance's ``<n>.log`` (a dead container's log, kept
until container GC removes the container), a rotated ``<n>.log.<time>`` (still plain), a
rotated ``.gz``, a ``.tmp`` (a compression under way), or any file in the directory of a
pod the runtime has no sandbox of any more (a deleted pod's log dir left behind)."""
ROTATED_KINDS = ("rotated", "gz")


@dataclass(frozen=True)
class LogUsage:
    """The pod logs dir at one moment: bytes, files, the largest file, and the bytes by
    (pod kind, file kind)."""

    total: int
    files: int
    largest: int
    by_kind: tuple[tuple[str, str, int], ...]

    def bytes_of(self, pod_kind: str | None = None, file_kinds: tuple[str, ...] | None = None
                 ) -> int:
        return sum(n for p, f, n in self.by_kind
                   if (pod_kind is None or p == pod_kind)
                   and (file_kinds is None or f in file_kinds))


def pod_kind(pod_dir: str) -> str:
    """``<namespace>_<name>_<uid>``: the kind its name's prefix says."""
    parts = pod_dir.split("_")
    name = parts[1] if len(parts) >= 3 else pod_dir
    return next((k for k in POD_KINDS[:-1] if name.startswith(k + "-")), "other")


def file_kind(name: str, newest: int | None) -> str:
    """The kind of a file ``name`` in a container's log dir whose newest instance's log
    is ``<newest>.log``."""
    if name.endswith(".tmp"):
        return "tmp"
    if name.endswith(".gz"):
        return "gz"
    head, _, rest = name.partition(".log")
    if rest:
        return "rotated"
    if head.isdigit() and newest is not None and int(head) < newest:
        return "older"
    return "live"


def log_usage(root: Path, live_uids: frozenset[str] | None = None) -> LogUsage:
    """The pod logs dir's bytes, files and largest file (the live logs, rotated ones and
    their .gz), broken down by pod and file kind. ``live_uids``: the pods the runtime has
    sandboxes of (None: not known, no file counts as a gone pod's).

    The bytes follow the log-heavy pods' write rate (a log grows past the rotation size
    until the next check), so they swing with the machine's load; the files and the
    largest file show rotation's bound."""
    total = files = largest = 0
    by: dict[tuple[str, str], int] = {}
    try:
        pods = os.listdir(root)
    except OSError:
        pods = []
    for pod in pods:
        kind = pod_kind(pod)
        gone = live_uids is not None and pod.rsplit("_", 1)[-1] not in live_uids
        for path, _, names in os.walk(root / pod):
            numbered = [int(n[:-4]) for n in names if n.endswith(".log") and n[:-4].isdigit()]
            newest = max(numbered) if numbered else None
            for name in names:
                try:
                    size = os.lstat(os.path.join(path, name)).st_size
                except OSError:
                    continue
                fkind = "gone-pod" if gone else file_kind(name, newest)
                by[(kind, fkind)] = by.get((kind, fkind), 0) + size
                total += size
                largest = max(largest, size)
                files += 1
    return LogUsage(total, files, largest,
                    tuple(sorted((p, f, n) for (p, f), n in by.items())))


@dataclass(frozen=True)
class LogSeries:
    """The log bytes sampled often (every ``every`` seconds): the sparse samples of a
    sawtooth (three log-heavy pods, each a file growing to the rotation size then
    renamed, every few seconds) may alias; these may not."""

    at: tuple[float, ...]
    usage: tuple[LogUsage, ...]


class LogSampler:
    """Looks at the pod logs dir every ``every`` seconds on a thread of its own."""

    def __init__(self, root: Path, every: float = 1.0) -> None:
        self.root, self.every = root, every
        self.at: list[float] = []
        self.usage: list[LogUsage] = []
        self.live_uids: frozenset[str] | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="log-sampler", daemon=True)

    def loop(self) -> None:
        started = time.perf_counter()
        while not self.stop.wait(self.every * random.uniform(0.5, 1.5)):
            usage = log_usage(self.root, self.live_uids)
            self.at.append(time.perf_counter() - started)
            self.usage.append(usage)

    def series(self) -> LogSeries:
        return LogSeries(tuple(self.at), tuple(self.usage))


class Soak:
    def __init__(self, bench: Bench, console: Console, crash: int, logs: int,
                 log_every: float = 1.0, loud: int = 1) -> None:
        self.log_every = log_every
        self.loud = [f"loud-{i}" for i in range(loud)]
        self.b = bench
        self.console = console
        self.crash = [f"crash-{i}" for i in range(crash)]
        self.logs = [f"logs-{i}" for i in range(logs)]
        self.stop = threading.Event()
        self.churned = 0
        self.churn_errors: list[str] = []
        self.sampler: LogSampler | None = None
        self.started_wall = 0.0

    def sample(self, started: float) -> Sample:
        client, proc = self.b.client, ProcStat(self.b.daemon.pid)
        containers, sandboxes = client.list_containers(), client.list_pod_sandbox()
        live_uids = frozenset(s.metadata.uid for s in sandboxes)
        if self.sampler is not None:
            self.sampler.live_uids = live_uids
        log = log_usage(self.b.daemon.logs_dir, live_uids)
        return Sample(time.perf_counter() - started, len(containers), len(sandboxes),
                      len(client.list_images()), log.total, log.files, log.largest,
                      proc.rss_mib(), proc.threads(),
                      len(os.listdir(f"/proc/{self.b.daemon.pid}/fd")), log)

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
        for name in self.loud:
            d.write(name, script=LOUD_CRASH)
        churner = threading.Thread(target=self.churn, name="churn", daemon=True)
        self.sampler = LogSampler(d.logs_dir, self.log_every)
        self.started_wall = time.time()
        started = time.perf_counter()
        self.sampler.thread.start()
        churner.start()
        samples: list[Sample] = []
        try:
            while time.perf_counter() - started < minutes * 60:
                samples.append(self.sample(started))
                s = samples[-1]
                self.console.print(
                    f"{s.at / 60:5.1f} min: {s.containers} containers, {s.sandboxes} "
                    f"sandboxes, {s.images} images, {s.log_bytes / 2**20:.1f} MiB of logs in "
                    f"{s.log_files} files (largest {s.log_largest / 2**20:.2f} MiB; rotated "
                    f"{s.log.bytes_of(file_kinds=ROTATED_KINDS) / 2**20:.1f}), "
                    f"RSS {s.rss_mib:.0f} MiB, {s.threads} threads, {s.open_files} files; "
                    f"{self.churned} churned")
                self.stop.wait(every * random.uniform(0.5, 1.5))
        finally:
            self.stop.set()
            self.sampler.stop.set()
            self.sampler.thread.join(timeout=60)
            churner.join(timeout=300)
            for name in (*self.crash, *self.logs, *self.loud):
                (d.manifests / f"{name}.yaml").unlink(missing_ok=True)
            wait(lambda: not self.b.client.list_pod_sandbox(), POLL_BULK * 10, 300,
                 "every pod gone")
        return samples


DENSE_LINES = {"log_bytes": "total", "log_files": "files", "log_largest": "largest"}
"""The lines the dense log series gives (LogUsage's fields): their thirds come from it."""


def trend_table(samples: list[Sample], series: LogSeries | None = None) -> Table:
    """Each line's mean over the middle third against the last third. The log lines come
    from the dense series when there is one (the sparse samples of a sawtooth alias: see
    the module), the sparse samples' log bytes beside them for comparison."""
    third = max(len(samples) // 3, 1)
    middle = samples[third:2 * third]
    t = Table(title=f"each line after warm-up: mean of the middle third ({len(middle)} "
                    f"samples; the log lines: {len(series.usage) // 3 if series else 0}, "
                    f"from looks every ~1 s) against the last third")
    for col in ("line", "first", "middle third", "last third", "growth", "max"):
        t.add_column(col, justify="left" if col == "line" else "right")

    def row(label: str, values: list[float], mid_part: list[float], end_part: list[float]
            ) -> None:
        mid, end = statistics.mean(mid_part), statistics.mean(end_part)
        t.add_row(label, f"{values[0]:.0f}", f"{mid:.1f}", f"{end:.1f}", _growth(mid, end),
                  f"{max(values):.0f}")

    for line in LINES:
        values = [float(getattr(s, line)) for s in samples]
        if series is not None and series.usage and line in DENSE_LINES:
            dense = [float(getattr(u, DENSE_LINES[line])) for u in series.usage]
            _, d_mid, d_last = thirds(len(dense))
            row(line, dense, dense[d_mid], dense[d_last])
            if line != "log_bytes":
                continue
            line = "log_bytes (sparse)"
        row(line, values, values[third:2 * third], values[-third:])
    return t


def thirds(n: int) -> tuple[slice, slice, slice]:
    """The first, middle and last third of ``n`` samples (the first is warm-up)."""
    third = max(n // 3, 1)
    return slice(0, third), slice(third, 2 * third), slice(n - third, n)


def _growth(mid: float, end: float) -> str:
    return f"{(end - mid) / mid * 100:+.1f}%" if mid else "-"


def kinds_seen(usages: list[LogUsage] | tuple[LogUsage, ...]) -> list[tuple[str, str]]:
    seen = {(p, f) for u in usages for p, f, n in u.by_kind if n}
    return [(p, f) for p in POD_KINDS for f in FILE_KINDS if (p, f) in seen]


def log_table(series: LogSeries, samples: list[Sample]) -> Table:
    """The log bytes by kind, from the dense series: each third's mean, and its max and
    min (a sawtooth's mean moves with where the teeth fall; its max and min only with
    what stays), the sparse samples' mean beside them (how far aliasing moves it)."""
    usages = series.usage
    first, middle, last = thirds(len(usages))
    _, s_mid, s_last = thirds(len(samples))
    t = Table(title=f"log bytes (KiB) by pod and file kind, sampled every "
                    f"{(series.at[-1] - series.at[0]) / max(len(series.at) - 1, 1):.1f} s "
                    f"({len(usages[middle])} samples a third); the sparse samples' mean in "
                    f"brackets")
    for col in ("pod kind / file kind", "first mean", "middle mean", "last mean", "growth",
                "middle min..max", "last min..max", "trend KiB/min"):
        t.add_column(col, justify="left" if col.startswith("pod") else "right")
    rows: list[tuple[str, str | None, tuple[str, ...] | None]] = [
        ("all", None, None), ("all / rotated + gz", None, ROTATED_KINDS),
        ("all / live", None, ("live",))]
    rows += [(f"{p} / {f}", p, (f,)) for p, f in kinds_seen(usages)]
    for label, pod, files in rows:
        def kib(u: LogUsage, pod: str | None = pod, files: tuple[str, ...] | None = files
                ) -> float:
            return u.bytes_of(pod, files) / 1024
        def dense(part: slice) -> list[float]:
            return [kib(u) for u in usages[part]] or [0.0]
        def sparse(part: slice) -> float:
            return statistics.mean(kib(s.log) for s in samples[part]) if samples[part] else 0
        f_, m, e = dense(first), dense(middle), dense(last)
        mid, end = statistics.mean(m), statistics.mean(e)
        t.add_row(label, f"{statistics.mean(f_):.0f}",
                  f"{mid:.0f} ({sparse(s_mid):.0f})", f"{end:.0f} ({sparse(s_last):.0f})",
                  f"{_growth(mid, end)} ({_growth(sparse(s_mid), sparse(s_last))})",
                  f"{min(m):.0f}..{max(m):.0f}", f"{min(e):.0f}..{max(e):.0f}",
                  trend(series.at[middle.start:], [kib(u) for u in usages[middle.start:]]))
    return t


def trend(at: tuple[float, ...], values: list[float], window: float = 60.0) -> str:
    """The slope of ``values`` over time after warm-up, per minute, with its standard
    error, fitted to their means over each ``window`` seconds (a container GC round: a
    slower sawtooth's teeth average out in them): a slope within about two standard
    errors of nought is no growth."""
    windows: dict[int, list[float]] = {}
    for when, value in zip(at, values, strict=True):
        windows.setdefault(int(when // window), []).append(value)
    # A window cut short (where the part starts, and the run's end) is left out.
    full = statistics.median(len(v) for v in windows.values()) / 2
    kept = [k for k in sorted(windows) if len(windows[k]) >= full]
    xs = [k * window / 60 for k in kept]
    ys = [statistics.mean(windows[k]) for k in kept]
    if len(xs) < 3 or len(set(xs)) < 2:
        return "-"
    fit = statistics.linear_regression(xs, ys)
    spread = sum((x - statistics.mean(xs)) ** 2 for x in xs)
    residual = sum((y - fit.slope * x - fit.intercept) ** 2 for x, y in zip(xs, ys, strict=True))
    error = (residual / (len(xs) - 2) / spread) ** 0.5
    return f"{fit.slope:+.0f} ± {error:.0f}"


ROTATED_LINE = re.compile(r"^(\d\d):(\d\d):(\d\d\.\d+) .*rotated container log "
                          r"(\S+) \((\d+) bytes\)")


def rotation_table(log_path: Path, started_wall: float, minutes: float) -> Table:
    """The daemon's own account of its rotations (its log): each third's count and the
    rotated files' sizes when renamed (what rotation falling behind would grow)."""
    found: list[tuple[float, str, int]] = []
    start = datetime.datetime.fromtimestamp(started_wall)
    start_of_day = start.hour * 3600 + start.minute * 60 + start.second + start.microsecond / 1e6
    with contextlib.suppress(OSError):
        for line in log_path.read_text(errors="replace").splitlines():
            m = ROTATED_LINE.match(line)
            if m:
                # The daemon logs the local time of day only.
                of_day = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
                found.append(((of_day - start_of_day) % 86400, m.group(4), int(m.group(5))))
    span = minutes * 60 / 3
    t = Table(title="rotations the daemon logged: per third, how many and the size of the "
                    "file renamed (KiB)")
    for col in ("third", "rotations", "per log-heavy pod a minute", "mean size", "min..max"):
        t.add_column(col, justify="right")
    for k, name in enumerate(("first", "middle", "last")):
        sizes = [n / 1024 for at, _, n in found if k * span <= at < (k + 1) * span]
        pods = len({p.split("/")[-3] for at, p, _ in found if k * span <= at < (k + 1) * span})
        t.add_row(name, str(len(sizes)),
                  f"{len(sizes) / max(pods, 1) / (span / 60):.1f}",
                  f"{statistics.mean(sizes):.0f}" if sizes else "-",
                  f"{min(sizes):.0f}..{max(sizes):.0f}" if sizes else "-")
    return t


def write_series(path: Path, series: LogSeries) -> None:
    """The dense log series as CSV: seconds, then bytes per pod kind / file kind."""
    kinds = kinds_seen(series.usage)
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["seconds", "total", *(f"{p}/{k}" for p, k in kinds)])
        for at, u in zip(series.at, series.usage, strict=True):
            out.writerow([f"{at:.2f}", u.total, *(u.bytes_of(p, (k,)) for p, k in kinds)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="how long (default 30)")
    parser.add_argument("--sample", type=float, default=15.0,
                        help="seconds between samples (default 15)")
    parser.add_argument("--crash", type=int, default=3, help="crash-looping pods (default 3)")
    parser.add_argument("--logs", type=int, default=3, help="log-heavy pods (default 3)")
    parser.add_argument("--loud", type=int, default=1,
                        help="log-heavy, crash-looping pods (default 1)")
    parser.add_argument("--daemon-arg", action="append", default=[], metavar="ARG",
                        help="one more flag for the daemon (repeatable)")
    parser.add_argument("--log-every", type=float, default=1.0,
                        help="seconds between looks at the log bytes alone (default 1)")
    parser.add_argument("--series", type=Path, metavar="CSV",
                        help="also write every look at the log bytes there, by kind")
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
        soak = Soak(bench, console, args.crash, args.logs, args.log_every, args.loud)
        try:
            with quiet_logs(bench.work / "bench.log"):
                bench.prepare()
                samples = soak.run(args.minutes, args.sample)
        finally:
            bench.daemon.stop()
            bench.client.close()
        # The daemon's log goes with the bed: read before it is cleaned up.
        rotations = rotation_table(bench.daemon.log_path, soak.started_wall, args.minutes)
    assert soak.sampler is not None
    console.print(trend_table(samples, soak.sampler.series()))
    console.print(log_table(soak.sampler.series(), samples))
    console.print(rotations)
    if args.series is not None:
        write_series(args.series, soak.sampler.series())
        console.print(f"the log bytes every {args.log_every:g} s: {args.series}")
    console.print(f"{soak.churned} pods churned; churn problems: "
                  + ("; ".join(soak.churn_errors[:5]) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
