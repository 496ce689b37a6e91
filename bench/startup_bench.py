"""How fast the daemon starts: imports, spawn to a healthy /healthz, and adopting running pods.

    .venv/bin/python -m bench.startup_bench [--runs N] [--pods P] [--imports-only]
        [--no-pyc | --after-setup] [--instructions]

1. Imports, no runtime needed: the CPU (user+sys of the child, from wait4) and wall time
   of ``python -c pass`` (the interpreter alone: the floor), of importing ``bin.main``
   (what every start pays before the flags are read) and of importing
   ``actors.app.daemon`` (the daemon's code), each run N times; min and median, and the
   ratio of each min to the floor's.
2. Spawn to healthz, under the machine-wide lock on a private containerd of the test bed
   (bench/daemon_bench.py's DaemonProc, its flags): ``python -m bin.main
   --container-runtime-endpoint ...`` with no pods, from the spawn until GET /healthz on
   the healthz port answers 200 (polled every 2 ms), N times; the wall time and the
   daemon's CPU at that moment (/proc/<pid>/stat, in clock ticks).
3. With ``--pods P``: P pods (one busybox container each) started through manifests, the
   daemon stopped with SIGTERM (the pods keep running), started again: from that spawn
   until /pods on the read-only port shows all P Running, with the same container IDs
   and no restarts (adoption, not re-creation).

Bytecode of the daemon runs: by default a private cache filled by the import runs (a
restart: everything cached); ``--no-pyc``, none of ours (a checkout before setup's
compile step: every start compiles every module of ours); ``--after-setup``, only what
scripts/setup.sh makes (its scripts/compile_bytecode.sh, run into the checkout first: a
user's first start after setup). In the last two the daemon writes no bytecode.

With ``--instructions`` (needs valgrind): also each import row once under callgrind, the
instructions it executes, which the machine's load does not change (CPU time does, by
tens of percent on a busy machine): the measure to compare two checkouts with.

The machine is shared: CPU time is the measure to compare, wall time is what a user sees.
Not a test: nothing here asserts on time; it prints a table.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
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
from bench.daemon_bench import PYTHON, REPO, TICK_HZ, DaemonProc, ProcStat, pod_uid, running
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ImageSpec

HEALTHZ_POLL_S = 0.002
FIRST, AGAIN = "first start (fresh root dir)", "restart (same root dir)"
PODS_POLL_S = 0.05
"""Between GETs of /pods: each costs the daemon some milliseconds of CPU with 110 pods."""
SPAWN_TIMEOUT_S = 30.0
IMPORTS = (
    ("python -c pass (floor)", "pass"),
    ("import bin.main", "import bin.main"),
    ("import actors.app.daemon", "import actors.app.daemon"),
    ("import bin.main, actors.app.daemon", "import bin.main, actors.app.daemon"),
)
"""The last row is what the daemon imports, as it imports it: bin.main first (which turns
the cyclic GC off for the start, see actors.app.startup)."""


PACKAGES = ("actors", "runtime", "proto", "bin")
"""Ours: the packages scripts/compile_bytecode.sh compiles."""


def child_env(pycache: Path | None) -> dict[str, str]:
    """The environment of a child: with ``pycache``, bytecode is cached there (as an
    installed wheel has its .pyc files); without, the checkout's own __pycache__ are read
    and nothing is written (every start compiles what has no .pyc there)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTHONPYCACHEPREFIX", None)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def checkout_bytecode() -> list[Path]:
    """The __pycache__ directories of our packages in the checkout."""
    return [p for package in PACKAGES for p in (REPO / package).rglob("__pycache__")]


@dataclass(frozen=True, slots=True)
class Sample:
    """One run: seconds of wall time and of CPU (user+sys)."""

    wall: float
    cpu: float


