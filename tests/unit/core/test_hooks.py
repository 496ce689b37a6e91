"""Every hook the framework declares on Recorder is called, on toy actors: deliveries,
handlers, spawns, inputs, supervision decisions and intercepted calls."""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from actors.core import (
    Actor,
    ChildSpec,
    Dispatch,
    ManualTimers,
    Recorder,
    SupervisorActor,
    SupervisorSpec,
)
from actors.core.trace.recording import RecordingClock, RecordingInterceptor
from runtime.clock import FakeClock
from runtime.cri.intercept import intercept
from tests.helpers import wait_for


class ListRecorder(Recorder):
    """Notes which hook ran, with its first argument."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []
        self.lock = threading.Lock()

    def _note(self, hook: str, first: object) -> None:
        with self.lock:
            self.seen.append((hook, first))

    def delivery(self, id: int, sender: str, sender_seq: int, receiver: str,
                 incarnation: int, parent: int | None, message: object, dead: bool) -> None:
        self._note("delivery", receiver)

    def begin(self, id: int, actor: str, incarnation: int) -> None:
        self._note("begin", actor)

    def end(self, id: int, actor: str, incarnation: int, error: BaseException | None) -> None:
        self._note("end", actor)

    def spawn(self, actor: str, incarnation: int) -> None:
        self._note("spawn", actor)

    def input(self, name: str, value: object) -> None:
        self._note("input", name)

    def decision(self, actor: str, what: str, detail: Mapping[str, Any]) -> None:
        self._note("decision", what)

    def call(self, target: str, method: str, args: tuple[Any, ...], duration: float,
             result: object, error: BaseException | None) -> None:
        self._note("call", method)

    def hooks(self) -> set[str]:
        with self.lock:
            return {hook for hook, _ in self.seen}


class Oracle(Protocol):
    def answer(self, question: str) -> int: ...


class DeepThought:
    def answer(self, question: str) -> int:
        return 42


class Asker(Actor):
    """Asks the oracle, reads the clock, and fails on "fail"."""

    def __init__(self, dispatch: Dispatch, oracle: Oracle, clock: RecordingClock,
                 incarnation: int) -> None:
        super().__init__("asker", dispatch, incarnation)
        self.oracle = oracle
        self.clock = clock

    def handle(self, message: Any) -> Any:
        if message == "fail":
            raise RuntimeError("asked to fail")
        self.clock.monotonic()
        return self.oracle.answer(str(message))


def test_every_declared_hook_is_called() -> None:
    declared = {name for name in vars(Recorder) if not name.startswith("_")}
    recorder = ListRecorder()
    dispatch = Dispatch(recorder=recorder)
    fake = FakeClock()
    timers = ManualTimers(dispatch, fake)
    clock = RecordingClock(fake, recorder)
    oracle = intercept(DeepThought(), Oracle, RecordingInterceptor(recorder), target="oracle")
    spec = ChildSpec("asker", lambda n: Asker.start(dispatch, oracle, clock, n))
    boss = SupervisorActor.start("boss", dispatch, timers, fake, SupervisorSpec(), [spec],
                                 random.Random(1))
    try:
        first = wait_for(lambda: dispatch.ref("asker"), 5.0, "the child")
        dispatch.tell("asker", "question", sender="test")
        dispatch.tell("asker", "fail", sender="test")
        wait_for(lambda: dispatch.ref("asker") not in (None, first), 5.0, "the restart")
        asker = dispatch.ref("asker")
        assert asker is not None
        assert asker.ask("again", block=True, timeout=5.0) == 42
        dispatch.tell("nobody", "lost", sender="test")  # a dead letter is a delivery too
        assert recorder.hooks() == declared
        assert ("call", "answer") in recorder.seen and ("input", "clock.monotonic") in recorder.seen
    finally:
        boss.stop()


def test_a_failed_child_reports_to_the_supervisor_that_started_it() -> None:
    dispatch = Dispatch()
    fake = FakeClock()
    timers = ManualTimers(dispatch, fake)
    oracle = DeepThought()
    clock = RecordingClock(fake, Recorder())
    spec = ChildSpec("asker", lambda n: Asker.start(dispatch, oracle, clock, n))
    boss = SupervisorActor.start("not-the-supervisor", dispatch, timers, fake,
                                 SupervisorSpec(), [spec], random.Random(1))
    try:
        wait_for(lambda: dispatch.ref("asker") is not None, 5.0, "the child")
        assert dispatch.parent_of("asker") == "not-the-supervisor"
        first = dispatch.ref("asker")
        dispatch.tell("asker", "fail", sender="test")
        wait_for(lambda: dispatch.ref("asker") not in (None, first), 5.0, "the restart")
    finally:
        boss.stop()
    assert dispatch.parent_of("asker") is None  # stopped with its supervisor: forgotten
