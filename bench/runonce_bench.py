"""Run-once against raw CRI on one private embedded containerd.

    .venv/bin/python -m bench.runonce_bench [--pods 1,30] [--repeat 3] [--profile]

For each N (pods of one busybox container running ``sleep 3600``), in the same run and on
the same containerd, rounds interleaved:

(a) raw CRI: RunPodSandbox + CreateContainer + StartContainer through CRIClient, 8 parallel
    callers, with the configs the kubelet would send (generate_sandbox_config and
    generate_container_config on the same static pods, same log dirs, created the same way;
    the image reference resolved once beforehand, as ImageStatus would return it);
(b) ``bin/kubelet-actors --runonce ... -o json`` as a subprocess, spawn to exit;
(c) the same run-once in-process: read the manifests, CRIClient + Version,
    KubeRuntimeManager, RunOnce(...).run(pods).

Teardown after every round, timed: after (a) raw StopPodSandbox + RemovePodSandbox for every
sandbox; after (b) and (c) as a kubelet does it: get_pod_status, KubeRuntimeManager.kill_pod
(grace override 0: the raw StopPodSandbox kills at once too, and ``sleep`` as PID 1 ignores
SIGTERM) and RemovePodSandbox of the pod's sandboxes; 8 pods in parallel in both cases.

Figures are medians of ``--repeat`` rounds. ``--profile`` adds a per-thread cProfile of
(c), the RPC mix of (a) and (c), RunOnce's sleeps, and the import times of ``bin.main``.
Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.logging_setup import configure_logging
from actors.app.node import node_ip
from actors.app.runonce import PodOutcome, RunOnce
from actors.app.testbed import (
    BENCH,
    BUSYBOX_IMAGE,
    PAUSE_IMAGE,
    machine_lock,
    private_containerd,
    serve_images,
)
from runtime.clock import RealClock
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ImageSpec
from runtime.ids import PodUID
from runtime.kuberuntime.container_config import generate_container_config
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.sandbox import generate_sandbox_config
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Pod
from runtime.pod.static import read_manifest_dir

REPO = Path(__file__).resolve().parents[1]
KUBELET = REPO / "bin" / "kubelet-actors"
PYTHON = REPO / ".venv" / "bin" / "python"
NODE = "bench"
PARALLEL = 8
TARGET_RATIO = 1.2
RUNONCE_TIMEOUT = 120.0

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: bench-{index:03d}
  labels:
    app: runonce-bench
spec:
  containers:
    - name: sleep
      image: {image}
      imagePullPolicy: IfNotPresent
      command: ["sleep", "3600"]
"""


# --- instruments -------------------------------------------------------------------------


class TimedCRIClient(CRIClient):
    """A CRIClient that records (method, seconds) of every RPC."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str, float]] = []
        self._lock = threading.Lock()

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return super()._call(method, *args, **kwargs)
        finally:
            elapsed = time.perf_counter() - started
            with self._lock:
                self.calls.append((method, elapsed))


class CountingClock(RealClock):
    """A real clock that records RunOnce's back-off sleeps."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
        super().sleep(seconds)


class ProfiledRunOnce(RunOnce):
    """RunOnce with a cProfile per pod thread (cProfile only sees its own thread)."""

    profiles: list[cProfile.Profile]

    def _run_pod(self, pod: Pod, deadline: float) -> PodOutcome:
        prof = cProfile.Profile()
        prof.enable()
        try:
            return super()._run_pod(pod, deadline)
        finally:
            prof.disable()
            self.profiles.append(prof)


