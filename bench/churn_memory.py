"""What the kubelet keeps per pod, after thousands of pods came and went (no containerd).

    .venv/bin/python -m bench.churn_memory [--pods 1000] [--reuse N] [--crash 3]

The kubelet's tree on the fake runtime in virtual time (tests.unit.kubelet.churn: events,
metrics, probe metrics and garbage collection on), ``--crash`` probed pods crash-looping
beside it, and ``--pods`` probed pods created, run until probed and deleted one after
another (``--reuse N``: N UIDs over and over, as bench.soak_bench's churn does). It prints
the size of every per-pod structure after a warm-up and at the end (a line that grew with
the pods seen is a leak, unless it is one of the bounded caches listed under it), the
object types that grew (gc.get_objects) and the Python heap (tracemalloc) at both points.
Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections import Counter

from loguru import logger

from actors.core.supervision import RETIRED_LIMIT
from actors.kubelet import names
from actors.kubelet.events import RING
from runtime.events.correlator import MAX_LRU_CACHE_ENTRIES
from tests.unit.kubelet.churn import ChurnNode, per_pod_sizes, probed_pod

WARM_UP = 20


def bounded(c: ChurnNode) -> dict[str, str]:
    """The caches that fill up to a bound, against their bound."""
    events = c.actor(names.EVENTS)
    corr = events._correlator
    loop = c.actor(names.SYNC_LOOP)
    return {
        "events kept": f"{len(events._kept)} of {RING}",
        "event correlator (logs, aggregates, spam)":
            f"{len(corr._logs)}, {len(corr._aggregates)}, {len(corr._spam)} of "
            f"{MAX_LRU_CACHE_ENTRIES} each",
        "supervision retired names": f"{len(loop.supervision._retired)} of {RETIRED_LIMIT}",
    }


def kinds() -> Counter[str]:
    gc.collect()
    return Counter(type(o).__name__ for o in gc.get_objects())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.churn_memory", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000, help="pods churned (default 1000)")
    parser.add_argument("--reuse", type=int, default=0,
                        help="churn this many UIDs over and over (default: each pod new)")
    parser.add_argument("--crash", type=int, default=3,
                        help="probed pods crash-looping meanwhile (default 3)")
    args = parser.parse_args(argv)
    logger.remove()  # every sync logs: thousands of pods would drown the figures
    c = ChurnNode()
    try:
        crashing = tuple(probed_pod(f"crash-{i}", f"crash-{i}") for i in range(args.crash))
        c.node.snapshot(*crashing)

        def cycle(i: int) -> None:
            uid = f"churn-{i % args.reuse}" if args.reuse else f"churn-{i}"
            c.churn(crashing, uid, f"churn-{i % args.reuse if args.reuse else i}")
            for pod in crashing:  # the crash loop: exit whatever of them runs
                for cid in c.node.running(pod.uid):
                    c.node.fake.exit_container(cid, 1)
            c.node.fake.clear_calls()  # the fake's own log of calls is not the kubelet's

        for i in range(WARM_UP):
            cycle(i)
        tracemalloc.start()
        before, types = per_pod_sizes(c), kinds()
        heap = tracemalloc.get_traced_memory()[0]
        started = time.perf_counter()
        for i in range(WARM_UP, WARM_UP + args.pods):
            cycle(i)
        took = time.perf_counter() - started
        after, types_after = per_pod_sizes(c), kinds()
        heap_after = tracemalloc.get_traced_memory()[0]
        print(f"{args.pods} pods churned in {took:.0f} s"
              f"{f' over {args.reuse} UIDs' if args.reuse else ''}, {args.crash} crash-looping")
        print("per-pod structures (after warm-up -> end):")
        for key, value in after.items():
            mark = "  GREW" if value > before[key] else ""
            print(f"  {key}: {before[key]} -> {value}{mark}")
        print("bounded caches at the end:")
        for key, text in bounded(c).items():
            print(f"  {key}: {text}")
        print("object types that grew:")
        for kind, n in (types_after - types).most_common(15):
            print(f"  {kind}: +{n}")
        print(f"Python heap (tracemalloc): {heap / 2**20:.2f} -> {heap_after / 2**20:.2f} MiB "
              f"({(heap_after - heap) / max(args.pods, 1):+.0f} bytes a pod)")
    finally:
        c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
