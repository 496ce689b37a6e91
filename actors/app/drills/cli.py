"""``kubelet-actors drill NAME... | --all [--seed N | --seeds 1-1000] [--jobs J]``."""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from actors.app.command_line import EXIT_FAILED as EXIT_FAILED
from actors.app.command_line import EXIT_OK as EXIT_OK
from actors.app.command_line import EXIT_USAGE as EXIT_USAGE
from actors.app.command_line import HelpFormatter, epilog
from actors.app.drills.catalog import DRILLS, unavailable
from actors.app.drills.runner import Verdict
from actors.app.drills.sweep import BATCH_S, SweepPlan, default_jobs, parse_seeds, run_sweep
from actors.app.logging_setup import configure_logging
from actors.app.testbed import MAX_SLOTS, TestbedError

EXIT_CODES = epilog((EXIT_OK, "every run passed (or --list)"),
                    (EXIT_FAILED, "a run failed or diverged, or the test bed could not be "
                                  "set up"),
                    (EXIT_USAGE, "a flag or drill name is wrong"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubelet-actors drill",
        description="Restart drills on a real (embedded) containerd: inject a fault, check "
                    "that no container is orphaned or duplicated, no kill is lost, every pod "
                    "converges, restart intensity holds and no dead letter goes unhandled; "
                    "then replay the drill's trace.",
        epilog=EXIT_CODES, formatter_class=HelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME", help="drills to run (see --list)")
    parser.add_argument("--all", action="store_true", help="run every drill")
    parser.add_argument("--list", action="store_true", help="list the drills and exit")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, help="the fault plans' seed (default: random)")
    seeds.add_argument("--seeds", metavar="SEEDS", type=_seeds,
                       help="run each drill once per seed: 5, 1-1000, 1-3,7 "
                            "(default: one run, --seed)")
    parser.add_argument("--jobs", type=int, default=default_jobs(),
                        help="drills run side by side, each on its own containerd, bridge and "
                             f"subnet, in a process of its own (1 to {MAX_SLOTS}; default "
                             "%(default)s, one per CPU here)")
    parser.add_argument("--batch", type=float, default=BATCH_S, metavar="SECONDS",
                        help="start runs for this long under the machine-wide lock, then let "
                             "it go a moment for others (default %(default)g)")
    parser.add_argument("--keep-trace", metavar="DIR",
                        help="write every run's trace under DIR/seed-N and keep it (default: "
                             "a temporary dir, kept only for runs that failed or diverged)")
    parser.add_argument("--log-level", default="CRITICAL",
                        help="the kubelets' log level (default CRITICAL: verdicts only)")
    return parser


def _seeds(text: str) -> tuple[int, ...]:
    try:
        return parse_seeds(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv: Sequence[str], take_lock: bool = True, serve_registry: bool = True) -> int:
    """The command; its exit status is 1 if any run failed or diverged (or the test bed
    could not be set up), 2 for a usage error."""
    parser = _parser()
    args = parser.parse_args(list(argv))
    if args.list:
        for drill in DRILLS.values():
            why = unavailable(drill.name)
            print(f"{drill.name:32} {drill.checks}" + (f" [cannot run here: {why}]"
                                                        if why else ""))
        return EXIT_OK
    unknown = [n for n in args.names if n not in DRILLS]
    if unknown or not (args.all or args.names):
        what = f"unknown drill(s): {', '.join(unknown)}" if unknown else "name a drill or --all"
        print(f"kubelet-actors drill: {what} (see --list)", file=sys.stderr)
        return EXIT_USAGE
    if not 1 <= args.jobs <= MAX_SLOTS:
        print(f"kubelet-actors drill: --jobs {args.jobs}: from 1 to {MAX_SLOTS}",
              file=sys.stderr)
        return EXIT_USAGE
    names = tuple(DRILLS) if args.all else tuple(dict.fromkeys(args.names))
    not_here = {n: why for n in names if (why := unavailable(n)) is not None}
    if not_here and not args.all:
        for name, why in not_here.items():
            print(f"kubelet-actors drill: {name} {why}", file=sys.stderr)
        return EXIT_USAGE
    for name, why in not_here.items():  # --all: said, not counted as passed
        print(f"NOT RUN {name}: {why}", flush=True)
    names = tuple(n for n in names if n not in not_here)
    seeds: tuple[int, ...] = args.seeds or (
        (args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31),))
    configure_logging(args.log_level)
    keep = args.keep_trace is not None
    root = Path(args.keep_trace) if keep else Path(tempfile.mkdtemp(
        prefix="kubelet-actors-drill-traces-"))
    root.mkdir(parents=True, exist_ok=True)
    plan = SweepPlan(names, seeds, min(args.jobs, len(names) * len(seeds)), root, keep,
                     args.batch, args.log_level)
    verbose = len(seeds) == 1
    started = time.monotonic()
    verdicts: list[Verdict] = []

    def came(verdict: Verdict) -> None:
        verdicts.append(verdict)
        print_verdict(verdict, verbose)

    try:
        run_sweep(plan, came, take_lock, serve_registry)
    except TestbedError as err:
        # A long sweep can lose the test bed between batches (the lock held too long by
        # someone else): what ran is still summed up.
        if len(verdicts) > 1:
            print_summary(verdicts, plan, time.monotonic() - started)
        print(f"kubelet-actors drill: {err} (after {len(verdicts)} of "
              f"{len(plan.runs())} runs)", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if not keep and not any(root.iterdir()):  # no trace worth keeping
            shutil.rmtree(root, ignore_errors=True)
    if len(verdicts) > 1:
        print_summary(verdicts, plan, time.monotonic() - started)
    return exit_status(verdicts)


def exit_status(verdicts: Sequence[Verdict]) -> int:
    """0 when every run passed: a failed step or a divergence in any run is a failure."""
    return EXIT_OK if verdicts and all(v.ok for v in verdicts) else EXIT_FAILED


def print_verdict(verdict: Verdict, verbose: bool) -> None:
    """A run's verdict as it comes; its notes (the fault, a divergence's report) when it
    did not pass, or always with ``verbose``."""
    print(verdict.line(), flush=True)
    if verbose or not verdict.ok:
        for note in verdict.notes:
            print(f"    {note}".replace("\n", "\n    "), flush=True)


@dataclass(frozen=True, slots=True)
class DrillRow:
    """One drill's runs over the seeds: how many passed, failed (a step), diverged (replay:
    counted apart, a run may do both), its recovery times and the seeds that did not pass."""

    drill: str
    runs: int
    passed: int
    failed: int
    diverged: int
    recovery_p50: float | None
    recovery_max: float | None
    mean_s: float
    bad_seeds: tuple[int, ...]


def summarize(verdicts: Sequence[Verdict]) -> list[DrillRow]:
    """The drill x seeds table's rows, in the order the drills first ran."""
    by_drill: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_drill.setdefault(v.name, []).append(v)
    rows = []
    for name, runs in by_drill.items():
        recoveries = [v.recovery for v in runs if v.recovery is not None]
        rows.append(DrillRow(
            name, len(runs), sum(v.ok for v in runs), sum(v.failed for v in runs),
            sum(v.diverged for v in runs),
            statistics.median(recoveries) if recoveries else None,
            max(recoveries) if recoveries else None,
            statistics.fmean(v.duration for v in runs),
            tuple(sorted(v.seed for v in runs if not v.ok))))
    return rows


def _seconds(value: float | None) -> str:
    return f"{value:.2f} s" if value is not None else "-"


def _seed_list(seeds: Sequence[int]) -> str:
    return ", ".join(map(str, seeds[:8])) + (f" (+{len(seeds) - 8})" if len(seeds) > 8 else "")


def print_summary(verdicts: Sequence[Verdict], plan: SweepPlan, wall_s: float) -> None:
    """The drill x seeds table, the totals, then every run that did not pass and why."""
    seeds = plan.seeds
    label = f"seed {seeds[0]}" if len(seeds) == 1 else f"{len(seeds)} seeds"
    table = Table(title=f"kubelet-actors drills ({label}, {plan.jobs} jobs)")
    for column in ("drill", "runs", "passed", "failed", "diverged", "recovery p50",
                   "recovery max", "mean time", "seeds not passing"):
        table.add_column(column, overflow="fold")
    for row in summarize(verdicts):
        table.add_row(row.drill, str(row.runs), str(row.passed),
                      f"[red]{row.failed}[/]" if row.failed else "0",
                      f"[yellow]{row.diverged}[/]" if row.diverged else "0",
                      _seconds(row.recovery_p50), _seconds(row.recovery_max),
                      f"{row.mean_s:.1f} s", _seed_list(row.bad_seeds))
    passed = sum(v.ok for v in verdicts)
    failed = sum(v.failed for v in verdicts)
    diverged = sum(v.diverged for v in verdicts)
    table.caption = (f"{len(verdicts)} runs: {passed} passed, {failed} failed, {diverged} "
                     f"diverged; wall time {wall_s:.0f} s")
    console = Console(width=160)
    console.print(table)
    for v in verdicts:
        if not v.ok:
            console.print(f"{v.outcome} {v.name} seed {v.seed}: {'; '.join(v.reasons())} "
                          f"(trace {v.trace_dir})", markup=False, highlight=False)