def cpu_seconds(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


# --- the bench ---------------------------------------------------------------------------


@dataclass
class Samples:
    """Seconds per round, by (metric, N)."""

    values: dict[tuple[str, int], list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, metric: str, n: int, seconds: float) -> None:
        self.values[(metric, n)].append(seconds)

    def median(self, metric: str, n: int) -> float | None:
        found = self.values.get((metric, n))
        return statistics.median(found) if found else None


class Bench:
    def __init__(self, emb: EmbeddedContainerd, console: Console) -> None:
        self.emb = emb
        self.console = console
        self.work = emb.base_dir / "bench"
        self.root_dir = self.work / "kubelet"
        self.logs_dir = self.work / "pods"
        self.settings = NodeSettings(
            node_name=NODE, root_dir=str(self.root_dir), pod_logs_dir=str(self.logs_dir)
        )
        self.host_ip = node_ip()
        self.client = TimedCRIClient(emb.endpoint, timeout=RUNONCE_TIMEOUT)
        self.image_ref = ""
        self.samples = Samples()
        self.rpcs: dict[str, list[tuple[str, float]]] = defaultdict(list)
        self.sleeps: dict[int, list[float]] = defaultdict(list)
        self.stderr_log = self.work / "kubelet.log"

    # setup ---------------------------------------------------------------------------

    def prepare(self) -> None:
        self.root_dir.mkdir(parents=True, exist_ok=True)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        for image in (PAUSE_IMAGE, BUSYBOX_IMAGE):
            self.client.pull_image(ImageSpec(image=image))
        found = self.client.image_status(ImageSpec(image=BUSYBOX_IMAGE))
        if found is None:
            raise RuntimeError(f"{BUSYBOX_IMAGE} is not there after pulling it")
        self.image_ref = found.id

    def manifests(self, n: int) -> tuple[Path, tuple[Pod, ...]]:
        directory = self.work / f"manifests-{n}"
        if not directory.exists():
            directory.mkdir(parents=True)
            for i in range(n):
                (directory / f"bench-{i:03d}.yaml").write_text(
                    MANIFEST.format(index=i, image=BUSYBOX_IMAGE)
                )
        listing = read_manifest_dir(directory, NODE)
        if listing.errors or len(listing.pods) != n:
            raise RuntimeError(f"manifests in {directory}: {listing.errors}")
        return directory, tuple(p.pod for p in listing.pods)

    def reset_logs(self) -> None:
        """Pod log dirs survive RemovePodSandbox (as upstream): start every round clean."""
        for entry in self.logs_dir.iterdir():
            shutil.rmtree(entry, ignore_errors=True)

    def _calls_since(self, mark: int) -> list[tuple[str, float]]:
        with self.client._lock:
            return self.client.calls[mark:]

    # (a) raw CRI ---------------------------------------------------------------------

    def raw_create(self, pods: tuple[Pod, ...]) -> float:
        client, settings, image_ref = self.client, self.settings, self.image_ref

        def one(pod: Pod) -> None:
            sandbox = generate_sandbox_config(pod, 0, settings)
            os.makedirs(sandbox.log_directory, exist_ok=True)
            sandbox_id = client.run_pod_sandbox(sandbox)
            container = pod.spec.containers[0]
            config = generate_container_config(pod, container, image_ref, 0, "", settings)
            os.makedirs(os.path.join(sandbox.log_directory, container.name), exist_ok=True)
            container_id = client.create_container(sandbox_id, config, sandbox)
            client.start_container(container_id)

        started = time.perf_counter()
        _parallel(one, pods)
        return time.perf_counter() - started

    def raw_teardown(self) -> float:
        client = self.client

        def one(sandbox_id: Any) -> None:
            client.stop_pod_sandbox(sandbox_id)
            client.remove_pod_sandbox(sandbox_id)

        started = time.perf_counter()
        _parallel(one, [p.id for p in client.list_pod_sandbox()])
        return time.perf_counter() - started

    # (b) subprocess ------------------------------------------------------------------

    def subprocess_runonce(self, manifest_dir: Path, n: int) -> float:
        cmd = [
            str(KUBELET), "--runonce",
            "--container-runtime-endpoint", self.emb.endpoint,
            "--pod-manifest-path", str(manifest_dir),
            "--root-dir", str(self.root_dir),
            "--pod-logs-dir", str(self.logs_dir),
            "--node-name", NODE,
            "-o", "json",
        ]
        with open(self.stderr_log, "ab") as err:
            started = time.perf_counter()
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, check=False)
            elapsed = time.perf_counter() - started
        document = json.loads(proc.stdout) if proc.stdout else {}
        if proc.returncode != 0 or not document.get("ok") or len(document["pods"]) != n:
            raise RuntimeError(
                f"kubelet-actors --runonce exited {proc.returncode}; see {self.stderr_log}:\n"
                f"{proc.stdout.decode(errors='replace')[-2000:]}"
            )
        return elapsed

    # (c) in-process ------------------------------------------------------------------

    def inprocess_runonce(
        self, manifest_dir: Path, n: int, profiles: list[cProfile.Profile] | None = None
    ) -> tuple[float, list[tuple[str, float]]]:
        """What actors.app.main.run_once does, minus printing: seconds, and the RPCs made."""
        clock = CountingClock()
        started = time.perf_counter()
        listing = read_manifest_dir(manifest_dir, NODE)
        pods = tuple(p.pod for p in listing.pods)
        with TimedCRIClient(self.emb.endpoint, timeout=RUNONCE_TIMEOUT) as client:
            client.version()
            manager = KubeRuntimeManager(client, self.settings, clock, node_ip=self.host_ip)
            if profiles is None:
                runner = RunOnce(manager, clock, RUNONCE_TIMEOUT, host_ip=self.host_ip)
            else:
                runner = ProfiledRunOnce(manager, clock, RUNONCE_TIMEOUT, host_ip=self.host_ip)
                runner.profiles = profiles
            outcomes = runner.run(pods)
            elapsed = time.perf_counter() - started
        bad = [o for o in outcomes if not o.ok]
        if bad or len(outcomes) != n:
            raise RuntimeError(f"in-process run-once: {len(bad)} pod(s) failed: {bad[:1]}")
        self.sleeps[n].extend(clock.sleeps)
        return elapsed, client.calls

    def kubelet_teardown(self, pods: tuple[Pod, ...]) -> float:
        manager = KubeRuntimeManager(self.client, self.settings, RealClock())

        def one(pod: Pod) -> None:
            m = pod.metadata
            status = manager.get_pod_status(PodUID(pod.uid), m.name, m.namespace)
            killed = manager.kill_pod(pod, status, 0)
            if not killed.ok:
                raise RuntimeError(f"kill_pod {m.name}: {killed}")
            for sandbox in status.sandbox_statuses:
                manager.runtime.remove_pod_sandbox(sandbox.id)

        started = time.perf_counter()
        _parallel(one, pods)
        return time.perf_counter() - started

    # rounds --------------------------------------------------------------------------

    def check_empty(self) -> None:
        left = self.client.list_pod_sandbox()
        if left:
            raise RuntimeError(f"{len(left)} sandbox(es) left after a teardown")

    def round(self, n: int, record: bool = True) -> None:
        manifest_dir, pods = self.manifests(n)

        def note(metric: str, seconds: float) -> None:
            if record:
                self.samples.add(metric, n, seconds)

        self.reset_logs()
        mark, cpu = len(self.client.calls), cpu_seconds()
        note("a", self.raw_create(pods))
        note("a_cpu", cpu_seconds() - cpu)
        if record:
            self.rpcs[f"a{n}"].extend(self._calls_since(mark))
        note("ta", self.raw_teardown())
        self.check_empty()

        self.reset_logs()
        cpu = cpu_seconds(resource.RUSAGE_CHILDREN)
        note("b", self.subprocess_runonce(manifest_dir, n))
        note("b_cpu", cpu_seconds(resource.RUSAGE_CHILDREN) - cpu)
        note("tk", self.kubelet_teardown(pods))
        self.check_empty()

        self.reset_logs()
        cpu = cpu_seconds()
        elapsed, calls = self.inprocess_runonce(manifest_dir, n)
        note("c", elapsed)
        note("c_cpu", cpu_seconds() - cpu)
        if record:
            self.rpcs[f"c{n}"].extend(calls)
        note("tk", self.kubelet_teardown(pods))
        self.check_empty()

    def help_time(self) -> float:
        started = time.perf_counter()
        subprocess.run([str(KUBELET), "--help"], stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - started

    def bare_python_time(self) -> float:
        started = time.perf_counter()
        subprocess.run([str(PYTHON), "-c", "pass"], check=True)
        return time.perf_counter() - started


def _parallel(fn: Callable[[Any], None], items: Iterable[Any]) -> None:
    todo = list(items)
    if not todo:
        return
    with ThreadPoolExecutor(min(PARALLEL, len(todo))) as pool:
        for _ in pool.map(fn, todo):
            pass


# --- reporting ---------------------------------------------------------------------------


def _fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f} s"


