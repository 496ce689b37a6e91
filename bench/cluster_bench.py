"""The kubelet-actors daemon in cluster mode, joined to the emulated API server.

    .venv/bin/python -m bench.cluster_bench [--quick] [--samples N] [--pods N]
                                            [--events N] [--window S] [--profile-dir DIR]

One run, one private embedded containerd (actors.app.testbed, under the machine-wide lock),
one emulated API server (tests.apiserver, in this process, over TLS), and
``bin/kubelet-actors`` as a subprocess with ``--kubeconfig`` (as ``system:node:bench``) and
``--pod-manifest-path``. Pods are the daemon_bench's: one busybox container running a
trapping ``sh`` loop, image already pulled. Not a test: nothing asserts on time.

1. Start latency through the API: a pod created in the API server with ``spec.nodeName``
   until the API holds it Running with its container running (the moment of that write,
   seen in the emulator's store), against the same pod from a manifest file until the
   read-only port's /pods shows it Running, plus one API round trip (a GET of a pod,
   measured in the same run). Samples interleave one to one; p50 and p99 of each, and
   their ratio (target <= 1.1).
2. ``--pods`` (110) pods bound through the API, all Running, steady for ``--window`` s:
   the daemon's CPU (cores, /proc/PID/stat utime+stime over the window) and VmRSS
   (targets <= 0.05 cores, <= 150 MiB).
3. A watch of ``--events`` (1,000) pod events while those pods run: annotation updates to
   them, one after another, written straight into the emulator's store (as fast as it
   takes them: its watch sends each to the kubelet), or with ``--flood-via-api`` as API
   PATCHes (as fast as this process makes them). Right after the last write a
   marker pod is created; the node being full (110 pods), the kubelet refuses it and
   writes it Failed (OutOfpods). As the watch is ordered, that write means the reflector
   saw every event before it: the lag is the marker's time to Failed, against the same
   marker on the idle node. The daemon's CPU over the flood is printed too.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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
from bench.daemon_bench import (
    LOOP,
    TARGET_CPU,
    TARGET_RSS_MIB,
    DaemonProc,
    ProcStat,
    pct,
    quiet_logs,
    running,
)
from runtime.cri.client import CRIClient
from runtime.cri.types import ImageSpec
from runtime.kubeapi.client import PODS, KubeClient
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.transport import Transport
from tests.apiserver import EmulatedAPIServer

NODE = "bench"
NS = "default"
TARGET_API_RATIO = 1.1
POLL = 0.005


def api_pod(name: str) -> dict[str, Any]:
    """The daemon_bench's pod, bound to the node (no token volume: the file pod has none)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": {"app": "cluster-bench"}},
            "spec": {"nodeName": NODE, "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 2, "restartPolicy": "Always",
                     "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                                     "imagePullPolicy": "IfNotPresent",
                                     "command": ["sh", "-c", LOOP]}]}}


def failed(pod: dict[str, Any] | None) -> bool:
    return pod is not None and (pod.get("status") or {}).get("phase") == "Failed"


