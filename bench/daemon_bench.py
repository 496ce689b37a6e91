"""The kubelet-actors daemon against raw CRI on one private embedded containerd.

    .venv/bin/python -m bench.daemon_bench [--quick] [--profile] [--bulk-only | --start-only]
                                           [--samples N] [--bursts N] [--py-spy DIR]
                                           [--repo PATH]

One run, one containerd (actors.app.testbed: the benchmarks' own dir under /var/tmp,
bridge and subnet, under the machine-wide lock). Raw CRI baselines run first, with no
daemon up; then ``bin/kubelet-actors`` runs as a subprocess against the same containerd
(``--container-runtime-endpoint``), and is measured through what a user sees: manifests
written into ``--pod-manifest-path`` (written to a dot-file and renamed into place, so the
watcher sees a whole file) and ``GET /pods`` on the read-only port, polled over one
keep-alive connection. Raw and daemon pods have different UIDs (set in the manifests).

1. Start latency of one pod, ~15 pods one after another (one busybox container running a
   trapping ``sh`` loop, terminationGracePeriodSeconds 2, image already pulled): manifest
   in place until /pods shows it Running with every container running; against raw
   RunPodSandbox + CreateContainer + StartContainer of the same pod (same configs:
   generate_sandbox_config / generate_container_config with the daemon's own node
   settings, so the sandbox's cgroup parent is the pod cgroup, as the kubelet's; runc
   makes that cgroup where the daemon makes it itself first), interleaved one to one with
   the daemon's samples (this machine's load moves a lot), each raw one taken with the
   daemon paused (SIGSTOP: beside a running daemon a raw pod is an orphan it relists and
   kills), and also before the daemon starts and after it stops. A daemon sample waits
   for its pod's two task starts on containerd's event stream and only then polls /pods
   every 5 ms (polled from the write on, /pods took CPU from containerd starting the pod).
   A third sample per round, for reference: raw with no pod cgroup (no cgroup parent: runc
   nests the pod one level up, and its cgroup directories, one per v1 hierarchy, cost some
   10-20 ms a pod on these machines). p50, p90 and p99 (``--samples 100`` or more for a
   p99 that is not the slowest sample), and the daemon's CRI calls per start from its /metrics.
2. 50 manifests at once until all Running, against raw CRI with 8 and with 50 parallel
   callers; then all 50 manifests deleted until none of their containers or sandboxes is
   left in the runtime, against raw StopPodSandbox + RemovePodSandbox (and against a
   graceful raw teardown: StopContainer(2 s) first, as the kubelet does) with 8 and 50.
   Also raw with the daemon's own parallelism, which the targets compare against: 50
   callers whose calls pass the daemon's ParallelLimit (runtime.cri.parallel_limit: 4
   process-starting calls per CPU, 8 StopContainer per CPU). The daemon never has more
   of those calls in flight than its caps, so raw with 50 unbounded callers measures a
   parallelism the daemon does not use (and which, on a small node, makes each call
   slower: see parallel_limit), while raw with 8 plain callers serialises each pod's
   calls in a way the daemon's 50 workers do not. The daemon's CPU (/proc/<pid>/stat),
   its CRI calls per pod (its /metrics), and its threads (most at once, and how many
   were started) during the burst and during the teardown are printed too. The ends are
   waited for on containerd's events (100 task starts; 100 container deletions) and only
   then polled (/pods; the runtime's lists) every 5 ms: polling all along took CPU from
   the daemon and containerd at work (RuntimeEventCount). The raw runs the targets
   compare against (50 callers under the daemon's caps) are made again between the
   daemon's own runs, one before each, with the daemon stopped (SIGSTOP) meanwhile so it
   takes no part: the raw runs made before the daemon starts were on a machine whose load
   had drifted by the daemon's turn (a burst's time moved by 20% from one minute to the
   next on these machines). Each daemon run's ratio to the raw run just before it is
   printed too, and their median (``--bursts N`` pairs, default 4). The CPU containerd
   and the whole machine spent per pod in the daemon's runs and in those raw runs says
   what the daemon adds: a burst on 2 CPUs keeps both busy.
3. Container exit to /pods: the container runs ``sleep 2; exit 1`` under restartPolicy
   Never; from its exit (the runtime's finishedAt, nanoseconds, same wall clock) until
   /pods shows it terminated. ~10 pods one after another.
4. 110 running pods, steady state for 60 s (30 s with --quick): the daemon's CPU from
   /proc/<pid>/stat utime+stime, VmRSS and Threads from /proc/<pid>/status, per-thread CPU
   from /proc/<pid>/task/*/stat, and the CRI calls it made (its /metrics).

``--profile`` adds in-process measurements of what the steady state is made of: a PLEG
relist (take_snapshot) and a pod status read (get_pod_status) with 110 pods, and the cost
of GET /pods with 110 pods. ``--bulk-only`` runs phase 2 alone (its raw baselines, then
the daemon), ``--start-only`` phase 1 alone; ``--py-spy DIR`` samples the daemon's Python
stacks during phase 2's burst and teardown (DIR/create-N.txt, DIR/teardown-N.txt,
collapsed stacks). Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import http.client
import io
import json
import os
import pstats
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from loguru import logger
from rich.console import Console
from rich.table import Table

from actors.app.config.flags import parse_flags
from actors.app.node import node_settings
from actors.app.testbed import (
    BENCH,
    BUSYBOX_IMAGE,
    PAUSE_IMAGE,
    machine_lock,
    private_containerd,
    serve_images,
)
from runtime.cm.cgroupfs import CgroupFS
from runtime.cm.names import parse_root
from runtime.cm.pod_cgroups import PodCgroups
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.containerd.events import containerd_subscriptions
from runtime.cri.client import CRIClient
from runtime.cri.intercept import intercept
from runtime.cri.parallel_limit import ParallelLimit
from runtime.cri.runtime_events import EventKind, RuntimeEvent, Subscription
from runtime.cri.service import CRIRuntime
from runtime.cri.types import ContainerFilter, ImageSpec, SandboxFilter
from runtime.ids import PodUID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.container_config import generate_container_config
from runtime.kuberuntime.podstatus import get_pod_status
from runtime.kuberuntime.sandbox import generate_sandbox_config
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Pod
from runtime.pod.static import read_manifest_dir
from tests.e2e.daemon import free_port

REPO = Path(__file__).resolve().parents[1]
PYTHON = REPO / ".venv" / "bin" / "python"
NODE = "bench"
CAPPED = "cap"
"""The key of raw runs with 50 callers under the daemon's ParallelLimit."""
INTERLEAVED = "cap-interleaved"
"""The key of those raw runs made between the daemon's own (the daemon stopped meanwhile):
what phase 2's targets compare against."""
RAW_REMOVAL = f"graceful{INTERLEAVED}"
"""The results key of the raw removals between the daemon's runs (as the kubelet removes)."""
TARGET_RATIO = 1.1
TARGET_START_P99_RATIO = 1.3
TARGET_EXIT_S = 0.1
TARGET_EXIT_P99_S = 0.3
TARGET_OOM_S = 0.2
TARGET_CPU = 0.02
TARGET_RSS_MIB = 100.0
TICK_HZ = os.sysconf("SC_CLK_TCK")

POLL_TIGHT = 0.005
"""Sleep between /pods polls when one pod's latency is measured."""
POLL_AFTER_START = 0.001
"""Sleep between /pods polls once a single pod's container task has started: its status is
then a few ms away, and at POLL_TIGHT the first poll (at the task start) nearly always
missed it and the next came 5 ms later, which added some 4 ms to a daemon sample that the
raw samples, timed by their calls' return, never had (spans timed inside the daemon: its
worker was done 5.7 ms, at a median, before the bench saw Running; 1.5 ms at this period).
A few more GETs of one pod cost the daemon no more CPU per start."""
POLL_BULK = 0.02
"""Sleep between /pods (or CRI list) polls when many pods are waited for."""
ONLY_BULK, ONLY_START = "bulk", "start"
"""--bulk-only, --start-only: the one phase run (its raw baselines, then the daemon)."""
SETTLE_AFTER_PAUSE = 0.5
"""Seconds a paused daemon is given, once it goes on, to catch up with what it missed."""

LOOP = "trap 'exit 0' TERM; while true; do sleep 1; done"
EXIT_1 = "sleep 2; exit 1"
OOM = "sleep 1; head -c 256m /dev/zero | tail"
"""Runs over a 32Mi limit: tail holds the one endless line of zeros until the OOM kill."""
OOM_RESOURCES = """
      resources:
        limits:
          memory: 32Mi"""
UID_NS = uuid.UUID("6c1f0b9e-6a4e-4c1b-9d0e-0d2a6b1e5c11")


def pod_uid(name: str, tag: str) -> str:
    """A fixed UID per (name, tag), set in the manifest: raw and daemon pods never share one."""
    return str(uuid.uuid5(UID_NS, f"{name}/{tag}"))

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  uid: {uid}
  labels:
    app: daemon-bench
spec:
  restartPolicy: {restart}
  terminationGracePeriodSeconds: 2
  containers:
    - name: main
      image: {image}
      imagePullPolicy: IfNotPresent
      command: ["sh", "-c", {script}]{resources}
