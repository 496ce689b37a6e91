"""The log rotation actor in the kubelet's tree on the fake runtime, in virtual time: on
its period it rotates a running container's log over the size (the fake runtime reopens
it) and leaves it alone under the size, and a recorded run with it replays without
divergence (it is not rebuilt: its inputs are file sizes no actor acts on)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.trace import KubeletWorld
from runtime.kuberuntime.log_rotation import LogRotatePolicy
from tests.traces.scenarios import RecordedNode, pod


def test_the_rotation_actor_rotates_on_its_period_and_its_run_replays(tmp_path: Path) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="logrot-"))
    node = RecordedNode(tmp_path / "trace", scratch, log_rotation=LogRotatePolicy(100, 3))
    try:
        node.snapshot(pod("u1", "web"))
        node.until("the pod to run", lambda: len(node.running("u1")) == 1)
        (cid,) = node.running("u1")
        log = Path(node.fake.container_status(cid).log_path)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(b"x" * 99)
        node.advance(10.0)
        assert os.listdir(log.parent) == ["0.log"], "under the size: left alone"
        for _ in range(3):
            with log.open("ab") as f:
                f.write(b"y" * 200)
            node.advance(10.0)
        names_now = sorted(os.listdir(log.parent))
        assert len(names_now) == 3 and names_now[0] == "0.log", names_now
        assert names_now[1].endswith(".gz") and not names_now[2].endswith(".gz"), names_now
        assert log.stat().st_size == 0  # reopened by the runtime
        assert node.fake.called("reopen_container_log") == 3
    finally:
        node.close()
        shutil.rmtree(scratch, ignore_errors=True)
    trace = read_trace(tmp_path / "trace")
    notes = [r for r in trace.records if r.get("type") == "LogsRotated"]
    assert len(notes) >= 4, "a recorded note per pass"
    report = replay(trace, KubeletWorld())
    assert report.ok, format_report(report)
    assert names.LOG_ROTATION not in report.actors and "supervisor" in report.actors