class ClusterBench:
    """The three figures on one containerd (``endpoint``) and one emulated API server."""

    def __init__(self, endpoint: str, work: Path, console: Console, max_pods: int = 110
                 ) -> None:
        self.work = work
        self.console = console
        self.server = EmulatedAPIServer(bookmark_interval=1.0).start()
        kubeconfig = self.server.write_kubeconfig(work / "kubelet.kubeconfig",
                                                  f"system:node:{NODE}",
                                                  groups=("system:nodes",))
        self.transport = Transport(load_kubeconfig(
            self.server.write_kubeconfig(work / "admin.kubeconfig")))
        self.admin = KubeClient(self.transport)
        # --max-pods: the steady pods fill the node, so the flood's marker is refused.
        self.daemon = DaemonProc(work, endpoint, ("--kubeconfig", str(kubeconfig),
                                                  "--max-pods", str(max_pods)))
        self.cri = CRIClient(endpoint, timeout=60.0)
        self.r: dict[str, Any] = {}

    def close(self) -> None:
        self.daemon.stop()
        self.cri.close()
        self.transport.close()
        self.server.stop()

    # --- the emulator's store, read in process --------------------------------------------

    def _api(self, name: str) -> dict[str, Any] | None:
        pods: dict[Any, dict[str, Any]] = self.server.store.objects.get("pods", {})
        return pods.get((NS, name))

    def await_api(self, names: list[str], cond: Callable[[dict[str, Any] | None], bool],
                  timeout: float) -> float:
        """Wait on the store's condition (every write notifies it) until ``cond`` holds
        for every pod named; the perf_counter time of the write that made it hold."""
        store = self.server.store
        deadline = time.monotonic() + timeout
        with store.cond:
            while not all(cond(self._api(n)) for n in names):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"timed out waiting for {len(names)} pods in the API")
                store.cond.wait(left)
            return time.perf_counter()

    def delete_api(self, names: list[str], timeout: float = 120.0) -> None:
        for name in names:
            with contextlib.suppress(Exception):
                self.admin.delete(PODS, name, NS)
        self.await_api(names, lambda p: p is None, timeout)

    # --- the phases ------------------------------------------------------------------------

    def start(self) -> None:
        for image in (PAUSE_IMAGE, BUSYBOX_IMAGE):
            self.cri.pull_image(ImageSpec(image=image))
        self.daemon.start()
        def ready(node: dict[str, Any] | None) -> bool:
            conditions = ((node or {}).get("status") or {}).get("conditions") or []
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        store = self.server.store
        with store.cond:
            store.cond.wait_for(lambda: ready(store.objects.get("nodes", {}).get(("", NODE))),
                                60)

    def start_latency(self, samples: int) -> None:
        """Figure 1: API pod vs file pod + one round trip, interleaved."""
        api: list[float] = []
        file: list[float] = []
        rtt: list[float] = []
        for i in range(samples):
            name = f"lat-api-{i}"
            started = time.perf_counter()
            self.admin.create(PODS, api_pod(name), NS)
            api.append(self.await_api([name], running, 120) - started)
            for _ in range(3):
                t0 = time.perf_counter()
                self.admin.get(PODS, name, NS)
                rtt.append(time.perf_counter() - t0)
            self.delete_api([name])

            path = self.daemon.write(f"lat-file-{i}")
            started = time.perf_counter()
            while not any(running(p) and p["metadata"]["name"].startswith(f"lat-file-{i}-")
                          for p in self.daemon.pods().values()):
                if time.perf_counter() - started > 120:
                    raise RuntimeError(f"lat-file-{i} not Running in /pods")
                time.sleep(POLL)
            file.append(time.perf_counter() - started)
            path.unlink()
            self._await_local_gone(f"lat-file-{i}-")
        self.r["latency"] = {"api": api, "file": file, "rtt": rtt}

    def _await_local_gone(self, prefix: str) -> None:
        deadline = time.monotonic() + 120
        while any(p["metadata"]["name"].startswith(prefix) for p in self.daemon.pods().values()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{prefix}* still in /pods")
            time.sleep(0.05)

    def steady(self, count: int, window: float) -> list[str]:
        """Figure 2: ``count`` API pods Running, then the daemon over ``window`` s."""
        names = [f"steady-{i}" for i in range(count)]
        for name in names:
            self.admin.create(PODS, api_pod(name), NS)
        self.await_api(names, running, 60 + 2.0 * count)
        time.sleep(min(10.0, window))  # the status writes of the start settle
        proc = ProcStat(self.daemon.pid)
        cpu0, t0 = proc.cpu(), time.monotonic()
        time.sleep(window)
        cpu1, t1 = proc.cpu(), time.monotonic()
        self.r["steady"] = {"pods": count, "window": t1 - t0, "cores": (cpu1 - cpu0) / (t1 - t0),
                            "rss": proc.rss_mib(), "threads": proc.threads()}
        return names

    def marker_lag(self, name: str) -> float:
        """A pod the full node refuses: created now, until the API holds it Failed."""
        started = time.perf_counter()
        self.admin.create(PODS, api_pod(name), NS)
        return self.await_api([name], failed, 120) - started

    def flood(self, names: list[str], events: int, via_api: bool = False) -> None:
        """Figure 3: ``events`` annotation updates to the running pods, then the marker."""
        idle = self.marker_lag("marker-idle")
        self.delete_api(["marker-idle"])
        proc = ProcStat(self.daemon.pid)
        cpu0, t0 = proc.cpu(), time.perf_counter()
        store = self.server.store
        for i in range(events):
            if via_api:
                self.admin.patch(PODS, names[i % len(names)],
                                 {"metadata": {"annotations": {"bench/touch": str(i)}}},
                                 namespace=NS, patch_type="merge")
                continue
            # Straight into the emulator's store (as its PATCH handler writes): an API
            # request per event makes this process, not the kubelet, the bottleneck.
            with store.cond:
                pod = store.get("pods", (NS, names[i % len(names)]))
                assert pod is not None
                pod["metadata"].setdefault("annotations", {})["bench/touch"] = str(i)
                store.write("pods", (NS, names[i % len(names)]), pod)
        last_write = time.perf_counter()
        lag = self.marker_lag("marker-flood")
        cpu1, t1 = proc.cpu(), time.perf_counter()
        self.delete_api(["marker-flood"])
        self.r["flood"] = {"events": events, "write_s": last_write - t0, "idle": idle,
                           "lag": lag, "cores": (cpu1 - cpu0) / (t1 - t0), "span": t1 - t0}

    # --- the report ------------------------------------------------------------------------

    def table(self) -> Table:
        t = Table(title="cluster mode (emulated API server), one run")
        for col in ("figure", "measured", "baseline", "ratio / value", "target", "met"):
            t.add_column(col)
        lat = self.r.get("latency")
        if lat:
            rtt = pct(lat["rtt"], 0.5)
            for q, label in ((0.5, "p50"), (0.99, "p99")):
                api, file = pct(lat["api"], q), pct(lat["file"], q)
                ratio = api / (file + rtt)
                t.add_row(f"pod Running in the API, {label} (n={len(lat['api'])})",
                          f"{api * 1000:.0f} ms",
                          f"file {file * 1000:.0f} ms + RTT {rtt * 1000:.1f} ms",
                          f"{ratio:.2f}x", f"<= {TARGET_API_RATIO}x",
                          _met(ratio <= TARGET_API_RATIO))
        st = self.r.get("steady")
        if st:
            t.add_row(f"{st['pods']} API pods steady, CPU ({st['window']:.0f} s)",
                      f"{st['cores']:.3f} cores", "", f"{st['threads']} threads",
                      f"<= {TARGET_CPU}", _met(st["cores"] <= TARGET_CPU))
            t.add_row(f"{st['pods']} API pods steady, RSS", f"{st['rss']:.0f} MiB", "", "",
                      f"<= {TARGET_RSS_MIB:.0f} MiB", _met(st["rss"] <= TARGET_RSS_MIB))
        fl = self.r.get("flood")
        if fl:
            t.add_row(f"watch of {fl['events']} pod events: lag after the last write",
                      f"{fl['lag'] * 1000:.0f} ms", f"idle {fl['idle'] * 1000:.0f} ms",
                      f"{fl['lag'] / fl['idle']:.2f}x", "no backlog",
                      _met(fl["lag"] <= 2 * fl["idle"] + 0.5))
            t.add_row("  written / handled (to the last one's lag) / daemon CPU",
                      f"{fl['events'] / fl['write_s']:.0f} events/s",
                      f"{fl['events'] / (fl['write_s'] + fl['lag']):.0f} events/s",
                      f"{fl['cores']:.2f} cores over {fl['span']:.1f} s", "", "")
        return t


def _met(ok: bool) -> str:
    return "[green]yes[/]" if ok else "[red]no[/]"


@contextlib.contextmanager
def py_spy(pid: int, out: Path | None, seconds: float) -> Iterator[None]:
    """py-spy record of the daemon (its --profile-dir), if asked for and installed."""
    if out is None:
        yield
        return
    out.mkdir(parents=True, exist_ok=True)
    exe = Path(sys.executable).with_name("py-spy")
    spy = subprocess.Popen([str(exe) if exe.exists() else "py-spy", "record", "--pid",
                            str(pid), "--format", "raw", "--duration", str(int(seconds)),
                            "--rate", "100", "--nonblocking",
                            "-o", str(out / f"daemon-{int(time.time())}.txt")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            spy.wait(timeout=seconds + 10)


def run(bench: ClusterBench, samples: int, pods: int, events: int, window: float,
        profile: Path | None = None, via_api: bool = False) -> None:
    bench.start()
    bench.start_latency(samples)
    with py_spy(bench.daemon.pid, profile, window):
        names = bench.steady(pods, window)
    with py_spy(bench.daemon.pid, profile, 30):
        bench.flood(names, events, via_api)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 samples, a 20 s window")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--pods", type=int, default=110)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--flood-via-api", action="store_true",
                        help="write the flood's events as API PATCHes (about 55/s here)")
    parser.add_argument("--keep-log", type=Path, metavar="PATH",
                        help="copy the daemon's log here before its directory goes")
    parser.add_argument("--profile-dir", type=Path,
                        help="py-spy raw profiles of the daemon in the steady and flood phases")
    args = parser.parse_args(argv)
    if args.quick:
        args.samples, args.window = min(args.samples, 10), min(args.window, 20.0)
    console = Console(width=170)
    if os.geteuid() != 0:
        console.print("run as root: it starts containerd and makes a bridge")
        return 2
    logger.remove()
    logger.add(sys.stderr, level="INFO")
    with machine_lock(BENCH), serve_images(), private_containerd(BENCH) as emb:
        work = emb.base_dir / "cluster-bench"
        work.mkdir(parents=True, exist_ok=True)
        bench = ClusterBench(emb.endpoint, work, console, args.pods)
        console.print(f"containerd {emb.endpoint}; API server {bench.server.url}; "
                      f"daemon log {bench.daemon.log_path}")
        try:
            with quiet_logs(work / "bench.log"):
                run(bench, args.samples, args.pods, args.events, args.window,
                    args.profile_dir, args.flood_via_api)
        finally:
            console.print(bench.table())
            bench.close()
            if args.keep_log and bench.daemon.log_path.exists():
                shutil.copyfile(bench.daemon.log_path, args.keep_log)
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "cluster-bench"
    sys.exit(main())