"""


# --- small tools ---------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1), linear between the closest ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def parallel(fn: Callable[[Any], Any], items: Iterable[Any], workers: int) -> list[Any]:
    todo = list(items)
    if not todo:
        return []
    with ThreadPoolExecutor(min(workers, len(todo))) as pool:
        return list(pool.map(fn, todo))


@dataclass
class Poll:
    """How a wait went: when the condition held, how many polls, the mean poll period."""

    seen: float
    polls: int
    period: float


class TimedCRIClient(CRIClient):
    """A CRIClient that sums the seconds and counts the calls of every RPC, by method."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return super()._call(method, *args, **kwargs)
        finally:
            elapsed = time.perf_counter() - started
            with self._lock:
                self.seconds[method] += elapsed
                self.counts[method] += 1

    def mark(self) -> tuple[dict[str, float], Counter[str]]:
        with self._lock:
            return dict(self.seconds), Counter(self.counts)


class ProcStat:
    """CPU, RSS and threads of one process from /proc."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def cpu(self) -> float:
        return sum(self.cpu_split())

    def cpu_split(self) -> tuple[float, float]:
        """User and system CPU seconds (utime, stime)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) / TICK_HZ, int(fields[12]) / TICK_HZ


    def status(self) -> dict[str, str]:
        out = {}
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                out[key] = value.strip()
        return out

    def rss_mib(self) -> float:
        return int(self.status()["VmRSS"].split()[0]) / 1024

    def threads(self) -> int:
        return int(self.status()["Threads"])

    def per_thread(self) -> dict[int, tuple[str, float]]:
        out: dict[int, tuple[str, float]] = {}
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            try:
                with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                    raw = f.read()
            except OSError:
                continue
            name = raw[raw.index("(") + 1: raw.rindex(")")]
            fields = raw.rsplit(")", 1)[1].split()
            out[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / TICK_HZ)
        return out


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (every CPU, every process and the
    kernel: /proc/stat less idle and iowait)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (
            int(v) for v in f.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / TICK_HZ


@dataclass
class Busy:
    """CPU seconds spent between two looks: containerd's own process, and the machine's."""

    containerd: float
    machine: float


@contextlib.contextmanager
def busy(containerd_pid: int | None, into: list[Busy]) -> Iterator[None]:
    """What containerd and the whole machine spent in CPU through the block."""
    proc = ProcStat(containerd_pid) if containerd_pid else None
    c0, m0 = (proc.cpu() if proc else 0.0), machine_busy()
    yield
    into.append(Busy((proc.cpu() if proc else 0.0) - c0, machine_busy() - m0))


class ThreadSampler:
    """Samples a process's threads every SAMPLE_EVERY on a thread of its own: the most
    alive at once, and the threads seen (by comm, digits stripped), which shows thread
    churn. (Every 10 ms it cost the machine some 1 ms of CPU a pod through a burst, which
    the raw runs, not sampled, never paid; a pod worker lives for seconds.)"""

    SAMPLE_EVERY = 0.05

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.most = 0
        self.seen: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="thread-sampler", daemon=True)

    def __enter__(self) -> ThreadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                tids = [int(t) for t in os.listdir(f"/proc/{self.pid}/task")]
            except OSError:
                return
            self.most = max(self.most, len(tids))
            for tid in tids:
                if tid not in self.seen:
                    try:
                        with open(f"/proc/{self.pid}/task/{tid}/comm") as f:
                            self.seen[tid] = re.sub(r"[-_:]?\d+$", "", f.read().strip())
                    except OSError:
                        self.seen[tid] = "?"
            self._stop.wait(self.SAMPLE_EVERY)

    def by_name(self, before: set[int]) -> Counter[str]:
        """Threads started since ``before`` (thread ids), by name."""
        return Counter(name for tid, name in self.seen.items() if tid not in before)


@dataclass
class PhaseCost:
    """What the daemon spent in one bulk phase: CPU seconds, CRI calls by operation,
    the most threads at once and the threads started (by name)."""

    cpu: float
    calls: Counter[str]
    threads_most: int
    threads_started: Counter[str]
    system: float = 0.0  # of cpu, in the kernel (cgroup and file work, thread starts)
    around: Busy | None = None  # containerd's and the machine's CPU meanwhile


# --- the daemon ----------------------------------------------------------------------------


class DaemonProc:
    """bin/kubelet-actors on the bench's containerd, its manifest dir and its /pods."""

    def __init__(self, work: Path, endpoint: str, extra_args: tuple[str, ...] = (),
                 repo: Path = REPO) -> None:
        """``repo``: the source tree whose daemon runs (another checkout: its numbers)."""
        self.repo = repo
        self.extra_args = extra_args
        self.work = work
        self.manifests = work / "manifests"
        self.root_dir = work / "kubelet"
        self.logs_dir = work / "pods"
        self.log_path = work / "kubelet.log"
        self.endpoint = endpoint
        self.port, self.ro_port, self.hz_port = free_port(), free_port(), free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._conn: http.client.HTTPConnection | None = None

    def command(self) -> list[str]:
        """The daemon's command line, its dirs made."""
        for d in (self.manifests, self.root_dir, self.logs_dir):
            d.mkdir(parents=True, exist_ok=True)
        return [
            str(PYTHON), "-m", "bin.main",
            "--container-runtime-endpoint", self.endpoint,
            "--pod-manifest-path", str(self.manifests),
            "--root-dir", str(self.root_dir), "--pod-logs-dir", str(self.logs_dir),
            "--node-name", NODE,
            "--port", str(self.port), "--read-only-port", str(self.ro_port),
            "--healthz-port", str(self.hz_port), "--log-level", "INFO",
            *self.extra_args,
        ]

    def start(self) -> None:
        command = self.command()  # makes the work dir the log goes in
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(command, cwd=self.repo, stdout=log,
                                         stderr=subprocess.STDOUT,
                                         env={**os.environ, "PYTHONPATH": str(self.repo)})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                # The log goes with the bench's directory: its end goes in the error.
                tail = self.log_path.read_text(errors="replace").splitlines()[-5:]
                raise RuntimeError(f"the daemon exited with {self.proc.returncode}: "
                                   + "\n".join(tail))
            with contextlib.suppress(OSError, http.client.HTTPException):
                if self.get("/healthz/ping")[0] == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"the daemon did not answer in 30 s; see {self.log_path}")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def get(self, path: str) -> tuple[int, bytes]:
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = http.client.HTTPConnection("127.0.0.1", self.ro_port, timeout=10)
            try:
                self._conn.request("GET", path)
                resp = self._conn.getresponse()
                return resp.status, resp.read()
            except (OSError, http.client.HTTPException):
                self._conn.close()
                self._conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def pods(self) -> dict[str, dict[str, Any]]:
        code, body = self.get("/pods")
        if code != 200:
            raise RuntimeError(f"/pods answered {code}: {body[:300]!r}")
        return {p["metadata"]["uid"]: p for p in json.loads(body)["items"]}

    def write(self, name: str, restart: str = "Always", script: str = LOOP,
              resources: str = "") -> Path:
        tmp = self.manifests / f".{name}.yaml.tmp"
        tmp.write_text(MANIFEST.format(name=name, uid=pod_uid(name, "daemon"), restart=restart,
                                       image=BUSYBOX_IMAGE, script=json.dumps(script),
                                       resources=resources))
        final = self.manifests / f"{name}.yaml"
        os.rename(tmp, final)
        return final

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The daemon stopped (SIGSTOP) for the block, so raw CRI work beside it is neither
        seen nor touched by it (a kubelet takes a raw pod for an orphan and kills it) and
        shares the machine with no daemon work; containerd's events wait in its stream and
        its timers fire once it goes on."""
        os.kill(self.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def running(pod: dict[str, Any] | None) -> bool:
    if pod is None or pod["status"].get("phase") != "Running":
        return False
    statuses = pod["status"].get("containerStatuses", [])
    return bool(statuses) and all("running" in s.get("state", {}) for s in statuses)


def all_running_check(daemon: DaemonProc, uids: Iterable[str]) -> Callable[[], bool]:
    """Whether ``daemon``'s /pods shows every pod of ``uids`` Running (one GET a look)."""
    wanted = tuple(uids)

    def all_running() -> bool:
        listed = daemon.pods()
        return all(running(listed.get(u)) for u in wanted)
    return all_running


def none_listed_check(daemon: DaemonProc, uids: Iterable[str]) -> Callable[[], bool]:
    """Whether ``daemon``'s /pods lists none of ``uids`` (one GET a look)."""
    wanted = tuple(uids)

    def none_listed() -> bool:
        listed = daemon.pods()
        return not any(u in listed for u in wanted)
    return none_listed


def terminated(pod: dict[str, Any] | None) -> bool:
    if pod is None:
        return False
    statuses = pod["status"].get("containerStatuses", [])
    return bool(statuses) and all("terminated" in s.get("state", {}) for s in statuses)


def wait(cond: Callable[[], bool], interval: float, timeout: float, what: str) -> Poll:
    started = time.perf_counter()
    deadline = started + timeout
    polls = 0
    while True:
        polls += 1
        if cond():
            now = time.perf_counter()
            return Poll(now, polls, (now - started) / polls)
        if time.perf_counter() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


