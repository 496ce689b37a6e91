"""How the daemon's costs grow with the pods on the node: 10, 110 and 500 pods.

    .venv/bin/python -m bench.scale_bench [--sizes 10,110,500] [--steady 20] [--keep-log DIR]

One run, one private embedded containerd on a /22 (actors.app.testbed.BENCH_WIDE, under
the machine-wide lock). For each size N, smallest first:

1. Raw CRI: N one-container pods started by 8 parallel callers (RunPodSandbox,
   CreateContainer, StartContainer of the configs the kubelet makes), then torn down by
   8 (StopContainer with the pods' 2 s grace, StopPodSandbox, RemovePodSandbox).
2. The daemon (``--max-pods`` above N), started with no pods: spawn -> /healthz 200.
   N manifests written at once -> all N Running in /pods. Then a steady window: CPU
   (utime+stime), RSS and threads from /proc. The runtime is checked: one sandbox and
   one running container per pod, nothing else.
3. Restart: SIGTERM (the pods keep running, as upstream's kubelet leaves them), a new
   daemon on the same root dir: spawn -> /healthz 200, and spawn -> all N Running in
   /pods with the same container IDs and restartCount 0 (adoption, no restart).
4. Teardown: the N manifests removed -> no sandbox or container of theirs left.

Printed per size and per pod, with the raw-CRI ratios, so the curve shows whether any
per-pod cost grows with N. The containers run ``sleep`` behind a shell that exits on
SIGTERM: nothing forks while the node is steady. Not a test: nothing here asserts on time.

Before each size the node's limits are checked against what the pods cost
(runtime.node_limits); while it runs, bench.node_watch samples the node's tasks and
containerd's and the daemon's threads and open files, and a second table prints their
peaks against those limits. The bench's directory (the daemon's, containerd's and the
bench's logs) goes at the end; ``--keep-log DIR`` copies the three logs into DIR first,
whether the run succeeded or failed. When a CRI call fails the bench says whether
containerd is still alive, and with what exit code and last error lines it died.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.testbed import (
    BENCH_WIDE,
    LOCK_WAIT_S,
    machine_lock,
    private_containerd,
    serve_images,
)
from bench.daemon_bench import (
    POLL_BULK,
    Bench,
    ProcStat,
    parallel,
    pod_uid,
    quiet_logs,
    running,
    wait,
)
from bench.node_watch import NodeSample, NodeWatch
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.types import ContainerState
from runtime.errors import CRIError
from runtime.kuberuntime import labels as L
from runtime.node_limits import (
    GO_MAX_THREADS,
    NodeLimits,
    capacity_problems,
    read_limits,
)

SLEEPER = "trap 'exit 0' TERM; sleep 2147483647 & wait"
"""A container that forks nothing while it runs and ends at once on SIGTERM."""
RAW_WORKERS = 8
MAX_PODS = 1000
WAIT_S = 900.0


@dataclass
class SizeResult:
    """What one size measured."""

    n: int
    raw_start: float = 0.0
    raw_teardown: float = 0.0
    healthz_empty: float = 0.0
    start: float = 0.0
    cores: float = 0.0
    rss_mib: float = 0.0
    threads: int = 0
    healthz_restart: float = 0.0
    adoption: float = 0.0
    restarts: int = 0
    teardown: float = 0.0
    problems: list[str] = field(default_factory=list)
    peak: NodeSample | None = None


class ScaleBench:
    def __init__(self, bench: Bench, console: Console, steady_s: float,
                 watch: NodeWatch) -> None:
        self.b = bench
        self.console = console
        self.steady_s = steady_s
        self.watch = watch

    # the runtime, as CRI sees it ---------------------------------------------------------

    def runtime_pods(self, uids: set[str]) -> dict[str, tuple[list[str], list[str]]]:
        """Per pod uid of ``uids``: (its sandboxes' ids, its running containers' ids)."""
        found: dict[str, tuple[list[str], list[str]]] = {}
        for s in self.b.client.list_pod_sandbox():
            uid = s.labels.get(L.POD_UID, "")
            if uid in uids:
                found.setdefault(uid, ([], []))[0].append(s.id)
        for c in self.b.client.list_containers():
            uid = c.labels.get(L.POD_UID, "")
            if uid in uids and c.state is ContainerState.RUNNING:
                found.setdefault(uid, ([], []))[1].append(c.id)
        return found

    def check_one_each(self, uids: set[str], when: str, r: SizeResult) -> dict[str, str]:
        """Each pod has one sandbox and one running container, and nothing else is there;
        the container id of each pod."""
        found = self.runtime_pods(uids)
        missing = uids - set(found)
        if missing:
            r.problems.append(f"{when}: {len(missing)} pods missing from the runtime")
        extra = {u: v for u, v in found.items() if len(v[0]) != 1 or len(v[1]) != 1}
        if extra:
            r.problems.append(f"{when}: {len(extra)} pods without exactly one sandbox and "
                              "one running container")
        total = len(self.b.client.list_containers())
        if total != len(uids):
            r.problems.append(f"{when}: {total} containers in the runtime for {len(uids)} pods")
        return {u: v[1][0] for u, v in found.items() if v[1]}

    # the phases --------------------------------------------------------------------------

    def raw(self, n: int, r: SizeResult) -> None:
        pods = self.b.pods_for([f"raw{n}-{i:03d}" for i in range(n)], script=SLEEPER,
                               tag="raw")
        self.watch.phase(f"{n} raw start")
        started = time.perf_counter()
        parallel(self.b.raw_start, pods, RAW_WORKERS)
        r.raw_start = time.perf_counter() - started
        self.watch.phase(f"{n} raw teardown")
        r.raw_teardown = self.b.raw_teardown(RAW_WORKERS, graceful=True)

    def healthz(self, spawned: float) -> float:
        """Seconds from ``spawned`` until /healthz answers 200."""
        seen = wait(lambda: self.b.daemon.get("/healthz")[0] == 200, 0.01, 60.0,
                    "/healthz 200").seen
        return seen - spawned

    def daemon(self, n: int, r: SizeResult) -> None:
        d = self.b.daemon
        names = [f"d{n}-{i:03d}" for i in range(n)]
        uids = {pod_uid(name, "daemon") for name in names}
        spawned = time.perf_counter()
        d.start()
        r.healthz_empty = self.healthz(spawned)
        self.watch.phase(f"{n} daemon start")
        started = time.perf_counter()
        for name in names:
            d.write(name, script=SLEEPER)

        def all_running() -> bool:
            pods = d.pods()
            return all(running(pods.get(uid)) for uid in uids)

        r.start = wait(all_running, POLL_BULK * 10, WAIT_S, f"{n} pods Running").seen - started
        before = self.check_one_each(uids, "after the start", r)
        self.watch.phase(f"{n} daemon steady")
        proc = ProcStat(d.pid)
        cpu0, t0 = proc.cpu(), time.perf_counter()
        time.sleep(self.steady_s)  # the window measured: nothing is waited for
        r.cores = (proc.cpu() - cpu0) / (time.perf_counter() - t0)
        r.rss_mib, r.threads = proc.rss_mib(), proc.threads()

        self.watch.phase(f"{n} daemon restart")
        d.stop()  # SIGTERM: the pods keep running
        spawned = time.perf_counter()
        d.start()
        r.healthz_restart = self.healthz(spawned)

        def adopted() -> bool:
            pods = d.pods()
            return all(running(pods.get(uid)) for uid in uids)

        r.adoption = wait(adopted, POLL_BULK * 5, WAIT_S, f"{n} pods adopted").seen - spawned
        pods = d.pods()
        r.restarts = sum(s.get("restartCount", 0) for uid in uids
                         for s in pods[uid]["status"].get("containerStatuses", []))
        after = self.check_one_each(uids, "after the restart", r)
        changed = sum(1 for uid, cid in before.items() if after.get(uid) != cid)
        if changed:
            r.problems.append(f"{changed} containers replaced across the restart")

        self.watch.phase(f"{n} daemon teardown")
        started = time.perf_counter()
        for name in names:
            (d.manifests / f"{name}.yaml").unlink()
        wait(lambda: not self.runtime_pods(uids), POLL_BULK * 10, WAIT_S,
             f"{n} pods gone from the runtime")
        r.teardown = time.perf_counter() - started
        left = len(self.b.client.list_containers()) + len(self.b.client.list_pod_sandbox())
        if left:
            r.problems.append(f"{left} containers or sandboxes left after the teardown")
        d.stop()
        self.watch.phase("between sizes")
        r.peak = self.watch.peak_of(f"{n} ")


def table(results: list[SizeResult]) -> Table:
    t = Table(title="the daemon against raw CRI by pods on the node (per pod in brackets)")
    for col in ("pods", "raw start", "daemon start", "ratio", "raw teardown",
                "daemon teardown", "ratio", "steady cores", "RSS MiB", "threads",
                "healthz (no pods)", "restart: healthz", "adoption", "restarts", "problems"):
        t.add_column(col, justify="right" if col != "problems" else "left")

    def each(total: float, n: int) -> str:
        return f"{total:.2f} s ({total / n * 1000:.0f} ms)"

    for r in results:
        t.add_row(
            str(r.n), each(r.raw_start, r.n), each(r.start, r.n),
            f"{r.start / r.raw_start:.2f}x", each(r.raw_teardown, r.n), each(r.teardown, r.n),
            f"{r.teardown / r.raw_teardown:.2f}x",
            f"{r.cores:.4f} ({r.cores / r.n * 1000:.3f} m)", f"{r.rss_mib:.0f}",
            str(r.threads), f"{r.healthz_empty:.2f} s", f"{r.healthz_restart:.2f} s",
            each(r.adoption, r.n), str(r.restarts), "; ".join(r.problems) or "none")
    return t


def limits_table(results: list[SizeResult], limits: NodeLimits) -> Table:
    """The peaks bench.node_watch saw per size, against the limits they run into."""
    t = Table(title="the node at its peak per size (bench.node_watch, every second)")
    for col in ("pods", "node tasks", "containerd threads", "containerd open files",
                "daemon threads", "daemon open files", "MemAvailable MiB"):
        t.add_column(col, justify="right")
    for r in results:
        p = r.peak
        if p is None:
            continue
        t.add_row(str(r.n), str(p.tasks), str(p.containerd_threads), str(p.containerd_fds),
                  str(p.daemon_threads), str(p.daemon_fds), str(p.mem_available_mib))
    t.add_row("limit", str(limits.max_tasks or "?"), str(GO_MAX_THREADS),
              str(limits.containerd_nofile or "?"), "", "", "", style="dim")
    return t


def keep_logs(bench: Bench, emb: EmbeddedContainerd, into: Path) -> list[Path]:
    """Copy the daemon's, containerd's and the bench's logs into ``into``: what survives
    the bench's directory."""
    into.mkdir(parents=True, exist_ok=True)
    kept = []
    for src in (bench.daemon.log_path, emb.log_path, emb.log_path.with_suffix(".log.1"),
                bench.work / "bench.log"):
        if src.exists():
            dst = into / src.name
            shutil.copyfile(src, dst)
            kept.append(dst)
    return kept