def _ratio(num: float | None, den: float | None) -> str:
    return "-" if num is None or not den else f"{num / den:.2f}x"


def results_table(bench: Bench, ns: list[int], repeat: int) -> Table:
    s = bench.samples
    table = Table(title=f"run-once vs raw CRI (median of {repeat}; {PARALLEL} parallel callers)")
    table.add_column("")
    for n in ns:
        table.add_column(f"N={n}", justify="right")

    def row(label: str, cell: Callable[[int], str]) -> None:
        table.add_row(label, *(cell(n) for n in ns))

    row("(a) raw CRI create", lambda n: _fmt(s.median("a", n)))
    row("(b) --runonce subprocess", lambda n: _fmt(s.median("b", n)))
    row("(c) RunOnce in-process", lambda n: _fmt(s.median("c", n)))
    row("b/a", lambda n: _ratio(s.median("b", n), s.median("a", n)))
    row("c/a", lambda n: _ratio(s.median("c", n), s.median("a", n)))
    row(f"target <= {TARGET_RATIO}x (b / c)", lambda n: " / ".join(
        "met" if (x := s.median(m, n)) and (a := s.median("a", n)) and x / a <= TARGET_RATIO
        else "NOT met" for m in ("b", "c")))
    row("(b) - (c)", lambda n: _fmt(_sub(s.median("b", n), s.median("c", n))))
    row("CPU s (a / b child / c)", lambda n: " / ".join(
        f"{s.median(m, n) or 0:.2f}" for m in ("a_cpu", "b_cpu", "c_cpu")))
    row("teardown raw (Stop+RemovePodSandbox)", lambda n: _fmt(s.median("ta", n)))
    row("teardown kubelet (kill_pod+remove)", lambda n: _fmt(s.median("tk", n)))
    row("teardown kubelet/raw", lambda n: _ratio(s.median("tk", n), s.median("ta", n)))
    return table