class RuntimeEventCount:
    """containerd's task starts and container deletions, counted as they happen (its events
    service, the stream the daemon's PLEG hears). Phases 1 and 2 wait on these for a pod's
    or a burst's last task start and only then poll /pods (or list the runtime) every
    POLL_TIGHT: polled all along, /pods (some 3 ms of the daemon's CPU a GET with 50
    pods) and the runtime's lists took CPU from the work measured, which the raw runs
    (timed by their own calls' return) never paid. If the stream drops an event the wait
    ends at its deadline and the polling finds the end all the same."""

    def __init__(self, endpoint: str) -> None:
        self._counts: Counter[str] = Counter()
        self._changed = threading.Condition()
        self._connected = threading.Event()
        self._subscription: Subscription = containerd_subscriptions(endpoint)(self)
        if not self._connected.wait(10.0):
            raise RuntimeError(f"containerd's event stream on {endpoint} did not open")

    def on_event(self, event: RuntimeEvent) -> None:
        with self._changed:
            self._counts[event.kind.value] += 1
            self._changed.notify_all()

    def on_connected(self, source: str) -> None:
        self._connected.set()

    def on_lost(self, reason: str) -> None:
        self._connected.clear()

    def mark(self) -> Counter[str]:
        with self._changed:
            return Counter(self._counts)

    def wait_for(self, kind: EventKind, n: int, since: Counter[str], timeout: float) -> bool:
        """Whether ``n`` events of ``kind`` came after ``since`` within ``timeout``."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self._counts[kind.value] - since[kind.value] >= n, timeout)

    def stop(self) -> None:
        self._subscription.stop()

    def running_after_start(self, check: Callable[[], bool], since: Counter[str],
                            what: str) -> Poll:
        """Wait for one pod's two task starts after ``since`` (its sandbox's, its
        container's), then poll ``check`` every POLL_AFTER_START until it holds."""
        self.wait_for(EventKind.STARTED, 2, since, 60)
        return wait(check, POLL_AFTER_START, 60, what)


# --- the bench -----------------------------------------------------------------------------


