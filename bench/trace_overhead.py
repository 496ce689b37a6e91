"""What recording a trace costs: pod start latency with and without --trace-dir.

`.venv/bin/python -m bench.trace_overhead [--pods N]`: on one private containerd, the
daemon without a trace, then with one, then without again (so drift in the machine's load
shows), each starting N pods one after another: manifest written until GET /pods shows the
pod Running. Prints p50s and the overhead against the two untraced runs pooled, against the
target of at most 5% (TARGET).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.testbed import BENCH, machine_lock, private_containerd, serve_images
from bench.daemon_bench import NODE, POLL_TIGHT, DaemonProc, pct, pod_uid, running, wait

TARGET = 0.05
"""Recording a trace may slow a pod start by this much at most (p50)."""


def starts(daemon: DaemonProc, count: int, tag: str) -> list[float]:
    """Start ``count`` pods one after another; the seconds each took to show Running."""
    samples: list[float] = []
    for i in range(count):
        name = f"{tag}-{i:03d}"
        uid = pod_uid(name, "daemon")
        time.sleep(0.3)  # let the previous pod's teardown settle

        def up(uid: str = uid) -> bool:
            return running(daemon.pods().get(uid))

        def gone(uid: str = uid) -> bool:
            return uid not in daemon.pods()

        t0 = time.perf_counter()
        path = daemon.write(name)
        seen = wait(up, POLL_TIGHT, 60, f"{name} Running")
        samples.append(seen.seen - t0)
        path.unlink()
        wait(gone, 0.05, 60, f"{name} gone")
    return samples


def run(count: int, console: Console) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    with machine_lock(BENCH), serve_images(), private_containerd(BENCH) as emb:
        base = Path(tempfile.mkdtemp(prefix="trace-bench-", dir="/var/tmp"))
        for label, traced in (("plain-1", False), ("traced", True), ("plain-2", False)):
            work = base / label
            extra = ("--trace-dir", str(work / "trace")) if traced else ()
            daemon = DaemonProc(work, emb.endpoint, extra)
            daemon.start()
            try:
                results[label] = starts(daemon, count, label)
            finally:
                daemon.stop()
            console.print(f"  {label}: p50 {pct(results[label], .5):.3f} s")
        trace_bytes = sum(f.stat().st_size for f in (base / "traced" / "trace").glob("*"))
        console.print(f"  trace written: {trace_bytes / 1024:.0f} KiB for {count} pods")
        shutil.rmtree(base, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trace_overhead")
    parser.add_argument("--pods", type=int, default=12, help="pod starts per run")
    args = parser.parse_args(argv)
    console = Console(width=120)
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    results = run(args.pods, console)
    plain = results["plain-1"] + results["plain-2"]
    traced = results["traced"]
    overhead = pct(traced, .5) / pct(plain, .5) - 1
    table = Table(title=f"pod start with and without --trace-dir ({args.pods} pods each, "
                        f"node {NODE})")
    for column in ("run", "p50", "p90", "min", "max"):
        table.add_column(column)
    for label, values in (*results.items(), ("plain pooled", plain)):
        table.add_row(label, *(f"{v:.3f} s" for v in (pct(values, .5), pct(values, .9),
                                                       min(values), max(values))))
    console.print(table)
    verdict = "met" if overhead <= TARGET else "NOT met"
    console.print(f"trace overhead on p50: {overhead * 100:+.1f}% "
                  f"(target <= {TARGET * 100:.0f}%: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
