"""``kubelet-actors drill NAME...`` and ``kubelet-actors drill --all [--seed N]``."""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from actors.app.drills.catalog import DRILLS
from actors.app.drills.env import session
from actors.app.drills.runner import Drill, Verdict, run_drill
from actors.app.logging_setup import configure_logging
from actors.app.testbed import TestbedError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubelet-actors drill",
        description="Restart drills on a real (embedded) containerd: inject a fault, check "
                    "that no container is orphaned or duplicated, no kill is lost, every pod "
                    "converges, restart intensity holds and no dead letter goes unhandled; "
                    "then replay the drill's trace.")
    parser.add_argument("names", nargs="*", metavar="NAME", help="drills to run (see --list)")
    parser.add_argument("--all", action="store_true", help="run every drill")
    parser.add_argument("--list", action="store_true", help="list the drills and exit")
    parser.add_argument("--seed", type=int, help="the fault plan's seed (default: random)")
    parser.add_argument("--keep-trace", metavar="DIR",
                        help="write every drill's trace under DIR and keep it (default: a "
                             "temporary dir, kept only for drills that failed or diverged)")
    parser.add_argument("--log-level", default="CRITICAL",
                        help="the kubelets' log level (default CRITICAL: verdicts only)")
    return parser


def main(argv: Sequence[str], take_lock: bool = True, serve_registry: bool = True) -> int:
    parser = _parser()
    args = parser.parse_args(list(argv))
    if args.list:
        for drill in DRILLS.values():
            print(f"{drill.name:32} {drill.checks}")
        return EXIT_OK
    unknown = [n for n in args.names if n not in DRILLS]
    if unknown or not (args.all or args.names):
        what = f"unknown drill(s): {', '.join(unknown)}" if unknown else "name a drill or --all"
        print(f"kubelet-actors drill: {what} (see --list)", file=sys.stderr)
        return EXIT_USAGE
    drills = list(DRILLS.values()) if args.all else [DRILLS[n] for n in args.names]
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    configure_logging(args.log_level)
    keep = args.keep_trace is not None
    root = Path(args.keep_trace) if keep else Path(tempfile.mkdtemp(
        prefix="kubelet-actors-drill-traces-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        verdicts = run_all(drills, seed, root, keep, take_lock, serve_registry)
    except TestbedError as err:
        print(f"kubelet-actors drill: {err}", file=sys.stderr)
        return EXIT_FAILED
    if len(verdicts) > 1:
        print_summary(verdicts)
    if not keep and not any(root.iterdir()):
        shutil.rmtree(root, ignore_errors=True)
    return EXIT_OK if all(v.ok for v in verdicts) else EXIT_FAILED


def run_all(drills: list[Drill], seed: int, root: Path, keep: bool, take_lock: bool = True,
            serve_registry: bool = True) -> list[Verdict]:
    verdicts: list[Verdict] = []
    with session(take_lock, serve_registry):
        for drill in drills:
            verdict = run_drill(drill, seed, root)
            if not keep and verdict.ok and not verdict.replay_finding:
                shutil.rmtree(verdict.trace_dir, ignore_errors=True)
                verdict.notes.append("trace removed (passed; --keep-trace DIR keeps it)")
            print(verdict.line(), flush=True)
            for note in verdict.notes:
                print(f"    {note}".replace("\n", "\n    "), flush=True)
            verdicts.append(verdict)
    return verdicts


def print_summary(verdicts: list[Verdict]) -> None:
    table = Table(title=f"kubelet-actors drills (seed {verdicts[0].seed})")
    for column in ("drill", "verdict", "failed step", "recovery", "replay", "time"):
        table.add_column(column, overflow="fold")
    for v in verdicts:
        table.add_row(
            v.name, "[green]PASS[/]" if v.ok else "[red]FAIL[/]",
            f"{v.step}: {v.detail}" if not v.ok else "",
            f"{v.recovery:.2f} s" if v.recovery is not None else "-",
            _replay_cell(v), f"{v.duration:.1f} s")
    passed = sum(1 for v in verdicts if v.ok)
    table.caption = f"{passed}/{len(verdicts)} passed, {sum(v.duration for v in verdicts):.0f} s"
    Console(width=160).print(table)


def _replay_cell(v: Verdict) -> str:
    parts = v.replay.split("; ")
    if all(p.split(": ", 1)[-1].startswith("no divergence") for p in parts):
        return "no divergence"
    if not v.replay_finding:
        return "diverges only at the injected fault"
    found = next((p for p in parts if "DIVERGENCE" in p or "unreadable" in p), v.replay)
    return f"[yellow]{found[found.find('DIVERGENCE'):] if 'DIVERGENCE' in found else found}[/]"
