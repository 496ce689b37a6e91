"""What a pod start costs in CRI calls, counted on the fake runtime and pinned.

The kubelet's whole tree runs on the fake runtime in virtual time (the recording node of
tests/traces/scenarios): a pod is handed to it and the node settles (no timer fires, so
no tick-driven relist or resync adds calls) until the status manager shows the pod
Running. Every CRI call made on the way is counted by method; the counts are exact, so a
change that adds a call to the start path fails here and must say why. Path 1 is the
start path of traces recorded before path 2 (they still replay on it): its counts are
pinned too, as the before of the figures in the README.
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
from actors.kubelet.pod_worker import changed_runtime
from actors.kubelet.trace import KubeletWorld
from runtime.kuberuntime.result import PodSyncResult, StepResult
from runtime.pod.model import Pod
from runtime.status.types import PodStatus
from tests.traces.scenarios import RecordedNode, pod, recorded_nodes

ONE_POD_PATH_2 = {
    # The worker's first sync: the pod's status (nothing yet), then the sandbox, its IP,
    # the image (present: no pull), the container.
    "list_pod_sandbox": 3, "list_containers": 3,  # + the PLEG's relist, the second sync
    "run_pod_sandbox": 1, "pod_sandbox_status": 2,  # + the second sync's status read
    "image_status": 1, "create_container": 1, "start_container": 1,
    "container_status": 1,  # the second sync (the PLEG's ContainerStarted) reads it
}
ONE_POD_PATH_1 = {
    # No relist on the fake runtime until a tick: the worker reads the status again
    # after its sync, and that shows the container running.
    "list_pod_sandbox": 2, "list_containers": 2, "run_pod_sandbox": 1,
    "pod_sandbox_status": 2, "image_status": 2, "create_container": 1,
    "start_container": 1, "container_status": 1,
}
ONE_POD_PATH_4 = {
    # A pod the last relist did not show and no worker had: no listing before its
    # sandbox (path 3 listed its sandboxes and containers here once the first relist's
    # listings were gone); the image checked beside RunPodSandbox, whose status gives the
    # IP; the container. Then the worker reads the container's status at once (the
    # sandbox's it has), and the PLEG's relist, which the sync still asks for, shows just
    # that: no second sync (path 3: its event synced the pod again, which listed the pod
    # and read both statuses).
    "image_status": 1, "run_pod_sandbox": 1, "pod_sandbox_status": 1,
    "create_container": 1, "start_container": 1, "container_status": 1,
    "list_pod_sandbox": 1, "list_containers": 1,  # the PLEG's relist
}
ONE_POD_PATH_3_STEADY = {
    "list_pod_sandbox": 3, "list_containers": 3, "run_pod_sandbox": 1,
    "pod_sandbox_status": 2, "image_status": 1, "create_container": 1,
    "start_container": 1, "container_status": 1,
}
NEXT_RELIST_PATH_1 = {
    # ... and then the next relist shows the container started, and the worker syncs
    # (reads the status) once more: path 2 has made these before the pod is Running.
    "list_pod_sandbox": 2, "list_containers": 2, "pod_sandbox_status": 1,
    "container_status": 1,
}


@pytest.fixture
def node_factory() -> Iterator[list[RecordedNode]]:
    yield from recorded_nodes()


def start(made: list[RecordedNode], tmp_path: Path, start_path: int, *pods: Pod
          ) -> tuple[RecordedNode, Counter[str]]:
    """The node's CRI calls from handing it ``pods`` until it is idle with all Running."""
    node = RecordedNode(tmp_path / "trace", tmp_path / "scratch", start_path=start_path)
    made.append(node)
    assert node.settle()
    node.fake.clear_calls()
    node.snapshot(*pods)
    assert node.settle(), "the node did not settle"
    ref = node.dispatch.ref(names.STATUS)
    assert ref is not None
    statuses: tuple[tuple[Pod, PodStatus], ...] = ref.ask(GetPods(), block=True, timeout=5)
    assert [s.phase for _, s in statuses] == ["Running"] * len(pods)
    return node, Counter(c.method for c in node.fake.calls)


def steady_node(made: list[RecordedNode], tmp_path: Path, start_path: int) -> RecordedNode:
    """A node past its start, its calls cleared: the PLEG's first relist in, and
    housekeeping run once the source spoke (the first relist's listings gone), as a
    daemon's."""
    node = RecordedNode(tmp_path / "trace", tmp_path / "scratch", start_path=start_path)
    made.append(node)
    node.snapshot()
    node.advance(2.0)
    assert node.settle()
    node.fake.clear_calls()
    return node


