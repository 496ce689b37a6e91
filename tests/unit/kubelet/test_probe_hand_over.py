"""A probe manager restarted by its supervisor continues its predecessor's results.

The whole tree on the fake runtime, recorded: the probe manager hands what it saves to the
sync loop (HandOver); a fault kills it; the sync loop starts the next incarnation from the
hand-over. A Ready pod stays Ready in the status manager throughout, the run of failures
under the threshold goes on counting, a container replaced meanwhile starts from the
initial result, and the trace replays without divergence (the successor is built from
the recorded hand-over).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from actors.core.faults import ActorFault, FaultPlan
from actors.core.supervision import HAND_OVER
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.trace import KubeletWorld
from runtime.ids import ContainerID
from runtime.pod.model import ExecAction, Pod, Probe
from tests.traces.scenarios import RecordedNode, pod
from tests.unit.kubelet.test_probe_manager import BAD, OK
from tests.unit.kubelet.test_probe_state import ready

STEP = 0.5


def probed(initial_delay: int = 0) -> Pod:
    base = pod("u1", "web")
    probe = Probe(exec=ExecAction(command=("ready",)), period_seconds=10, failure_threshold=3,
                  initial_delay_seconds=initial_delay)
    container = replace(base.spec.containers[0], readiness_probe=probe)
    return replace(base, spec=replace(base.spec, containers=(container,)))


@pytest.fixture
def node(tmp_path: Path) -> Iterator[RecordedNode]:
    scratch = Path(tempfile.mkdtemp(prefix="probe-hand-over-"))
    recorded = RecordedNode(tmp_path / "trace", scratch, faults=FaultPlan(1))
    try:
        yield recorded
    finally:
        recorded.close()
        shutil.rmtree(scratch, ignore_errors=True)


def ready_probes(node: RecordedNode, cid: ContainerID) -> int:
    return sum(1 for c in node.fake.calls_to("exec_sync")
               if c.args[0] == cid and c.args[1][0] == "ready")


def step_until(node: RecordedNode, what: str, done: Any, limit: float = 60.0,
               each: Any = None) -> None:
    """Advance virtual time in steps until ``done()``; ``each()`` runs after every step."""
    moved = 0.0
    while not done():
        assert moved < limit, f"{what} not within {limit:g} virtual seconds"
        node.advance(STEP)
        moved += STEP
        if each is not None:
            each()


def kill_probes(node: RecordedNode, message: str, each: Any = None) -> None:
    """Arm a fault in the probe manager's next ``message``; step until its successor runs."""
    assert node.faults is not None
    before = node.dispatch.ref(names.PROBES)
    node.faults.add(ActorFault(names.PROBES, message))
    node.faults.arm()
    step_until(node, "the probe manager to be restarted",
               lambda: node.faults is not None and node.faults.fired
               and node.dispatch.ref(names.PROBES) not in (None, before), each=each)


def told_to_status(trace_dir: Path) -> list[tuple[str, str]]:
    return [(m["body"]["container_id"], m["body"]["result"])
            for m in read_trace(trace_dir).messages()
            if m["type"] == "ProbeVerdict" and m["to"] == names.STATUS
            and m["body"]["kind"] == "readiness"]


def replays(trace_dir: Path) -> set[str]:
    report = replay(read_trace(trace_dir), KubeletWorld())
    assert report.ok, format_report(report)
    # The probe manager alone too: its successor needs nothing but the recorded hand-over.
    alone = replay(read_trace(trace_dir), KubeletWorld(), only_actor=names.PROBES)
    assert alone.ok and alone.actors == {names.PROBES}, format_report(alone)
    return report.actors


def hand_overs(trace_dir: Path) -> list[dict[str, Any]]:
    return [r["detail"] for r in read_trace(trace_dir).records
            if r["k"] == "decision" and r.get("what") == HAND_OVER]


def test_a_ready_pod_stays_ready_and_counters_continue(node: RecordedNode,
                                                        tmp_path: Path) -> None:
    node.fake.set_exec_result(None, ("ready",), OK)
    node.snapshot(probed())
    node.until("the pod to be ready", lambda: ready(node, "u1") is True)
    (cid,) = node.running("u1")
    # One failure of three: still Ready, and the run of failures is what is handed over.
    node.fake.set_exec_result(cid, ("ready",), BAD)
    probes = ready_probes(node, cid)
    step_until(node, "a failed readiness probe", lambda: ready_probes(node, cid) > probes)

    def still_ready() -> None:
        assert ready(node, "u1") is True, "Ready flipped through the restart"

    kill_probes(node, "Tick", each=still_ready)
    node.settle()
    still_ready()
    # Two more failures make three in a row: the pre-crash one counted.
    probes = ready_probes(node, cid)
    step_until(node, "the pod not ready", lambda: ready(node, "u1") is False,
               each=lambda: ready_probes(node, cid) - probes <= 2 or pytest.fail(
                   "more than two failures after the restart were needed"))
    assert ready_probes(node, cid) - probes == 2
    node.close()

    trace = tmp_path / "trace"
    assert told_to_status(trace) == [(cid, "Failure"), (cid, "Success"),
                                    (cid, "Success"), (cid, "Failure")]
    (given,) = hand_overs(trace)
    assert given["child"] == names.PROBES and given["incarnation"] == 1
    assert [(p["container_id"], p["result"], p["last_outcome"], p["run"])
            for p in given["state"]] == [(cid, "Success", "Failure", 1)]
    assert {names.PROBES, names.STATUS, names.SYNC_LOOP} <= replays(trace)


def test_a_container_replaced_meanwhile_is_not_resumed(node: RecordedNode,
                                                       tmp_path: Path) -> None:
    node.fake.set_exec_result(None, ("ready",), OK)
    node.snapshot(probed(initial_delay=5))
    node.until("the pod to be ready", lambda: ready(node, "u1") is True)
    (cid,) = node.running("u1")
    # The container exits: the probe manager dies on the observation that tells it, so
    # its successor starts from a hand-over that names the old container.
    node.fake.stop_container(cid, 0)
    kill_probes(node, "PodObserved")
    step_until(node, "a new container", lambda: node.running("u1") not in ([], [cid]))
    (replacement,) = node.running("u1")
    step_until(node, "the new container ready", lambda: ready(node, "u1") is True)
    node.close()

    trace = tmp_path / "trace"
    given = hand_overs(trace)
    assert given and all(p["container_id"] == cid for p in given[0]["state"])
    told = [result for container, result in told_to_status(trace)
            if container == replacement]
    assert told == ["Failure", "Success"]  # the initial result, as for any new container
    assert names.PROBES in replays(trace)
