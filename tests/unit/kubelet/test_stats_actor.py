"""The stats actor in the kubelet's tree on the fake runtime, in virtual time: it collects
on its period into the cache, one collection at a time, and a recorded run with it replays
without divergence (it is not rebuilt: its inputs are measurements no actor acts on)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.trace import KubeletWorld
from tests.traces.scenarios import RecordedNode, pod


def test_the_stats_actor_fills_the_cache_and_its_run_replays(tmp_path: Path) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="stats-"))
    node = RecordedNode(tmp_path / "trace", scratch, stats=True)
    try:
        assert node.stats is not None
        node.snapshot(pod("u1", "web"))
        node.until("the pod to run", lambda: len(node.running("u1")) == 1)
        (cid,) = node.running("u1")
        node.fake.set_stats(cid, 1_000_000_000, 4_000_000, 4096)
        node.advance(10.0)
        node.fake.set_stats(cid, 3_000_000_000, 4_000_000, 4096)
        before = node.stats.cache.collections
        node.advance(10.0)
        assert node.stats.cache.collections == before + 1  # one per period
        snap = node.stats.cache.get()
        assert snap is not None and snap.error == ""
        (stats,) = snap.summary.pods
        assert stats.pod_ref.uid == "u1"
        (main,) = stats.containers
        assert main.cpu is not None and main.cpu.usage_nano_cores == 200_000_000
    finally:
        node.close()
        shutil.rmtree(scratch, ignore_errors=True)
    trace = read_trace(tmp_path / "trace")
    assert any(r.get("type") == "StatsCollected" for r in trace.records), "recorded notes"
    report = replay(trace, KubeletWorld())
    assert report.ok, format_report(report)
    assert names.STATS not in report.actors and "supervisor" in report.actors