@dataclass
class Results:
    start_raw: list[float] = field(default_factory=list)
    start_daemon: list[float] = field(default_factory=list)
    start_raw_before: list[float] = field(default_factory=list)
    start_raw_interleaved: list[float] = field(default_factory=list)
    start_raw_flat: list[float] = field(default_factory=list)
    """Raw starts interleaved with the others, with no pod cgroup (for reference)."""
    load: list[tuple[str, str]] = field(default_factory=list)
    start_poll_period: list[float] = field(default_factory=list)
    start_daemon_cpu: list[float] = field(default_factory=list)
    start_raw_ops: dict[str, tuple[float, float]] = field(default_factory=dict)
    start_daemon_ops: dict[str, tuple[float, float]] = field(default_factory=dict)
    start_daemon_internal: float = 0.0
    bulk_raw_all: dict[str, list[float]] = field(default_factory=dict)
    bulk_daemon_all: dict[str, list[float]] = field(default_factory=dict)
    bulk_raw: dict[str, float] = field(default_factory=dict)
    bulk_daemon: dict[str, float] = field(default_factory=dict)
    bulk_poll_period: float = 0.0
    bulk_tail: list[tuple[float, int]] = field(default_factory=list)
    """Each daemon burst's last task start to all Running in /pods, and the GETs it took."""
    bulk_cost: dict[str, list[PhaseCost]] = field(default_factory=dict)
    raw_between_busy: dict[str, list[Busy]] = field(default_factory=dict)
    # Each daemon burst and removal against the raw run made just before it (paired).
    paired: dict[str, list[float]] = field(default_factory=dict)
    # ... and against the mean of the raw runs before and after it (bracketed).
    bracketed: dict[str, list[float]] = field(default_factory=dict)
    exit_latency: list[float] = field(default_factory=list)
    oom_latency: list[float] = field(default_factory=list)
    oom_reasons: list[str] = field(default_factory=list)
    exit_poll_period: list[float] = field(default_factory=list)
    steady: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Bench:
    def __init__(self, emb: EmbeddedContainerd, console: Console, quick: bool,
                 daemon_args: tuple[str, ...] = (), samples: int = 0, repo: Path = REPO
                 ) -> None:
        self.emb = emb
        self.console = console
        self.quick = quick
        self.work = emb.base_dir / "daemon-bench"
        self.client = TimedCRIClient(emb.endpoint, timeout=120.0)
        self.daemon = DaemonProc(self.work, emb.endpoint, daemon_args, repo=repo)
        # Raw CRI sends the daemon's configs: its node settings, from its own flags (the
        # same dirs, the pod cgroup as the sandbox's cgroup parent).
        self.settings = node_settings(parse_flags(self.daemon.command()[3:]))
        self.settings_flat = msgspec.structs.replace(self.settings, cgroups_per_qos=False)
        self.cgroups = PodCgroups(
            CgroupFS(self.settings.cgroup_driver),
            parse_root(self.settings.cgroup_root, self.settings.cgroup_driver),
            self.settings.cgroup_driver, node_cpu_millis=0, node_memory=0)
        self.image_ref = ""
        self.r = Results()
        self.n_start = samples or (8 if quick else 15)
        self.n_exit = samples or (6 if quick else 10)
        self.steady_window = 30.0 if quick else 60.0
        self.repeats = 2 if quick else 4
        self.bursts = self.repeats  # daemon bursts, each after a raw run (--bursts)
        self.daemon_uids: set[str] = set()
        self.spy_dir: Path | None = None
        self.events: RuntimeEventCount | None = None  # runtime_events()
        # Raw CRI with the daemon's own parallelism: the same interceptor, same caps.
        self.limit = ParallelLimit()
        self.capped: CRIRuntime = intercept(self.client, CRIRuntime, self.limit)

    # setup --------------------------------------------------------------------------------

    def prepare(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        for image in (PAUSE_IMAGE, BUSYBOX_IMAGE):
            self.client.pull_image(ImageSpec(image=image))
        found = self.client.image_status(ImageSpec(image=BUSYBOX_IMAGE))
        if found is None:
            raise RuntimeError(f"{BUSYBOX_IMAGE} is not there after pulling it")
        self.image_ref = found.id

    def pods_for(self, names: list[str], restart: str = "Always", script: str = LOOP,
                 tag: str = "daemon") -> tuple[Pod, ...]:
        """The Pods made of these manifests (as the daemon makes them with tag "daemon")."""
        directory = self.work / f"parsed-{tag}-{names[0]}-{len(names)}"
        directory.mkdir(parents=True, exist_ok=True)
        for name in names:
            (directory / f"{name}.yaml").write_text(MANIFEST.format(
                name=name, uid=pod_uid(name, tag), restart=restart, image=BUSYBOX_IMAGE,
                script=json.dumps(script), resources=""))
        listing = read_manifest_dir(directory, NODE)
        if listing.errors or len(listing.pods) != len(names):
            raise RuntimeError(f"manifests in {directory}: {listing.errors}")
        if tag == "daemon":
            self.daemon_uids.update(p.pod.uid for p in listing.pods)
        return tuple(p.pod for p in listing.pods)

    def note_load(self, phase: str) -> None:
        with open("/proc/loadavg") as f:
            self.r.load.append((phase, " ".join(f.read().split()[:3])))

    # raw CRI ------------------------------------------------------------------------------

    def raw_start(self, pod: Pod, client: CRIRuntime | None = None,
                  settings: NodeSettings | None = None) -> None:
        client = client or self.client
        settings = settings or self.settings
        sandbox = generate_sandbox_config(pod, 0, settings)
        os.makedirs(sandbox.log_directory, exist_ok=True)
        sandbox_id = client.run_pod_sandbox(sandbox)
        container = pod.spec.containers[0]
        config = generate_container_config(pod, container, self.image_ref, 0, "",
                                           settings)
        os.makedirs(os.path.join(sandbox.log_directory, container.name), exist_ok=True)
        container_id = client.create_container(sandbox_id, config, sandbox)
        client.start_container(container_id)

    def raw_sample(self, pod: Pod, settings: NodeSettings | None = None) -> float:
        """One pod started with raw CRI calls, then removed with its logs: the start's
        seconds."""
        t0 = time.perf_counter()
        self.raw_start(pod, settings=settings)
        took = time.perf_counter() - t0
        self.raw_teardown(1)
        self.reset_logs()
        return took

    def raw_teardown(self, workers: int, graceful: bool = False,
                     client: CRIRuntime | None = None) -> float:
        client = client or self.client
        sandboxes = client.list_pod_sandbox()
        containers = client.list_containers()

        def one(sandbox_id: Any) -> None:
            if graceful:
                for c in containers:
                    if c.pod_sandbox_id == sandbox_id:
                        client.stop_container(c.id, 2)
            client.stop_pod_sandbox(sandbox_id)
            client.remove_pod_sandbox(sandbox_id)

        started = time.perf_counter()
        parallel(one, [s.id for s in sandboxes], workers)
        took = time.perf_counter() - started
        self.remove_raw_cgroups()
        return took

    def remove_raw_cgroups(self) -> None:
        """The pod cgroups runc made for raw pods: runc removes a container's own cgroup,
        not its parent (the kubelet removes a pod's, after its sandbox)."""
        for uid in self.cgroups.pod_cgroups():
            if uid not in self.daemon_uids:
                self.cgroups.destroy(uid)

    def raw_phase(self, only: str = "") -> None:
        """``only``: "" every phase's baselines, ONLY_BULK phase 2's, ONLY_START phase 1's."""
        c = self.console
        c.print("[bold]raw CRI baselines[/bold]")
        self.note_load("raw baselines")
        # warm-up: bridge, page cache, the gRPC channel
        warm = self.pods_for(["warm-000"], tag="raw")
        self.raw_start(warm[0])
        self.raw_teardown(1)
        if only != ONLY_BULK:
            self.raw_sequential()
        if only != ONLY_START:
            self.raw_bulk()

    def raw_sequential(self) -> None:
        c = self.console
        pods = self.pods_for([f"start-{i:03d}" for i in range(self.n_start)], tag="raw")
        ops: dict[str, list[float]] = {}
        for pod in pods:
            sec0, cnt0 = self.client.mark()
            t0 = time.perf_counter()
            self.raw_start(pod)
            self.r.start_raw.append(time.perf_counter() - t0)
            sec1, cnt1 = self.client.mark()  # the start's calls, not the teardown's
            for k in sec1:
                o = ops.setdefault(k, [0.0, 0.0])
                o[0] += cnt1[k] - cnt0[k]
                o[1] += sec1[k] - sec0.get(k, 0.0)
            self.raw_teardown(1)
            self.reset_logs()
        n = len(pods)
        self.r.start_raw_ops = {_snake(k): (c / n, t / n) for k, (c, t) in ops.items() if c}
        self.r.start_raw_before = list(self.r.start_raw)
        c.print(f"  1 pod sequential: p50 {pct(self.r.start_raw, .5):.3f} s")

    def raw_bulk(self) -> None:
        c = self.console
        all_ = self.r.bulk_raw_all
        for rep in range(self.repeats):
            for workers, client, key in ((8, self.client, "8"), (50, self.client, "50"),
                                         (50, self.capped, CAPPED)):
                bulk = self.pods_for([f"bulk-{i:03d}" for i in range(50)],
                                     tag=f"raw-{rep}-{key}")
                t0 = time.perf_counter()
                parallel(functools.partial(self.raw_start, client=client), bulk, workers)
                all_.setdefault(f"create{key}", []).append(time.perf_counter() - t0)
                graceful = rep % 2 == 1
                kind = "graceful" if graceful else "teardown"
                all_.setdefault(f"{kind}{key}", []).append(
                    self.raw_teardown(workers, graceful=graceful, client=client))
                self.reset_logs()
                callers = (f"{workers} callers" if key != CAPPED else
                           f"50 callers, daemon's caps {self.limit.limit}/{self.limit.stop_limit}")
                c.print(f"  50 pods, {callers}: create {all_[f'create{key}'][-1]:.2f}"
                        f" s, {'StopContainer(2)+' if graceful else ''}Stop+RemovePodSandbox "
                        f"{all_[f'{kind}{key}'][-1]:.2f} s")
        self.r.bulk_raw = {k: statistics.median(v) for k, v in all_.items()}
        self.check_empty()

    def reset_logs(self) -> None:
        """Pod log dirs survive RemovePodSandbox (as upstream): start each pod clean."""
        for entry in self.daemon.logs_dir.iterdir():
            shutil.rmtree(entry, ignore_errors=True)

    def raw_after(self) -> None:
        """The one-pod raw baseline again, after the daemon stopped: drift shows."""
        self.daemon.stop()
        self.check_empty()
        pods = self.pods_for([f"start-{i:03d}" for i in range(self.n_start)], tag="raw-after")
        for pod in pods:
            self.r.start_raw.append(self.raw_sample(pod))
        self.check_empty()

    def check_empty(self) -> None:
        left = self.client.list_pod_sandbox()
        if left:
            raise RuntimeError(f"{len(left)} sandbox(es) left")

    # the daemon ---------------------------------------------------------------------------

    def gone(self, uids: set[str]) -> bool:
        """No sandbox and no container of these pods is left in the runtime."""
        for s in self.client.list_pod_sandbox():
            if s.labels.get(L.POD_UID) in uids:
                return False
        return all(c.labels.get(L.POD_UID) not in uids for c in self.client.list_containers())

    def delete_and_wait(self, names: list[str], uids: set[str], timeout: float = 120.0,
                        deletions: int = 0) -> float:
        """Seconds from the manifests' removal until the runtime holds nothing of the
        pods; ``deletions``: first wait for that many containers (sandboxes count) to be
        deleted (RuntimeEventCount), then list the runtime every POLL_TIGHT."""
        since = self.events.mark() if self.events is not None and deletions else None
        t0 = time.perf_counter()
        for name in names:
            (self.daemon.manifests / f"{name}.yaml").unlink()
        if self.events is not None and since is not None:
            self.events.wait_for(EventKind.DELETED, deletions, since, timeout)
            done = wait(lambda: self.gone(uids), POLL_TIGHT, timeout,
                        f"{len(uids)} pods removed")
        else:
            done = wait(lambda: self.gone(uids), POLL_BULK, timeout,
                        f"{len(uids)} pods removed")
        return done.seen - t0

    def running_check(self, uid: str) -> Callable[[], bool]:
        return lambda: running(self.daemon.pods().get(uid))

    def all_running_check(self, uids: set[str]) -> Callable[[], bool]:
        """Whether /pods shows every pod of ``uids`` Running (one GET a look)."""
        return all_running_check(self.daemon, uids)

    def runtime_events(self) -> RuntimeEventCount:
        """containerd's event stream, opened on first use and kept to the end."""
        if self.events is None:
            self.events = RuntimeEventCount(self.emb.endpoint)
        return self.events

    def daemon_start_latency(self) -> None:
        """Daemon samples interleaved with raw ones on the same containerd: under a noisy
        machine, neighbouring samples share its load. The raw samples are taken with the
        daemon paused (DaemonProc.paused), as phase 2's raw runs are: beside a running
        daemon a raw pod is an orphan, which it relists and kills, and that work fell on
        its next sample. A daemon sample waits for its pod's two task starts on
        containerd's event stream before it polls /pods every POLL_AFTER_START (phase 2's
        bursts wait the same way, then poll every POLL_TIGHT): polled from the write on,
        the polling (a GET some 0.3 ms of the daemon's CPU and as much of the bench's,
        every 5 ms) took CPU from containerd and runc starting the pod, which the raw
        samples, timed by their calls' return, never paid."""
        d = self.daemon
        events = self.runtime_events()
        proc = ProcStat(d.pid)
        pods = self.pods_for([f"start-{i:03d}" for i in range(self.n_start)])
        raw_pods = self.pods_for([f"start-{i:03d}" for i in range(self.n_start)],
                                 tag="raw-interleaved")
        flat_pods = self.pods_for([f"start-{i:03d}" for i in range(self.n_start)],
                                  tag="raw-flat")
        deltas: dict[str, float] = defaultdict(float)
        for pod, raw_pod, flat_pod in zip(pods, raw_pods, flat_pods, strict=True):
            with d.paused():
                self.r.start_raw_interleaved.append(self.raw_sample(raw_pod, self.settings))
                self.r.start_raw_flat.append(self.raw_sample(flat_pod, self.settings_flat))
            time.sleep(SETTLE_AFTER_PAUSE)
            before = self.all_metrics()
            since = events.mark()
            cpu0 = proc.cpu()
            t0 = time.perf_counter()
            d.write(pod.metadata.name.removesuffix(f"-{NODE}"))
            seen = events.running_after_start(self.running_check(pod.uid), since,
                                              f"{pod.metadata.name} Running")
            self.r.start_daemon.append(seen.seen - t0)
            self.r.start_daemon_cpu.append(proc.cpu() - cpu0)
            self.r.start_poll_period.append(seen.period)
            after = self.all_metrics()
            for k, v in after.items():
                deltas[k] += v - before.get(k, 0.0)
            self.delete_and_wait([pod.metadata.name.removesuffix(f"-{NODE}")], {pod.uid},
                                 deletions=2)
            time.sleep(0.3)
        n = len(pods)
        ops: dict[str, tuple[float, float]] = {}
        for k, v in deltas.items():
            m = re.match(r'kubelet_runtime_operations_duration_seconds_(sum|count)'
                         r'\{operation_type="([^"]+)"\}', k)
            if m and v:
                c, t = ops.get(m.group(2), (0.0, 0.0))
                ops[m.group(2)] = (c + v / n, t) if m.group(1) == "count" else (c, t + v / n)
        self.r.start_daemon_ops = ops
        count = deltas.get("kubelet_pod_start_duration_seconds_count", 0)
        if count:
            self.r.start_daemon_internal = deltas["kubelet_pod_start_duration_seconds_sum"] / count
        self.console.print(f"  daemon 1 pod sequential: p50 {pct(self.r.start_daemon, .5):.3f}"
                           f" s (poll period {statistics.mean(self.r.start_poll_period) * 1e3:.1f}"
                           " ms)")

    def raw_between(self, run: int) -> None:
        """One raw burst of 50 under the daemon's caps and its removal as the kubelet
        removes a pod (StopContainer with the pod's grace, then Stop and
        RemovePodSandbox), with the daemon stopped (SIGSTOP) so it neither sees nor
        touches the raw pods; its events wait in its stream and its timers fire once it
        goes on."""
        all_ = self.r.bulk_raw_all
        pods = self.pods_for([f"bulk-{i:03d}" for i in range(50)], tag=f"raw-between-{run}")
        spent = self.r.raw_between_busy
        with self.daemon.paused():
            with busy(self.emb.pid, spent.setdefault("create", [])):
                t0 = time.perf_counter()
                parallel(functools.partial(self.raw_start, client=self.capped), pods, 50)
                all_.setdefault(f"create{INTERLEAVED}", []).append(time.perf_counter() - t0)
            with busy(self.emb.pid, spent.setdefault("teardown", [])):
                all_.setdefault(RAW_REMOVAL, []).append(
                    self.raw_teardown(50, graceful=True, client=self.capped))
            self.reset_logs()
        self.r.bulk_raw = {k: statistics.median(v) for k, v in all_.items()}
        self.console.print(f"  raw between: create {all_[f'create{INTERLEAVED}'][-1]:.2f} s, "
                           f"StopContainer(2)+Stop+RemovePodSandbox {all_[RAW_REMOVAL][-1]:.2f} s")
        time.sleep(3.0)  # the daemon catches up with what it missed (as long as a raw
        # run waits after the daemon's teardown: daemon_bulk_once)

    def daemon_bulk(self) -> None:
        """Each daemon run between two raw runs (one more raw run after the last): its
        ratio to the raw run before it, and to the mean of the two around it, in which a
        drift of the machine's speed through the three runs cancels too."""
        all_ = self.r.bulk_daemon_all
        raw = self.r.bulk_raw_all
        keys = {"create": f"create{INTERLEAVED}", "teardown": RAW_REMOVAL}
        for run in range(self.bursts):
            self.raw_between(run)
            self.daemon_bulk_once()
            for k, v in self.r.bulk_daemon.items():
                all_.setdefault(k, []).append(v)
            for k, key in keys.items():
                self.r.paired.setdefault(k, []).append(self.r.bulk_daemon[k] / raw[key][-1])
        self.raw_between(self.bursts)
        for k, key in keys.items():
            self.r.bracketed[k] = [
                daemon / statistics.mean(raw[key][i:i + 2])
                for i, daemon in enumerate(all_[k])]
        self.r.bulk_daemon = {k: statistics.median(v) for k, v in all_.items()}

    def daemon_bulk_once(self) -> None:
        d = self.daemon
        names = [f"bulk-{i:03d}" for i in range(50)]
        pods = self.pods_for(names)
        uids = {p.uid for p in pods}
        time.sleep(1.0)
        events = self.runtime_events()
        # Each pod: its sandbox's task and its container's, started, and later deleted.
        tasks = 2 * len(names)
        with self.phase_cost("create"):
            since = events.mark()
            t0 = time.perf_counter()
            for name in names:
                d.write(name)
            events.wait_for(EventKind.STARTED, tasks, since, 180)
            seen = wait(self.all_running_check(uids), POLL_TIGHT, 180, "50 pods Running")
        self.r.bulk_daemon["create"] = seen.seen - t0
        self.r.bulk_poll_period = seen.period
        self.r.bulk_tail.append((seen.polls * seen.period, seen.polls))
        time.sleep(2.0)
        with self.phase_cost("teardown"):
            self.r.bulk_daemon["teardown"] = self.delete_and_wait(names, uids,
                                                                  deletions=tasks)
        time.sleep(3.0)  # terminated workers are forgotten on the next housekeeping
        self.console.print(f"  daemon 50 pods: all Running {self.r.bulk_daemon['create']:.2f} s,"
                           f" all gone {self.r.bulk_daemon['teardown']:.2f} s")

    @contextlib.contextmanager
    def phase_cost(self, phase: str) -> Iterator[None]:
        """The daemon's CPU, CRI calls and threads from here to the end of the block."""
        proc = ProcStat(self.daemon.pid)
        before_tids = {int(t) for t in os.listdir(f"/proc/{proc.pid}/task")}
        calls0, (user0, sys0) = self.metrics(), proc.cpu_split()
        around: list[Busy] = []
        with ThreadSampler(proc.pid) as sampler, self.py_spy(phase), \
                busy(self.emb.pid, around):
            yield
        (user1, sys1), calls1 = proc.cpu_split(), self.metrics()
        calls = Counter({k: calls1[k] - calls0[k] for k in calls1 if calls1[k] - calls0[k]})
        self.r.bulk_cost.setdefault(phase, []).append(PhaseCost(
            user1 - user0 + sys1 - sys0, calls, sampler.most, sampler.by_name(before_tids),
            sys1 - sys0, around[0]))

    @contextlib.contextmanager
    def py_spy(self, phase: str) -> Iterator[None]:
        """With --py-spy DIR: the daemon's Python stacks through the block, sampled by
        py-spy (250 Hz, without pausing it; only the thread holding the GIL, so what its
        Python work costs), as collapsed stacks in DIR/<phase>-<n>.txt."""
        if self.spy_dir is None:
            yield
            return
        self.spy_dir.mkdir(parents=True, exist_ok=True)
        n = len(self.r.bulk_cost.get(phase, []))
        out = self.spy_dir / f"{phase}-{n}.txt"
        spy = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "py-spy"), "record", "--pid", str(self.daemon.pid),
             "--format", "raw", "--output", str(out), "--rate", "250", "--nonblocking",
             "--gil"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # py-spy attaches
        try:
            yield
        finally:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=30)

    def daemon_exit_latency(self) -> None:
        self.r.exit_latency = [lat for lat, _ in self.exits("exit", EXIT_1)]
        self.console.print(f"  daemon exit to /pods: p50 {pct(self.r.exit_latency, .5):.3f} s")

    def daemon_oom_latency(self) -> None:
        found = self.exits("oom", OOM, OOM_RESOURCES)
        self.r.oom_latency = [lat for lat, _ in found]
        self.r.oom_reasons = [reason for _, reason in found]
        self.console.print(f"  daemon OOM kill to /pods: p50 {pct(self.r.oom_latency, .5):.3f}"
                           f" s, reasons {sorted(set(self.r.oom_reasons))}")

    def exits(self, prefix: str, script: str, resources: str = "") -> list[tuple[float, str]]:
        """Pods one after another whose container ends by itself under restartPolicy Never:
        from its end (the runtime's finishedAt) until /pods shows it terminated, and the
        reason /pods gives."""
        d = self.daemon
        names = [f"{prefix}-{i:03d}" for i in range(self.n_exit)]
        pods = self.pods_for(names, restart="Never", script=script)
        out: list[tuple[float, str]] = []
        for name, pod in zip(names, pods, strict=True):
            d.write(name, restart="Never", script=script, resources=resources)
            wait(self.running_check(pod.uid), POLL_BULK, 60, f"{name} Running")
            found: dict[str, Any] = {}

            def ended(uid: str = pod.uid, found: dict[str, Any] = found) -> bool:
                p = d.pods().get(uid)
                if terminated(p):
                    found["pod"] = p
                    found["wall"] = time.time()
                    return True
                return False

            seen = wait(ended, POLL_TIGHT, 60, f"{name} terminated")
            cid = found["pod"]["status"]["containerStatuses"][0]["containerID"].split("://")[1]
            status = self.client.container_status(cid)
            state = found["pod"]["status"]["containerStatuses"][0]["state"]["terminated"]
            out.append((found["wall"] - status.finished_at, state.get("reason", "")))
            self.r.exit_poll_period.append(seen.period)
            self.delete_and_wait([name], {pod.uid})
        return out

    def metrics(self) -> Counter[str]:
        """CRI calls made so far, by operation (the daemon's /metrics)."""
        found = self.all_metrics()
        out: Counter[str] = Counter()
        for key, value in found.items():
            m = re.match(r'kubelet_runtime_operations_total\{operation_type="([^"]+)"\}', key)
            if m:
                out[m.group(1)] = int(value)
        return out

    def all_metrics(self) -> dict[str, float]:
        code, body = self.daemon.get("/metrics")
        out: dict[str, float] = {}
        if code != 200:
            return out
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                with contextlib.suppress(ValueError):
                    out[key] = float(value)
        return out

    def daemon_steady(self, profile: bool) -> None:
        d = self.daemon
        names = [f"steady-{i:03d}" for i in range(110)]
        pods = self.pods_for(names)
        uids = {p.uid for p in pods}
        t0 = time.perf_counter()
        for name in names:
            d.write(name)
        seen = wait(self.all_running_check(uids), 0.2, 300, "110 pods Running")
        st = self.r.steady
        st["start110"] = seen.seen - t0
        self.console.print(f"  daemon 110 pods all Running in {st['start110']:.1f} s; settling")
        time.sleep(5.0)
        proc = ProcStat(d.pid)
        calls0 = self.metrics()
        threads0 = proc.per_thread()
        cpu0, w0 = proc.cpu(), time.perf_counter()
        rss: list[float] = []
        end = w0 + self.steady_window
        while time.perf_counter() < end:
            rss.append(proc.rss_mib())
            time.sleep(1.0)
        cpu1, w1 = proc.cpu(), time.perf_counter()
        threads1 = proc.per_thread()
        calls1 = self.metrics()
        st["window"] = w1 - w0
        st["cpu"] = (cpu1 - cpu0) / (w1 - w0)
        st["rss_max"] = max(rss)
        st["rss_mean"] = statistics.mean(rss)
        st["threads"] = proc.threads()
        st["calls"] = {k: (calls1[k] - calls0.get(k, 0)) / (w1 - w0) for k in calls1
                       if calls1[k] - calls0.get(k, 0)}
        by_name: dict[str, float] = {}
        counts: Counter[str] = Counter()
        for tid, (name, cpu) in threads1.items():
            group = re.sub(r"[-_:]?\d+$", "", name)
            counts[group] += 1
            by_name[group] = by_name.get(group, 0.0) + cpu - threads0.get(tid, (name, 0.0))[1]
        st["threads_by_name"] = {k: (counts[k], v / (w1 - w0)) for k, v in by_name.items()}
        self.console.print(f"  steady: {st['cpu']:.3f} cores, RSS max {st['rss_max']:.1f} MiB,"
                           f" {st['threads']} threads")
        # /pods with 110 pods: latency, and the daemon's CPU per request
        cpu_a = proc.cpu()
        t_a = time.perf_counter()
        sizes: list[float] = []
        n_get = 50
        for _ in range(n_get):
            sizes.append(len(d.get("/pods")[1]))
        st["pods_get_s"] = (time.perf_counter() - t_a) / n_get
        st["pods_get_cpu"] = (proc.cpu() - cpu_a) / n_get
        st["pods_bytes"] = statistics.mean(sizes)
        if profile:
            self.profile_pieces(pods)
            self.profile_inprocess(uids)
        st["teardown110"] = self.delete_and_wait(names, uids, timeout=300)
        self.console.print(f"  110 pods gone in {st['teardown110']:.1f} s")

    def profile_pieces(self, pods: tuple[Pod, ...]) -> None:
        """In this process, against the same containerd: what one relist and one pod status
        read cost with 110 pods (the code the daemon runs), with a cProfile of each."""
        from actors.kubelet.pleg import take_snapshot

        st = self.r.steady
        n = 30
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        c0 = time.process_time()
        prof.enable()
        for _ in range(n):
            take_snapshot(self.client)
        prof.disable()
        st["relist_s"] = (time.perf_counter() - t0) / n
        st["relist_cpu"] = (time.process_time() - c0) / n
        out = io.StringIO()
        pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(12)
        st["relist_profile"] = out.getvalue()
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        c0 = time.process_time()
        prof.enable()
        for pod in pods[:n]:
            get_pod_status(self.client, PodUID(pod.uid), pod.metadata.name,
                           pod.metadata.namespace)
        prof.disable()
        st["podstatus_s"] = (time.perf_counter() - t0) / n
        st["podstatus_cpu"] = (time.process_time() - c0) / n
        out = io.StringIO()
        pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(12)
        st["podstatus_profile"] = out.getvalue()
        # The raw listings alone
        t0 = time.perf_counter()
        for _ in range(n):
            self.client.list_pod_sandbox()
            self.client.list_containers()
        st["lists_s"] = (time.perf_counter() - t0) / n
        uid = pods[0].uid
        t0 = time.perf_counter()
        for _ in range(n):
            self.client.list_pod_sandbox(SandboxFilter(label_selector={L.POD_UID: uid}))
            self.client.list_containers(ContainerFilter(label_selector={L.POD_UID: uid}))
        st["filtered_lists_s"] = (time.perf_counter() - t0) / n

    def profile_inprocess(self, uids: set[str]) -> None:
        """The same kubelet in this process, adopting the 110 pods (the subprocess stops
        first; pods keep running): CPU per Python thread name, and a CPU-weighted stack
        sample (every 5 ms, each thread whose CPU clock moved is charged with its stack)."""
        from actors.app.config.flags import parse_flags
        from actors.app.daemon import start_kubelet
        from actors.app.node import node_ip

        d = self.daemon
        d.stop()
        ro_port = free_port()
        flags = parse_flags([
            "--container-runtime-endpoint", self.emb.endpoint,
            "--pod-manifest-path", str(d.manifests), "--root-dir", str(d.root_dir),
            "--pod-logs-dir", str(d.logs_dir), "--node-name", NODE,
            "--port", str(free_port()), "--read-only-port", str(ro_port),
            "--healthz-port", str(free_port()),
        ])
        client = CRIClient(self.emb.endpoint, timeout=120.0)
        kubelet = start_kubelet(flags, client, node_ip())
        st = self.r.steady
        try:
            conn = http.client.HTTPConnection("127.0.0.1", ro_port, timeout=10)

            def all_running() -> bool:
                conn.request("GET", "/pods")
                listed = {p["metadata"]["uid"]: p
                          for p in json.loads(conn.getresponse().read())["items"]}
                return all(running(listed.get(u)) for u in uids)

            wait(all_running, 0.2, 120, "110 pods adopted in-process")
            conn.close()
            time.sleep(5.0)
            me = {threading.get_ident()}
            window = 20.0
            stacks: Counter[str] = Counter()
            by_thread: dict[str, float] = defaultdict(float)
            last: dict[int, float] = {}
            names = {t.ident: t.name for t in threading.enumerate()}

            def cpu_of(ident: int) -> float | None:
                try:
                    return time.clock_gettime(time.pthread_getcpuclockid(ident))
                except (OSError, ProcessLookupError):
                    return None

            end = time.perf_counter() + window
            started = time.perf_counter()
            while time.perf_counter() < end:
                for ident, frame in sys._current_frames().items():
                    if ident in me:
                        continue
                    now = cpu_of(ident)
                    if now is None:
                        continue
                    prev = last.get(ident)
                    last[ident] = now
                    if prev is None or now <= prev:
                        continue
                    if ident not in names:
                        names = {t.ident: t.name for t in threading.enumerate()}
                    group = re.sub(r"[-_:]?[0-9a-f-]{6,}$|-\d+$", "", names.get(ident, "?"))
                    by_thread[group] += now - prev
                    parts: list[str] = []
                    f: Any = frame
                    while f is not None and len(parts) < 4:
                        code = f.f_code
                        parts.append(f"{code.co_name}({Path(code.co_filename).name}:{f.f_lineno})")
                        f = f.f_back
                    stacks[" < ".join(parts)] += int((now - prev) * 1e6)
                time.sleep(0.005)
            elapsed = time.perf_counter() - started
            st["inproc_threads"] = {k: v / elapsed for k, v in by_thread.items()}
            st["inproc_stacks"] = [(k, v / 1e6 / elapsed) for k, v in stacks.most_common(20)]
            st["inproc_window"] = elapsed
        finally:
            kubelet.stop()
            client.close()
        d.start()
        wait(lambda: all(running(d.pods().get(u)) for u in uids), 0.2, 120,
             "110 pods adopted again")

    def daemon_phase(self, profile: bool, only: str = "") -> None:
        self.console.print("[bold]the daemon[/bold]")
        self.daemon.start()
        self.r.steady["idle_rss"] = ProcStat(self.daemon.pid).rss_mib()
        self.r.steady["idle_threads"] = ProcStat(self.daemon.pid).threads()
        # warm-up pod: the daemon's first sync pays imports and the channel
        warm = self.pods_for(["warm-000"])
        self.daemon.write("warm-000")
        wait(lambda: running(self.daemon.pods().get(warm[0].uid)), POLL_BULK, 60, "warm-up")
        self.delete_and_wait(["warm-000"], {warm[0].uid})
        if only == ONLY_BULK:
            self.note_load("2. 50 pods")
            self.daemon_bulk()
            self.note_load("end")
            return
        self.note_load("1. start latency")
        self.daemon_start_latency()
        if only == ONLY_START:
            self.note_load("end")
            return
        self.note_load("2. 50 pods")
        self.daemon_bulk()
        self.note_load("3. exit latency")
        self.daemon_exit_latency()
        self.note_load("3b. OOM latency")
        self.daemon_oom_latency()
        self.note_load("4. 110 pods")
        self.daemon_steady(profile)
        self.note_load("end")


