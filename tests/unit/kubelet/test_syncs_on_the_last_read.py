"""A sync the PLEG's events brought runs on the status its worker last read when that
read began after the relist's lists were back (UpdatePod.relisted_at).

In a burst the relists that other pods' syncs ask for catch a pod mid-start (its sandbox
made, its container not yet): their events queue one more sync behind the one making the
pod. The worker has read its pod since (right after its sync made it), so that sync reads
nothing. A relist whose lists came back after the read
(a container that exited since) still brings a fresh read.

The kubelet's tree runs on the fake runtime in virtual time (tests.traces.scenarios); the
relist is made to happen inside the worker's CreateContainer call, which is where a burst
puts it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.core.messages import Tick
from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.messages import GetPods
from actors.kubelet.pleg import SAFETY_NET_DELAY
from actors.kubelet.trace import KubeletWorld
from runtime.cri.types import ContainerState
from runtime.kuberuntime import labels as L
from runtime.pod.model import Pod
from runtime.status.types import PodStatus
from tests.helpers import wait_for
from tests.traces.scenarios import RecordedNode, pod, recorded_nodes
from tests.unit.kubelet.test_start_calls import steady_node

MID_START = {
    # The start (as test_start_calls' ONE_POD) and the relist inside CreateContainer; the
    # sync that relist's events brought reads nothing (it runs on the worker's read after
    # its sync), and the relist the sync asks for is not made yet: it waits
    # SAFETY_NET_DELAY.
    "image_status": 1, "run_pod_sandbox": 1, "create_container": 1, "start_container": 1,
    "pod_sandbox_status": 1, "container_status": 1,
    "list_pod_sandbox": 1, "list_containers": 1,
}


@pytest.fixture
def node_factory() -> Iterator[list[RecordedNode]]:
    yield from recorded_nodes()


def relist(node: RecordedNode) -> None:
    node.dispatch.tell(names.PLEG, Tick(names.TICK_RELIST, node.fake_clock.monotonic()),
                       sender=names.TIMERS)


def relist_inside_create_container(node: RecordedNode, uid: str) -> None:
    """The pod's first CreateContainer, once made, waits for a relist (which shows the
    sandbox and the created container) to bring its worker an update, then moves virtual
    time on: the worker's read after its sync begins after that relist's lists."""
    real = node.fake.create_container
    done: list[bool] = []

    def create_container(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if not done:
            done.append(True)
            inbox = node.dispatch.ref(names.worker_name(uid))
            assert inbox is not None
            # Told from a thread of the test's own: a send from inside the worker's
            # handler would be recorded as the worker's (which a replay does not make).
            teller = threading.Thread(target=relist, args=(node,))
            teller.start()
            teller.join()
            wait_for(lambda: not inbox.actor_inbox.empty(), 10.0,
                     "the relist's update at the worker")
            node.fake_clock.step(0.5)
        return result

    node.fake.create_container = create_container  # type: ignore[method-assign]


def statuses(node: RecordedNode) -> tuple[tuple[Pod, PodStatus], ...]:
    ref = node.dispatch.ref(names.STATUS)
    assert ref is not None
    found: tuple[tuple[Pod, PodStatus], ...] = ref.ask(GetPods(), block=True, timeout=5)
    return found


def worker_syncs(trace_dir: Path, uid: str) -> int:
    trace = read_trace(trace_dir)
    return sum(1 for r in trace.messages() if r["to"] == names.worker_name(uid)
               and MESSAGES.short(r["type"]) == "RunPending")


def test_a_relist_mid_start_brings_a_sync_that_reads_nothing(
        node_factory: list[RecordedNode], tmp_path: Path) -> None:
    node = steady_node(node_factory, tmp_path)
    relist_inside_create_container(node, "u1")
    node.snapshot(pod("u1", "web"))
    assert node.settle(), "the node did not settle"
    assert [s.phase for _, s in statuses(node)] == ["Running"]
    assert dict(Counter(c.method for c in node.fake.calls)) == MID_START
    node.fake.clear_calls()
    node.advance(SAFETY_NET_DELAY)  # the safety-net relist: one, and no sync
    assert dict(Counter(c.method for c in node.fake.calls)) == {
        "list_pod_sandbox": 1, "list_containers": 1}
    node.close()
    node_factory.remove(node)
    assert worker_syncs(tmp_path / "trace", "u1") == 2  # the start, the relist's
    report = replay(read_trace(tmp_path / "trace"), KubeletWorld())
    assert report.ok, format_report(report)


@pytest.mark.parametrize("later", [0.0, 1.0])
def test_a_relist_after_the_read_brings_a_fresh_read(
        node_factory: list[RecordedNode], tmp_path: Path, later: float) -> None:
    """The container exits after the worker's last read; the relist that shows it
    (at the same virtual instant, or later) makes the worker read the pod again, see
    the exit and start the container again (restartPolicy Always, no back-off yet)."""
    node = steady_node(node_factory, tmp_path)
    node.snapshot(pod("u1", "web"))
    assert node.settle()
    [first] = node.running("u1")
    node.fake.exit_container(first, 1)
    node.fake_clock.step(later)
    node.fake.clear_calls()
    relist(node)
    assert node.settle()
    calls = Counter(c.method for c in node.fake.calls)
    assert calls["container_status"] >= 1 and calls["create_container"] == 1
    [second] = node.running("u1")
    assert second != first
    labels = {c.id: c.labels for c in node.fake.list_containers()}
    assert labels[second][L.POD_UID] == "u1"
    assert [c.state for c in node.fake.list_containers() if c.id == first] == [
        ContainerState.EXITED]
    node.close()
    node_factory.remove(node)
    report = replay(read_trace(tmp_path / "trace"), KubeletWorld())
    assert report.ok, format_report(report)