def start_steady(made: list[RecordedNode], tmp_path: Path, start_path: int, *pods: Pod
                 ) -> tuple[RecordedNode, Counter[str]]:
    """As start, on a node past its start (steady_node)."""
    node = steady_node(made, tmp_path, start_path)
    node.snapshot(*pods)
    assert node.settle(), "the node did not settle"
    ref = node.dispatch.ref(names.STATUS)
    assert ref is not None
    statuses: tuple[tuple[Pod, PodStatus], ...] = ref.ask(GetPods(), block=True, timeout=5)
    assert [s.phase for _, s in statuses] == ["Running"] * len(pods)
    return node, Counter(c.method for c in node.fake.calls)


@pytest.mark.parametrize(("start_path", "want"), [(3, ONE_POD_PATH_3_STEADY),
                                                  (4, ONE_POD_PATH_4)])
def test_path_4_lists_nothing_for_a_new_pod_and_reads_its_status_at_once(
        node_factory: list[RecordedNode], tmp_path: Path, start_path: int,
        want: dict[str, int]) -> None:
    node, counts = start_steady(node_factory, tmp_path, start_path, pod("u1", "web"))
    assert dict(counts) == want
    node.fake.clear_calls()
    relist(node)
    assert dict(Counter(c.method for c in node.fake.calls)) == {
        "list_pod_sandbox": 1, "list_containers": 1}
    node.close()
    node_factory.remove(node)
    trace = read_trace(tmp_path / "trace")
    syncs = sum(1 for r in trace.messages() if r["to"] == names.worker_name("u1")
                and MESSAGES.short(r["type"]) == "RunPending")
    assert syncs == (1 if start_path >= 4 else 2)  # path 4: no sync on the PLEG's event
    report = replay(trace, KubeletWorld())
    assert report.ok, format_report(report)


def relist(node: RecordedNode) -> None:
    """One relist tick to the PLEG, and whatever it causes."""
    node.dispatch.tell(names.PLEG, Tick(names.TICK_RELIST, node.fake_clock.monotonic()),
                       sender=names.TIMERS)
    assert node.settle()


def burst(n: int) -> tuple[Pod, ...]:
    return tuple(pod(f"u{i}", f"web-{i}") for i in range(n))


def test_one_pod_start_makes_one_image_status_and_no_status_reread(
        node_factory: list[RecordedNode], tmp_path: Path) -> None:
    _, counts = start(node_factory, tmp_path, 2, pod("u1", "web"))
    assert dict(counts) == ONE_POD_PATH_2


def test_path_1_still_makes_the_calls_old_traces_recorded(
        node_factory: list[RecordedNode], tmp_path: Path) -> None:
    node, counts = start(node_factory, tmp_path, 1, pod("u1", "web"))
    assert dict(counts) == ONE_POD_PATH_1
    node.fake.clear_calls()
    relist(node)
    assert dict(Counter(c.method for c in node.fake.calls)) == NEXT_RELIST_PATH_1


def test_path_2_next_relist_finds_nothing_new(
        node_factory: list[RecordedNode], tmp_path: Path) -> None:
    node, _ = start(node_factory, tmp_path, 2, pod("u1", "web"))
    node.fake.clear_calls()
    relist(node)
    assert dict(Counter(c.method for c in node.fake.calls)) == {
        "list_pod_sandbox": 1, "list_containers": 1}


def test_a_burst_of_ten_costs_ten_single_starts_at_most(
        node_factory: list[RecordedNode], tmp_path: Path) -> None:
    """Per pod, the calls that make it are those of one start. The relists (one for each
    burst of sync requests waiting in the PLEG's mailbox) and the status reads vary with
    the interleaving: a relist that shows a pod's sandbox before its container brings
    that pod one sync more (a status read). At most one relist and two syncs after the
    first per pod."""
    _, counts = start(node_factory, tmp_path, 2, *burst(10))
    made = ("run_pod_sandbox", "image_status", "create_container", "start_container")
    assert {m: counts[m] for m in made} == {m: 10 for m in made}
    syncs_after = counts["container_status"]  # the first sync reads no container
    assert 10 <= syncs_after <= 20
    relists = counts["list_pod_sandbox"] - 10 - syncs_after  # each sync's read lists once
    assert 1 <= relists <= 10
    assert counts["list_containers"] == counts["list_pod_sandbox"]
    assert counts["pod_sandbox_status"] == 10 + syncs_after  # after RunPodSandbox, each read


def test_the_trace_counts_the_same_calls_and_replays(
        node_factory: list[RecordedNode], tmp_path: Path) -> None:
    node, counts = start(node_factory, tmp_path, 2, pod("u1", "web"))
    node.close()
    node_factory.remove(node)
    trace = read_trace(tmp_path / "trace")
    # The tree's start made calls too (the PLEG's first relist, the runtime check): the
    # pod's own begin with the sync loop's first update to its worker.
    first = next(r["m"] for r in trace.messages() if r["to"] == names.worker_name("u1"))
    counted = count_by_method(calls_in(trace.records, since=first))
    assert {m: c.count for m, c in counted.items()} == ONE_POD_PATH_2
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
