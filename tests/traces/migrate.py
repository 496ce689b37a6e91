"""Carry an intended change of what the kubelet asks of the runtime into a kept trace that
was recorded on a real runtime, and so cannot be recorded again.

    python -m tests.traces.migrate tests/traces/NAME [--max 50]

The scenario traces are re-recorded (``python -m tests.traces.scenarios``); a trace of a real
drill run is not reproducible, and it is kept for what happened in it (a dead letter at one
moment), not for the arguments of its CreateContainer calls. When the kubelet deliberately
sends something new to the runtime (a mount, a security setting, resources), such a trace
diverges at the first call with the new arguments. This tool replays the trace and, while the
first divergence is a runtime call of the same target and method as the recording has next,
differing in its arguments only, writes the replayed arguments into the trace file, then
replays again. It stops at any other divergence and says so: a call added, removed or
reordered, a message, an input, is a change of behaviour, not of arguments, and no tool
should paper over it. Each migrated call is printed field by field (recorded -> replayed), for
the trace's README, which must say what was carried over and why.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from actors.core.trace.reader import read_trace, trace_files
from actors.core.trace.replay import format_report, replay
from actors.core.trace.stubs import Divergence
from actors.kubelet.trace import KubeletWorld

__all__ = ["migrate_call_arguments"]


class NotAnArgumentChange(Exception):
    """The trace diverges in a way this tool must not rewrite."""


def _is_argument_change(divergence: Divergence) -> bool:
    expected, actual = divergence.expected, divergence.actual
    return (divergence.step.startswith("runtime call")
            and isinstance(expected, dict) and isinstance(actual, dict)
            and expected.get("target") == actual.get("target")
            and expected.get("method") == actual.get("method")
            and expected.get("args") != actual.get("args"))


def _rewrite(directory: Path, divergence: Divergence) -> Path:
    """Replace the recorded arguments of the diverging call; returns the file changed."""
    expected: dict[str, Any] = divergence.expected
    for path in trace_files(directory):
        lines = path.read_text().splitlines(keepends=True)
        for number, line in enumerate(lines):
            record = json.loads(line)
            if (record.get("k") == "call" and record.get("in") == divergence.delivery
                    and record.get("method") == expected["method"]
                    and record.get("args") == expected["args"]):
                record["args"] = divergence.actual["args"]
                lines[number] = json.dumps(record, separators=(",", ":")) + "\n"
                path.write_text("".join(lines))
                return path
    raise NotAnArgumentChange(
        f"the call of delivery #{divergence.delivery} is not in {directory}'s files")


def migrate_call_arguments(directory: Path, limit: int = 50) -> list[Divergence]:
    """Migrate until the trace replays cleanly; the argument changes carried over, in order.

    NotAnArgumentChange if replay diverges otherwise, or still diverges after ``limit``
    migrated calls (a runaway: the trace is left as far as it got).
    """
    world = KubeletWorld()
    migrated: list[Divergence] = []
    for _ in range(limit):
        report = replay(read_trace(directory), world)
        if report.ok:
            return migrated
        assert report.divergence is not None
        if not _is_argument_change(report.divergence):
            raise NotAnArgumentChange(format_report(report))
        _rewrite(directory, report.divergence)
        migrated.append(report.divergence)
    raise NotAnArgumentChange(f"still diverging after {limit} migrated calls")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--max", type=int, default=50, help="most calls to migrate")
    opts = parser.parse_args(argv)
    try:
        migrated = migrate_call_arguments(opts.trace, opts.max)
    except NotAnArgumentChange as err:
        print(f"not migrated: {err}", file=sys.stderr)
        return 1
    for divergence in migrated:
        print(f"delivery #{divergence.delivery} {divergence.actor}: "
              f"{divergence.expected['method']}")
        for diff in divergence.fields():
            print(f"  {diff.path}: {diff.recorded!r} -> {diff.replayed!r}")
    print(f"{len(migrated)} call(s) migrated; {opts.trace} replays cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
