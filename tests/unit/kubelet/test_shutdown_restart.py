"""A node shutdown manager that fails mid-shutdown is replaced by the sync loop and carries
the shutdown on.

The whole tree on the fake runtime, recorded, with a fake logind lock and the state file
in a scratch directory: PrepareForShutdown(true) stops the normal pod first; a fault kills
the manager as the normal pod's stop is reported (that report is lost with it). The
successor, started from the hand-over, asks for the active pods again (the normal pod is
gone from them), goes on to the critical group, stops it and releases the lock once; the
state file holds the shutdown's start and end; the trace replays without divergence, the
successor built from the recorded hand-over.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace

from actors.core.faults import ActorFault, FaultPlan
from actors.core.supervision import HAND_OVER
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.shutdown import GetShutdownStatus, NodeShutdownEvent, ShutdownSettings
from actors.kubelet.trace import KubeletWorld
from runtime.nodeshutdown import shutdown_periods
from runtime.nodeshutdown_state import ShutdownStateFile, load_shutdown_state, state_path
from tests.traces.scenarios import RecordedNode, pod
from tests.unit.kubelet.test_shutdown_manager import FakeLock


@pytest.fixture
def scratch() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="shutdown-restart-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_a_replaced_manager_carries_the_shutdown_on(tmp_path: Path, scratch: Path) -> None:
    lock = FakeLock()
    state = state_path(scratch)
    node = RecordedNode(tmp_path / "trace", scratch, faults=FaultPlan(1),
                        shutdown=ShutdownSettings(shutdown_periods(30, 10, ())),
                        shutdown_inhibitor=lock, shutdown_state=ShutdownStateFile(state))
    try:
        normal = pod("normal", "normal")
        critical = pod("critical", "critical")
        critical = replace(critical, spec=replace(critical.spec, priority=2000000000))
        node.snapshot(normal, critical)
        node.until("both running", lambda: node.running("normal") and node.running("critical"))
        first = node.dispatch.ref(names.SHUTDOWN)
        assert node.faults is not None
        node.faults.add(ActorFault(names.SHUTDOWN, "ShutdownPodStopped"))
        node.faults.arm()

        node.dispatch.tell(names.SHUTDOWN, NodeShutdownEvent(True), sender="test")
        node.until("the lock released", lambda: lock.calls == ["release"])
        assert len(node.faults.fired) == 1
        successor = node.dispatch.ref(names.SHUTDOWN)
        assert successor is not None and successor is not first
        assert not node.running("normal") and not node.running("critical")
        assert successor.ask(GetShutdownStatus(), block=True, timeout=5) is True
        started = load_shutdown_state(state)
        assert 0 < started.start_time <= started.end_time
        node.settle()
    finally:
        node.close()

    trace = read_trace(tmp_path / "trace")
    handed = [r["detail"] for r in trace.records
              if r["k"] == "decision" and r.get("what") == HAND_OVER]
    assert [(h["child"], h["incarnation"], h["state"]["group"]) for h in handed] == [
        (names.SHUTDOWN, 1, 0)]
    # The successor stopped the critical pod; nobody stopped the normal pod twice.
    kills = [m["body"]["uid"] for m in trace.messages() if m["type"] == "ShutdownKill"]
    assert kills == ["normal", "critical"]
    report = replay(read_trace(tmp_path / "trace"), KubeletWorld())
    assert report.ok, format_report(report)
    alone = replay(read_trace(tmp_path / "trace"), KubeletWorld(), only_actor=names.SHUTDOWN)
    assert alone.ok and alone.actors == {names.SHUTDOWN}, format_report(alone)
