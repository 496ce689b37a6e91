"""Resource stats with 110 pods: how fast /stats/summary answers, what collection costs.

    .venv/bin/python -m bench.stats_bench [--window SECONDS] [--requests N]

One run on the benchmarks' private containerd (actors.app.testbed, under the machine-wide
lock): 110 one-container busybox pods started by the daemon (bin/kubelet-actors, a
subprocess), then:

1. ``GET /stats/summary`` N times over one keep-alive connection on the read-only port
   (served from the stats cache): p50, p99, max and the body size; the same for
   ``?only_cpu_and_memory=true`` and ``/metrics/resource``. Beside them, what one
   collection's CRI calls take against the same runtime (ListPodSandbox, ListContainers,
   ListContainerStats, ListPodSandboxStats): the time a scrape would wait without the
   cache. Target: summary p99 <= 50 ms.
2. The cost of collection at the default period (10 s), two ways, same run, same pods:
   - the daemon's CPU (utime+stime of /proc/<pid>/stat) over WINDOW seconds with
     collection on, then after a restart with ``--stats-collection-period 0`` (it adopts
     the running pods), then on again: on minus off, in cores;
   - one collection's CPU in this process (a StatsCollector on the same containerd,
     ``time.process_time`` over 10 collections) divided by the period.
   Target: <= 0.02 cores.

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import time
from pathlib import Path

from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.testbed import BENCH, machine_lock, private_containerd, serve_images
from bench.daemon_bench import NODE, DaemonProc, ProcStat, pct
from runtime.cm.cgroupfs import CgroupFS
from runtime.cm.pod_cgroups import PodCgroups
from runtime.cri.client import CRIClient
from runtime.stats.collector import StatsCollector, StatsSettings

PODS = 110
PERIOD_S = 10.0
TARGET_P99_S = 0.050
TARGET_CORES = 0.02


def timed_gets(conn: http.client.HTTPConnection, path: str, n: int) -> tuple[list[float], int]:
    times: list[float] = []
    size = 0
    for _ in range(n):
        started = time.perf_counter()
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        times.append(time.perf_counter() - started)
        if resp.status != 200:
            raise RuntimeError(f"{path} answered {resp.status}: {body[:200]!r}")
        size = len(body)
    return times, size


def daemon_cpu(daemon: DaemonProc, window: float) -> float:
    """Cores the daemon used over ``window`` seconds."""
    stat = ProcStat(daemon.pid)
    cpu0, t0 = stat.cpu(), time.monotonic()
    time.sleep(window)
    return (stat.cpu() - cpu0) / (time.monotonic() - t0)


def wait_all_running(daemon: DaemonProc, n: int, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = daemon.pods().values()
        up = sum(1 for p in pods if p["status"].get("phase") == "Running")
        if up >= n:
            return
        time.sleep(0.5)
    raise RuntimeError(f"not all {n} pods Running in {timeout:g} s")


def wait_summary(daemon: DaemonProc, n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code, body = daemon.get("/stats/summary")
        if code == 200 and body.count(b'"podRef"') >= n:
            return
        time.sleep(0.5)
    raise RuntimeError(f"/stats/summary did not list {n} pods in {timeout:g} s")


def pod_cgroups() -> set[tuple[str, ...]]:
    """The pod cgroups under the default kubepods (cgroupfs driver), as names."""
    cgroups = PodCgroups(CgroupFS("cgroupfs"), (), "cgroupfs", 1000, 0)
    return set(cgroups.pod_cgroups().values())


def remove_new_pod_cgroups(before: set[tuple[str, ...]]) -> None:
    """The daemon's pod cgroups that outlived their pods (SIGTERM leaves pods running;
    the containerd's cleanup removes them behind its back)."""
    manager = CgroupFS("cgroupfs")
    for name in pod_cgroups() - before:
        if not manager.pids(name):
            manager.destroy(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stats_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=float, default=30.0,
                        help="seconds of daemon CPU per on/off window (default 30)")
    parser.add_argument("--requests", type=int, default=500,
                        help="GETs per endpoint (default 500)")
    args = parser.parse_args(argv)
    console = Console(width=140)
    if os.geteuid() != 0:
        console.print("run as root: it starts containerd and makes a bridge")
        return 2
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    with machine_lock(BENCH):
        before = pod_cgroups()
        try:
            with serve_images(), private_containerd(BENCH) as emb:
                work = emb.base_dir / "stats-bench"
                daemon = DaemonProc(work, emb.endpoint)
                client = CRIClient(emb.endpoint, timeout=60.0)
                try:
                    return run(console, daemon, client, work, args)
                finally:
                    daemon.stop()
                    client.close()
        finally:  # the pods are gone with their containerd: their cgroups go too
            remove_new_pod_cgroups(before)