def _sub(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else x - y


def rpc_table(bench: Bench, ns: list[int], repeat: int) -> Table:
    table = Table(title="RPCs per pod and their summed time per round (all rounds' mean)")
    table.add_column("method")
    for n in ns:
        table.add_column(f"(a) N={n}", justify="right")
        table.add_column(f"(c) N={n}", justify="right")
    methods: Counter[str] = Counter()
    for calls in bench.rpcs.values():
        methods.update(m for m, _ in calls)
    for method, _ in methods.most_common():
        cells = []
        for n in ns:
            for kind in ("a", "c"):
                took = [d for m, d in bench.rpcs[f"{kind}{n}"] if m == method]
                if not took:
                    cells.append("-")
                    continue
                per_pod = len(took) / (n * repeat)
                cells.append(f"{per_pod:.2f} / {sum(took) / repeat:.3f} s")
        table.add_row(method, *cells)
    return table


def import_profile(console: Console, runs: int = 5) -> None:
    """Self import time of ``bin.main`` summed by top-level package (python -X importtime)."""
    totals: list[Counter[str]] = []
    for _ in range(runs):
        proc = subprocess.run(
            [str(PYTHON), "-X", "importtime", "-c", "import bin.main"],
            capture_output=True, text=True, check=True, cwd=REPO,
        )
        by_package: Counter[str] = Counter()
        for line in proc.stderr.splitlines():
            match = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
            if match:
                by_package[match.group(2).split(".")[0]] += int(match.group(1))
        totals.append(by_package)
    table = Table(title=f"import bin.main: self import time by top-level package "
                        f"(python -X importtime, median of {runs}; >= 2 ms)")
    table.add_column("package")
    table.add_column("self", justify="right")
    names = set().union(*totals)
    rows = sorted(((statistics.median(t[k] for t in totals), k) for k in names), reverse=True)
    for micros, name in rows:
        if micros >= 2000:
            table.add_row(name, f"{micros / 1000:.1f} ms")
    table.add_row("all", f"{statistics.median(sum(t.values()) for t in totals) / 1000:.1f} ms")
    console.print(table)


def profile_subprocess(bench: Bench, n: int, console: Console) -> None:
    """cProfile of ``python -m bin.main --runonce`` (main thread: imports, setup, print)."""
    manifest_dir, pods = bench.manifests(n)
    bench.reset_logs()
    out_file = bench.work / "subprocess.prof"
    cmd = [
        str(PYTHON), "-m", "cProfile", "-o", str(out_file), "-m", "bin.main", "--runonce",
        "--container-runtime-endpoint", bench.emb.endpoint,
        "--pod-manifest-path", str(manifest_dir), "--root-dir", str(bench.root_dir),
        "--pod-logs-dir", str(bench.logs_dir), "--node-name", NODE, "-o", "json",
    ]
    with open(bench.stderr_log, "ab") as err:
        started = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=err, check=True, cwd=REPO)
        elapsed = time.perf_counter() - started
    bench.kubelet_teardown(pods)
    bench.check_empty()
    out = io.StringIO()
    stats = pstats.Stats(str(out_file), stream=out)
    out.write(f"subprocess run-once of {n} pod(s) under cProfile: {elapsed:.3f} s wall "
              "(main thread only)\n")
    stats.sort_stats("cumulative").print_stats(
        r"\(main\)|run_once|open_runtime|node_ip|print_document|configure_logging|parse_flags|"
        r"read_manifest_dir|_find_and_load\)|\(run\)|version|close|exec\}"
    )
    console.print(_trim_pstats(out.getvalue(), 28), markup=False, highlight=False)


