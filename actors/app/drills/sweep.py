"""Running many drills over many seeds: in parallel slots, in batches under the lock.

``kubelet-actors drill --all --seeds 1-1000 --jobs 2``: every (drill, seed) pair is one run.
Runs share nothing but the registry: each runs in a slot of the drills' bed (a private
containerd on its own bridge and subnet, actors.app.testbed.Bed.slot), in a worker process of
its own (``jobs`` > 1: the kubelets of two drills never share a process, its GIL or its
globals). The machine-wide lock is taken per batch: a batch starts runs for about
``batch_s`` seconds, waits for them to end, and lets the lock go, so the e2e tests and the
other users of the machine get their turn during a long sweep.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.app.drills.catalog import DRILLS as CATALOG
from actors.app.drills.env import session
from actors.app.drills.runner import Verdict, run_drill
from actors.app.logging_setup import configure_logging
from actors.app.testbed import DRILLS, LOCK_WAIT_S, MAX_SLOTS, Bed, TestbedError

BATCH_S = 180.0
"""How long a batch starts new runs under the lock; the runs then in flight finish, so the
lock is held for about this plus one drill (well under the 5 minutes others may wait)."""

BATCH_LOCK_WAIT_S = 24 * 3600.0
"""How long a batch after the first waits for the machine-wide lock: a sweep runs for hours
and an e2e run may hold the lock for many minutes in between. The first batch waits
LOCK_WAIT_S, as any user of the test bed does."""

LOCK_GAP_S = 1.0
"""The pause between two batches without the lock: longer than the lock's poll interval
(actors.app.testbed.lock.POLL_S), so a run waiting for it gets it first."""


def parse_seeds(text: str) -> tuple[int, ...]:
    """``5`` -> (5,); ``1-3,7`` -> (1, 2, 3, 7): comma-separated seeds and inclusive ranges,
    in the order given, each once. Raises ValueError naming the part it cannot read."""
    seeds: dict[int, None] = {}
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise ValueError(f"{part.strip()!r} is neither a seed nor a range like 1-1000"
                             ) from None
        if first < 0 or last < first:
            raise ValueError(f"{part.strip()!r}: seeds are >= 0 and a range goes up")
        seeds.update(dict.fromkeys(range(first, last + 1)))
    return tuple(seeds)


def default_jobs() -> int:
    """Parallel drills for this machine: one per CPU. A drill is mostly waiting (on
    containerd, on its kubelet's periods), but containerd, shims and the kubelet need a
    core between them at its busiest moments (start, flood); measured on 2 cores, 2 jobs
    take about half the time of 1 and 3 gain little more (bench/RESULTS.md, drill sweeps)."""
    return max(1, min(os.cpu_count() or 1, MAX_SLOTS))


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a sweep: a drill (by name) with a seed."""

    drill: str
    seed: int


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """What to run and where: ``root`` keeps the traces of failed or diverged runs (of
    every run with ``keep``), one dir per seed."""

    drills: tuple[str, ...]
    seeds: tuple[int, ...]
    jobs: int
    root: Path
    keep: bool = False
    batch_s: float = BATCH_S
    log_level: str = "CRITICAL"

    def runs(self) -> list[Run]:
        """Seed by seed, every drill: a cut-off sweep has run every drill on the same seeds."""
        return [Run(drill, seed) for seed in self.seeds for drill in self.drills]


# --- one run, in whichever process runs it ---------------------------------------------

_slot: Bed = DRILLS  # this process's slot of the drills' bed (a worker's is set at its start)


def run_one(name: str, seed: int, root: str, keep: bool) -> Verdict:
    """Run drill ``name`` with ``seed`` in this process's slot; its trace under ``root``
    goes unless the run failed or diverged or ``keep``. Never raises (run_drill's word)."""
    verdict = run_drill(CATALOG[name], seed, Path(root) / f"seed-{seed}", _slot)
    if not keep and verdict.ok:
        shutil.rmtree(verdict.trace_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            verdict.trace_dir.parent.rmdir()  # the seed's dir, once its last trace went
        verdict.notes.append("trace removed (passed; --keep-trace DIR keeps it)")
    return verdict


def _start_worker(slots: Any, log_level: str) -> None:
    """A worker process's start: take a free slot (each worker its own) and set up logs."""
    global _slot
    _slot = DRILLS.slot(slots.get(timeout=60.0))
    configure_logging(log_level)


class InlineExecutor(Executor):
    """Runs each submitted call at once, in the caller: ``--jobs 1``, in this process's
    slot 0 (no worker process, so a debugger or a test sees the drill as it runs)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as err:  # handed to the waiter, as a pool would
            future.set_exception(err)
        return future


@contextlib.contextmanager
def workers(jobs: int, log_level: str) -> Iterator[Executor]:
    """``jobs`` worker processes, each in its own slot of the drills' bed (0..jobs-1); one
    job runs in this process instead. Spawned, not forked: a fork of a process with a
    kubelet's threads would inherit their locks mid-use."""
    if jobs == 1:
        yield InlineExecutor()
        return
    context = multiprocessing.get_context("spawn")
    slots: multiprocessing.Queue[int] = context.Queue()
    for n in range(jobs):
        slots.put(n)
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker,
                             initargs=(slots, log_level)) as pool:
        yield pool


# --- the sweep ---------------------------------------------------------------------------


def crashed(run: Run, root: Path, err: BaseException) -> Verdict:
    """The verdict of a run whose worker died (the process, not the drill: a drill's own
    errors are in its verdict)."""
    return Verdict(run.drill, run.seed, root / f"seed-{run.seed}" / run.drill,
                   step="worker", detail=f"the drill's worker process failed: "
                                         f"{type(err).__name__}: {err}")


def run_batch(pending: deque[Run], submit: Callable[[Run], Future[Verdict]], jobs: int,
              until: float, root: Path, on_verdict: Callable[[Verdict], None],
              clock: Callable[[], float] = time.monotonic) -> None:
    """Start runs from ``pending`` (at most ``jobs`` at a time) until ``clock()`` passes
    ``until``, then let the runs in flight end; ``on_verdict`` gets each verdict as it
    comes. Runs not started stay in ``pending``."""
    running: dict[Future[Verdict], Run] = {}
    started = 0
    while True:
        # At least one run per batch, however short: a sweep always gets on.
        while pending and len(running) < jobs and (clock() < until or not started):
            run = pending.popleft()
            running[submit(run)] = run
            started += 1
        if not running:
            return
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in done:
            run = running.pop(future)
            try:
                verdict = future.result()
            except Exception as err:  # the worker process died (BrokenProcessPool, ...)
                verdict = crashed(run, root, err)
            on_verdict(verdict)


def run_sweep(plan: SweepPlan, on_verdict: Callable[[Verdict], None], take_lock: bool = True,
              serve_registry: bool = True,
              batch: Callable[[], contextlib.AbstractContextManager[object]] | None = None,
              pool: Callable[[], contextlib.AbstractContextManager[Executor]] | None = None,
              clock: Callable[[], float] = time.monotonic,
              pause: Callable[[float], None] = time.sleep,
              work: Callable[[str, int, str, bool], Verdict] = run_one) -> list[Verdict]:
    """Every run of ``plan``, batch by batch; the verdicts in the order they came.

    Each batch holds the machine-wide lock (``take_lock``; else the caller holds it for
    the whole sweep, which then is one batch) and the registry, and its own worker
    processes: nothing of the sweep runs while the lock is let go between batches.
    ``batch``, ``pool``, ``clock``, ``pause`` and ``work`` (run_one: a module-level
    function, so a worker process can be sent it) stand in for those in tests. Raises
    TestbedError when the test bed cannot be set up.
    """
    if not 1 <= plan.jobs <= MAX_SLOTS:
        raise TestbedError(f"--jobs {plan.jobs}: from 1 to {MAX_SLOTS} drills side by side "
                           "(one slot of the drills' bed each)")
    pending = deque(plan.runs())
    verdicts: list[Verdict] = []

    def collect(verdict: Verdict) -> None:
        verdicts.append(verdict)
        on_verdict(verdict)

    def submit_to(executor: Executor) -> Callable[[Run], Future[Verdict]]:
        return lambda run: executor.submit(work, run.drill, run.seed, str(plan.root),
                                           plan.keep)

    first = first_batch = True
    while pending:
        if not first:
            pause(LOCK_GAP_S)  # without the lock: a waiting user takes it now
        first = False
        # A batch after the first waits as long as it takes: a sweep runs for hours and
        # lets others in between its batches, and an e2e run may hold the lock for long.
        wait_s = LOCK_WAIT_S if first_batch else BATCH_LOCK_WAIT_S
        first_batch = False
        with (batch or functools.partial(session, take_lock, serve_registry, wait_s))(), \
                (pool or (lambda: workers(plan.jobs, plan.log_level)))() as executor:
            until = clock() + plan.batch_s if take_lock else float("inf")
            run_batch(pending, submit_to(executor), plan.jobs, until, plan.root, collect,
                      clock)
    return verdicts

