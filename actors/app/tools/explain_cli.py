"""``kubelet-actors explain POD [-n NAMESPACE | -A] [-c CONTAINER] [--trace-dir DIR]
[-o table|json|yaml]``: the chain of causes behind a pod's state, its restarts, kills,
probe flips and waits, in sentences with times, each naming the trace messages it comes
from (``#N``, as ``trace show`` numbers them), and under each the evidence it rests on
(exit codes, probe outputs, back-offs, errors verbatim), each with its own ``#N``. ``-o
json`` and ``-o yaml`` give the same as data (SCHEMA in actors.app.tools.explain).

A trace directory the daemon wrote in across its restarts is read per process (each
numbers its deliveries anew): each pod is explained once per daemon run that saw it.
Without ``--trace-dir`` it reads the trace of the daemon running on ``--root-dir``: the
daemon holds ``<root-dir>/kubelet-actors.lock`` with its pid, and its command line names
its ``--trace-dir``.

Exit codes: 0 explained, 1 the trace cannot be read (none given and the daemon records
none: the message says how to turn tracing on) or names no such pod, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from actors.app.config.flags import DEFAULT_ROOT_DIR
from actors.app.output_format import JSON, TABLE, YAML, add_output_flag
from actors.app.output_format import render as render_data
from actors.app.root_lock import LOCK_NAME
from actors.app.tools.explain import SCHEMA, PodExplanation, explain, known_pods
from actors.app.tools.explain.model import Evidence, clock_time
from actors.core.trace.reader import TraceError, read_trace, trace_files

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
PROG = "kubelet-actors explain"
_KIND_STYLES = {"restart": "bold yellow", "exit": "yellow", "image": "bold red",
                "admission": "bold red", "deadline": "bold red", "eviction": "bold red",
                "failed": "bold red", "deletion": "magenta", "orphan": "magenta",
                "not-ready": "yellow", "ready": "green", "start": "green",
                "started": "green", "state": "bold"}


TRACE_FLAG = "--trace-dir"
"""The daemon's flag that turns its trace on (actors.app.config.flags), as explain's own
flag of the same name reads such a trace."""

HOW_TO_TRACE = (f"to record one, start the daemon with {TRACE_FLAG} DIR (e.g. "
                f"`kubelet-actors {TRACE_FLAG} /var/lib/kubelet-actors/trace ...`), then run "
                f"`{PROG} POD {TRACE_FLAG} DIR` (or, while it runs, `{PROG} POD` on its "
                "--root-dir)")
"""How to turn tracing on: what every error about a missing trace ends with."""


class ExplainError(Exception):
    """What to print before exiting 1."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Explain a pod's state, restarts, kills and waits from a "
        "trace, with the evidence each cause rests on (exit codes, probe outputs, back-offs, "
        "errors verbatim) and where in the trace it was read.",
        epilog=f"The daemon records a trace when started with {TRACE_FLAG} DIR. Exit codes: "
        "0 explained, 1 no trace or no such pod in it, 2 usage.")
    add = parser.add_argument
    add("pod", help="the pod: its name, namespace/name, or its UID (a prefix will do)")
    add("-n", "--namespace", default="default",
        help="the pod's namespace (default default; a namespace/name POD names its own)")
    add("-A", "--all-namespaces", action="store_true",
        help="the pod in any namespace (every pod of that name)")
    add("-c", "--container", default=None,
        help="only this container's findings (and the pod's own)")
    add("--trace-dir", default="", metavar="DIR",
        help="the trace to read (default: the trace of the daemon running on --root-dir)")
    add("--root-dir", default=DEFAULT_ROOT_DIR,
        help=f"the running daemon's --root-dir (default {DEFAULT_ROOT_DIR})")
    add_output_flag(parser, (TABLE, JSON, YAML))
    # Before -o: `--json`. Kept for scripts, out of the help.
    add("--json", action="store_const", const=JSON, dest="output", help=argparse.SUPPRESS)
    return parser


def daemon_trace_dir(root_dir: str) -> str:
    """The ``--trace-dir`` of the daemon that holds ``root_dir``'s lock."""
    lock = os.path.join(root_dir, LOCK_NAME)
    try:
        with open(lock, encoding="utf-8") as file:
            pid = file.read().strip()
    except OSError as err:
        raise ExplainError(f"no --trace-dir given and no daemon on --root-dir {root_dir} "
                           f"({lock}: {err.strerror}); {HOW_TO_TRACE}") from err
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            argv = [a.decode(errors="replace") for a in file.read().split(b"\0")]
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except (OSError, ValueError) as err:
        raise ExplainError(f"no --trace-dir given and the daemon of --root-dir {root_dir} "
                           f"(pid {pid or '?'}) is not running; {HOW_TO_TRACE}") from err
    for index, arg in enumerate(argv):
        value = None
        if arg == "--trace-dir" and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith("--trace-dir="):
            value = arg.split("=", 1)[1]
        if value:
            return os.path.join(cwd, value)
    raise ExplainError(f"the daemon of --root-dir {root_dir} (pid {pid}) records no trace "
                       f"(it runs without {TRACE_FLAG}); {HOW_TO_TRACE}")


