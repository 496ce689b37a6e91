"""What recording a trace costs: pod start latency and daemon CPU with and without --trace-dir.

`.venv/bin/python -m bench.trace_overhead [--pods N] [--rounds R] [--steady-pods S
--steady-window W]`: on one private containerd, R rounds of two daemon runs, one without a
trace and one with, their order alternating round by round (so drift in the machine's load
falls on both alike), each starting and removing N pods one after another: manifest
written until GET /pods shows the pod Running. Each run first starts and removes a
warm-up pod, measured in neither kind. With ``--steady-pods``, each run then starts S pods
at once and measures the daemon's CPU over W seconds of them running steady.

Prints per kind the p50 latency, the daemon's CPU per pod (utime+stime of its process over
the starts and stops, which the machine's other load disturbs less than latency) and the
steady CPU; then the trace's overheads against the target of at most 5% (TARGET). A CPU
overhead's verdict is the median of the rounds' own overheads (each traced run against
the plain run beside it), which drift between rounds does not move as it moves the pooled
medians (printed too), and each round's overhead is listed.
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
    all_running_check,
    none_listed_check,
    pct,
    pod_uid,
    running,
    wait,
)

TARGET = 0.05
"""Recording a trace may cost this much at most: p50 start latency, daemon CPU."""
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
    steady_cores: dict[str, list[float]] = field(
        default_factory=lambda: {PLAIN: [], TRACED: []})
    trace_bytes: int = 0


def steady(daemon: DaemonProc, count: int, window: float, tag: str) -> float:
    """Start ``count`` pods at once, let them settle, and return the daemon's CPU (cores)
    over ``window`` seconds of them running; they are removed after."""
    names = [f"{tag}-{i:03d}" for i in range(count)]
    paths = [daemon.write(name) for name in names]
    uids = [pod_uid(name, "daemon") for name in names]
    wait(all_running_check(daemon, uids), 0.2, 300, f"{count} pods Running")
    time.sleep(5.0)  # the starts' tail (status updates, first probes) is not steady state
    assert daemon.proc is not None
    stat = ProcStat(daemon.proc.pid)
    cpu0, t0 = stat.cpu(), time.perf_counter()
    time.sleep(window)
    cores = (stat.cpu() - cpu0) / (time.perf_counter() - t0)
    for path in paths:
        path.unlink()
    wait(none_listed_check(daemon, uids), 0.2, 300, f"{count} pods gone")
    return cores


def run(count: int, rounds: int, console: Console, steady_pods: int = 0,
        steady_window: float = 60.0) -> Runs:
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
                        cores = (steady(daemon, steady_pods, steady_window, f"{kind}{r}-s")
                                 if steady_pods else None)
                    finally:
                        daemon.stop()
                    runs.latency[kind] += samples
                    runs.cpu_per_pod[kind].append(cpu)
                    line = (f"  round {r + 1} {kind}: p50 {pct(samples, .5):.3f} s, "
                            f"daemon CPU {cpu * 1000:.1f} ms a pod")
                    if cores is not None:
                        runs.steady_cores[kind].append(cores)
                        line += f", {steady_pods} pods steady {cores * 1000:.2f} millicores"
                    console.print(line)
                    if kind == TRACED:
                        runs.trace_bytes += sum(
                            f.stat().st_size for f in (work / "trace").glob("*"))
        finally:
            events.stop()
            shutil.rmtree(base, ignore_errors=True)
    return runs


def paired(per_kind: dict[str, list[float]]) -> list[float]:
    """Each round's traced figure against the plain one of the same round, as overheads."""
    return [t / p - 1 for t, p in zip(per_kind[TRACED], per_kind[PLAIN], strict=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trace_overhead")
    parser.add_argument("--pods", type=int, default=12, help="pod starts per run")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of one untraced and one traced run, order alternating")
    parser.add_argument("--steady-pods", type=int, default=0,
                        help="pods each run then keeps running to measure steady CPU (0: no)")
    parser.add_argument("--steady-window", type=float, default=60.0,
                        help="seconds of steady state measured")
    args = parser.parse_args(argv)
    console = Console(width=120)
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    runs = run(args.pods, args.rounds, console, args.steady_pods, args.steady_window)
    table = Table(title=f"pod start with and without --trace-dir ({args.rounds} rounds of "
                        f"{args.pods} pods each, node {NODE})")
    for column in ("run", "p50", "p90", "min", "max", "daemon CPU a pod (median run)",
                   "steady CPU (median run)"):
        table.add_column(column)
    for kind in (PLAIN, TRACED):
        values = runs.latency[kind]
        cores = runs.steady_cores[kind]
        table.add_row(kind, *(f"{v:.3f} s" for v in (pct(values, .5), pct(values, .9),
                                                      min(values), max(values))),
                      f"{pct(runs.cpu_per_pod[kind], .5) * 1000:.1f} ms",
                      f"{pct(cores, .5) * 1000:.2f} millicores" if cores else "-")
    console.print(table)
    # (the trace holds the warm-ups and the steady pods too)
    starts_total = (args.pods + WARM_UP + args.steady_pods) * args.rounds
    console.print(f"trace written: {runs.trace_bytes / 1024:.0f} KiB for {starts_total} pods "
                  f"started and stopped ({runs.trace_bytes / 1024 / starts_total:.0f} KiB a pod"
                  + (f", {args.steady_window:.0f} s of {args.steady_pods} steady a run"
                     if args.steady_pods else "") + ")")
    latency = pct(runs.latency[TRACED], .5) / pct(runs.latency[PLAIN], .5) - 1
    console.print(f"trace overhead on p50 latency: {latency * 100:+.1f}% "
                  f"(target <= {TARGET * 100:.0f}%: {verdict(latency)})")
    cpu_kinds = [("daemon CPU a pod start and stop", runs.cpu_per_pod)]
    if args.steady_pods:
        cpu_kinds.append((f"daemon CPU with {args.steady_pods} pods steady",
                          runs.steady_cores))
    for what, per_kind in cpu_kinds:
        rounds = paired(per_kind)
        overhead = pct(rounds, .5)
        pooled = pct(per_kind[TRACED], .5) / pct(per_kind[PLAIN], .5) - 1
        console.print(f"trace overhead on {what}: {overhead * 100:+.1f}% median of the "
                      f"rounds (target <= {TARGET * 100:.0f}%: {verdict(overhead)}); pooled "
                      f"medians {pooled * 100:+.1f}%; round by round "
                      + ", ".join(f"{o * 100:+.1f}%" for o in rounds))
    return 0


def verdict(overhead: float) -> str:
    return "met" if overhead <= TARGET else "NOT met"


if __name__ == "__main__":
    sys.exit(main())
