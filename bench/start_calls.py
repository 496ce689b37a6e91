"""The CRI calls a pod start costs the daemon, counted by method from its trace.

    .venv/bin/python -m bench.start_calls [--burst 10] [--repo PATH] [--daemon-arg=ARG ...]

One run on the benchmarks' own containerd (under the machine-wide lock): the daemon runs
as a subprocess with ``--trace-dir`` (the tree at ``--repo``, this one by default, so an
older checkout can be counted the same way). First one pod (one busybox container
running a ``sh`` loop; its image and the pause image are pulled beforehand) is written
into its manifest directory and waited for until /pods shows it Running; then
``--burst`` pods at once, until all are Running. Each phase is a window of monotonic
time, from the manifests' rename until /pods showed Running, and then, as "+ trailing",
on until the daemon has been quiet for a second (what the start still causes after /pods
shows it: a relist, a sync). The trace's runtime calls in each window are printed per
method (count, summed and mean duration) and per actor.

Counts, not times, are the point: they do not move with the machine's load. The
durations are what those calls took on this run, for where the time goes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.testbed import (
    BENCH,
    BUSYBOX_IMAGE,
    PAUSE_IMAGE,
    machine_lock,
    private_containerd,
    serve_images,
)
from actors.app.tools.call_counts import calls_in, count_by_actor, count_by_method
from actors.core.trace.reader import read_trace
from actors.kubelet import names
from bench.daemon_bench import REPO, DaemonProc, pod_uid, running
from runtime.cri.client import CRIClient
from runtime.cri.types import ImageSpec

QUIET_S = 1.0
"""How long the daemon makes no runtime call (other than the runtime monitor's) before a
phase's trailing window ends."""
POLL_S = 0.01


@dataclass(frozen=True, slots=True)
class Window:
    """One phase: from the manifests' rename until /pods showed every pod Running (``to``),
    and until the start's trailing calls were done (``quiet``)."""

    name: str
    since: float
    to: float
    quiet: float


def _wait(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(POLL_S)
    raise RuntimeError(f"{what}: not within {timeout:.0f} s")


def _start_phase(daemon: DaemonProc, trace_dir: Path, name: str, pods: list[str]) -> Window:
    uids = [pod_uid(p, "daemon") for p in pods]
    since = time.monotonic()
    for p in pods:
        daemon.write(p)

    def all_running() -> bool:
        seen = daemon.pods()
        return all(running(seen.get(uid)) for uid in uids)

    _wait(all_running, 120.0, f"{name}: every pod Running in /pods")
    to = time.monotonic()
    return Window(name, since, to, _quiet_after(trace_dir, to))


def _quiet_after(trace_dir: Path, since: float) -> float:
    """When the daemon last called the runtime for the start (not the runtime monitor's
    health checks), once a second has passed with no such call. The trace is flushed
    every few hundred ms: read it again until the quiet second is in it."""
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        time.sleep(QUIET_S)
        calls = [c for c in calls_in(read_trace(trace_dir).records, since=since)
                 if c.get("actor") != names.RUNTIME_MONITOR]
        last = max((float(c["m"]) for c in calls), default=since)
        if time.monotonic() - last >= QUIET_S:
            return last
    raise RuntimeError("the daemon did not go quiet after the start")


def method_table(title: str, trace_dir: Path, since: float, until: float) -> Table:
    counted = count_by_method(calls_in(read_trace(trace_dir).records, since=since,
                                       until=until))
    table = Table(title=title)
    for column in ("method", "calls", "total ms", "mean ms"):
        table.add_column(column, justify="left" if column == "method" else "right")
    for m in sorted(counted.values(), key=lambda c: c.method):
        table.add_row(m.method, str(m.count), f"{m.seconds * 1000:.1f}",
                      f"{m.seconds * 1000 / m.count:.1f}")
    total = sum(c.count for c in counted.values())
    table.add_row("[bold]all[/bold]", f"[bold]{total}[/bold]",
                  f"{sum(c.seconds for c in counted.values()) * 1000:.1f}", "")
    return table


def actor_table(title: str, trace_dir: Path, since: float, until: float) -> Table:
    per = count_by_actor(calls_in(read_trace(trace_dir).records, since=since, until=until),
                         names.actor_group)
    methods = sorted({m for counts in per.values() for m in counts})
    table = Table(title=title)
    table.add_column("actor")
    for m in methods:
        table.add_column(m, justify="right")
    for actor in sorted(per):
        table.add_row(actor, *(str(per[actor].get(m, "")) for m in methods))
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.start_calls", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--burst", type=int, default=10, help="pods at once (10)")
    parser.add_argument("--repo", type=Path, default=REPO,
                        help="the source tree whose daemon is counted (this one)")
    parser.add_argument("--daemon-arg", action="append", default=[], metavar="ARG",
                        help="one more flag for the daemon (repeatable)")
    args = parser.parse_args(argv)
    console = Console(width=160)
    if os.geteuid() != 0:
        console.print("run as root: it starts containerd and makes a bridge")
        return 2
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    with machine_lock(BENCH), serve_images(), private_containerd(BENCH) as emb:
        work = emb.base_dir / "start-calls"
        trace_dir = work / "trace"
        daemon = DaemonProc(work, emb.endpoint, ("--trace-dir", str(trace_dir),
                                                 *args.daemon_arg), repo=args.repo)
        windows: list[Window] = []
        client = CRIClient(emb.endpoint)
        try:
            for image in (PAUSE_IMAGE, BUSYBOX_IMAGE):  # present: no pull in the counts
                client.pull_image(ImageSpec(image=image))
            daemon.start()
            # The daemon's own start (first relists, the stream's settle relist) is over.
            _quiet_after(trace_dir, time.monotonic())
            windows.append(_start_phase(daemon, trace_dir, "one pod", ["calls-one"]))
            windows.append(_start_phase(daemon, trace_dir, f"{args.burst} pods at once",
                                        [f"calls-burst-{i:02d}" for i in range(args.burst)]))
        finally:
            daemon.stop()
            client.close()
        for w in windows:
            console.print(method_table(f"{w.name}: manifest -> Running in /pods "
                                       f"({(w.to - w.since) * 1000:.0f} ms)",
                                       trace_dir, w.since, w.to))
            console.print(method_table(f"{w.name}: + trailing, until quiet", trace_dir,
                                       w.since, w.quiet))
            console.print(actor_table(f"{w.name}: calls by actor, until quiet", trace_dir,
                                      w.since, w.quiet))
    return 0


if __name__ == "__main__":
    sys.exit(main())