@dataclass(frozen=True, slots=True)
class Run:
    """The records one daemon process wrote (a trace directory kept across restarts of
    the daemon holds several: each numbers its deliveries from 1)."""

    pid: int | None
    records: list[dict[str, Any]]
    torn: tuple[str, ...]


def read_runs(path: str) -> list[Run]:
    """The trace at ``path``, one Run per process that wrote it, oldest first."""
    groups: list[tuple[int | None, list[Path]]] = []
    try:
        found = trace_files(path)
    except TraceError as err:  # nothing there: the daemon did not record one
        raise ExplainError(f"{err}; {HOW_TO_TRACE}") from err
    for file in found:
        with file.open("rb") as opened:
            first = opened.readline()
        try:
            header = json.loads(first) if first.strip() else {}
        except json.JSONDecodeError:
            header = {}
        pid = header.get("pid") if isinstance(header, dict) and header.get("k") == "header" \
            else None
        if groups and groups[-1][0] == pid:
            groups[-1][1].append(file)
        else:
            groups.append((pid, [file]))
    runs: list[Run] = []
    for pid, files in groups:
        records: list[dict[str, Any]] = []
        torn: list[str] = []
        for file in files:
            trace = read_trace(file)
            records.extend(trace.records)
            torn.extend(trace.torn)
        runs.append(Run(pid, records, tuple(torn)))
    return runs


def render(explanations: Sequence[tuple[Run, PodExplanation]], console: Console) -> None:
    several = len({id(run) for run, _ in explanations}) > 1
    for run, explanation in explanations:
        head = Text(f"pod {explanation.namespace}/{explanation.name} "
                    f"(uid {explanation.uid})", style="bold")
        if several:
            head.append(f", daemon pid {run.pid}", style="dim")
        console.print(head)
        for finding in explanation.findings:
            line = Text(f"  {clock_time(finding.time)}  ", style="dim")
            line.append(f"{finding.kind:<9} ", style=_KIND_STYLES.get(finding.kind, ""))
            line.append(finding.text)
            line.append("  [" + " ".join(f"#{s}" for s in finding.seqs) + "]", style="dim")
            console.print(line)
            several_containers = len(finding.containers) > 1
            for piece in finding.evidence:
                console.print(evidence_line(piece, several_containers))


def evidence_line(piece: Evidence, name_container: bool = False) -> Text:
    """``            exitCode: 42  [#12 12:00:01]``: one piece of evidence under its finding;
    ``name_container`` (a finding about several): ``            web: exitCode: 42 ...``."""
    value = piece.value
    shown = json.dumps(value) if isinstance(value, str) else (
        str(value).lower() if isinstance(value, bool) else f"{value:g}"
        if isinstance(value, float) else str(value))
    line = Text(f"{'':12}")
    if name_container and piece.container:
        line.append(f"{piece.container}: ", style="bold")
    line.append(f"{piece.field}: ", style="cyan")
    line.append(shown)
    where = " ".join(part for part in (
        f"#{piece.seq}" if piece.seq is not None else "",
        clock_time(piece.time) if piece.time is not None else "") if part)
    if where:
        line.append(f"  [{where}]", style="dim")
    return line


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exit:
        return exit.code if isinstance(exit.code, int) else EXIT_USAGE
    try:
        path = args.trace_dir or daemon_trace_dir(args.root_dir)
        runs = read_runs(path)
        namespace = None if args.all_namespaces else args.namespace
        explained = [(run, e) for run in runs
                     for e in explain(run.records, args.pod, namespace, args.container)]
        if not explained:
            pods = ", ".join(sorted({f"{k.namespace}/{k.name}" for run in runs
                                     for k in known_pods(run.records)})) or "none"
            raise ExplainError(f"{path}: the trace names no pod {args.pod!r}"
                               + (f" in namespace {namespace}" if namespace and "/" not in
                                  args.pod else "")
                               + f" (its pods: {pods}; -A looks in every namespace)")
    except (TraceError, ExplainError) as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as err:
        print(f"{PROG}: cannot read the trace: {err}", file=sys.stderr)
        return EXIT_FAILED
    for run in runs:
        for torn in run.torn:
            print(f"{PROG}: warning: {torn}", file=sys.stderr)
    try:
        if args.output in (JSON, YAML):
            sys.stdout.write(render_data(
                {"schema": SCHEMA, "trace": str(path),
                 "pods": [{**e.to_json(), "pid": run.pid} for run, e in explained]},
                args.output))
            sys.stdout.flush()
        else:
            render(explained, Console(highlight=False, soft_wrap=True))
    except BrokenPipeError:  # `explain ... | head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK
