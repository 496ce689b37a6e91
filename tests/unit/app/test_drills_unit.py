"""The drills' parts that need no containerd: the fault plan, its hooks, the invariants,
and the runtime manager's fix for a container created but never started."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pykka
import pytest

from actors.app.drills import invariants as inv
from actors.app.drills.catalog import DRILLS
from actors.app.drills.cli import main as drill_main
from actors.core import context
from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.faults import ActorFault, DrillFault, FaultPlan, install
from actors.core.messages import ChildFailed
from runtime.clock import FakeClock
from runtime.cri.types import ContainerState
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import wait_for

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"


# --- the fault plan ----------------------------------------------------------------------


class Ping:
    pass


class Pong:
    pass


def test_unarmed_plan_never_fires() -> None:
    plan = FaultPlan(1, [ActorFault("pleg")])
    assert plan.delivery("pleg", 0, Ping()) is None
    plan.starting("pleg", 0)
    assert plan.fired == []


def test_handler_fault_fires_at_begin_after_skipping_and_only_times() -> None:
    plan = FaultPlan(1, [ActorFault("pleg", "Ping", skip=1, times=1)])
    plan.arm()
    assert plan.delivery("pleg", 0, Pong()) is None  # another message type
    assert plan.delivery("status", 0, Ping()) is None  # another actor
    assert plan.delivery("pleg", 0, Ping()) is None  # skipped
    with pytest.raises(DrillFault, match="handler of Ping began"):
        plan.delivery("pleg", 0, Ping())
    assert plan.delivery("pleg", 1, Ping()) is None  # spent
    assert [(f.actor, f.incarnation) for f in plan.fired] == [("pleg", 0)]


def test_prefix_matches_any_pod_worker() -> None:
    fault = ActorFault("pod/")
    assert fault.matches("pod/abc") and not fault.matches("pleg")
    assert ActorFault("pleg").matches("pleg") and not ActorFault("ple").matches("pleg")


class Runtime:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def list_containers(self) -> tuple[()]:
        self.calls.append("list_containers")
        return ()

    def create_container(self, *args: object) -> str:
        self.calls.append("create_container")
        return "c-1"

    def start_container(self, container_id: str) -> None:
        self.calls.append("start_container")


def test_runtime_call_fault_fires_on_the_nth_call_of_the_delivery() -> None:
    plan = FaultPlan(1, [ActorFault("pleg", runtime_call=2)])
    plan.arm()
    inner = Runtime()
    runtime: Any = plan.wrap_runtime(inner)  # type: ignore[arg-type]
    armed = plan.delivery("pleg", 3, Ping())
    assert armed is not None
    runtime.list_containers()
    with pytest.raises(DrillFault, match="runtime call list_containers"):
        runtime.list_containers()
    assert inner.calls == ["list_containers"]  # the faulted call never reached the runtime
    plan.finish(armed)  # fired already: returns quietly
    plan.leave()
    runtime.list_containers()  # outside a faulted delivery: passes
    assert len(plan.fired) == 1


def test_runtime_call_fault_falls_back_to_the_handler_end() -> None:
    plan = FaultPlan(1, [ActorFault("pleg", runtime_call=5)])
    plan.arm()
    armed = plan.delivery("pleg", 0, Ping())
    assert armed is not None
    with pytest.raises(DrillFault, match="returned before"):
        plan.finish(armed)


def test_crash_after_create_only_in_a_pod_worker_and_after_the_create() -> None:
    plan = FaultPlan(1, crash_after_create=1)
    plan.arm()
    inner = Runtime()
    runtime: Any = plan.wrap_runtime(inner)  # type: ignore[arg-type]
    runtime.create_container()  # not in a pod worker
    previous = context.enter(context.Handling("pod/u1", 0, 7))
    try:
        with pytest.raises(DrillFault, match="between CreateContainer"):
            runtime.create_container()
        runtime.create_container()  # once only
    finally:
        context.enter(previous)
    assert inner.calls == ["create_container"] * 3
    assert plan.created == ["c-1"] and plan.fired[0].delivery == 7


def test_seeded_rng_draws_the_same() -> None:
    assert FaultPlan(42).rng.random() == FaultPlan(42).rng.random()


# --- the hooks in Actor -----------------------------------------------------------


class Probe(Actor):
    def __init__(self, dispatch: Dispatch, started: threading.Event) -> None:
        super().__init__("probe", dispatch)
        self.started = started

    def on_start(self) -> None:
        self.started.set()

    def handle(self, message: Any) -> Any:
        return "handled"


class Sink(Actor):
    def __init__(self, dispatch: Dispatch, got: list[object]) -> None:
        super().__init__("supervisor", dispatch)
        self.got = got

    def handle(self, message: Any) -> Any:
        self.got.append(message)


def test_no_plan_no_hooks() -> None:
    dispatch = Dispatch()
    ref = Probe.start(dispatch, threading.Event())
    try:
        assert ref.ask(Ping(), timeout=5) == "handled"
    finally:
        ref.stop()


def test_handler_fault_fails_the_actor_and_reports_it() -> None:
    dispatch = Dispatch()
    plan = FaultPlan(3, [ActorFault("probe", "Ping")])
    install(dispatch, plan)
    got: list[object] = []
    sink = Sink.start(dispatch, got)
    dispatch.register("supervisor", sink)
    ref = Probe.start(dispatch, threading.Event())
    dispatch.register("probe", ref)
    try:
        plan.arm()
        dispatch.tell("probe", Ping())
        report = wait_for(lambda: next((m for m in got if isinstance(m, ChildFailed)), None),
                          5.0, "the failure report")
        assert report is not None
        assert report.name == "probe" and "DrillFault" in report.error
        wait_for(lambda: not ref.is_alive(), 5.0, "the actor to stop")
    finally:
        pykka.ActorRegistry.stop_all()


def test_on_start_fault_is_reported_to_the_supervisor() -> None:
    """Pykka does not call on_failure when on_start raises; Actor reports it."""
    dispatch = Dispatch()
    plan = FaultPlan(3, [ActorFault("probe", on_start=True)])
    install(dispatch, plan)
    plan.arm()
    got: list[object] = []
    sink = Sink.start(dispatch, got)
    dispatch.register("supervisor", sink)
    started = threading.Event()
    try:
        ref = Probe.start(dispatch, started)
        report = wait_for(lambda: next((m for m in got if isinstance(m, ChildFailed)), None),
                          5.0, "the on_start failure report")
        assert report is not None
        assert report.name == "probe" and "on_start" in report.error
        assert not started.is_set()  # the subclass's on_start never ran
        wait_for(lambda: not ref.is_alive(), 5.0, "the actor to stop")
        again = Probe.start(dispatch, started)  # the plan's one start fault is spent
        wait_for(started.is_set, 5.0, "the next start")
        again.stop()
    finally:
        pykka.ActorRegistry.stop_all()


# --- the invariants ----------------------------------------------------------------------


def c(id: str, pod: str, state: str = inv.RUNNING, name: str = "main") -> inv.SeenContainer:
    return inv.SeenContainer(id, pod, name, state)


def test_orphans_duplicates_leftovers() -> None:
    seen = [c("1", "a"), c("2", "b"), c("3", "a", inv.EXITED), c("4", "a"), c("5", "a", "CREATED")]
    assert inv.orphans(seen, ["a"]) == ["orphan container 2 (b/main, RUNNING)"]
    assert inv.orphans([c("9", "x", inv.EXITED)], []) == []  # exited: nothing runs
    assert inv.duplicates(seen) == ["2 running instances of a/main"]
    assert inv.leftovers(seen) == ["container 5 of a/main left CREATED"]


def test_lost_kills_and_convergence() -> None:
    view = [inv.SeenPod("a", "Running", 1, 1), inv.SeenPod("b", "Pending", 0, 1)]
    assert inv.lost_kills([c("1", "b")], view, ["b"]) == [
        "removed pod b: container 1 (main) still RUNNING",
        "removed pod b still in the kubelet's view (Pending)"]
    assert inv.not_converged(view, ["a", "b", "z"]) == [
        "pod b is Pending with 0/1 containers running", "pod z is not in the kubelet's view"]
    assert inv.runtime_converged([c("1", "a")], ["a", "b"]) == ["no running container of pod b"]
    assert inv.all_problems([c("1", "a")], view[:1], ["a"]) == []


def test_restart_intensity() -> None:
    assert inv.restart_intensity([0, 1, 2], 3, 10, escalated=False) == []
    assert inv.restart_intensity([0, 1, 2, 3], 3, 10, escalated=False) == [
        "4 restarts within 10 s (MaxR 3) and no escalation"]
    assert inv.restart_intensity([0, 1, 2, 3], 3, 10, escalated=True) == []
    assert inv.restart_intensity([0, 20, 40, 60], 3, 10, escalated=False) == []  # spread out
    assert inv.restart_intensity([0, 1], 3, 10, escalated=True) == [
        "escalated after only 2 restarts within 10 s (MaxR 3)"]


def test_unhandled_dead_letters() -> None:
    assert inv.unhandled_dead_letters({"Tick": 0}) == []
    assert inv.unhandled_dead_letters({"UpdatePod": 2}) == [
        "2 unhandled dead letter(s) of UpdatePod"]


# --- the catalog and the command ---------------------------------------------------------


def test_every_drill_the_issue_names_is_there() -> None:
    kills = {f"kill-{a}" for a in ("status", "probes", "killer", "pleg", "runtime-monitor",
                                   "source-file", "pod")}
    assert kills | {"raise-in-on-start", "raise-in-on-start-escalate",
                    "crash-between-create-and-start", "kill-containerd", "sigkill-daemon",
                    "flood-mailbox", "corrupt-manifest"} == set(DRILLS)


def test_cli_list_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert drill_main(["--list"]) == 0
    assert "kill-pleg" in capsys.readouterr().out
    assert drill_main([]) == 2
    assert drill_main(["no-such-drill"]) == 2
    assert "unknown drill" in capsys.readouterr().err


# --- the runtime manager: a container created but never started --------------------------


def test_a_never_started_container_is_replaced_not_kept(tmp_path: Path) -> None:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=[IMAGE])
    settings = NodeSettings(node_name="node", root_dir=str(tmp_path / "root"),
                            pod_logs_dir=str(tmp_path / "logs"))
    manager = KubeRuntimeManager(fake, settings, clock)
    pod = Pod(metadata=ObjectMeta(name="web", namespace="default", uid="uid-1"),
              spec=PodSpec(containers=(Container(name="main", image=IMAGE,
                                                 image_pull_policy="IfNotPresent"),)))

    def status() -> Any:
        return manager.get_pod_status(PodUID(pod.uid), "web", "default")

    fake.fail("start_container", DrillFault("the worker died before StartContainer"))
    with pytest.raises(DrillFault):
        manager.sync_pod(pod, status())
    (created,) = status().container_statuses
    assert created.state == ContainerState.CREATED

    result = manager.sync_pod(pod, status())
    assert result.ok, result
    (running,) = status().container_statuses  # the CREATED one is gone, one runs
    assert running.state == ContainerState.RUNNING and running.id != created.id
    assert running.restart_count == created.restart_count  # it never ran: not a restart