def child_sample(argv: list[str], env: dict[str, str]) -> Sample:
    """Run ``argv`` to its end; its wall time and its own CPU time (rusage from wait4)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited with {proc.returncode}")
    return Sample(wall, usage.ru_utime + usage.ru_stime)


def import_samples(runs: int, pycache: Path) -> dict[str, list[Sample]]:
    """Each IMPORTS row run ``runs`` times with the checkout's bytecode (none, or setup's)
    and with everything cached, interleaved (the load moves while we measure)."""
    ours = " (setup's .pyc)" if checkout_bytecode() else ""
    modes = ((ours, child_env(None)), (" (.pyc)", child_env(pycache)))
    child_sample([str(PYTHON), "-c", IMPORTS[-1][1]], modes[1][1])  # fills the cache
    out: dict[str, list[Sample]] = {label + mode: [] for label, _ in IMPORTS
                                    for mode, _ in modes}
    for _ in range(runs):
        for label, code in IMPORTS:
            for mode, env in modes:
                out[label + mode].append(child_sample([str(PYTHON), "-c", code], env))
    return out


def import_instructions(env: dict[str, str]) -> dict[str, int]:
    """Each IMPORTS row run once under valgrind's callgrind: the instructions executed."""
    out: dict[str, int] = {}
    for label, code in IMPORTS:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(PYTHON),
             "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
        found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
        if found is None:
            raise RuntimeError(f"no instruction count from valgrind: {done.stderr[-500:]}")
        out[label] = int(found.group(1))
    return out


def instructions_table(counts: dict[str, int]) -> Table:
    table = Table(title="imports under callgrind (instructions executed, one run each)")
    for col in ("what", "M instructions", "/ floor"):
        table.add_column(col, justify="left" if col == "what" else "right")
    floor = counts[IMPORTS[0][0]]
    for label, count in counts.items():
        table.add_row(label, f"{count / 1e6:,.0f}", f"{count / floor:.1f}x")
    return table


