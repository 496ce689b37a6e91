"""What recording costs per record, in process, without containerd: for finding where.

`.venv/bin/python -m bench.trace_record_cost [--pods N] [--repeat R] [--profile]`: the
kubelet's tree on the fake runtime (tests.traces.scenarios.RecordedNode) starts and stops
N pods one after another while a stand-in recorder keeps every hook call it gets. Those
calls are then made R times on a TraceWriter whose writer thread is stopped, its batches
written on this thread, so one thread's CPU time (time.thread_time) holds both sides of
recording: the hooks (what the actors' threads pay) and the writer's building, encoding
and writing. Prints microseconds per record, the bytes a pod start and stop writes and
how many values were interned; ``--profile`` adds the top of a cProfile of it.

The daemon's own figure, with containerd, the GIL shared with its other threads and its
idle time, is bench.trace_overhead's; this one moves less with the machine's load.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from loguru import logger

from actors.core.trace.writer import TraceWriter
from tests.traces import scenarios

HOOKS = ("delivery", "begin", "end", "call", "input", "spawn", "decision")
Calls = list[tuple[str, tuple[Any, ...], dict[str, Any]]]


def record_calls(pods: int) -> Calls:
    """The hook calls a node makes starting and stopping ``pods`` pods in turn."""
    calls: Calls = []
    original = scenarios.TrackingWriter

    class Keeping(scenarios.TrackingWriter):
        pass

    for hook in HOOKS:
        def keep(self: Any, *args: Any, _hook: str = hook, **kwargs: Any) -> None:
            calls.append((_hook, args, kwargs))
            getattr(original, _hook)(self, *args, **kwargs)
        setattr(Keeping, hook, keep)
    work = Path(tempfile.mkdtemp(prefix="trace-cost-"))
    scenarios.TrackingWriter = Keeping  # type: ignore[misc]
    try:
        node = scenarios.RecordedNode(work / "recorded", work / "scratch")
        try:
            for n in range(pods):
                uid = f"cost-{n}"
                node.snapshot(scenarios.pod(uid, f"web-{n}"))
                node.until("the pod to run", lambda uid=uid: len(node.running(uid)) == 1)
                node.snapshot()
                node.until("the pod to go", lambda: node.fake.list_pod_sandbox() == ())
        finally:
            node.close()
    finally:
        scenarios.TrackingWriter = original  # type: ignore[misc]
        shutil.rmtree(work, ignore_errors=True)
    return calls


def write_all(calls: Calls, repeat: int, directory: Path) -> tuple[float, TraceWriter]:
    """Seconds of this thread's CPU to record ``calls`` ``repeat`` times, and the writer."""
    writer = TraceWriter(directory)
    writer.close()  # its thread gone: the batches are written here, on this thread
    writer._file = None
    writer._open()
    started = time.thread_time()
    for _ in range(repeat):
        for hook, args, kwargs in calls:
            getattr(writer, hook)(*args, **kwargs)
        writer._drain()
    spent = time.thread_time() - started
    writer._file.close()
    return spent, writer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trace_record_cost")
    parser.add_argument("--pods", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    logger.remove()
    calls = record_calls(args.pods)
    work = Path(tempfile.mkdtemp(prefix="trace-cost-"))
    try:
        profile = cProfile.Profile() if args.profile else None
        if profile is not None:
            profile.enable()
        spent, writer = write_all(calls, args.repeat, work)
        if profile is not None:
            profile.disable()
        size = sum(f.stat().st_size for f in work.glob("trace-*.jsonl"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    records = len(calls) * args.repeat
    print(f"{len(calls) / args.pods:.0f} records a pod start and stop, "
          f"{size / 1024 / args.pods / args.repeat:.1f} KiB a pod, "
          f"{writer.values} values interned, {writer.dropped} records dropped")
    print(f"recording: {spent / records * 1e6:.2f} us of CPU a record (hooks and writer), "
          f"{spent / args.pods / args.repeat * 1000:.2f} ms a pod")
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
