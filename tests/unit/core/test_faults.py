"""The fault plan (drills' handler, start and runtime-call faults) and its hooks in Actor,
on toy actors."""

from __future__ import annotations

import threading
from typing import Any

import pykka
import pytest

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.faults import ActorFault, DrillFault, FaultPlan
from actors.core.messages import ChildFailed
from runtime.cri.intercept import intercept
from tests.helpers import wait_for

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


def test_prefix_matches_any_actor_under_it() -> None:
    fault = ActorFault("worker/")
    assert fault.matches("worker/abc") and not fault.matches("pleg")
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
    runtime: Any = intercept(inner, Runtime, plan)
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
        assert ref.ask(Ping(), block=True, timeout=5) == "handled"
    finally:
        ref.stop()


def test_handler_fault_fails_the_actor_and_reports_it() -> None:
    plan = FaultPlan(3, [ActorFault("probe", "Ping")])
    dispatch = Dispatch(faults=plan)
    got: list[object] = []
    sink = Sink.start(dispatch, got)
    dispatch.register("supervisor", sink)
    dispatch.adopt("probe", "supervisor")
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


def test_on_start_fault_is_reported_to_the_parent() -> None:
    """Pykka does not call on_failure when on_start raises; Actor reports it."""
    plan = FaultPlan(3, [ActorFault("probe", on_start=True)])
    dispatch = Dispatch(faults=plan)
    plan.arm()
    got: list[object] = []
    sink = Sink.start(dispatch, got)
    dispatch.register("supervisor", sink)
    started = threading.Event()
    dispatch.adopt("probe", "supervisor")  # before the start: it fails at once
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


