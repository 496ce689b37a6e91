"""What a pod start costs in CRI calls, counted on the fake runtime and pinned.

The kubelet's whole tree runs on the fake runtime in virtual time (the recording node of
tests/traces/scenarios): a pod is handed to it and the node settles (no timer fires, so
no tick-driven relist or resync adds calls) until the status manager shows the pod
Running. Every CRI call made on the way is counted by method; the counts are exact, so a
change that adds a call to the start path fails here and must say why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.tools.call_counts import calls_in, count_by_method
from actors.core.messages import Tick
from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.messages import GetPods
from actors.kubelet.pleg import SAFETY_NET_DELAY
from actors.kubelet.pod_worker import changed_runtime
from actors.kubelet.trace import KubeletWorld
from runtime.kuberuntime.result import PodSyncResult, StepResult
from runtime.pod.model import Pod
from runtime.status.types import PodStatus
from tests.traces.scenarios import RecordedNode, pod, recorded_nodes

ONE_POD = {
    # A pod the last relist did not show and no worker had: no listing before its
    # sandbox; the image checked beside RunPodSandbox, whose status gives the IP; the
    # container. Then the worker reads the container's status at once (the sandbox's it
    # has). The relist the sync asks for waits SAFETY_NET_DELAY (not made yet here).
    "image_status": 1, "run_pod_sandbox": 1, "pod_sandbox_status": 1,
    "create_container": 1, "start_container": 1, "container_status": 1,
}
RELIST = {"list_pod_sandbox": 1, "list_containers": 1}


@pytest.fixture
def node_factory() -> Iterator[list[RecordedNode]]:
    yield from recorded_nodes()


def steady_node(made: list[RecordedNode], tmp_path: Path) -> RecordedNode:
    """A node past its start, its calls cleared: the PLEG's first relist in, and
    housekeeping run once the source spoke (the first relist's listings gone), as a
    daemon's."""
    node = RecordedNode(tmp_path / "trace", tmp_path / "scratch")
    made.append(node)
    node.snapshot()
    node.advance(2.0)
    assert node.settle()
    node.fake.clear_calls()
    return node


def start(made: list[RecordedNode], tmp_path: Path, *pods: Pod
          ) -> tuple[RecordedNode, Counter[str]]:
    """The node's CRI calls from handing ``pods`` to a node past its start (steady_node)
    until it is idle with all Running (no timer fires meanwhile)."""
    node = steady_node(made, tmp_path)
    node.snapshot(*pods)
    assert node.settle(), "the node did not settle"
    ref = node.dispatch.ref(names.STATUS)
    assert ref is not None
    statuses: tuple[tuple[Pod, PodStatus], ...] = ref.ask(GetPods(), block=True, timeout=5)
    assert [s.phase for _, s in statuses] == ["Running"] * len(pods)
    return node, Counter(c.method for c in node.fake.calls)


def test_one_pod_start_lists_nothing_and_reads_its_status_at_once(
        node_factory: list[RecordedNode], tmp_path: Path) -> None:
    node, counts = start(node_factory, tmp_path, pod("u1", "web"))
    assert dict(counts) == ONE_POD
    node.fake.clear_calls()
    node.advance(SAFETY_NET_DELAY)  # the relist the sync asked for: it shows just that
    assert dict(Counter(c.method for c in node.fake.calls)) == RELIST
    node.fake.clear_calls()
    relist(node)
    assert dict(Counter(c.method for c in node.fake.calls)) == RELIST
    node.close()
    node_factory.remove(node)
    trace = read_trace(tmp_path / "trace")
    syncs = sum(1 for r in trace.messages() if r["to"] == names.worker_name("u1")
                and MESSAGES.short(r["type"]) == "RunPending")
    assert syncs == 1  # no sync on the PLEG's events: the worker had read what they show
    report = replay(trace, KubeletWorld())
    assert report.ok, format_report(report)


def relist(node: RecordedNode) -> None:
    """One relist tick to the PLEG, and whatever it causes."""
    node.dispatch.tell(names.PLEG, Tick(names.TICK_RELIST, node.fake_clock.monotonic()),
                       sender=names.TIMERS)
    assert node.settle()


def burst(n: int) -> tuple[Pod, ...]:
    return tuple(pod(f"u{i}", f"web-{i}") for i in range(n))


def test_a_burst_of_ten_costs_ten_single_starts(
        node_factory: list[RecordedNode], tmp_path: Path) -> None:
    """Per pod, the calls of one start and nothing more: the relist each sync asks for
    waits SAFETY_NET_DELAY, so none catches a pod mid-start; then one relist stands in
    for all ten and brings no sync."""
    node, counts = start(node_factory, tmp_path, *burst(10))
    assert dict(counts) == {method: 10 * n for method, n in ONE_POD.items()}
    node.fake.clear_calls()
    node.advance(SAFETY_NET_DELAY)
    assert dict(Counter(c.method for c in node.fake.calls)) == RELIST


def test_the_trace_counts_the_same_calls_and_replays(
        node_factory: list[RecordedNode], tmp_path: Path) -> None:
    node, counts = start(node_factory, tmp_path, pod("u1", "web"))
    node.close()
    node_factory.remove(node)
    trace = read_trace(tmp_path / "trace")
    # The tree's start made calls too (the PLEG's first relist, the runtime check): the
    # pod's own begin with the sync loop's first update to its worker.
    first = next(r["m"] for r in trace.messages() if r["to"] == names.worker_name("u1"))
    counted = count_by_method(calls_in(trace.records, since=first))
    assert {m: c.count for m, c in counted.items()} == ONE_POD
    assert sum(c.count for c in counted.values()) == sum(counts.values())
    report = replay(trace, KubeletWorld())
    assert report.ok, format_report(report)


@pytest.mark.parametrize(("steps", "changed"), [
    ((), False),
    ((StepResult("CreatePodSandbox", "web"), StepResult("StartContainer", "c")), True),
    ((StepResult("StartContainer", "c", "RunContainerError", "failed"),), True),  # created
    ((StepResult("StartContainer", "c", "CrashLoopBackOff", "back-off", 10.0),), False),
    ((StepResult("StartContainer", "c", "ImagePullBackOff", "back-off", 10.0),), False),
    ((StepResult("MountVolumes", "web", "FailedMount", "no"),), False),
    ((StepResult("KillContainer", "c"),), True),
])
def test_which_syncs_ask_the_pleg_to_relist(steps: tuple[StepResult, ...], changed: bool
                                             ) -> None:
    assert changed_runtime(PodSyncResult(steps)) is changed