def _snake(method: str) -> str:
    """RunPodSandbox -> run_pod_sandbox, as the daemon's metrics name operations."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", method).lower()


# --- reporting -----------------------------------------------------------------------------


def _met(ok: bool) -> str:
    return "[green]met[/green]" if ok else "[red]NOT met[/red]"


def results_table(b: Bench) -> Table:
    r = b.r
    t = Table(title="kubelet-actors daemon vs raw CRI (one containerd, one run)")
    for col in ("measurement", "daemon", "raw CRI", "ratio", "target", ""):
        t.add_column(col, justify="left" if col == "measurement" else "right")
    if r.start_daemon:
        start_rows(t, r)
    if r.bulk_daemon:
        bulk_rows(t, b)
    if r.exit_latency:
        later_rows(t, r)
    return t


def start_rows(t: Table, r: Results) -> None:
    p50d, p90d = pct(r.start_daemon, .5), pct(r.start_daemon, .9)
    inter = r.start_raw_interleaved
    p50r, p90r = pct(inter, .5), pct(inter, .9)
    t.add_row(f"1. pod start, p50 of {len(r.start_daemon)} sequential (raw interleaved)",
              f"{p50d:.3f} s", f"{p50r:.3f} s", f"{p50d / p50r:.2f}x", f"<= {TARGET_RATIO}x",
              _met(p50d / p50r <= TARGET_RATIO))
    t.add_row("   pod start, p90", f"{p90d:.3f} s", f"{p90r:.3f} s", f"{p90d / p90r:.2f}x", "", "")
    p99d, p99r = pct(r.start_daemon, .99), pct(inter, .99)
    t.add_row("   pod start, p99", f"{p99d:.3f} s", f"{p99r:.3f} s", f"{p99d / p99r:.2f}x",
              f"<= {TARGET_START_P99_RATIO}x", _met(p99d / p99r <= TARGET_START_P99_RATIO))
    if r.start_raw_flat:
        flat = pct(r.start_raw_flat, .5)
        t.add_row("   raw p50 with no pod cgroup (no cgroup parent), interleaved too", "",
                  f"{flat:.3f} s", f"{p50d / flat:.2f}x", "", "")
    t.add_row("   pod start, min / max", f"{min(r.start_daemon):.3f} / {max(r.start_daemon):.3f}",
              f"{min(inter):.3f} / {max(inter):.3f}", "", "", "")
    before = r.start_raw_before
    after = r.start_raw[len(before):]
    if after:
        pooled = pct(before + after, .5)
        t.add_row("   raw p50 with no daemon: before / after it / pooled (ratio vs pooled)", "",
                  f"{pct(before, .5):.3f} / {pct(after, .5):.3f} / {pooled:.3f}",
                  f"{p50d / pooled:.2f}x", "", "")
    t.add_row("   /pods poll period (mean)",
              f"{statistics.mean(r.start_poll_period) * 1e3:.1f} ms", "", "", "", "")
    t.add_row("   the daemon's CPU per start, write to seen Running (mean)",
              f"{statistics.mean(r.start_daemon_cpu) * 1e3:.1f} ms", "", "", "", "")


def bulk_rows(t: Table, b: Bench) -> None:
    """Phase 2 against raw with 8 and 50 plain callers, and with 50 under the daemon's
    caps: the same parallelism as the daemon's, which the targets are held to."""
    r = b.r
    caps = f"50 raw callers under the daemon's caps ({b.limit.limit} calls, " \
           f"{b.limit.stop_limit} stops)"

    def rows(title: str, daemon: float, kind: str) -> None:
        for key in ("8", "50", CAPPED, INTERLEAVED):
            raw = r.bulk_raw.get(f"{kind}{key}")
            if raw is None:
                continue
            target = key == INTERLEAVED
            against = {CAPPED: caps + ", before the daemon ran",
                       INTERLEAVED: caps + ", between the daemon's runs"}.get(
                           key, key + " raw callers")
            t.add_row(f"{title} vs {against}",
                      f"{daemon:.2f} s", f"{raw:.2f} s", f"{daemon / raw:.2f}x",
                      f"<= {TARGET_RATIO}x" if target else "",
                      _met(daemon / raw <= TARGET_RATIO) if target else "")

    rows("2. 50 pods at once to all Running", r.bulk_daemon["create"], "create")
    paired_rows(t, r, "create", "burst")
    t.add_row("   /pods poll period (mean, once every task started)",
              f"{r.bulk_poll_period * 1e3:.1f} ms", "", "", "", "")
    if r.bulk_tail:
        tails = sorted(r.bulk_tail)
        t.add_row("   last task start to all Running in /pods (median; its GETs: "
                  f"{', '.join(str(n) for _, n in r.bulk_tail)})",
                  f"{tails[len(tails) // 2][0] * 1e3:.0f} ms", "", "", "", "")
    gone = r.bulk_daemon["teardown"]
    rows("   50 deleted to all gone, Stop+RemovePodSandbox", gone, "teardown")
    rows("   50 deleted, StopContainer(2 s)+Stop+Remove", gone, "graceful")
    paired_rows(t, r, "teardown", "removal")


