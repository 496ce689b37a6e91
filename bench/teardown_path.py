"""Where the time goes in one pod's deletion, read from the daemon's trace.

    .venv/bin/python -m bench.teardown_path [--pods N] [--repo PATH] [--daemon-arg=ARG ...]

As bench.pod_path, for the other end of a pod's life: one run on the benchmarks' own
containerd (under the machine-wide lock), the daemon a subprocess with ``--trace-dir``; N
one-container pods (the trapping ``sh`` loop of bench.daemon_bench, grace 2 s) are
written one after another and each waited for until Running, and left a second so the
PLEG's event and its sync are over; then each manifest is deleted, one after another,
and waited for until none of its sandboxes or containers is left in the runtime. For
each pod the chain from the watcher's FilesChanged to the status manager's PodForgotten
is walked back from its end along ``parent`` links:

    file removed -> SourceSnapshot (sync loop) -> UpdatePod KILL (pod worker) -> RunPending
    (its StopContainer, StopPodSandbox, RemovePodSandbox) -> PodWorkerDone (sync loop)
    -> PodForgotten (status manager)

with each link's mailbox wait, handler time and the runtime calls made inside, then the
pod worker's handler call by call, and the calls each deletion made (a chain per pod, a
summary of all). Nothing here asserts on time.
"""

from __future__ import annotations

import sys
import time
from collections import Counter

from rich.table import Table

from actors.app.testbed import BENCH, machine_lock, private_containerd, serve_images
from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import Trace, read_trace
from bench.daemon_bench import DaemonProc, pod_uid, running
from bench.pod_path import Link, chain, chain_bench_args, chain_table, handler_table, summary
from runtime.cri.client import CRIClient
from runtime.kuberuntime import labels as L

POLL_S = 0.01


def forgotten(trace: Trace, uid: str) -> int | None:
    """The status manager's PodForgotten of ``uid``: the end of its deletion."""
    for record in trace.messages():
        if (record["to"] == "status" and MESSAGES.short(record["type"]) == "PodForgotten"
                and record["body"].get("uid") == uid):
            return int(record["id"])
    return None


def left_in_runtime(client: CRIClient, uid: str) -> bool:
    return (any(s.labels.get(L.POD_UID) == uid for s in client.list_pod_sandbox())
            or any(c.labels.get(L.POD_UID) == uid for c in client.list_containers()))


def calls_table(chains: list[list[Link]]) -> Table:
    """The runtime calls on each deletion's chain, per pod (mean)."""
    counts: Counter[str] = Counter()
    seconds: dict[str, float] = {}
    for links in chains:
        for link in links:
            for name, dur, _ in link.calls:
                counts[name] += 1
                seconds[name] = seconds.get(name, 0.0) + dur
    t = Table(title=f"runtime calls on a deletion's chain, per pod (mean of {len(chains)})")
    for col in ("call", "count", "ms"):
        t.add_column(col)
    n = max(len(chains), 1)
    for name, count in counts.most_common():
        t.add_row(name, f"{count / n:.2f}", f"{seconds[name] / n * 1000:.1f}")
    return t


def main(argv: list[str] | None = None) -> int:
    parsed = chain_bench_args("python -m bench.teardown_path", __doc__, argv)
    if parsed is None:
        return 2
    args, console = parsed
    names = [f"gone-{i:02d}" for i in range(args.pods)]
    with machine_lock(BENCH), serve_images(), private_containerd(BENCH) as emb:
        work = emb.base_dir / "teardown-path"
        trace_dir = work / "trace"
        daemon = DaemonProc(work, emb.endpoint,
                            ("--trace-dir", str(trace_dir), *args.daemon_arg), repo=args.repo)
        client = CRIClient(emb.endpoint, timeout=60.0)
        try:
            daemon.start()
            for name in names:
                uid = pod_uid(name, "daemon")
                daemon.write(name)
                deadline = time.monotonic() + 60
                while not running(daemon.pods().get(uid)):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{name} not Running in 60 s")
                    time.sleep(POLL_S)
            time.sleep(1.0)  # the PLEG's events of the starts and their syncs are over
            for name in names:
                uid = pod_uid(name, "daemon")
                (daemon.manifests / f"{name}.yaml").unlink()
                deadline = time.monotonic() + 60
                while left_in_runtime(client, uid):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{name} still in the runtime after 60 s")
                    time.sleep(POLL_S)
        finally:
            daemon.stop()
            client.close()
        trace = read_trace(trace_dir)
    chains: list[list[Link]] = []
    for name in names:
        last = forgotten(trace, pod_uid(name, "daemon"))
        if last is None:
            console.print(f"{name}: no PodForgotten in the trace")
            continue
        chains.append(chain(trace, last))
    if chains:
        console.print(chain_table(f"{names[-1]}: manifest deleted -> forgotten by the status "
                                  "manager", chains[-1]))
        longest = max(chains[-1], key=lambda x: x.handled)
        console.print(handler_table(f"{names[-1]}: the handler that stopped and removed it "
                                    f"(#{longest.id})", longest))
        console.print(calls_table(chains))
    console.print(summary("deletion", chains))
    return 0


if __name__ == "__main__":
    sys.exit(main())
