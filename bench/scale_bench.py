"""How the daemon's costs grow with the pods on the node: 10, 110 and 500 pods.

    .venv/bin/python -m bench.scale_bench [--sizes 10,110,500] [--steady 20]

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
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.testbed import BENCH_WIDE, machine_lock, private_containerd, serve_images
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
from runtime.cri.types import ContainerState
from runtime.kuberuntime import labels as L

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


class ScaleBench:
    def __init__(self, bench: Bench, console: Console, steady_s: float) -> None:
        self.b = bench
        self.console = console
        self.steady_s = steady_s

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
        started = time.perf_counter()
        parallel(self.b.raw_start, pods, RAW_WORKERS)
        r.raw_start = time.perf_counter() - started
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
        started = time.perf_counter()
        for name in names:
            d.write(name, script=SLEEPER)

        def all_running() -> bool:
            pods = d.pods()
            return all(running(pods.get(uid)) for uid in uids)

        r.start = wait(all_running, POLL_BULK * 10, WAIT_S, f"{n} pods Running").seen - started
        before = self.check_one_each(uids, "after the start", r)
        proc = ProcStat(d.pid)
        cpu0, t0 = proc.cpu(), time.perf_counter()
        time.sleep(self.steady_s)  # the window measured: nothing is waited for
        r.cores = (proc.cpu() - cpu0) / (time.perf_counter() - t0)
        r.rss_mib, r.threads = proc.rss_mib(), proc.threads()

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,110,500",
                        help="pod counts, comma-separated (default 10,110,500)")
    parser.add_argument("--steady", type=float, default=20.0,
                        help="seconds of the steady window per size (default 20)")
    parser.add_argument("--daemon-arg", action="append", default=[], metavar="ARG",
                        help="one more flag for the daemon (repeatable)")
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
    with machine_lock(BENCH_WIDE), serve_images(), private_containerd(BENCH_WIDE) as emb:
        bench = Bench(emb, console, quick=True, daemon_args=daemon_args)
        scale = ScaleBench(bench, console, args.steady)
        try:
            with quiet_logs(bench.work / "bench.log"):
                bench.prepare()
                for n in sizes:
                    r = SizeResult(n)
                    console.print(f"[bold]{n} pods[/bold]: raw CRI")
                    scale.raw(n, r)
                    console.print(f"[bold]{n} pods[/bold]: the daemon")
                    scale.daemon(n, r)
                    results.append(r)
                    console.print(table(results))
        finally:
            bench.daemon.stop()
            bench.client.close()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    console.print(f"load average at the end: {load} ({os.cpu_count()} CPUs)")
    return 1 if any(r.problems for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
