"""What idle running pods cost in CRI calls, per period, counted on the fake runtime.

The kubelet's whole tree (with the stats and log rotation actors) runs on the fake
runtime in virtual time (the recording node of tests/traces/scenarios) with PODS pods
running and nothing happening to them. Each periodic actor's Tick is then sent on its
own and the CRI calls it causes are counted by method: the counts are exact, so a change
that adds a call to an idle node's steady state fails here and must say why. A minute of
virtual time is then counted whole, as the sum of its periods.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.core.messages import Tick
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.messages import UpdateKind, UpdatePod
from actors.kubelet.trace import KubeletWorld
from runtime.cri.types import ContainerState
from runtime.ids import PodUID
from runtime.kuberuntime.labels import parse_container_labels
from runtime.kuberuntime.log_rotation import LogRotatePolicy
from tests.traces.scenarios import RecordedNode, pod

PODS = 20
POLICY = LogRotatePolicy(10 * 2**20, 5)

RELIST = {"list_pod_sandbox": 1, "list_containers": 1}
"""The PLEG's relist (every 1 s): the sandboxes and containers, and no status read of a
pod in which nothing changed."""
LOG_ROTATION = {"list_containers": 1}
"""A log rotation pass (every 10 s): the running containers; their logs, all under the
size, found and statted without asking the runtime (upstream asks ContainerStatus of
every running container each pass)."""
STATS = {"list_pod_sandbox": 1, "list_containers": 1, "list_container_stats": 1,
         "list_pod_sandbox_stats": 1, "image_fs_info": 1, "list_images": 1}
"""A stats pass (every 10 s): one call per kind of object, none per pod."""
RUNTIME_CHECK = {"status": 1}
"""The runtime monitor's check (every 5 s, upstream's updateRuntimeUp period)."""
WORKER_SYNC = {"list_pod_sandbox": 1, "pod_sandbox_status": 1, "list_containers": 1,
               "container_status": 1}
"""A pod worker's sync on news of its pod (a PLEG event, a probe verdict, a spec change):
its pod's runtime status read afresh. Its periodic resync (every 60 s, plus up to half
that of jitter) of an idle pod reads none: the status its last sync found nothing to do
with stands until such news (upstream's worker reads the PLEG's cache)."""


@pytest.fixture
def node(tmp_path: Path) -> Iterator[RecordedNode]:
    made = RecordedNode(tmp_path / "trace", tmp_path / "scratch", stats=True,
                        log_rotation=POLICY)
    try:
        made.snapshot(*(pod(f"u{i}", f"web-{i}") for i in range(PODS)))
        made.until("the pods to run", lambda: sum(
            c.state is ContainerState.RUNNING for c in made.fake.list_containers()) == PODS)
        made.advance(90.0)  # past every pod's first resync: all of them idle
        assert made.settle()
        yield made
    finally:
        made.close()


def calls_of(node: RecordedNode, to: str, kind: str) -> dict[str, int]:
    """The calls one Tick of ``kind`` to ``to`` causes (and what follows from it)."""
    assert node.settle()
    node.fake.clear_calls()
    node.dispatch.tell(to, Tick(kind, node.fake_clock.monotonic()), sender=names.TIMERS)
    assert node.settle()
    return dict(Counter(c.method for c in node.fake.calls))


def test_each_period_of_an_idle_node_makes_its_pinned_calls(node: RecordedNode) -> None:
    assert calls_of(node, names.PLEG, names.TICK_RELIST) == RELIST
    assert calls_of(node, names.LOG_ROTATION, names.TICK_LOG_ROTATION) == LOG_ROTATION
    assert calls_of(node, names.STATS, names.TICK_STATS) == STATS
    assert calls_of(node, names.RUNTIME_MONITOR, names.TICK_RUNTIME_CHECK) == RUNTIME_CHECK


def test_a_minute_of_an_idle_node_is_the_sum_of_its_periods(node: RecordedNode) -> None:
    node.fake.clear_calls()
    node.advance(60.0)
    counts = Counter(c.method for c in node.fake.calls)
    want: Counter[str] = Counter()
    for per, times in ((RELIST, 60), (LOG_ROTATION, 6), (STATS, 6), (RUNTIME_CHECK, 12)):
        for method, n in per.items():
            want[method] += n * times
    assert counts == want  # and no resync of a pod's worker read its status


def worker_calls(node: RecordedNode, *updates: UpdatePod) -> dict[str, int]:
    """The calls the first pod's worker makes for ``updates``, told in a row."""
    assert node.settle()
    node.fake.clear_calls()
    for update in updates:
        node.dispatch.tell(names.worker_name(PodUID("u0")), update, sender=names.SYNC_LOOP)
    assert node.settle()
    return dict(Counter(c.method for c in node.fake.calls))


def test_a_resync_of_an_idle_pod_reads_no_status(node: RecordedNode) -> None:
    web = pod("u0", "web-0")
    assert worker_calls(node, UpdatePod(web, UpdateKind.SYNC, resync=True)) == {}
    assert worker_calls(node, UpdatePod(web, UpdateKind.SYNC)) == WORKER_SYNC
    assert worker_calls(node, UpdatePod(web, UpdateKind.SYNC, resync=True)) == {}


def test_news_of_a_pod_makes_its_next_resync_read_the_status(node: RecordedNode) -> None:
    """A resync coalesced after news (both pending at once) still reads afresh."""
    web = pod("u0", "web-0")
    assert worker_calls(node, UpdatePod(web, UpdateKind.SYNC),
                        UpdatePod(web, UpdateKind.SYNC, resync=True)) == WORKER_SYNC


def test_the_rotators_log_path_is_the_one_the_kubelet_gave_the_runtime(
        node: RecordedNode) -> None:
    """The layout the rotator reads a log's path from is the one the container's config
    was made with: for every container the kubelet started, they agree."""
    assert node.log_rotation is not None
    rotator = node.log_rotation.rotator
    listed = node.fake.list_containers()
    assert len(listed) == PODS
    for c in listed:
        info = parse_container_labels(c.labels, c.annotations)
        assert rotator.expected_log_path(c, info) == node.fake.container_status(c.id).log_path


def test_resyncs_on_a_kept_status_replay_without_divergence(tmp_path: Path) -> None:
    """The worker's choice to reuse its status is made from what the trace holds (the
    UpdatePod's resync flag, its own earlier syncs): a replay makes the same calls. A
    replay that read the status on every resync would diverge at the first resync."""
    node = RecordedNode(tmp_path / "trace", tmp_path / "scratch")
    try:
        node.snapshot(*(pod(f"u{i}", f"web-{i}") for i in range(3)))
        node.until("the pods to run", lambda: sum(
            c.state is ContainerState.RUNNING for c in node.fake.list_containers()) == 3)
        node.advance(200.0)  # two resyncs of each pod at least
        assert node.settle()
    finally:
        node.close()
    trace = read_trace(tmp_path / "trace")
    resyncs = [r for r in trace.records if r["k"] == "msg"
               and r.get("type") == "UpdatePod" and r["body"].get("resync")]
    assert len(resyncs) >= 6
    report = replay(trace, KubeletWorld())
    assert report.ok, format_report(report)