def paired_rows(t: Table, r: Results, kind: str, what: str) -> None:
    """The medians of the per-run ratios: each daemon run against the raw run just before
    it (the same minute: the machine's drift between minutes, 20% on these machines,
    cancels), and against the mean of the raw runs before and after it (a drift through
    the three runs cancels too; the target is held to this one)."""
    for ratios, title, target in (
            (r.paired.get(kind), f"paired: median of each {what}'s ratio to the raw run "
                                 "before it", False),
            (r.bracketed.get(kind), f"bracketed: median of each {what}'s ratio to the mean "
                                    "of the raw runs before and after it", True)):
        if not ratios:
            continue
        mid = statistics.median(ratios)
        t.add_row(f"   {title} ({len(ratios)} runs: "
                  f"{', '.join(f'{x:.2f}' for x in ratios)})", "", "", f"{mid:.2f}x",
                  f"<= {TARGET_RATIO}x" if target else "",
                  _met(mid <= TARGET_RATIO) if target else "")


def later_rows(t: Table, r: Results) -> None:
    e50, e90 = pct(r.exit_latency, .5), pct(r.exit_latency, .9)
    t.add_row(f"3. exit (sleep 2; exit 1) to /pods terminated, p50 of {len(r.exit_latency)}",
              f"{e50:.3f} s", "", "", f"<= {TARGET_EXIT_S} s", _met(e50 <= TARGET_EXIT_S))
    t.add_row("   exit to /pods, p90 / min / max",
              f"{e90:.3f} / {min(r.exit_latency):.3f} / {max(r.exit_latency):.3f} s",
              "", "", "", "")
    e99 = pct(r.exit_latency, .99)
    t.add_row("   exit to /pods, p99", f"{e99:.3f} s", "", "", f"<= {TARGET_EXIT_P99_S} s",
              _met(e99 <= TARGET_EXIT_P99_S))
    o50 = pct(r.oom_latency, .5)
    oom_ok = all(reason == "OOMKilled" for reason in r.oom_reasons)
    t.add_row(f"3b. OOM kill (32Mi limit) to /pods OOMKilled, p50 of {len(r.oom_latency)}",
              f"{o50:.3f} s", "", "", f"<= {TARGET_OOM_S} s", _met(o50 <= TARGET_OOM_S and oom_ok))
    t.add_row("   OOM to /pods, p90 / max; reasons",
              f"{pct(r.oom_latency, .9):.3f} / {max(r.oom_latency):.3f} s; "
              + ", ".join(sorted(set(r.oom_reasons))), "", "", "", "")
    st = r.steady
    t.add_row(f"4. 110 pods steady CPU ({st['window']:.0f} s window)", f"{st['cpu']:.4f} cores",
              "", "", f"<= {TARGET_CPU}", _met(st["cpu"] <= TARGET_CPU))
    t.add_row("   VmRSS max / mean", f"{st['rss_max']:.1f} / {st['rss_mean']:.1f} MiB", "", "",
              f"<= {TARGET_RSS_MIB:.0f} MiB", _met(st["rss_max"] <= TARGET_RSS_MIB))
    t.add_row("   idle daemon (0 pods) VmRSS / threads",
              f"{st['idle_rss']:.1f} MiB / {st['idle_threads']}", "", "", "", "")
    t.add_row("   threads with 110 pods", str(st["threads"]), "", "", "", "")
    t.add_row("   110 manifests to all Running / deleted to all gone",
              f"{st['start110']:.1f} s / {st['teardown110']:.1f} s", "", "", "", "")
    t.add_row("   GET /pods with 110 pods: latency / daemon CPU per request",
              f"{st['pods_get_s'] * 1e3:.1f} ms / {st['pods_get_cpu'] * 1e3:.1f} ms",
              f"{st['pods_bytes'] / 1024:.0f} KiB", "", "", "")