def _trim_pstats(text: str, rows: int) -> str:
    lines = text.splitlines()
    head = [i for i, line in enumerate(lines) if line.strip().startswith("ncalls")]
    if not head:
        return text
    start = head[0]
    return "\n".join(lines[: start + 1 + rows])


def profile_inprocess(bench: Bench, n: int, console: Console) -> None:
    manifest_dir, pods = bench.manifests(n)
    bench.reset_logs()
    profiles: list[cProfile.Profile] = []
    elapsed, _ = bench.inprocess_runonce(manifest_dir, n, profiles)
    bench.kubelet_teardown(pods)
    bench.check_empty()
    out = io.StringIO()
    stats = pstats.Stats(profiles[0], stream=out)
    for prof in profiles[1:]:
        stats.add(prof)
    stats.strip_dirs()
    out.write(f"in-process run-once of {n} pod(s): {elapsed:.3f} s wall; summed over "
              f"{len(profiles)} pod threads:\n")
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(30)
    console.print(out.getvalue(), markup=False, highlight=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.runonce_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", default="1,30", help="comma-separated pod counts")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per pod count")
    parser.add_argument("--profile", action="store_true",
                        help="also profile (c) and the imports, and show the RPC mix")
    args = parser.parse_args(argv)
    ns = [int(x) for x in args.pods.split(",") if x.strip()]
    console = Console(width=160)
    if os.geteuid() != 0:
        console.print("run as root: it starts containerd and makes a bridge")
        return 2

    logger.remove()
    logger.add(sys.stderr, level="INFO")
    with machine_lock(BENCH), serve_images() as images, private_containerd(BENCH) as emb:
        bench = Bench(emb, console)
        # Logs of the in-process kubelet (and of this bench) go to a file, like (b)'s stderr.
        bench.work.mkdir(parents=True, exist_ok=True)
        real_stderr = sys.stderr
        with open(bench.work / "inprocess.log", "a") as log_file:
            sys.stderr = log_file
            try:
                configure_logging("INFO")
            finally:
                sys.stderr = real_stderr
            console.print(f"containerd {emb.endpoint} (ready in "
                          f"{emb.last_startup_seconds or 0:.2f} s); registry "
                          f"{'started here' if images.started_here else 'already up'}")
            try:
                bench.prepare()
                bench.round(1, record=False)  # warm-up: bridge, page cache, gRPC channel
                for i in range(args.repeat):
                    for n in ns:
                        bench.round(n)
                        console.print(f"round {i + 1}/{args.repeat} N={n}: " + ", ".join(
                            f"{m}={bench.samples.values[(m, n)][-1]:.3f}"
                            for m in ("a", "b", "c", "ta", "tk")))
                helps = sorted(bench.help_time() for _ in range(max(args.repeat, 3)))
                bares = sorted(bench.bare_python_time() for _ in range(max(args.repeat, 3)))
                console.print(results_table(bench, ns, args.repeat))
                console.print(
                    f"interpreter + imports: `kubelet-actors --help` "
                    f"{statistics.median(helps):.3f} s (bare `python -c pass` "
                    f"{statistics.median(bares):.3f} s)"
                )
                sleeps = {n: bench.sleeps[n] for n in ns}
                console.print("RunOnce back-off sleeps in (c): " + "; ".join(
                    f"N={n}: {len(v)} sleep(s), {sum(v):.2f} s summed over pod threads"
                    for n, v in sleeps.items()))
                if args.profile:
                    console.print(rpc_table(bench, ns, args.repeat))
                    import_profile(console)
                    profile_subprocess(bench, max(ns), console)
                    profile_inprocess(bench, max(ns), console)
            finally:
                bench.client.close()
                logger.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
