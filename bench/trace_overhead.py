"""What recording a trace costs: pod start latency and daemon CPU with and without --trace-dir.

`.venv/bin/python -m bench.trace_overhead [--pods N] [--rounds R] [--steady-pods S
--steady-window W --steady-rounds Q]`: two kubelets side by side, one without a trace and
one with, each on a private containerd of its own (two slots of the bench's bed: each its
own bridge, subnet and cgroup root), so that whatever load the machine has falls on both
at once. A round starts both daemons, starts and removes a warm-up pod on each (measured
in neither: a daemon's first pod pays for what it makes once), then N pods on each in
step: pod i written into both manifest dirs at once, each waited for until its GET /pods
shows it Running, both removed until their /pods no longer list them, then pod i+1.
Which containerd holds the traced daemon alternates round by round. With
``--steady-pods``, S pods are then started on each bed and kept running through Q pairs
of daemons (each pair adopting them from the one before, the traced one on the other
bed), each pair's CPU measured over the same W seconds.

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
SETTLE = 10.0
"""Seconds a pair of daemons runs its steady pods before their CPU is measured: a pair
that just adopted them (or started them) is not yet steady (its first relist, the pods'
first statuses, their first stats)."""
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
    index: int
    """Which of the two beds (0 or 1)."""

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


def pair(r: int, beds: tuple[Bedside, ...], dirs: tuple[Path, ...], trace: Path
         ) -> dict[str, Side]:
    """Round ``r``'s two daemons, not yet started, each in the dir ``dirs`` holds for its
    bed; which bed holds the traced one (its trace in ``trace``) alternates round by round."""
    kinds = (PLAIN, TRACED) if r % 2 == 0 else (TRACED, PLAIN)
    sides: dict[str, Side] = {}
    for kind, bed, work in zip(kinds, beds, dirs, strict=True):
        extra: tuple[str, ...] = ("--cgroup-root", bed.cgroup_root)
        if kind == TRACED:
            extra += ("--trace-dir", str(trace))
        sides[kind] = Side(kind, DaemonProc(work, bed.endpoint, extra), bed, beds.index(bed))
    return sides


def started(sides: dict[str, Side]) -> dict[str, Side]:
    for side in sides.values():
        side.daemon.start()
    return sides


def stop(sides: dict[str, Side]) -> None:
    for side in sides.values():
        side.daemon.stop()


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


def start_stop_round(r: int, beds: tuple[Bedside, ...], work: Path, count: int, runs: Runs,
                     console: Console) -> None:
    """Round ``r`` of starts and stops: both daemons up, the warm-ups, then ``count`` pods
    on each in step; figures added to ``runs``."""
    trace = work / f"r{r}-trace"
    sides = pair(r, beds, (work / f"r{r}-bed0", work / f"r{r}-bed1"), trace)
    try:
        started(sides)
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
                futures = {kind: pool.submit(start_stop, sides[kind], f"{kind}{r}-{i:03d}")
                           for kind in first}
                for kind, future in futures.items():
                    samples[kind].append(future.result())
        cpu = {kind: (side.cpu() - cpu0[kind]) / count for kind, side in sides.items()}
    finally:
        stop(sides)
    for kind in (PLAIN, TRACED):
        runs.latency[kind] += samples[kind]
        runs.cpu_per_pod[kind].append(cpu[kind])
        console.print(f"  round {r + 1} {kind} (bed {sides[kind].index}): p50 "
                      f"{pct(samples[kind], .5):.3f} s, daemon CPU {cpu[kind] * 1000:.1f} ms "
                      "a pod")
    runs.trace_bytes += sum(f.stat().st_size for f in trace.glob("*"))


def steady_rounds(beds: tuple[Bedside, ...], work: Path, count: int, window: float,
                  rounds: int, runs: Runs, console: Console) -> None:
    """``count`` pods on each bed, kept running through ``rounds`` pairs of daemons (each
    pair adopts them from the one before, the traced one on the other bed): each pair's
    CPU over the same ``window`` seconds of them steady. Made once, the pods leave each
    round its daemons' own noise (round to round, one daemon's stats thread alone moved by
    some 0.8 millicores of 11) without a minute of starts and removals in between."""
    names = [f"steady-{i:03d}" for i in range(count)]
    uids = [pod_uid(name, "daemon") for name in names]
    dirs = (work / "steady-bed0", work / "steady-bed1")
    paths: list[Path] = []
    for r in range(rounds):
        sides = started(pair(r, beds, dirs, work / f"steady-trace-{r}"))
        try:
            if not paths:
                paths = [side.daemon.write(name) for side in sides.values() for name in names]
            for side in sides.values():
                wait(all_running_check(side.daemon, uids), 0.2, 600,
                     f"{count} pods Running ({side.kind})")
            time.sleep(SETTLE)
            cpu0, t0 = {kind: side.cpu() for kind, side in sides.items()}, time.perf_counter()
            time.sleep(window)
            cpu1, t1 = {kind: side.cpu() for kind, side in sides.items()}, time.perf_counter()
            if r == rounds - 1:
                for path in paths:
                    path.unlink()
                for side in sides.values():
                    wait(none_listed_check(side.daemon, uids), 0.2, 600,
                         f"{count} pods gone ({side.kind})")
        finally:
            stop(sides)
        for kind in (PLAIN, TRACED):
            cores = (cpu1[kind] - cpu0[kind]) / (t1 - t0)
            runs.steady_cores[kind].append(cores)
            console.print(f"  steady round {r + 1} {kind} (bed {sides[kind].index}): {count} "
                          f"pods {cores * 1000:.2f} millicores")


def run(count: int, rounds: int, console: Console, steady_pods: int = 0,
        steady_window: float = 60.0, steady_round_count: int = 0) -> Runs:
    runs = Runs()
    with machine_lock(BENCH), serve_images(), bedsides() as beds:
        work = Path(tempfile.mkdtemp(prefix="trace-bench-", dir="/var/tmp"))
        try:
            for r in range(rounds):
                start_stop_round(r, beds, work, count, runs, console)
            if steady_pods:
                steady_rounds(beds, work, steady_pods, steady_window, steady_round_count, runs,
                              console)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return runs


def paired(per_kind: dict[str, list[float]]) -> list[float]:
    """Each round's traced figure against the plain one of the same round, as overheads."""
    return [t / p - 1 for t, p in zip(per_kind[TRACED], per_kind[PLAIN], strict=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trace_overhead")
    parser.add_argument("--pods", type=int, default=12, help="pods started and removed a round")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of starts and stops (0: none), the beds alternating")
    parser.add_argument("--steady-pods", type=int, default=0,
                        help="pods each bed then keeps running to measure steady CPU (0: no)")
    parser.add_argument("--steady-window", type=float, default=60.0,
                        help="seconds of steady state measured a round")
    parser.add_argument("--steady-rounds", type=int, default=4,
                        help="pairs of daemons the steady pods are measured under")
    args = parser.parse_args(argv)
    console = Console(width=120)
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    runs = run(args.pods, args.rounds, console, args.steady_pods, args.steady_window,
               args.steady_rounds)
    steady_rounds_run = args.steady_rounds if args.steady_pods else 0
    table = Table(title=f"with and without --trace-dir, side by side ({args.rounds} rounds of "
                        f"{args.pods} pods started and stopped, {steady_rounds_run} of "
                        f"{args.steady_pods} steady; node {NODE})")
    for column in ("run", "start p50", "p90", "min", "max", "daemon CPU a pod (median round)",
                   "steady CPU (median round)"):
        table.add_column(column)
    for kind in (PLAIN, TRACED):
        values = runs.latency[kind]
        cores = runs.steady_cores[kind]
        table.add_row(kind, *(f"{pct(values, q):.3f} s" if values else "-"
                              for q in (.5, .9, 0, 1)),
                      f"{pct(runs.cpu_per_pod[kind], .5) * 1000:.1f} ms" if values else "-",
                      f"{pct(cores, .5) * 1000:.2f} millicores" if cores else "-")
    console.print(table)
    cpu_kinds = []
    if args.rounds:
        starts_total = (args.pods + WARM_UP) * args.rounds  # the warm-ups are in the trace
        console.print(f"trace written: {runs.trace_bytes / 1024:.0f} KiB for {starts_total} "
                      f"pods started and stopped ({runs.trace_bytes / 1024 / starts_total:.0f}"
                      " KiB a pod)")
        latency = pct(runs.latency[TRACED], .5) / pct(runs.latency[PLAIN], .5) - 1
        console.print(f"trace overhead on p50 latency: {latency * 100:+.1f}% "
                      f"(target <= {TARGET * 100:.0f}%: {verdict(latency)})")
        cpu_kinds.append(("daemon CPU a pod start and stop", runs.cpu_per_pod))
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