def run(console: Console, daemon: DaemonProc, client: CRIClient, work: Path,
        args: argparse.Namespace) -> int:
    daemon.start()
    started = time.monotonic()
    for i in range(PODS):
        daemon.write(f"stats-{i:03d}")
    wait_all_running(daemon, PODS)
    console.print(f"{PODS} pods Running in {time.monotonic() - started:.1f} s")
    wait_summary(daemon, PODS)

    # 1. Scrapes from the cache, against one collection's CRI calls.
    conn = http.client.HTTPConnection("127.0.0.1", daemon.ro_port, timeout=10)
    rows: list[tuple[str, list[float], int]] = []
    for path in ("/stats/summary", "/stats/summary?only_cpu_and_memory=true",
                 "/metrics/resource", "/metrics/cadvisor"):
        times, size = timed_gets(conn, path, args.requests)
        rows.append((path, times, size))
    conn.close()
    raw: list[float] = []
    for _ in range(10):
        t0 = time.perf_counter()
        client.list_pod_sandbox()
        client.list_containers()
        client.list_container_stats()
        client.list_pod_sandbox_stats()
        raw.append(time.perf_counter() - t0)
    table = Table(title=f"scrapes with {PODS} pods ({args.requests} GETs each, keep-alive)")
    for col in ("endpoint", "p50 ms", "p99 ms", "max ms", "body KiB", "p99 / raw CRI p50"):
        table.add_column(col)
    raw_p50 = statistics.median(raw)
    for path, times, size in rows:
        table.add_row(path, f"{pct(times, 0.5) * 1e3:.2f}", f"{pct(times, 0.99) * 1e3:.2f}",
                      f"{max(times) * 1e3:.2f}", f"{size / 1024:.0f}",
                      f"{pct(times, 0.99) / raw_p50:.2f}")
    table.add_row("raw CRI of one collection (4 list calls)", f"{raw_p50 * 1e3:.2f}",
                  f"{pct(raw, 0.99) * 1e3:.2f}", f"{max(raw) * 1e3:.2f}", "", "1.00")
    console.print(table)
    p99 = pct(rows[0][1], 0.99)
    console.print(f"/stats/summary p99 {p99 * 1e3:.2f} ms: target <= {TARGET_P99_S * 1e3:.0f} "
                  f"ms {'met' if p99 <= TARGET_P99_S else 'NOT met'}")

    # 2a. One collection's CPU in this process.
    collector = StatsCollector(client, StatsSettings(NODE, str(daemon.root_dir),
                                                     str(daemon.logs_dir)))
    collector.collect()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(10):
        collector.collect()
    per_cpu = (time.process_time() - cpu0) / 10
    per_wall = (time.perf_counter() - wall0) / 10
    console.print(f"one collection in-process: {per_cpu * 1e3:.1f} ms CPU, {per_wall * 1e3:.1f} "
                  f"ms wall -> {per_cpu / PERIOD_S:.4f} cores at the {PERIOD_S:g} s period")

    # 2b. The daemon's CPU, collection on, off, on (same pods, adopted across restarts).
    windows: list[tuple[str, float]] = []
    for label, extra in (("on", ()), ("off", ("--stats-collection-period", "0")),
                         ("on", ())):
        if windows:
            daemon.stop()
            daemon.extra_args = extra
            daemon.start()
            wait_all_running(daemon, PODS)
        time.sleep(5.0)  # past the start-up work
        windows.append((label, daemon_cpu(daemon, args.window)))
    on = statistics.mean(v for k, v in windows if k == "on")
    off = statistics.mean(v for k, v in windows if k == "off")
    console.print("daemon CPU per window (cores): " + ", ".join(
        f"{k} {v:.4f}" for k, v in windows))
    cost = on - off
    met = max(cost, per_cpu / PERIOD_S) <= TARGET_CORES
    console.print(f"collection costs {cost:.4f} cores in the daemon (on {on:.4f} - off "
                  f"{off:.4f}), {per_cpu / PERIOD_S:.4f} measured in-process: target <= "
                  f"{TARGET_CORES} {'met' if met else 'NOT met'}")
    console.print(f"load average {os.getloadavg()} on {os.cpu_count()} CPUs; work dir {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