def bulk_cost_table(b: Bench, pods: int = 50) -> Table:
    """Phase 2's cost to the daemon per pod: CPU and CRI calls by operation (mean over
    the runs), and its threads."""
    costs = b.r.bulk_cost
    t = Table(title=f"2. the daemon's cost per pod, {pods} pods at once "
                    f"(mean of {len(costs.get('create', []))} runs; /proc and its /metrics)")
    t.add_column("per pod")
    for phase in costs:
        t.add_column(phase, justify="right")

    def mean(phase: str, value: Callable[[PhaseCost], float]) -> float:
        return statistics.mean(value(c) for c in costs[phase]) / pods

    t.add_row("daemon CPU", *(f"{mean(p, lambda c: c.cpu) * 1e3:.1f} ms" for p in costs))
    t.add_row("  of it in the kernel", *(f"{mean(p, lambda c: c.system) * 1e3:.1f} ms"
                                         for p in costs))
    between = b.r.raw_between_busy

    def spent(phase: str, value: Callable[[Busy], float]) -> float:
        return statistics.mean(value(x) for x in between.get(phase, ())) / pods

    def around(phase: str, value: Callable[[Busy], float]) -> float:
        return mean(phase, lambda c: value(c.around) if c.around else 0.0)

    kinds: tuple[tuple[str, Callable[[Busy], float]], ...] = (
        ("containerd CPU", lambda x: x.containerd),
        ("machine CPU (every process, the kernel)", lambda x: x.machine))
    for label, value in kinds:
        t.add_row(label, *(f"{around(p, value) * 1e3:.1f} ms" for p in costs))
        if between:
            t.add_row(f"  raw runs between, {label}",
                      *(f"{spent(p, value) * 1e3:.1f} ms" if p in between else "-"
                        for p in costs))
    ops = sorted({op for runs in costs.values() for c in runs for op in c.calls})
    t.add_row("CRI calls, all", *(f"{mean(p, lambda c: sum(c.calls.values())):.2f}"
                                   for p in costs))
    for op in ops:
        t.add_row(f"  {op}", *(f"{mean(p, functools.partial(_calls_of, op=op)):.2f}"
                               for p in costs))
    t.add_row("threads: most at once (whole daemon)",
              *(str(max(c.threads_most for c in costs[p])) for p in costs))
    t.add_row("threads started", *(f"{mean(p, lambda c: sum(c.threads_started.values())):.2f}"
                                   for p in costs))
    names = sorted({n for runs in costs.values() for c in runs for n in c.threads_started})
    for name in names:
        t.add_row(f"  {name}", *(f"{mean(p, functools.partial(_started, name=name)):.2f}"
                                 for p in costs))
    return t


