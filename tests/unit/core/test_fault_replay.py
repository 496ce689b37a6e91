"""Replay of a drill's injected faults, on toy handlers: the fault strikes where the
recording says it did (before the handler, on a runtime call, as it returned), and nothing
beyond that is excused."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from actors.core.faults import ActorFault, DrillFault, FaultPlan, fault_point
from actors.core.trace.names import MESSAGES
from actors.core.trace.replay import replay_delivery
from actors.core.trace.stubs import (
    DivergenceFound,
    Record,
    ReplayAnswers,
    ReplayDispatch,
    Step,
    Stubs,
    plain,
    recorded_error,
)


@dataclass(frozen=True, slots=True)
class Ping:
    n: int


@dataclass(frozen=True, slots=True)
class Pong:
    n: int


class ToyWorld:
    """A world of toy handlers: every actor replayable, answers None, errors rebuilt by
    name (ReplayAnswers uses the last two)."""

    def build(self, actor: str, incarnation: int, stubs: Stubs,
              handed_over: object = None) -> Any:
        return Toy()

    def replayable(self, actor: str) -> bool:
        return True

    def scratch_paths(self, config: Mapping[str, Any], scratch: str
                      ) -> tuple[tuple[str, str], ...]:
        return ()

    def result_type(self, target: str, method: str) -> Any:
        return None

    def error_from(self, record: Record) -> Exception:
        return recorded_error(record)


def firing(fault: ActorFault, then: Callable[[FaultPlan, object], None]) -> str:
    """The recorded error (its repr, as a trace's handler end has it) of a real firing."""
    plan = FaultPlan(1, [fault])
    plan.arm()
    try:
        armed = plan.delivery("toy", 0, Ping(1))
        then(plan, armed)
    except DrillFault as err:
        return repr(err)
    finally:
        plan.leave()
    raise AssertionError("the fault did not fire")


def nothing_more(plan: FaultPlan, armed: object) -> None:
    return None


def on_a_call(plan: FaultPlan, armed: object) -> None:
    plan.around("runtime", "relist", (), lambda: None)


def as_it_returns(plan: FaultPlan, armed: object) -> None:
    plan.finish(armed)


BEGAN = firing(ActorFault("toy", "Ping"), nothing_more)
ON_CALL = firing(ActorFault("toy", "Ping", runtime_call=1), on_a_call)
RETURNED = firing(ActorFault("toy", "Ping", runtime_call=5), as_it_returns)


def test_fault_point_reads_where_the_fault_struck() -> None:
    assert (fault_point(BEGAN), fault_point(ON_CALL), fault_point(RETURNED)) == (
        "begin", "call", "return")
    assert fault_point("ValueError('handler of Ping began')") is None
    assert fault_point(None) is None


class Toy:
    """A handler that makes the runtime call ``relist`` (``calls`` times), then sends a
    Pong to ``peer`` for each ``sends``; ``catch`` swallows what the call raised."""

    def __init__(self, calls: int = 0, sends: int = 0, catch: bool = False) -> None:
        self.calls, self.sends, self.catch = calls, sends, catch
        self.ran = False
        self.dispatch = ReplayDispatch()
        self.answers = ReplayAnswers(ToyWorld())

    def handle(self, message: object) -> None:
        self.ran = True
        for _ in range(self.calls):
            try:
                self.answers.around("runtime", "relist", (), lambda: None)
            except Exception:
                if not self.catch:
                    raise
        for n in range(self.sends):
            self.dispatch.tell("peer", Pong(n), sender="toy")


def replay_one(toy: Toy, error: str | None, calls: list[Record] | None = None,
               sent: int = 0) -> None:
    """Replay delivery #1 (a Ping to toy) against a recording whose handler made ``calls``,
    sent ``sent`` Pongs and ended with ``error``."""
    msg = {"id": 1, "to": "toy", "inc": 0, "type": MESSAGES.name_of(Ping(1)), "from": "",
           "seq": 1}
    records = [{"to": "peer", "type": MESSAGES.name_of(Pong(n)), "body": plain(Pong(n))}
               for n in range(sent)]
    step = Step(msg, records, list(calls or []), [])
    toy.dispatch.step = toy.answers.step = step
    end = {"id": 1, "error": error} if error is not None else {"id": 1}
    replay_delivery(toy, 1, "toy", 0, Ping(1), end, step)
    step.finish()


def relist(error: str | None = None) -> Record:
    record: Record = {"target": "runtime", "method": "relist", "args": []}
    if error is not None:
        record["error"] = {"type": "DrillFault", "detail": error}
    return record


def test_a_fault_as_the_handler_began_is_replayed_without_running_it() -> None:
    toy = Toy(calls=1, sends=1)  # it would act, but the recorded handler never ran
    replay_one(toy, BEGAN)
    assert not toy.ran


def test_a_fault_on_a_runtime_call_strikes_at_that_call() -> None:
    replay_one(Toy(calls=1, sends=1), ON_CALL, [relist(ON_CALL)])


def test_a_handler_that_goes_on_past_a_faulted_call_diverges() -> None:
    with pytest.raises(DivergenceFound, match="not in the recording"):
        replay_one(Toy(calls=1, sends=1, catch=True), ON_CALL, [relist(ON_CALL)])
    with pytest.raises(DivergenceFound, match="did not raise"):
        replay_one(Toy(calls=1, catch=True), ON_CALL, [relist(ON_CALL)])


def test_a_fault_as_the_handler_returned_needs_all_of_its_work() -> None:
    replay_one(Toy(calls=1, sends=2), RETURNED, [relist()], sent=2)
    with pytest.raises(DivergenceFound, match="message 3 sent by the handler is not in"):
        replay_one(Toy(calls=1, sends=3), RETURNED, [relist()], sent=2)
    with pytest.raises(DivergenceFound, match="did not send message 2"):
        replay_one(Toy(calls=1, sends=1), RETURNED, [relist()], sent=2)