class TimedDaemon(DaemonProc):
    """DaemonProc whose start is timed: spawn to /healthz 200 on the healthz port."""

    def __init__(self, work: Path, endpoint: str, pycache: Path | None) -> None:
        super().__init__(work, endpoint)
        self.pycache = pycache

    def spawn(self) -> Sample:
        """Start the daemon; return when /healthz answers 200, with the time it took."""
        command = self.command()
        with self.log_path.open("ab") as log:
            started = time.perf_counter()
            self.proc = subprocess.Popen(command, cwd=REPO, stdout=log,
                                         stderr=subprocess.STDOUT,
                                         env=child_env(self.pycache))
        stat = ProcStat(self.proc.pid)
        deadline = started + SPAWN_TIMEOUT_S
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the daemon exited with {self.proc.returncode}; "
                                   f"see {self.log_path}")
            if self.healthz() == 200:
                return Sample(time.perf_counter() - started, stat.cpu())
            time.sleep(HEALTHZ_POLL_S)
        raise RuntimeError(f"/healthz not 200 in {SPAWN_TIMEOUT_S:g} s; see {self.log_path}")

    def healthz(self) -> int | None:
        """The status of GET /healthz on the healthz port; None while nothing listens."""
        conn = http.client.HTTPConnection("127.0.0.1", self.hz_port, timeout=2)
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status
        except (OSError, http.client.HTTPException):
            return None
        finally:
            conn.close()

    def terminate(self) -> None:
        """SIGTERM and wait: the daemon stops, its pods keep running."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)


def container_ids(pods: dict[str, dict[str, Any]]) -> dict[str, tuple[tuple[str, int], ...]]:
    """Per pod UID: (containerID, restartCount) of each container."""
    return {uid: tuple((s.get("containerID", ""), s.get("restartCount", 0))
                       for s in p["status"].get("containerStatuses", []))
            for uid, p in pods.items()}


def wait_running(daemon: DaemonProc, uids: set[str], timeout: float) -> dict[str, dict[str, Any]]:
    """Poll /pods until every pod of ``uids`` is Running; its pods then."""
    deadline = time.perf_counter() + timeout
    while True:
        with contextlib.suppress(OSError, http.client.HTTPException, RuntimeError):
            pods = daemon.pods()
            if all(running(pods.get(uid)) for uid in uids):
                return pods
        if time.perf_counter() > deadline:
            raise RuntimeError(f"not all {len(uids)} pods Running in {timeout:g} s; "
                               f"see {daemon.log_path}")
        time.sleep(PODS_POLL_S)


@dataclass
class Adoption:
    """A restart with ``pods`` running: spawn to all Running, and whether they were kept."""

    pods: int
    healthz: Sample
    all_running_s: float
    all_running_cpu: float
    same_containers: bool
    restarts: int
    cri_calls: Counter[str]


def adoption(emb: EmbeddedContainerd, work: Path, n_pods: int, runs: int,
             pycache: Path | None, keep_log: Path | None = None,
             profile: Path | None = None) -> list[Adoption]:
    """Start ``n_pods`` pods through manifests, then restart the daemon ``runs`` times."""
    daemon = TimedDaemon(work / "adopt", emb.endpoint, pycache)
    out: list[Adoption] = []
    try:
        daemon.spawn()
        names = [f"adopt-{i:03d}" for i in range(n_pods)]
        for name in names:
            daemon.write(name)
        uids = {pod_uid(name, "daemon") for name in names}  # as DaemonProc.write sets them
        before = container_ids(wait_running(daemon, uids, 60.0 + 2.0 * n_pods))
        for _ in range(runs):
            daemon.terminate()
            started = time.perf_counter()
            hz = daemon.spawn()
            spy = None if profile is None else subprocess.Popen(
                [str(PYTHON.parent / "py-spy"), "record", "--pid", str(daemon.pid), "--rate",
                 "250", "--duration", "3", "--threads", "--format", "raw", "--output",
                 str(profile)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pods = wait_running(daemon, uids, 60.0)
            seen = time.perf_counter() - started
            cpu = ProcStat(daemon.pid).cpu()
            if spy is not None:
                spy.wait(timeout=30)
            after = container_ids(pods)
            restarts = sum(n for uid in uids for _, n in after[uid])
            out.append(Adoption(n_pods, hz, seen, cpu,
                                all(after[uid] == before[uid] for uid in uids), restarts,
                                cri_calls(daemon)))
        for manifest in daemon.manifests.glob("*.yaml"):
            manifest.unlink()
        wait_gone(daemon, uids, 60.0 + n_pods)
    finally:
        daemon.stop()
        if keep_log is not None and daemon.log_path.exists():
            shutil.copyfile(daemon.log_path, keep_log)
    return out


def cri_calls(daemon: DaemonProc) -> Counter[str]:
    """The CRI calls the daemon made so far, by method (kubelet_runtime_operations_total)."""
    code, body = daemon.get("/metrics")
    out: Counter[str] = Counter()
    for line in body.decode().splitlines() if code == 200 else ():
        m = re.match(r'kubelet_runtime_operations_total\{operation_type="([^"]+)"\} (\S+)', line)
        if m:
            out[m.group(1)] = int(float(m.group(2)))
    return out


def wait_gone(daemon: DaemonProc, uids: set[str], timeout: float) -> None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        with contextlib.suppress(OSError, http.client.HTTPException, RuntimeError):
            if not uids & set(daemon.pods()):
                return
        time.sleep(PODS_POLL_S)
    logger.warning("pods still listed after {:g} s; the containerd's cleanup removes them",
                   timeout)


def spawn_samples(emb: EmbeddedContainerd, work: Path, runs: int,
                  pycache: Path | None) -> dict[str, list[Sample]]:
    """The daemon with no pods, spawn to healthz 200, ``runs`` times each: on a fresh root
    dir (a node's first start: it makes its self-signed serving certificate, two RSA
    keys), then again on the same dir (a restart: the certificate is read back)."""
    out: dict[str, list[Sample]] = {FIRST: [], AGAIN: []}
    for i in range(runs):
        for kind in (FIRST, AGAIN):
            daemon = TimedDaemon(work / f"empty-{i}", emb.endpoint, pycache)
            try:
                out[kind].append(daemon.spawn())
            finally:
                daemon.stop()
    return out


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def samples_table(title: str, rows: dict[str, list[Sample]], floor: Sample | None) -> Table:
    table = Table(title=title)
    for col in ("what", "runs", "CPU min ms", "CPU median ms", "wall min ms",
                "wall median ms", "CPU min / floor"):
        table.add_column(col, justify="left" if col == "what" else "right")
    for label, samples in rows.items():
        cpu = [s.cpu for s in samples]
        wall = [s.wall for s in samples]
        ratio = f"{min(cpu) / floor.cpu:.1f}x" if floor is not None and floor.cpu else "-"
        table.add_row(label, str(len(samples)), ms(min(cpu)), ms(statistics.median(cpu)),
                      ms(min(wall)), ms(statistics.median(wall)), ratio)
    return table


def adoption_table(results: list[Adoption]) -> Table:
    table = Table(title=f"restart with {results[0].pods} running pods")
    for col in ("run", "healthz wall ms", "healthz CPU ms", "all Running ms", "its CPU ms",
                "same containers", "restarts", "CRI calls by then"):
        table.add_column(col, justify="right")
    for i, r in enumerate(results, 1):
        calls = ", ".join(f"{m} {n}" for m, n in r.cri_calls.most_common())
        table.add_row(str(i), ms(r.healthz.wall), ms(r.healthz.cpu), ms(r.all_running_s),
                      ms(r.all_running_cpu),
                      "yes" if r.same_containers else "NO", str(r.restarts), calls)
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="runs of each measurement (7)")
    parser.add_argument("--pods", type=int, default=0,
                        help="also time a restart with this many running pods (0: no)")
    parser.add_argument("--adopt-runs", type=int, default=3, help="restarts with --pods (3)")
    parser.add_argument("--imports-only", action="store_true",
                        help="only the import timings (no containerd, no root needed)")
    bytecode = parser.add_mutually_exclusive_group()
    bytecode.add_argument("--no-pyc", action="store_true",
                          help="run the daemon with no bytecode of ours (a checkout before "
                               "setup's compile step: every start compiles every module)")
    bytecode.add_argument("--after-setup", action="store_true",
                          help="run the daemon with only the bytecode setup makes "
                               "(scripts/compile_bytecode.sh, run into the checkout first)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the imports' instructions under valgrind's "
                             "callgrind (load-independent; about a minute)")
    parser.add_argument("--profile", metavar="PATH", type=Path,
                        help="with --pods: record the restarted daemon's first 3 s with "
                             "py-spy (pip install py-spy), collapsed stacks into PATH")
    parser.add_argument("--keep-log", metavar="PATH", type=Path,
                        help="with --pods: copy the daemon's log here before its dir goes")
    args = parser.parse_args(argv)
    console = Console(width=170)
    with tempfile.TemporaryDirectory(prefix="startup-bench-pyc-") as pycache:
        return run(args, console, Path(pycache))


def run(args: argparse.Namespace, console: Console, pycache: Path) -> int:
    if args.after_setup:
        subprocess.run([str(REPO / "scripts" / "compile_bytecode.sh"), str(PYTHON)],
                       check=True, env=child_env(None))
    imports = import_samples(args.runs, pycache)
    floor = min(imports[IMPORTS[0][0] + " (.pyc)"], key=lambda s: s.cpu)
    console.print(samples_table("imports (CPU = user+sys of the child)", imports, floor))
    console.print(f"(CPU from /proc at healthz is in {1000 // TICK_HZ} ms ticks; "
                  f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    if args.instructions:
        console.print(instructions_table(import_instructions(child_env(None))))
    if args.imports_only:
        return 0
    if os.geteuid() != 0:
        console.print("run as root for the daemon runs: they start containerd")
        return 2
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    if args.no_pyc and (found := checkout_bytecode()):
        console.print(f"--no-pyc: the checkout has bytecode of ours ({found[0]}, ...); remove "
                      f"it first: find {' '.join(PACKAGES)} -name __pycache__ -exec rm -r {{}} +")
        return 2
    with machine_lock(BENCH), serve_images(), private_containerd(BENCH) as emb:
        work = emb.base_dir / "startup-bench"
        daemon_cache = None if args.no_pyc or args.after_setup else pycache
        spawns = spawn_samples(emb, work, args.runs, daemon_cache)
        mode = ("no .pyc of ours" if args.no_pyc else
                "only setup's .pyc" if args.after_setup else ".pyc")
        console.print(samples_table(f"spawn -> /healthz 200, no pods ({mode})", spawns, floor))
        if args.pods:
            client = CRIClient(emb.endpoint, timeout=120.0)
            try:
                for image in (PAUSE_IMAGE, BUSYBOX_IMAGE):
                    client.pull_image(ImageSpec(image=image))
            finally:
                client.close()
            console.print(adoption_table(adoption(emb, work, args.pods, args.adopt_runs,
                                                  daemon_cache, args.keep_log, args.profile)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
