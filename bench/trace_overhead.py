"""What recording a trace costs: pod start latency and daemon CPU with and without --trace-dir.

`.venv/bin/python -m bench.trace_overhead [--pods N] [--rounds R] [--steady-pods S
--steady-window W]`: two kubelets side by side, one without a trace and one with, each on
a private containerd of its own (two slots of the bench's bed: each its own bridge,
subnet and cgroup root), so that whatever load the machine has falls on both at once. A
round starts both daemons, starts and removes a warm-up pod on each (measured in neither:
a daemon's first pod pays for what it makes once), then N pods on each in step: pod i
written into both manifest dirs at once, each waited for until its GET /pods shows it
Running, both removed until their /pods no longer list them, then pod i+1. Which
containerd holds the traced daemon alternates round by round. With ``--steady-pods``,
both then start S pods at once and their CPU is measured over the same W seconds of them
running steady.

Why side by side: runs one after another (as this bench first did) differed round to
round by more than the trace costs (-2% to +27% on the same code), the machine's load
drifting over the minute between two runs; in step, a round's two figures come from the
same seconds. Both daemons and both containerds busy at once on a small machine make a
pod cost each daemon more CPU than when it runs alone (some 60 ms against 47 on 2 CPUs),
so the overheads are of that figure.

Prints per kind the p50 latency, the daemon's CPU per pod (utime+stime of its process over
the starts and stops) and the steady CPU; then the trace's overheads against the target of
at most 5% (TARGET). A CPU overhead's verdict is the median of the rounds' own overheads;
the pooled medians and each round's overhead are printed too.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.testbed import BENCH, machine_lock, private_containerd, serve_images
from actors.app.testbed.beds import Bed
from actors.app.testbed.cgroup_root import own_cgroup_root
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
"""Pods each daemon starts and removes before its measured ones."""
SLOTS = (BENCH.slot(0), BENCH.slot(1))
"""The two beds the daemons run on, side by side."""
PLAIN, TRACED = "plain", "traced"


@dataclass(frozen=True)
class Bedside:
    """One slot's containerd, its event stream and the cgroup root its kubelet runs under."""

    endpoint: str
    events: RuntimeEventCount
    cgroup_root: str


@dataclass(frozen=True)
class Side:
    """One of a round's two kubelets: its kind and the bed it runs on."""

    kind: str
    daemon: DaemonProc
    bed: Bedside

    def cpu(self) -> float:
        """The daemon's CPU seconds so far (utime + stime)."""
        return ProcStat(self.daemon.pid).cpu()


def start_stop(side: Side, name: str) -> float:
    """Start one pod on ``side`` and remove it; the seconds it took to show Running. The
    start polls /pods only once its tasks started (as daemon_bench's phase 1): polled every
    5 ms from the write on, some 30 GETs a start of some 0.3 ms of the daemon's CPU each
    added the same to both kinds of run, and noise."""
    daemon = side.daemon
    uid = pod_uid(name, "daemon")

    def up() -> bool:
        return running(daemon.pods().get(uid))

    def gone() -> bool:
        return uid not in daemon.pods()

    since = side.bed.events.mark()
    t0 = time.perf_counter()
    path = daemon.write(name)
    seen = side.bed.events.running_after_start(up, since, f"{name} Running")
    path.unlink()
    wait(gone, 0.05, 60, f"{name} gone")
    time.sleep(0.3)  # let the teardown settle
    return seen.seen - t0


@dataclass
class Runs:
    """Pod start latencies and daemon CPU seconds per pod, per kind of run."""

    latency: dict[str, list[float]] = field(default_factory=lambda: {PLAIN: [], TRACED: []})
    cpu_per_pod: dict[str, list[float]] = field(default_factory=lambda: {PLAIN: [], TRACED: []})
    steady_cores: dict[str, list[float]] = field(
        default_factory=lambda: {PLAIN: [], TRACED: []})
    trace_bytes: int = 0


