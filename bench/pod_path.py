"""Where the time goes in one pod start and one container exit, read from the daemon's trace.

    .venv/bin/python -m bench.pod_path [--pods N] [--repo PATH] [--daemon-arg=ARG ...]

One run on the benchmarks' own containerd (under the machine-wide lock): the daemon runs as a
subprocess with ``--trace-dir``; N one-container pods (``sleep 2; exit 1``, restartPolicy
Never) are written one after another into its manifest directory and each waited for until
/pods shows it terminated. Then the trace is read back and, for each pod, two causal chains
are printed, walking ``parent`` links from the status manager's first PodObserved that shows
the container running (the start) and then exited (the exit) back to the input that began
them (the watcher's FilesChanged; the runtime's event or the PLEG's tick):

    #id  actor <- sender  Type   queued  handled  runtime calls inside (each with its time)

``queued`` is the time from the message being sent to its handler starting (mailbox wait),
``handled`` the handler's time until it sent the next link (or ended), calls those the
handler made to the runtime before that. An exit chain may begin at a PLEG re-check (a timer
message, which has no parent): the runtime had not shown the exit on the first relist. The sum of
the chain is the latency the kubelet adds between the two ends; the runtime's share is the
calls. Nothing here asserts on time: this is the profile the speed work starts from.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.testbed import BENCH, machine_lock, private_containerd, serve_images
from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import Trace, read_trace
from bench.daemon_bench import EXIT_1, REPO, DaemonProc, pod_uid, running, terminated
from runtime.cri.types import ContainerState

# What ends a chain: a status manager update whose runtime status shows this state.
RUNNING, EXITED = ContainerState.RUNNING, ContainerState.EXITED
POLL_S = 0.005
"""How often /pods is read while a pod starts and runs (as daemon_bench's tight poll)."""


@dataclass(frozen=True, slots=True)
class Ends:
    """What the bench saw of one pod start from outside (monotonic seconds, comparable
    with the trace's: one clock for the machine)."""

    written: float  # the manifest's rename into the directory
    running: float | None  # when /pods first showed it Running


def outside(ends: Ends, links: list[Link]) -> tuple[float, float | None]:
    """The two stretches of a start the chain does not hold: the manifest's rename to the
    watcher's FilesChanged, and the status manager's update to /pods showing Running
    (an HTTP ask of the status manager, and the bench's poll period)."""
    to_pods = None if ends.running is None else ends.running - links[-1].ended
    return links[0].sent - ends.written, to_pods


@dataclass(frozen=True, slots=True)
class Link:
    """One delivery of a causal chain, with where its time went."""

    id: int
    actor: str
    sender: str
    type: str
    sent: float  # monotonic seconds
    began: float
    ended: float  # its handler's end, or when it sent the next link if that came first
    calls: tuple[tuple[str, float, float], ...]  # method, duration, end (monotonic)

    @property
    def queued(self) -> float:
        """Mailbox wait: sent -> its handler began."""
        return self.began - self.sent

    @property
    def handled(self) -> float:
        return self.ended - self.began


def runtime_time(links: list[Link]) -> float:
    """The time the chain waited on the runtime: the union of its calls' intervals (calls
    made beside each other, as the image checks beside RunPodSandbox, count once)."""
    intervals = sorted((end - dur, end) for x in links for _, dur, end in x.calls)
    total, reach = 0.0, float("-inf")
    for begin, end in intervals:
        if end > reach:
            total += end - max(begin, reach)
            reach = end
    return total


def span(links: list[Link]) -> float:
    """From the first message sent to the last handler's end (links overlap: a message is
    sent while its parent's handler still runs)."""
    return links[-1].ended - links[0].sent


def _container_state(body: dict[str, Any]) -> ContainerState | None:
    statuses = body.get("runtime", {}).get("container_statuses") or []
    return ContainerState(statuses[0]["state"]) if statuses else None


def end_of(trace: Trace, uid: str, state: ContainerState) -> int | None:
    """The first PodObserved to the status manager whose container is in ``state``."""
    for record in trace.messages():
        if record["to"] != "status" or MESSAGES.short(record["type"]) != "PodObserved":
            continue
        body = record["body"]
        if body["pod"]["metadata"]["uid"] == uid and _container_state(body) == state:
            return int(record["id"])
    return None


def chain(trace: Trace, last: int) -> list[Link]:
    """The deliveries that led to ``last``, oldest first."""
    messages = {r["id"]: r for r in trace.messages()}
    began = {r["id"]: r["m"] for r in trace.records if r["k"] == "begin"}
    ended = {r["id"]: r["m"] for r in trace.records if r["k"] == "end"}
    calls: dict[int, list[tuple[str, float, float]]] = {}
    for r in trace.records:
        if r["k"] == "call" and r.get("in") is not None:
            calls.setdefault(r["in"], []).append((r["method"], float(r["dur"]), r["m"]))
    links: list[Link] = []
    at: int | None = last
    child_sent = float("inf")  # a handler's calls after it sent the next link are not on the path
    while at is not None and at in messages:
        m = messages[at]
        start, stop = began.get(at, m["m"]), ended.get(at, m["m"])
        on_path = tuple(c for c in calls.get(at, ()) if c[2] <= child_sent)
        links.append(Link(at, m["to"], m["from"], MESSAGES.short(m["type"]), m["m"], start,
                          min(stop, child_sent), on_path))
        child_sent = m["m"]
        at = m.get("parent")
    return links[::-1]


def chain_table(title: str, links: list[Link]) -> Table:
    t = Table(title=title)
    for col in ("#", "actor <- sender", "message", "sent at ms", "queued ms", "handled ms",
                "runtime calls (ms)"):
        t.add_column(col)
    origin = links[0].sent
    for link in links:
        t.add_row(str(link.id), f"{link.actor} <- {link.sender}", link.type,
                  f"+{(link.sent - origin) * 1000:.1f}", f"{link.queued * 1000:.1f}",
                  f"{link.handled * 1000:.1f}",
                  ", ".join(f"{name} {dur * 1000:.1f}" for name, dur, _ in link.calls))
    total = span(links)
    runtime = runtime_time(links)
    t.add_row("", "", "[bold]chain[/bold]", "", "", f"[bold]{total * 1000:.1f}[/bold]",
              f"runtime {runtime * 1000:.1f} ms, kubelet {(total - runtime) * 1000:.1f} ms")
    return t


def handler_table(title: str, link: Link) -> Table:
    """One handler's runtime calls in time: when each began (after the handler did), how
    long it took, and the handler's own time since the call before it ended (what it
    computed, wrote or logged in between); calls beside another show no gap."""
    t = Table(title=title)
    for col in ("call", "began at ms", "took ms", "own time before it ms"):
        t.add_column(col)
    reach = link.began
    own = 0.0
    for name, dur, end in sorted(link.calls, key=lambda c: c[2] - c[1]):
        began = end - dur
        gap = max(began - reach, 0.0)
        own += gap
        t.add_row(name, f"+{(began - link.began) * 1000:.1f}", f"{dur * 1000:.1f}",
                  f"{gap * 1000:.1f}")
        reach = max(reach, end)
    tail = max(link.ended - reach, 0.0)
    own += tail
    t.add_row("(handler end)", f"+{(link.ended - link.began) * 1000:.1f}", "",
              f"{tail * 1000:.1f}")
    t.add_row("", "", "[bold]own[/bold]", f"[bold]{own * 1000:.1f}[/bold]")
    return t


def own_times(link: Link) -> tuple[float, float]:
    """A handler's own time (between and around its runtime calls, calls beside each other
    counting once), and the part of it before its RunPodSandbox began."""
    reach, own, before = link.began, 0.0, 0.0
    for name, dur, end in sorted(link.calls, key=lambda c: c[2] - c[1]):
        gap = max(end - dur - reach, 0.0)
        own += gap
        if name == "run_pod_sandbox":
            before = own
        reach = max(reach, end)
    return own + max(link.ended - reach, 0.0), before


def making_summary(starts: list[list[Link]]) -> str:
    syncs = [own_times(max(links, key=lambda x: x.handled)) for links in starts]
    return (f"the sync that made the pod: own time p50 "
            f"{statistics.median(o for o, _ in syncs) * 1000:.1f} ms, of which before "
            f"RunPodSandbox p50 {statistics.median(b for _, b in syncs) * 1000:.1f} ms")


def summary(title: str, chains: Iterable[list[Link]]) -> str:
    totals, runtime = [], []
    for links in chains:
        totals.append(span(links))
        runtime.append(runtime_time(links))
    if not totals:
        return f"{title}: no chains found"
    kubelet = [t - r for t, r in zip(totals, runtime, strict=True)]
    return (f"{title}: chain p50 {statistics.median(totals) * 1000:.1f} ms, of which runtime "
            f"calls p50 {statistics.median(runtime) * 1000:.1f} ms; the kubelet's own share "
            f"p50 {statistics.median(kubelet) * 1000:.1f} ms ({len(totals)} pods)")


def outside_summary(edges: list[tuple[float, float | None]], starts: list[list[Link]]) -> str:
    """The p50 of a start end to end, as a bench sees it, in its three parts."""
    watch = [w for w, _ in edges]
    to_pods = [p for _, p in edges if p is not None]
    total = [w + span(links) + p for (w, p), links in zip(edges, starts, strict=True)
             if p is not None]
    if not total:
        return "start end to end: /pods never showed a pod Running"
    return (f"start end to end (manifest renamed -> /pods Running): p50 "
            f"{statistics.median(total) * 1000:.1f} ms = rename -> FilesChanged p50 "
            f"{statistics.median(watch) * 1000:.1f} ms + chain + status manager -> /pods "
            f"seen p50 {statistics.median(to_pods) * 1000:.1f} ms (poll every "
            f"{POLL_S * 1000:.0f} ms)")


def chain_bench_args(prog: str, description: str | None, argv: list[str] | None
                     ) -> tuple[argparse.Namespace, Console] | None:
    """The flags a chain bench (this one, bench.teardown_path) takes, and its console;
    None (said on the console) when not run as root."""
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=3, help="pods one after another (3)")
    parser.add_argument("--repo", type=Path, default=REPO,
                        help="the source tree whose daemon runs (this one)")
    parser.add_argument("--daemon-arg", action="append", default=[], metavar="ARG",
                        help="one more flag for the daemon (repeatable)")
    args = parser.parse_args(argv)
    console = Console(width=170)
    if os.geteuid() != 0:
        console.print("run as root: it starts containerd and makes a bridge")
        return None
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    return args, console


