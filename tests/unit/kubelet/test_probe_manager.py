"""ProbeManager as an actor: ManualTimers and a FakeClock drive the schedule, the FakeRuntime
answers exec probes, and collector actors registered as "supervisor" and "status" receive
the verdicts. Every wait has a deadline (tests.helpers.wait_for); nothing sleeps."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from actors.core.dispatch import Dispatch
from actors.core.testing import Inbox
from actors.core.timers import ManualTimers
from actors.kubelet.messages import PodForgotten, PodObserved, ProbeKind, ProbeVerdict, WorkerState
from actors.kubelet.probe_manager import ProbeManager, ProbeQuery, ProbeSnapshot
from runtime.clock import FakeClock
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ContainerState,
    ExecResult,
    ImageSpec,
    PodSandboxConfig,
    PodSandboxMetadata,
)
from runtime.errors import CRIUnavailable
from runtime.ids import ContainerID, PodUID, SandboxID
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus, RuntimePodStatus
from runtime.pod.model import Container, ExecAction, ObjectMeta, Pod, PodSpec, Probe
from runtime.prober.results import ProbeResult
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import wait_for

S, F, U = ProbeResult.SUCCESS, ProbeResult.FAILURE, ProbeResult.UNKNOWN
L, R, ST = ProbeKind.LIVENESS, ProbeKind.READINESS, ProbeKind.STARTUP
IMAGE = "busybox:1.35"
OK = ExecResult(b"ok", b"", 0)
BAD = ExecResult(b"", b"bad", 1)
DEADLINE = 5.0


def exec_probe(cmd: str, **kw: Any) -> Probe:
    return Probe(exec=ExecAction(command=(cmd,)), period_seconds=kw.pop("period_seconds", 1),
                 **kw)


@dataclass
class Node:
    clock: FakeClock
    dispatch: Dispatch
    timers: ManualTimers
    fake: FakeRuntime
    manager: Any
    supervisor: Inbox
    status: Inbox
    sandboxes: dict[str, SandboxID] = field(default_factory=dict)
    attempts: dict[tuple[str, str], int] = field(default_factory=dict)

    # --- the runtime side ---------------------------------------------------------------

    def start_container(self, uid: str, name: str = "app") -> ContainerID:
        config = PodSandboxConfig(metadata=PodSandboxMetadata(name=uid, uid=uid, namespace="d"))
        if uid not in self.sandboxes:
            self.sandboxes[uid] = self.fake.run_pod_sandbox(config)
        attempt = self.attempts[(uid, name)] = self.attempts.get((uid, name), -1) + 1
        cid = self.fake.create_container(self.sandboxes[uid], ContainerConfig(
            metadata=ContainerMetadata(name=name, attempt=attempt),
            image=ImageSpec(image=IMAGE)), config)
        self.fake.start_container(cid)
        return cid

    def observe(self, pod: Pod, *instances: tuple[str, ContainerID, ContainerState],
                state: WorkerState = WorkerState.SYNCING) -> None:
        statuses = tuple(
            ContainerRuntimeStatus(id=cid, name=name, state=cstate, created_at=self.clock.now(),
                                   started_at=self.clock.now())
            for name, cid, cstate in instances
        )
        runtime = RuntimePodStatus(uid=PodUID(pod.uid), name=pod.metadata.name,
                                   namespace="d", ips=("10.88.0.2",),
                                   container_statuses=statuses)
        self.dispatch.tell("probes", PodObserved(pod, runtime, None, state))

    # --- the actor side -------------------------------------------------------------------

    def snapshot(self) -> ProbeSnapshot:
        snap: ProbeSnapshot = self.manager.ask(ProbeQuery(), block=True, timeout=DEADLINE)
        return snap

    def settle(self) -> ProbeSnapshot:
        """Wait until every message so far is handled and no attempt is in flight."""
        def idle() -> ProbeSnapshot | None:
            snap = self.snapshot()
            return snap if snap.in_flight == 0 else None

        found = wait_for(idle, DEADLINE, "no probe in flight", interval=0.005)
        assert found is not None
        return found

    def advance(self, seconds: float, chunk: float = 0.5) -> None:
        """Move virtual time in chunks (shorter than any probe period), settling after each."""
        self.settle()
        left = seconds
        while left > 1e-9:
            step = min(chunk, left)
            self.timers.advance(step)
            self.settle()
            left -= step

    def verdicts(self, receiver: str = "status") -> list[ProbeVerdict]:
        inbox: Inbox = self.supervisor if receiver == "supervisor" else self.status
        return inbox.all(ProbeVerdict)

    def results(self, kind: ProbeKind, receiver: str = "status") -> list[ProbeResult]:
        return [v.result for v in self.verdicts(receiver) if v.kind == kind]

    def execs(self, cid: ContainerID, cmd: str | None = None) -> int:
        return sum(1 for c in self.fake.calls_to("exec_sync")
                   if c.args[0] == cid and (cmd is None or c.args[1][0] == cmd))


@pytest.fixture
def node() -> Iterator[Node]:
    clock = FakeClock()
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, clock)
    fake = FakeRuntime(clock, images=(IMAGE,))
    supervisor, status = Inbox(dispatch, "supervisor"), Inbox(dispatch, "status")
    manager = ProbeManager.start(dispatch, timers, fake, clock)
    dispatch.register("probes", manager)
    try:
        yield Node(clock, dispatch, timers, fake, manager, supervisor, status)
    finally:
        manager.stop()
        supervisor.stop()
        status.stop()


def make_pod(uid: str = "u1", **probes: Any) -> Pod:
    return Pod(metadata=ObjectMeta(name=f"pod-{uid}", namespace="d", uid=uid),
               spec=PodSpec(containers=(Container(name="app", image=IMAGE, **probes),)))


def running(cid: ContainerID, name: str = "app") -> tuple[str, ContainerID, ContainerState]:
    return (name, cid, ContainerState.RUNNING)


# --- tests ---------------------------------------------------------------------------------


def test_readiness_succeeds_after_success_threshold(node: Node) -> None:
    cid = node.start_container("u1")
    node.observe(make_pod(readiness_probe=exec_probe("ready", success_threshold=3)),
                 running(cid))
    # a new readiness worker says "not ready" at once, to both receivers
    wait_for(lambda: node.results(R) == [F], DEADLINE, "initial readiness Failure")
    assert node.results(R, "supervisor") == [F]
    assert node.verdicts()[0] == ProbeVerdict(PodUID("u1"), "app", cid, R, F)
    node.advance(1.0)
    node.advance(1.0)
    assert node.execs(cid, "ready") == 2
    assert node.results(R) == [F]
    node.advance(1.0)
    assert node.execs(cid, "ready") == 3
    wait_for(lambda: node.results(R) == [F, S], DEADLINE, "readiness Success")
    wait_for(lambda: node.results(R, "supervisor") == [F, S], DEADLINE, "supervisor copy")
    call = node.fake.calls_to("exec_sync")[0]
    assert call.args == (cid, ("ready",), 1.0)


def test_liveness_fails_after_threshold_then_waits_for_new_container(node: Node) -> None:
    cid = node.start_container("u1")
    node.fake.set_exec_result(cid, ("live",), BAD)
    pod = make_pod(liveness_probe=exec_probe("live", failure_threshold=3, period_seconds=2))
    node.observe(pod, running(cid))
    node.advance(4.0)
    assert node.execs(cid) == 2
    assert node.results(L, "supervisor") == []
    node.advance(2.0)
    assert node.execs(cid) == 3
    wait_for(lambda: node.results(L, "supervisor") == [F], DEADLINE, "liveness Failure")
    assert node.verdicts("supervisor")[-1].container_id == cid
    # held: no more probing of that container, even when it is observed again
    node.observe(pod, running(cid))
    node.advance(10.0)
    assert node.execs(cid) == 3
    # the supervisor restarts it: a new container id resets the worker and probing resumes
    node.fake.stop_container(cid, 0)
    cid2 = node.start_container("u1")
    node.observe(pod, running(cid2))
    node.advance(4.0)
    assert node.execs(cid2) == 2
    assert node.results(L, "supervisor") == [F]  # Success again is the initial state: quiet
    snap = node.snapshot()
    [view] = snap.workers
    assert (view.container_id, view.result, view.on_hold) == (cid2, S, False)


def test_startup_gates_liveness_and_readiness(node: Node) -> None:
    cid = node.start_container("u1")
    node.fake.set_exec_result(cid, ("startup",), BAD)
    pod = make_pod(startup_probe=exec_probe("startup", failure_threshold=30),
                   liveness_probe=exec_probe("live"), readiness_probe=exec_probe("ready"))
    node.observe(pod, running(cid))
    node.advance(3.0)
    assert node.execs(cid, "startup") == 3
    assert node.execs(cid, "live") == node.execs(cid, "ready") == 0
    node.fake.set_exec_result(cid, ("startup",), OK)
    node.advance(1.0)
    wait_for(lambda: node.results(ST) == [S], DEADLINE, "startup Success")
    node.advance(2.0)
    assert node.execs(cid, "startup") == 4  # stops once it succeeded
    assert node.execs(cid, "live") >= 2 and node.execs(cid, "ready") >= 2
    wait_for(lambda: node.results(R) == [F, S], DEADLINE, "ready after started")


def test_initial_delay_is_honoured(node: Node) -> None:
    cid = node.start_container("u1")
    node.observe(make_pod(readiness_probe=exec_probe("ready", initial_delay_seconds=5)),
                 running(cid))
    node.advance(4.5)
    assert node.execs(cid) == 0
    node.advance(1.0)
    assert node.execs(cid) == 1
    wait_for(lambda: node.results(R) == [F, S], DEADLINE, "ready after the delay")


def test_errors_are_retried_then_fail(node: Node) -> None:
    cid = node.start_container("u1")
    node.fake.fail("exec_sync", _cri_error(), times=2)
    node.observe(make_pod(liveness_probe=exec_probe("live", failure_threshold=1,
                                                    period_seconds=10)), running(cid))
    node.advance(0.5, chunk=0.1)
    # two errors retried at once, the third attempt answers: no failure
    assert len(node.fake.calls_to("exec_sync")) == 3
    assert node.results(L, "supervisor") == []
    node.fake.fail("exec_sync", _cri_error(), times=3)
    node.advance(9.5)
    node.advance(1.0, chunk=0.1)
    assert len(node.fake.calls_to("exec_sync")) == 6
    wait_for(lambda: node.results(L, "supervisor") == [F], DEADLINE, "errors count as Failure")


def _cri_error() -> Exception:
    return CRIUnavailable("ExecSync", "runtime restarting")


def test_not_running_container_is_not_ready_and_not_probed(node: Node) -> None:
    cid = node.start_container("u1")
    pod = make_pod(readiness_probe=exec_probe("ready"), liveness_probe=exec_probe("live"))
    node.observe(pod, running(cid))
    node.advance(1.0)
    wait_for(lambda: node.results(R) == [F, S], DEADLINE, "ready")
    node.fake.exit_container(cid, 1)
    node.observe(pod, ("app", cid, ContainerState.EXITED))
    wait_for(lambda: node.results(R) == [F, S, F], DEADLINE, "not ready once it exited")
    calls = len(node.fake.calls_to("exec_sync"))
    node.advance(3.0)
    assert len(node.fake.calls_to("exec_sync")) == calls
    assert node.results(L, "supervisor") == []


def test_pod_forgotten_or_terminated_stops_probing(node: Node) -> None:
    a, b = node.start_container("u1"), node.start_container("u2")
    pod_a = make_pod("u1", readiness_probe=exec_probe("ready"))
    pod_b = make_pod("u2", readiness_probe=exec_probe("ready"))
    node.observe(pod_a, running(a))
    node.observe(pod_b, running(b))
    node.advance(1.0)
    assert node.execs(a) == node.execs(b) == 1
    node.dispatch.tell("probes", PodForgotten(PodUID("u1")))
    node.observe(pod_b, running(b), state=WorkerState.TERMINATED)
    node.advance(5.0)
    assert node.execs(a) == node.execs(b) == 1
    assert node.snapshot().workers == ()


def test_container_removed_from_spec_drops_its_workers(node: Node) -> None:
    cid = node.start_container("u1")
    node.observe(make_pod(readiness_probe=exec_probe("ready"), liveness_probe=exec_probe("l")),
                 running(cid))
    assert len(node.settle().workers) == 2
    node.observe(make_pod(liveness_probe=exec_probe("l")), running(cid))
    assert [v.kind for v in node.settle().workers] == [L]


class GatedRuntime(FakeRuntime):
    """exec_sync waits for the test to open the gate (outside the fake's lock)."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock, images=(IMAGE,))
        self.gate = threading.Event()
        self.entered = threading.Event()

    def exec_sync(self, container_id: ContainerID, cmd: tuple[str, ...],
                  timeout: float) -> ExecResult:
        self.entered.set()
        self.gate.wait(DEADLINE)
        return super().exec_sync(container_id, cmd, timeout)


def test_answer_for_a_forgotten_pod_is_ignored() -> None:
    clock = FakeClock()
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, clock)
    fake = GatedRuntime(clock)
    status = Inbox(dispatch, "status", "supervisor")
    manager = ProbeManager.start(dispatch, timers, fake, clock)
    dispatch.register("probes", manager)
    try:
        node = Node(clock, dispatch, timers, fake, manager, status, status)
        cid = node.start_container("u1")
        node.observe(make_pod(readiness_probe=exec_probe("ready")), running(cid))
        node.settle()  # the worker and its ticker exist
        timers.advance(0.2)
        wait_for(fake.entered.is_set, DEADLINE, "a probe in flight")
        assert node.snapshot().in_flight == 1
        dispatch.tell("probes", PodForgotten(PodUID("u1")))
        wait_for(lambda: node.snapshot().workers == (), DEADLINE, "pod forgotten")
        fake.gate.set()
        wait_for(lambda: dispatch.delivered["ProbeOutcome"] == 1, DEADLINE, "the late answer")
        assert node.snapshot().workers == ()
        assert node.results(R) == [F, F]  # the initial verdict, once to each name; no Success
        assert manager.is_alive()
    finally:
        fake.gate.set()
        manager.stop()
        status.stop()


def test_hundred_pods_share_a_small_pool(node: Node) -> None:
    cids = {f"u{i}": node.start_container(f"u{i}") for i in range(100)}
    before = {t.name for t in threading.enumerate()}
    for uid, cid in cids.items():
        node.observe(make_pod(uid, readiness_probe=exec_probe("ready"),
                              liveness_probe=exec_probe("live")), running(cid))
    node.advance(1.0)
    wait_for(lambda: len(node.results(R)) == 200, DEADLINE, "100 pods ready")
    assert node.results(R).count(F) == node.results(R).count(S) == 100
    assert all(node.execs(cid) == 2 for cid in cids.values())
    probe_threads = [t for t in threading.enumerate()
                     if t.name.startswith("probe") and t.name not in before]
    assert 0 < len(probe_threads) <= 8
    snap = node.snapshot()
    assert len(snap.workers) == 200
    assert snap.scheduled <= 4 * 200 + 64
