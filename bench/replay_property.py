"""Replay as a property, at scale: record and replay many generated input sequences.

`.venv/bin/python -m bench.replay_property --sequences 10000 [--seed S] [--jobs J]`:
sequence i of seed S is tests.traces.sequences.sequences(S, ...)[i]; each is recorded on
the fake runtime in virtual time and replayed with the kubelet's World. A sequence that
diverges is shrunk (unless --no-shrink), printed as a readable list and saved as a JSON
case under --save (tests/traces/property/ by default) for a unit test to keep replaying.
Prints the figures: sequences, steps, divergences, sequences per second, wall time.
``--minutes M`` starts no sequence after M minutes (the figures say how many ran, and
project the time all would take); ``--first N`` starts at sequence N of the seed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from tests.traces.sequences import (
    KEPT,
    Case,
    Outcome,
    Runner,
    Step,
    describe,
    save_case,
    sequence,
    shrink,
)


@dataclass(frozen=True, slots=True)
class Result:
    index: int
    outcome: Outcome
    steps: list[Step]


_runner: Runner | None = None


def _init() -> None:
    global _runner
    logger.remove()  # the kubelet logs every sync: thousands of runs would drown the figures
    _runner = Runner()


def _run(job: tuple[int, int, float]) -> Result | None:
    seed, index, stop_at = job
    assert _runner is not None
    if time.time() >= stop_at:
        return None  # queued before the time ran out: not started
    steps = sequence(seed, index)
    return Result(index, _runner.run(steps), steps)


def _jobs(seed: int, first: int, count: int, stop_at: float
          ) -> Iterator[tuple[int, int, float]]:
    for index in range(first, first + count):
        yield seed, index, stop_at


def shrink_and_save(result: Result, seed: int, directory: Path) -> Path:
    """Shrink a diverging sequence (same divergence signature), print it, save it."""
    runner = Runner()
    target = result.outcome.divergence
    tries = Counter[str]()

    def diverges(steps: list[Step]) -> bool:
        tries["runs"] += 1
        return runner.run(steps).divergence == target

    print(f"shrinking sequence {result.index} ({len(result.steps)} steps): {target}")
    small = shrink(list(result.steps), diverges, log=print)
    print(f"shrunk to {len(small)} steps in {tries['runs']} runs:")
    for number, step in enumerate(small, 1):
        print(f"  {number:2}. {describe(step)}")
    print(runner.run(small).report)
    path = directory / f"seed-{seed}-{result.index}.json"
    save_case(path, Case(f"found by seed {seed}, sequence {result.index}: {target}", small,
                         f"{seed}:{result.index}"))
    print(f"saved {path}")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay_property",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first", type=int, default=0,
                        help="the index of the first sequence (to go on where a run stopped)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=0.0,
                        help="start no sequence after this many minutes (0: no limit)")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--save", type=Path, default=KEPT)
    args = parser.parse_args(argv)
    started = time.monotonic()
    # Wall time: the pool's processes compare it with their own clock.
    stop_at = time.time() + args.minutes * 60 if args.minutes > 0 else float("inf")
    done = steps = unsettled = 0
    diverged: list[Result] = []
    signatures = Counter[str]()
    context = multiprocessing.get_context("spawn")
    with context.Pool(args.jobs, initializer=_init) as pool:
        jobs = _jobs(args.seed, args.first, args.sequences, stop_at)
        for result in pool.imap_unordered(_run, jobs):
            if result is None:
                continue
            done += 1
            steps += result.outcome.steps
            unsettled += result.outcome.unsettled
            if result.outcome.divergence is not None:
                diverged.append(result)
                signatures[result.outcome.divergence] += 1
                print(f"sequence {result.index} diverges: {result.outcome.divergence}",
                      flush=True)
            if done % 100 == 0:
                elapsed = time.monotonic() - started
                print(f"{done} sequences, {len(diverged)} divergences, "
                      f"{done / elapsed:.2f}/s", flush=True)
    wall = time.monotonic() - started
    print(f"sequences {done} (of {args.sequences} asked), steps {steps}, "
          f"divergences {len(diverged)}, unsettled steps {unsettled}, "
          f"wall {wall:.1f} s, {done / wall:.2f} sequences/s with {args.jobs} jobs")
    if done < args.sequences:
        print(f"projected for {args.sequences}: {args.sequences * wall / max(done, 1) / 60:.1f}"
              " min")
    for signature, count in signatures.most_common():
        print(f"  {count:5}  {signature}")
    if diverged and not args.no_shrink:
        _init()
        shrunk: set[str] = set()
        for result in sorted(diverged, key=lambda r: len(r.steps)):
            signature = result.outcome.divergence or ""
            if signature not in shrunk:  # one kept case per kind of divergence
                shrunk.add(signature)
                shrink_and_save(result, args.seed, args.save)
    return 1 if diverged else 0


if __name__ == "__main__":
    sys.exit(main())