def main(argv: list[str] | None = None) -> int:
    parsed = chain_bench_args("python -m bench.pod_path", __doc__, argv)
    if parsed is None:
        return 2
    args, console = parsed
    with machine_lock(BENCH), serve_images(), private_containerd(BENCH) as emb:
        work = emb.base_dir / "pod-path"
        trace_dir = work / "trace"
        daemon = DaemonProc(work, emb.endpoint,
                            ("--trace-dir", str(trace_dir), *args.daemon_arg), repo=args.repo)
        names = [f"path-{i:02d}" for i in range(args.pods)]
        ends: dict[str, Ends] = {}
        try:
            daemon.start()
            for name in names:
                uid = pod_uid(name, "daemon")
                written = time.monotonic()
                daemon.write(name, restart="Never", script=EXIT_1)
                deadline = written + 60
                seen_running: float | None = None
                while time.monotonic() < deadline:
                    pod = daemon.pods().get(uid)
                    if seen_running is None and running(pod):
                        seen_running = time.monotonic()
                    if terminated(pod):
                        break
                    time.sleep(POLL_S)
                else:
                    raise RuntimeError(f"{name} did not terminate in 60 s")
                ends[name] = Ends(written, seen_running)
        finally:
            daemon.stop()
        trace = read_trace(trace_dir)
    starts: list[list[Link]] = []
    exits: list[list[Link]] = []
    edges: list[tuple[float, float | None]] = []
    for name in names:
        uid = pod_uid(name, "daemon")
        for state, found in ((RUNNING, starts), (EXITED, exits)):
            last = end_of(trace, uid, state)
            if last is None:
                console.print(f"{name}: no status update showing {state}")
                continue
            found.append(chain(trace, last))
            if state == RUNNING:
                edges.append(outside(ends[name], found[-1]))
    if starts:
        console.print(chain_table(f"{names[-1]}: manifest -> running in the status manager",
                                  starts[-1]))
    if starts:
        longest = max(starts[-1], key=lambda x: x.handled)
        console.print(handler_table(f"{names[-1]}: the sync that made it (#{longest.id})",
                                    longest))
    if exits:
        console.print(chain_table(f"{names[-1]}: container exit -> exited in the status manager",
                                  exits[-1]))
    console.print(summary("start", starts))
    if starts:
        console.print(making_summary(starts))
    console.print(summary("exit", exits))
    if edges:
        console.print(outside_summary(edges, starts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