def steady(sides: dict[str, Side], count: int, window: float, tag: str) -> dict[str, float]:
    """Start ``count`` pods on each side at once, let them settle, and return each daemon's
    CPU (cores) over the same ``window`` seconds of them running; they are removed after."""
    names = [f"{tag}-{i:03d}" for i in range(count)]
    uids = [pod_uid(name, "daemon") for name in names]
    paths = [side.daemon.write(name) for side in sides.values() for name in names]
    for side in sides.values():
        wait(all_running_check(side.daemon, uids), 0.2, 600,
             f"{count} pods Running ({side.kind})")
    time.sleep(5.0)  # the starts' tail (status updates, first probes) is not steady state
    cpu0, t0 = {kind: side.cpu() for kind, side in sides.items()}, time.perf_counter()
    time.sleep(window)
    cpu1, t1 = {kind: side.cpu() for kind, side in sides.items()}, time.perf_counter()
    for path in paths:
        path.unlink()
    for side in sides.values():
        wait(none_listed_check(side.daemon, uids), 0.2, 600, f"{count} pods gone ({side.kind})")
    return {kind: (cpu1[kind] - cpu0[kind]) / (t1 - t0) for kind in sides}


@contextlib.contextmanager
def bedsides() -> Iterator[tuple[Bedside, ...]]:
    """Both slots' containerds up, each with its cgroup root and event stream."""
    with contextlib.ExitStack() as stack:
        out = []
        for bed in SLOTS:
            out.append(_bedside(stack, bed))
        yield tuple(out)


def _bedside(stack: contextlib.ExitStack, bed: Bed) -> Bedside:
    root = stack.enter_context(own_cgroup_root(bed))
    emb = stack.enter_context(private_containerd(bed))
    events = RuntimeEventCount(emb.endpoint)
    stack.callback(events.stop)
    return Bedside(emb.endpoint, events, root)


def one_round(r: int, beds: tuple[Bedside, ...], work: Path, count: int, steady_pods: int,
              steady_window: float, runs: Runs, console: Console) -> None:
    """Round ``r``: both daemons up, the warm-ups, ``count`` pods each in turns, then the
    steady pods; figures added to ``runs``."""
    kinds = (PLAIN, TRACED) if r % 2 == 0 else (TRACED, PLAIN)  # which bed holds which
    sides: dict[str, Side] = {}
    for kind, bed in zip(kinds, beds, strict=True):
        extra: tuple[str, ...] = ("--cgroup-root", bed.cgroup_root)
        if kind == TRACED:
            extra += ("--trace-dir", str(work / f"{kind}-{r}" / "trace"))
        sides[kind] = Side(kind, DaemonProc(work / f"{kind}-{r}", bed.endpoint, extra), bed)
    try:
        for side in sides.values():
            side.daemon.start()
        for kind, side in sides.items():
            for i in range(WARM_UP):
                start_stop(side, f"{kind}{r}-warm{i}")
        samples: dict[str, list[float]] = {PLAIN: [], TRACED: []}
        cpu0 = {kind: side.cpu() for kind, side in sides.items()}
        with ThreadPoolExecutor(2, thread_name_prefix="side") as pool:
            for i in range(count):
                # in step: pod i starts on both at once, and both are gone before pod i+1;
                # which manifest is written first alternates pod by pod
                first = (PLAIN, TRACED) if i % 2 == 0 else (TRACED, PLAIN)
                started = {kind: pool.submit(start_stop, sides[kind], f"{kind}{r}-{i:03d}")
                           for kind in first}
                for kind, future in started.items():
                    samples[kind].append(future.result())
        cpu = {kind: (side.cpu() - cpu0[kind]) / count for kind, side in sides.items()}
        cores = (steady(sides, steady_pods, steady_window, f"s{r}") if steady_pods else {})
    finally:
        for side in sides.values():
            side.daemon.stop()
    for kind in (PLAIN, TRACED):
        runs.latency[kind] += samples[kind]
        runs.cpu_per_pod[kind].append(cpu[kind])
        line = (f"  round {r + 1} {kind} (bed {kinds.index(kind)}): p50 "
                f"{pct(samples[kind], .5):.3f} s, daemon CPU {cpu[kind] * 1000:.1f} ms a pod")
        if kind in cores:
            runs.steady_cores[kind].append(cores[kind])
            line += f", {steady_pods} pods steady {cores[kind] * 1000:.2f} millicores"
        console.print(line)
    runs.trace_bytes += sum(f.stat().st_size
                            for f in (work / f"{TRACED}-{r}" / "trace").glob("*"))


def run(count: int, rounds: int, console: Console, steady_pods: int = 0,
        steady_window: float = 60.0) -> Runs:
    runs = Runs()
    with machine_lock(BENCH), serve_images(), bedsides() as beds:
        work = Path(tempfile.mkdtemp(prefix="trace-bench-", dir="/var/tmp"))
        try:
            for r in range(rounds):
                one_round(r, beds, work, count, steady_pods, steady_window, runs, console)
        finally:
            shutil.rmtree(work, ignore_errors=True)
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