def _calls_of(cost: PhaseCost, op: str) -> float:
    return cost.calls[op]


def _started(cost: PhaseCost, name: str) -> float:
    return cost.threads_started[name]


def start_ops_table(b: Bench) -> Table:
    r = b.r
    t = Table(title="1. one pod start: CRI calls per pod (count / summed seconds), raw "
                    "(its samples before the daemon ran, on a faster machine than later: "
                    "compare ratios with the interleaved ones) vs daemon (its /metrics)")
    t.add_column("operation")
    t.add_column("raw CRI", justify="right")
    t.add_column("daemon", justify="right")
    total_r = total_d = 0.0
    for op in sorted(set(r.start_raw_ops) | set(r.start_daemon_ops),
                     key=lambda k: -r.start_daemon_ops.get(k, (0, 0))[1]):
        cells = []
        for ops in (r.start_raw_ops, r.start_daemon_ops):
            c, sec = ops.get(op, (0.0, 0.0))
            cells.append(f"{c:.1f} / {sec * 1e3:.1f} ms" if c else "-")
        total_r += r.start_raw_ops.get(op, (0, 0.0))[1]
        total_d += r.start_daemon_ops.get(op, (0, 0.0))[1]
        t.add_row(op, *cells)
    t.add_row("all CRI calls", f"{total_r * 1e3:.1f} ms", f"{total_d * 1e3:.1f} ms")
    p_mean = statistics.mean(r.start_daemon)
    t.add_row("mean start latency (manifest -> /pods Running; raw: no daemon)",
              f"{statistics.mean(r.start_raw_before) * 1e3:.1f} ms", f"{p_mean * 1e3:.1f} ms")
    if r.start_daemon_internal:
        t.add_row("daemon-internal (first seen by status manager -> all running)", "",
                  f"{r.start_daemon_internal * 1e3:.1f} ms")
    t.add_row("daemon latency not in CRI calls", "", f"{(p_mean - total_d) * 1e3:.1f} ms")
    return t


def steady_tables(b: Bench) -> list[Table]:
    st = b.r.steady
    calls = Table(title="CRI calls per second in the steady window (daemon's /metrics)")
    calls.add_column("operation")
    calls.add_column("calls/s", justify="right")
    for k, v in sorted(st["calls"].items(), key=lambda kv: -kv[1]):
        calls.add_row(k, f"{v:.2f}")
    threads = Table(title="daemon CPU by thread name in the steady window")
    threads.add_column("thread (comm, digits stripped)")
    threads.add_column("count", justify="right")
    threads.add_column("cores", justify="right")
    for k, (n, v) in sorted(st["threads_by_name"].items(), key=lambda kv: -kv[1][1]):
        threads.add_row(k, str(n), f"{v:.4f}")
    out = [calls, threads]
    if "relist_s" in st:
        pieces = Table(title="pieces with 110 pods (measured in the bench process, same code)")
        pieces.add_column("piece")
        pieces.add_column("wall", justify="right")
        pieces.add_column("CPU", justify="right")
        pieces.add_row("PLEG take_snapshot (ListPodSandbox+ListContainers+diff input)",
                       f"{st['relist_s'] * 1e3:.2f} ms", f"{st['relist_cpu'] * 1e3:.2f} ms")
        pieces.add_row("get_pod_status (one pod: 2 filtered lists + 2 status calls)",
                       f"{st['podstatus_s'] * 1e3:.2f} ms", f"{st['podstatus_cpu'] * 1e3:.2f} ms")
        pieces.add_row("ListPodSandbox+ListContainers, unfiltered", f"{st['lists_s'] * 1e3:.2f} ms",
                       "")
        pieces.add_row("ListPodSandbox+ListContainers, one pod's label",
                       f"{st['filtered_lists_s'] * 1e3:.2f} ms", "")
        out.append(pieces)
    if "inproc_threads" in st:
        th = Table(title=f"in-process kubelet with 110 pods: CPU by Python thread "
                         f"({st['inproc_window']:.0f} s, sampled every 5 ms)")
        th.add_column("thread")
        th.add_column("cores", justify="right")
        for k, v in sorted(st["inproc_threads"].items(), key=lambda kv: -kv[1]):
            if v >= 0.0001:
                th.add_row(k, f"{v:.4f}")
        out.append(th)
        sk = Table(title="in-process kubelet: CPU-weighted stacks (innermost first)")
        sk.add_column("stack")
        sk.add_column("cores", justify="right")
        for k, v in st["inproc_stacks"]:
            sk.add_row(k, f"{v:.4f}")
        out.append(sk)
    return out


@contextlib.contextmanager
def quiet_logs(path: Path) -> Iterator[None]:
    logger.remove()
    path.parent.mkdir(parents=True, exist_ok=True)
    sink = logger.add(str(path), level="INFO")
    try:
        yield
    finally:
        logger.remove(sink)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.daemon_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer samples, 30 s steady window")
    parser.add_argument("--profile", action="store_true",
                        help="also time a relist, a pod status read, with cProfile")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--bulk-only", action="store_const", dest="only", const=ONLY_BULK,
                      default="", help="phase 2 alone: 50 pods at once and their teardown")
    only.add_argument("--start-only", action="store_const", dest="only", const=ONLY_START,
                      help="phase 1 alone: one pod's start, sequential samples")
    parser.add_argument("--py-spy", type=Path, metavar="DIR",
                        help="phase 2: sample the daemon with py-spy, collapsed stacks in DIR")
    parser.add_argument("--daemon-arg", action="append", default=[], metavar="ARG",
                        help="one more flag for the daemon, e.g. "
                             "--daemon-arg=--feature-gates=EventedPLEG=false (repeatable)")
    parser.add_argument("--samples", type=int, default=0, metavar="N",
                        help="pods per sequential measurement (start, exit, OOM; default 15, "
                             "8 with --quick): 100 or more for a p99 worth the name")
    parser.add_argument("--bursts", type=int, default=0, metavar="N",
                        help="phase 2: daemon bursts of 50, each after a raw one (default 4, "
                             "2 with --quick)")
    parser.add_argument("--repo", type=Path, default=REPO,
                        help="the source tree whose daemon runs (default: this one), so an "
                             "older checkout is measured the same way")
    parser.add_argument("--keep-log", metavar="PATH",
                        help="copy the daemon's log here before its directory goes")
    args = parser.parse_args(argv)
    console = Console(width=170)
    if os.geteuid() != 0:
        console.print("run as root: it starts containerd and makes a bridge")
        return 2
    logger.remove()
    logger.add(sys.stderr, level="INFO")
    with machine_lock(BENCH), serve_images() as images, private_containerd(BENCH) as emb:
        bench = Bench(emb, console, args.quick, tuple(args.daemon_arg), args.samples,
                      args.repo)
        bench.spy_dir = args.py_spy
        bench.bursts = args.bursts or bench.bursts
        console.print(f"containerd {emb.endpoint} (ready in {emb.last_startup_seconds or 0:.2f}"
                      f" s); registry {'started here' if images.started_here else 'already up'}; "
                      f"daemon log {bench.daemon.log_path}")
        try:
            with quiet_logs(bench.work / "bench.log"):
                bench.prepare()
                bench.raw_phase(args.only)
                bench.daemon_phase(args.profile, args.only)
                if args.only != ONLY_BULK:
                    bench.raw_after()
            console.print(results_table(bench))
            if args.only != ONLY_START:
                console.print(bulk_cost_table(bench))
            if args.only != ONLY_BULK:
                console.print(start_ops_table(bench))
            console.print("load average (1/5/15 min) at each phase: " + "; ".join(
                f"{phase}: {load}" for phase, load in bench.r.load) + f" ({os.cpu_count()} CPUs)")
            if not args.only:
                for table in steady_tables(bench):
                    console.print(table)
            if args.profile and not args.only:
                console.print(bench.r.steady["relist_profile"], markup=False, highlight=False)
                console.print(bench.r.steady["podstatus_profile"], markup=False,
                              highlight=False)
        finally:
            bench.daemon.stop()
            if bench.events is not None:
                bench.events.stop()
            bench.client.close()
            if args.keep_log and bench.daemon.log_path.exists():
                shutil.copyfile(bench.daemon.log_path, args.keep_log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
