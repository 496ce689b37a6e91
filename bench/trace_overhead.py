"""What recording a trace costs: pod start latency and daemon CPU with and without --trace-dir.

`.venv/bin/python -m bench.trace_overhead [--pods N] [--rounds R]`: on one private
containerd, R rounds of two daemon runs, one without a trace and one with, their order
alternating round by round (so drift in the machine's load falls on both alike), each
starting N pods one after another: manifest written until GET /pods shows the pod Running.
Prints, pooled per kind, the p50 latency and the daemon's CPU seconds per pod (utime+stime
of its process over the starts, which the machine's other load disturbs less than latency),
and the overheads against the target of at most 5% (TARGET), then each round's CPU
overhead on its own. Each run first starts and removes a warm-up pod, measured in neither.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.testbed import BENCH, machine_lock, private_containerd, serve_images
from bench.daemon_bench import (
    NODE,
    DaemonProc,
    ProcStat,
    RuntimeEventCount,
    pct,
    pod_uid,
    running,
    wait,
)

TARGET = 0.05
"""Recording a trace may slow a pod start by this much at most (p50)."""
WARM_UP = 1
"""Pods each daemon run starts and removes before its measured ones."""


def starts(daemon: DaemonProc, events: RuntimeEventCount, count: int, tag: str
           ) -> list[float]:
    """Start ``count`` pods one after another; the seconds each took to show Running. Each
    start polls /pods only once its tasks started (as daemon_bench's phase 1): polled every
    5 ms from the write on, some 30 GETs a start of some 0.3 ms of the daemon's CPU each
    added the same to both kinds of run, and noise."""
    samples: list[float] = []
    for i in range(count):
        name = f"{tag}-{i:03d}"
        uid = pod_uid(name, "daemon")
        time.sleep(0.3)  # let the previous pod's teardown settle

        def up(uid: str = uid) -> bool:
            return running(daemon.pods().get(uid))

        def gone(uid: str = uid) -> bool:
            return uid not in daemon.pods()

        since = events.mark()
        t0 = time.perf_counter()
        path = daemon.write(name)
        seen = events.running_after_start(up, since, f"{name} Running")
        samples.append(seen.seen - t0)
        path.unlink()
        wait(gone, 0.05, 60, f"{name} gone")
    return samples


PLAIN, TRACED = "plain", "traced"


@dataclass
class Runs:
    """Pod start latencies and daemon CPU seconds per pod, per kind of run."""

    latency: dict[str, list[float]] = field(default_factory=lambda: {PLAIN: [], TRACED: []})
    cpu_per_pod: dict[str, list[float]] = field(default_factory=lambda: {PLAIN: [], TRACED: []})
    trace_bytes: int = 0



def run(count: int, rounds: int, console: Console) -> Runs:
    runs = Runs()
    with machine_lock(BENCH), serve_images(), private_containerd(BENCH) as emb:
        base = Path(tempfile.mkdtemp(prefix="trace-bench-", dir="/var/tmp"))
        events = RuntimeEventCount(emb.endpoint)
        try:
            for r in range(rounds):
                order = (PLAIN, TRACED) if r % 2 == 0 else (TRACED, PLAIN)
                for kind in order:
                    work = base / f"{kind}-{r}"
                    extra = ("--trace-dir", str(work / "trace")) if kind == TRACED else ()
                    daemon = DaemonProc(work, emb.endpoint, extra)
                    daemon.start()
                    try:
                        assert daemon.proc is not None
                        stat = ProcStat(daemon.proc.pid)
                        # A daemon's first pod pays for what it makes once (lazy imports,
                        # thread pools, the pod cgroups' parents): the daemon's cost, not
                        # the recording's, and spread over a dozen pods it is not small.
                        starts(daemon, events, WARM_UP, f"{kind}{r}-warm")
                        cpu0 = stat.cpu()
                        samples = starts(daemon, events, count, f"{kind}{r}")
                        cpu = (stat.cpu() - cpu0) / count
                    finally:
                        daemon.stop()
                    runs.latency[kind] += samples
                    runs.cpu_per_pod[kind].append(cpu)
                    console.print(f"  round {r + 1} {kind}: p50 {pct(samples, .5):.3f} s, "
                                  f"daemon CPU {cpu * 1000:.1f} ms a pod")
                    if kind == TRACED:
                        runs.trace_bytes += sum(
                            f.stat().st_size for f in (work / "trace").glob("*"))
        finally:
            events.stop()
            shutil.rmtree(base, ignore_errors=True)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trace_overhead")
    parser.add_argument("--pods", type=int, default=12, help="pod starts per run")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of one untraced and one traced run, order alternating")
    args = parser.parse_args(argv)
    console = Console(width=120)
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    runs = run(args.pods, args.rounds, console)
    table = Table(title=f"pod start with and without --trace-dir ({args.rounds} rounds of "
                        f"{args.pods} pods each, node {NODE})")
    for column in ("run", "p50", "p90", "min", "max", "daemon CPU a pod (median run)"):
        table.add_column(column)
    for kind in (PLAIN, TRACED):
        values = runs.latency[kind]
        table.add_row(kind, *(f"{v:.3f} s" for v in (pct(values, .5), pct(values, .9),
                                                      min(values), max(values))),
                      f"{pct(runs.cpu_per_pod[kind], .5) * 1000:.1f} ms")
    console.print(table)
    starts_total = (args.pods + WARM_UP) * args.rounds  # (the trace holds the warm-ups)
    console.print(f"trace written: {runs.trace_bytes / 1024:.0f} KiB for {starts_total} pods "
                  f"({runs.trace_bytes / 1024 / starts_total:.0f} KiB a pod start and stop)")
    for what, per_kind in (("p50 latency", runs.latency), ("daemon CPU", runs.cpu_per_pod)):
        overhead = pct(per_kind[TRACED], .5) / pct(per_kind[PLAIN], .5) - 1
        verdict = "met" if overhead <= TARGET else "NOT met"
        console.print(f"trace overhead on {what}: {overhead * 100:+.1f}% "
                      f"(target <= {TARGET * 100:.0f}%: {verdict})")
    paired = [t / p - 1 for t, p in zip(runs.cpu_per_pod[TRACED], runs.cpu_per_pod[PLAIN],
                                        strict=True)]
    console.print("daemon CPU, each round's traced run against its plain one: "
                  + ", ".join(f"{o * 100:+.1f}%" for o in paired))
    return 0


if __name__ == "__main__":
    sys.exit(main())
