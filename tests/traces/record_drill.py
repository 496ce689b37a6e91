"""Record the kept drill trace (tests/traces/drill-kill-probes-dead-letter) again.

    python -m tests.traces.record_drill [--first-seed N] [--tries K]

A real run on the embedded containerd cannot be replayed into being: it is kept for what
happened in it, a pod worker telling the probe manager while that was down, so that the
dispatch point handed the message to the supervisor as a DeadLetter during the worker's
handler (replay once mistook that for the worker's own send). So this runs
``kubelet-actors drill kill-probes --seeds N-M --jobs 1`` (M = N + K - 1), takes the
first seed whose run's trace has such a dead letter (``worker_dead_letters``), puts that
trace in place of the kept one and prints the seed, for the trace's README. Whether a run
has the event depends on timing (a busy machine makes it likelier), so give it enough
seeds. Needs what the drills need (root, the embedded containerd: ``kubelet-actors drill
--help``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from actors.core.trace.reader import read_trace

KEPT = Path(__file__).resolve().parent / "drill-kill-probes-dead-letter"
DRILL = "kill-probes"


def worker_dead_letters(path: Path) -> list[dict[str, Any]]:
    """The DeadLetters the dispatch point made of a pod worker's message to the probe
    manager while the worker's handler ran (the records, in order)."""
    import actors.kubelet.trace  # noqa: F401 - the kubelet's message names

    trace = read_trace(path)
    messages = {r["id"]: r for r in trace.messages()}
    found = []
    for record in messages.values():
        parent = messages.get(record.get("parent"))
        if (record["type"] == "DeadLetter" and record.get("from") == "dispatch"
                and parent is not None and parent["to"].startswith("pod/")
                and record["body"].get("to") == "probes"):
            found.append(record)
    return found


def record(first_seed: int, tries: int) -> int:
    """The seed whose run was kept (SystemExit when none of ``tries`` had the event)."""
    last = first_seed + tries - 1
    with tempfile.TemporaryDirectory(prefix="record-drill-") as scratch:
        subprocess.run([sys.executable, "-m", "bin.main", "drill", DRILL, "--seeds",
                        f"{first_seed}-{last}", "--jobs", "1", "--keep-trace", scratch],
                       check=True)
        for seed in range(first_seed, last + 1):
            (run,) = (Path(scratch) / f"seed-{seed}" / DRILL).glob("run*")
            if worker_dead_letters(run):
                for old in KEPT.glob("trace-*.jsonl"):
                    old.unlink()
                for new in sorted(run.glob("trace-*.jsonl")):
                    shutil.copy(new, KEPT / new.name)
                print(f"seed {seed}: kept in {KEPT}")
                return seed
    raise SystemExit(f"none of seeds {first_seed}..{last} had the event")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.traces.record_drill",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--tries", type=int, default=20)
    args = parser.parse_args()
    record(args.first_seed, args.tries)


if __name__ == "__main__":
    main()