def why_cri_failed(emb: EmbeddedContainerd, watch: NodeWatch) -> str:
    """What the node looked like when a CRI call failed: containerd alive or how it died,
    its last error lines, the last samples."""
    code = emb.poll()
    state = ("containerd is still running (pid "
             f"{emb.pid})" if code is None else f"containerd exited with code {code}")
    tail = [line for line in emb.log_tail(400).splitlines()
            if "level=error" in line or "level=fatal" in line or "panic" in line
            or "fatal error" in line or line.startswith(("runtime:", "goroutine "))]
    samples = "\n".join(s.line() for s in watch.last()[-10:])
    return (f"{state}\n--- containerd's last error lines ({emb.log_path}):\n"
            + "\n".join(tail[-15:]) + f"\n--- the node's last samples:\n{samples}")


@contextmanager
def diagnosed(emb: EmbeddedContainerd, watch: NodeWatch, console: Console) -> Iterator[None]:
    """Print why, when a CRI call fails inside."""
    try:
        yield
    except CRIError:
        console.print(why_cri_failed(emb, watch), markup=False, highlight=False)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,110,500",
                        help="pod counts, comma-separated (default 10,110,500)")
    parser.add_argument("--steady", type=float, default=20.0,
                        help="seconds of the steady window per size (default 20)")
    parser.add_argument("--daemon-arg", action="append", default=[], metavar="ARG",
                        help="one more flag for the daemon (repeatable)")
    parser.add_argument("--keep-log", type=Path, metavar="DIR",
                        help="copy the daemon's, containerd's and the bench's logs into DIR "
                             "before the bench's directory goes (also when it fails)")
    parser.add_argument("--lock-wait", type=float, default=LOCK_WAIT_S, metavar="S",
                        help=f"seconds to wait for the machine-wide lock (default "
                             f"{LOCK_WAIT_S:g})")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    console = Console(width=200)
    if os.geteuid() != 0:
        console.print("run as root: it starts containerd and makes a bridge")
        return 2
    logger.remove()
    logger.add(sys.stderr, level="INFO")
    results: list[SizeResult] = []
    daemon_args = ("--max-pods", str(MAX_PODS), *args.daemon_arg)
    with (machine_lock(BENCH_WIDE, args.lock_wait), serve_images(),
          private_containerd(BENCH_WIDE) as emb):
        bench = Bench(emb, console, quick=True, daemon_args=daemon_args)
        watch = NodeWatch(lambda: emb.pid,
                          lambda: bench.daemon.proc.pid if bench.daemon.proc else None).start()
        scale = ScaleBench(bench, console, args.steady, watch)
        limits = read_limits(emb.pid, BENCH_WIDE.subnet)
        console.print(f"logs: daemon {bench.daemon.log_path}, containerd {emb.log_path}, "
                      f"bench {bench.work / 'bench.log'}"
                      + (f" (kept in {args.keep_log})" if args.keep_log else
                         " (removed at the end; --keep-log DIR keeps them)"))
        try:
            with quiet_logs(bench.work / "bench.log"), diagnosed(emb, watch, console):
                bench.prepare()
                for n in sizes:
                    for problem in capacity_problems(n, limits):
                        console.print(f"[yellow]{n} pods may not fit:[/yellow] {problem}")
                    r = SizeResult(n)
                    console.print(f"[bold]{n} pods[/bold]: raw CRI")
                    scale.raw(n, r)
                    console.print(f"[bold]{n} pods[/bold]: the daemon")
                    scale.daemon(n, r)
                    results.append(r)
                    console.print(table(results))
                    console.print(limits_table(results, limits))
        finally:
            watch.stop()
            bench.daemon.stop()
            bench.client.close()
            if args.keep_log:
                kept = keep_logs(bench, emb, args.keep_log)
                console.print("logs kept: " + ", ".join(str(k) for k in kept))
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    console.print(f"load average at the end: {load} ({os.cpu_count()} CPUs)")
    return 1 if any(r.problems for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
