"""Probe results across a kubelet restart (runtime.prober.state and its users).

The probe manager saves what its workers reached; a new manager given those entries
continues each worker of the same container id and starts the others from the initial
result; the status manager serves a restored pod Ready from its first status; a state
file that cannot be used is a warning naming it, never a crash; and a restarted tree on
the fake runtime, recorded, replays without divergence.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger
from msgspec.structs import replace

from actors.app.probe_state import restore_probe_state
from actors.core.dispatch import Dispatch
from actors.core.testing import Inbox
from actors.core.timers import ManualTimers
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.messages import (
    DesiredPods,
    GetPods,
    PodForgotten,
    PodObserved,
    ProbeVerdict,
    WorkerState,
)
from actors.kubelet.probe_manager import ProbeManager
from actors.kubelet.status_manager import StatusManager
from actors.kubelet.trace import KubeletWorld
from runtime.clock import FakeClock
from runtime.cri.types import ContainerState
from runtime.errors import ProbeStateError
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus, RuntimePodStatus
from runtime.pod.model import ExecAction, Pod, Probe
from runtime.prober.results import ProbeResult
from runtime.prober.state import (
    STATE_FILE,
    ProbeStateFile,
    SavedProbe,
    load_probe_state,
    resume_probe,
    saved_probe,
)
from runtime.prober.worker import ProbeWorker
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import wait_for
from tests.traces.scenarios import RecordedNode, pod
from tests.unit.kubelet.test_probe_manager import (
    BAD,
    DEADLINE,
    IMAGE,
    OK,
    Node,
    exec_probe,
    make_pod,
    running,
)
from tests.unit.kubelet.test_probe_manager import L as LIVENESS
from tests.unit.kubelet.test_probe_manager import R as READINESS

S, F, U = ProbeResult.SUCCESS, ProbeResult.FAILURE, ProbeResult.UNKNOWN


class MemorySink:
    """A ProbeStateSink that keeps every save."""

    def __init__(self) -> None:
        self.saves: list[tuple[SavedProbe, ...]] = []

    def save(self, probes: Iterable[SavedProbe]) -> None:
        self.saves.append(tuple(sorted(probes, key=lambda p: p.key)))

    @property
    def last(self) -> tuple[SavedProbe, ...]:
        return self.saves[-1] if self.saves else ()


def start_node(sink: MemorySink, restored: tuple[SavedProbe, ...] = (),
               fake: FakeRuntime | None = None, clock: FakeClock | None = None) -> Node:
    clock = clock or FakeClock()
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, clock)
    fake = fake or FakeRuntime(clock, images=(IMAGE,))
    supervisor, status = Inbox(dispatch, "supervisor"), Inbox(dispatch, "status")
    manager = ProbeManager.start(dispatch, timers, fake, clock, restored=restored, state=sink)
    dispatch.register("probes", manager)
    return Node(clock, dispatch, timers, fake, manager, supervisor, status)


def stop_node(node: Node) -> None:
    node.manager.stop()
    node.supervisor.stop()
    node.status.stop()


@pytest.fixture
def first() -> Iterator[tuple[Node, MemorySink]]:
    sink = MemorySink()
    node = start_node(sink)
    try:
        yield node, sink
    finally:
        stop_node(node)


def restarted(before: Node, restored: tuple[SavedProbe, ...]) -> tuple[Node, MemorySink]:
    """A new manager on the same runtime and clock: the kubelet restarted."""
    stop_node(before)
    sink = MemorySink()
    after = start_node(sink, restored, before.fake, before.clock)
    after.sandboxes, after.attempts = before.sandboxes, before.attempts
    return after, sink


# --- the worker's part ----------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "outcomes", "expected"), [
    # kind, outcomes fed, (result, last outcome, run, on hold) to save
    ("readiness", (), (F, None, 0, False)),
    ("readiness", (S,), (F, S, 1, False)),
    ("readiness", (S, S, S), (S, S, 3, False)),
    ("readiness", (S, S, S, S, S, S), (S, S, 3, False)),  # capped: the steady state
    ("readiness", (S, S, S, F), (S, F, 1, False)),
    ("liveness", (F, F), (S, F, 2, False)),
    ("liveness", (F, F, F), (F, F, 0, True)),
    ("startup", (S,), (S, S, 1, False)),
])
def test_progress_is_what_a_restart_needs_and_resume_restores_it(
        kind: str, outcomes: tuple[ProbeResult, ...],
        expected: tuple[ProbeResult, ProbeResult | None, int, bool]) -> None:
    probe = Probe(exec=ExecAction(command=("x",)), success_threshold=3 if kind == "readiness"
                  else 1, failure_threshold=3)
    worker = ProbeWorker(kind, probe, ContainerID("c1"))
    for n, outcome in enumerate(outcomes):
        worker.begin(float(n))
        worker.step(float(n), outcome)
    assert worker.progress() == expected
    saved = saved_probe(PodUID("u"), "app", worker)
    again = ProbeWorker(kind, probe, ContainerID("c1"))
    assert resume_probe(again, saved)
    assert again.progress() == expected
    other = ProbeWorker(kind, probe, ContainerID("c2"))
    assert not resume_probe(other, saved)
    assert other.progress() == ProbeWorker(kind, probe, ContainerID("c2")).progress()


# --- the file ---------------------------------------------------------------------------------


def test_the_file_is_written_whole_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    assert load_probe_state(path) == ()  # a first start: nothing saved
    entries = (SavedProbe(uid=PodUID("u"), container_name="app", container_id=ContainerID("c"),
                          kind="readiness", result="Success", last_outcome="Success", run=1),)
    ProbeStateFile(path).save(entries)
    assert load_probe_state(path) == entries
    assert [p.name for p in tmp_path.iterdir()] == [STATE_FILE]  # no temporary file left


@pytest.mark.parametrize("content", [b"{not json", b'{"version": 1, "probes": [{"uid": 3}]}',
                                     b'{"version": 99, "probes": []}', b"\xff\xfe"])
def test_a_corrupt_file_is_an_error_naming_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / STATE_FILE
    path.write_bytes(content)
    with pytest.raises(ProbeStateError, match=str(path)):
        load_probe_state(path)


def warnings_of(action: Any) -> tuple[Any, list[str]]:
    lines: list[str] = []
    sink = logger.add(lines.append, level="WARNING", format="{message}")
    try:
        return action(), lines
    finally:
        logger.remove(sink)


@pytest.mark.parametrize("make", ["corrupt", "directory"])
def test_an_unusable_file_is_a_warning_and_initial_results(tmp_path: Path, make: str) -> None:
    path = tmp_path / STATE_FILE
    if make == "corrupt":
        path.write_text('{"version": 1, "probes": [')
    else:
        path.mkdir()  # unreadable as a file
    result, lines = warnings_of(lambda: restore_probe_state(str(tmp_path), FakeRuntime()))
    assert result == ()
    assert len(lines) == 1 and str(path) in lines[0], lines
    assert "initial result" in lines[0]


def test_entries_of_containers_that_no_longer_run_are_not_restored(tmp_path: Path) -> None:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=(IMAGE,))
    node = Node(clock, Dispatch(), ManualTimers(Dispatch(), clock), fake, None, None,  # type: ignore[arg-type]
                None)  # type: ignore[arg-type]
    alive, gone = node.start_container("u1", "a"), node.start_container("u1", "b")
    fake.stop_container(gone, 0)
    entries = tuple(SavedProbe(uid=PodUID("u1"), container_name=name, container_id=cid,
                               kind="readiness", result="Success") for name, cid in
                    (("a", alive), ("b", gone)))
    ProbeStateFile(tmp_path / STATE_FILE).save(entries)
    assert restore_probe_state(str(tmp_path), fake) == entries[:1]


# --- the probe manager ------------------------------------------------------------------------


def test_a_restored_result_continues_for_the_same_container(
        first: tuple[Node, MemorySink]) -> None:
    node, sink = first
    cid = node.start_container("u1")
    node.fake.set_exec_result(cid, ("live",), BAD)
    pod_ = make_pod(readiness_probe=exec_probe("ready", period_seconds=10),
                    liveness_probe=exec_probe("live", failure_threshold=3, period_seconds=10))
    node.observe(pod_, running(cid))
    node.advance(10.5)  # readiness Success; liveness failed twice of three
    assert node.results(READINESS) == [F, S]
    saved = {p.kind: p for p in sink.last}
    assert saved["readiness"].result == "Success"
    assert (saved["liveness"].result, saved["liveness"].run) == ("Success", 2)

    node, sink = restarted(node, sink.last)
    node.observe(pod_, running(cid))
    node.settle()
    # the first word on readiness is the restored Success: the status never flips
    wait_for(lambda: node.results(READINESS) == [S], DEADLINE, "the restored Success")
    assert node.verdicts()[0] == ProbeVerdict(PodUID("u1"), "app", cid, READINESS, S)
    node.advance(0.5)  # the first attempt of each new worker: liveness's third failure
    wait_for(lambda: node.results(LIVENESS, "supervisor") == [F], DEADLINE, "liveness Failure")
    stop_node(node)


def test_a_restored_result_of_another_container_is_discarded(
        first: tuple[Node, MemorySink]) -> None:
    node, sink = first
    cid = node.start_container("u1")
    pod_ = make_pod(readiness_probe=exec_probe("ready", period_seconds=10,
                                               initial_delay_seconds=5))
    node.observe(pod_, running(cid))
    node.advance(6.0)
    assert node.results(READINESS) == [F, S]
    stale = sink.last

    node, sink = restarted(node, stale)
    node.fake.stop_container(cid, 0)  # replaced while the kubelet was down
    replacement = node.start_container("u1")
    node.observe(pod_, running(replacement))
    wait_for(lambda: node.results(READINESS) == [F], DEADLINE,
             "the initial result, as after a first start")
    node.advance(4.0)
    assert node.results(READINESS) == [F]  # initialDelaySeconds of the new container
    node.advance(1.5)
    wait_for(lambda: node.results(READINESS) == [F, S], DEADLINE, "readiness Success")
    assert [p.container_id for p in sink.last] == [replacement]
    stop_node(node)


def test_the_steady_state_writes_nothing(first: tuple[Node, MemorySink]) -> None:
    node, sink = first
    cid = node.start_container("u1")
    node.observe(make_pod(readiness_probe=exec_probe("ready", period_seconds=1),
                          liveness_probe=exec_probe("live", period_seconds=1)), running(cid))
    node.advance(3.0)
    writes = len(sink.saves)
    executed = node.execs(cid)
    node.advance(20.0)
    assert node.execs(cid) >= executed + 38  # probing went on ...
    assert len(sink.saves) == writes  # ... and nothing was written
    node.fake.set_exec_result(cid, ("ready",), BAD)
    node.advance(1.0)  # one failure of three: the run changed, so it is saved
    assert len(sink.saves) == writes + 1
    node.dispatch.tell("probes", PodForgotten(PodUID("u1")))
    node.settle()
    assert sink.last == ()


def test_unused_entries_are_kept_until_their_pod_is_seen(
        first: tuple[Node, MemorySink]) -> None:
    node, _ = first
    entries = tuple(SavedProbe(uid=PodUID(uid), container_name="app",
                               container_id=ContainerID(f"c-{uid}"), kind="readiness",
                               result="Success") for uid in ("u1", "u2"))
    node, sink = restarted(node, entries)
    cid = node.start_container("u1")
    node.observe(make_pod("u1", readiness_probe=exec_probe("ready")), running(cid))
    node.settle()
    # u1's entry named another container: gone; u2 is not seen yet: its entry is kept
    assert {(p.uid, p.container_id) for p in sink.last} == {
        (PodUID("u1"), cid), (PodUID("u2"), ContainerID("c-u2"))}
    stop_node(node)


# --- the whole kubelet, recorded, restarted, replayed -------------------------------------------


def probed_pod(uid: str, name: str) -> Pod:
    base = pod(uid, name)
    probe = Probe(exec=ExecAction(command=("ready",)), period_seconds=10)
    container = replace(base.spec.containers[0], readiness_probe=probe)
    return replace(base, spec=replace(base.spec, containers=(container,)))


def ready(node: RecordedNode, uid: str) -> bool | None:
    ref = node.dispatch.ref(names.STATUS)
    assert ref is not None
    for p, status in ref.ask(GetPods(), block=True, timeout=DEADLINE):
        if p.uid == uid:
            return next((c.status == "True" for c in status.conditions if c.type == "Ready"),
                        None)
    return None


def readiness_told_to_status(trace_dir: Path) -> list[str]:
    trace = read_trace(trace_dir)
    return [m["body"]["result"] for m in trace.messages()
            if m["type"] == "ProbeVerdict" and m["to"] == names.STATUS
            and m["body"]["kind"] == "readiness"]


@pytest.mark.parametrize("replaced", [False, True])
def test_a_restarted_kubelet_keeps_readiness_and_its_trace_replays(
        tmp_path: Path, replaced: bool) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="probe-state-"))
    state = ProbeStateFile(tmp_path / STATE_FILE)
    node = RecordedNode(tmp_path / "before", scratch, probe_state_file=state)
    second: RecordedNode | None = None
    closed: list[RecordedNode] = []

    def close(n: RecordedNode) -> None:
        if n not in closed:
            closed.append(n)
            n.close()

    try:
        node.fake.set_exec_result(None, ("ready",), OK)
        node.snapshot(probed_pod("u1", "web"))
        node.until("the pod to be ready", lambda: ready(node, "u1") is True)
        (cid,) = node.running("u1")
        close(node)
        if replaced:
            node.fake.stop_container(cid, 0)
        restored = restore_probe_state(str(tmp_path), node.fake)
        assert [p.container_id for p in restored] == ([] if replaced else [cid])
        second = RecordedNode(tmp_path / "after", scratch, restart_of=node,
                              probe_state=restored, probe_state_file=state)
        second.snapshot(probed_pod("u1", "web"))
        second.advance(0.0)  # the PLEG's first relist, which the pod's first sync waits for
        second.settle()
        if replaced:
            second.until("the pod to be ready again", lambda: ready(second, "u1") is True)
        else:
            assert ready(second, "u1") is True
            assert second.running("u1") == [cid]
        close(second)
        told = readiness_told_to_status(tmp_path / "after")
        assert told[0] == "Failure" if replaced else told == ["Success"]
        report = replay(read_trace(tmp_path / "after"), KubeletWorld())
        assert report.ok, format_report(report)
        assert {"probes", "status"} <= report.actors
    finally:
        if second is not None:
            close(second)
        close(node)
        shutil.rmtree(scratch, ignore_errors=True)


# --- the status manager -----------------------------------------------------------------------


def test_a_restored_pod_is_served_ready_from_its_first_status() -> None:
    clock = FakeClock()
    dispatch = Dispatch()
    probe = Probe(exec=ExecAction(command=("ready",)))
    pod_ = make_pod("u1", readiness_probe=probe)
    restored = (SavedProbe(uid=PodUID("u1"), container_name="app",
                           container_id=ContainerID("c1"), kind="readiness", result="Success"),)
    status = StatusManager.start(dispatch, clock, restored=restored)
    dispatch.register(names.STATUS, status)
    try:
        def served() -> dict[str, bool | None]:
            pods = status.ask(GetPods(), block=True, timeout=DEADLINE)
            return {p.uid: next((c.status == "True" for c in s.conditions
                                 if c.type == "Ready"), None) for p, s in pods}

        dispatch.tell(names.STATUS, DesiredPods((pod_, make_pod("u2"))), sender="test")
        # u1 ran before the restart: not served as a not-ready placeholder; u2 is new
        assert served() == {"u2": False}
        runtime = RuntimePodStatus(uid=PodUID("u1"), name="pod-u1", namespace="d",
                                   ips=("10.88.0.2",), container_statuses=(
                                       ContainerRuntimeStatus(
                                           id=ContainerID("c1"), name="app",
                                           state=ContainerState.RUNNING,
                                           created_at=clock.now(), started_at=clock.now()),))
        dispatch.tell(names.STATUS, PodObserved(pod_, runtime, None, WorkerState.SYNCING),
                      sender="test")
        assert served() == {"u1": True, "u2": False}
    finally:
        status.stop()
