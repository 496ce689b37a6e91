"""Hand-over (actors.core.messages.HandOver): a supervised child leaves its successor a
value; the supervisor keeps the newest of the running incarnation and starts the next one
from it, recording it as a decision a replay can read back."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from actors.core.actor import Actor
from actors.core.dispatch import ActorRef, Dispatch
from actors.core.hooks import Recorder
from actors.core.messages import HandOver
from actors.core.supervision import HAND_OVER, ChildSpec, SupervisorActor, SupervisorSpec
from actors.core.timers import ManualTimers
from runtime.clock import FakeClock
from tests.helpers import wait_for


class Decisions(Recorder):
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def decision(self, actor: str, what: str, detail: Mapping[str, Any]) -> None:
        self.seen.append((what, dict(detail)))


class Keeper(Actor):
    """Notes what it started from; ("keep", v) hands v over, ("raise",) fails."""

    def __init__(self, name: str, dispatch: Dispatch, incarnation: int,
                 started: list[tuple[int, object]], given: object) -> None:
        super().__init__(name, dispatch, incarnation)
        started.append((incarnation, given))

    def handle(self, message: Any) -> Any:
        if message == ("raise",):
            raise RuntimeError("drill")
        if isinstance(message, tuple) and message[0] == "keep":
            self.send("supervisor", HandOver(self.name, self.incarnation, message[1]))
        return None


class Supervisor(SupervisorActor):
    def handle(self, message: Any) -> Any:
        return None if message == ("settle",) else super().handle(message)


class Tree:
    def __init__(self, resumes: bool) -> None:
        self.decisions = Decisions()
        self.dispatch = Dispatch(recorder=self.decisions)
        clock = FakeClock()
        self.started: list[tuple[int, object]] = []

        def start(n: int) -> ActorRef:
            ref: ActorRef = Keeper.start("a", self.dispatch, n, self.started, None)
            return ref

        def resume(n: int, state: object) -> ActorRef:
            ref: ActorRef = Keeper.start("a", self.dispatch, n, self.started, state)
            return ref

        spec = ChildSpec("a", start, resume=resume if resumes else None)
        self.ref = Supervisor.start("supervisor", self.dispatch, ManualTimers(
            self.dispatch, clock), clock, SupervisorSpec(), [spec], random.Random(1))
        wait_for(lambda: self.dispatch.ref("a") is not None, 5.0, "a to start")

    def tell(self, message: object, to: str = "a") -> None:
        self.dispatch.tell(to, message, sender="test")

    def crash(self, incarnation: int) -> None:
        self.tell(("raise",))
        wait_for(lambda: len(self.started) > incarnation, 5.0, f"a[{incarnation}] to start")
        self.settle()

    def settle(self) -> None:
        self.ref.ask(("settle",), block=True, timeout=5.0)


@pytest.fixture
def tree() -> Iterator[Tree]:
    t = Tree(resumes=True)
    yield t
    t.ref.stop()


def test_the_successor_starts_from_the_newest_hand_over(tree: Tree) -> None:
    tree.tell(("keep", (1,)))
    tree.tell(("keep", (1, 2)))
    tree.crash(1)
    assert tree.started == [(0, None), (1, (1, 2))]
    assert (HAND_OVER, {"child": "a", "incarnation": 1, "state": (1, 2)}) in \
        tree.decisions.seen
    # a successor that hands over nothing new passes on what it was given
    tree.crash(2)
    assert tree.started[2] == (2, (1, 2))


def test_a_replaced_incarnations_late_hand_over_is_ignored(tree: Tree) -> None:
    tree.tell(("keep", "first"))
    tree.crash(1)
    tree.tell(HandOver("a", 0, "stale"), to="supervisor")  # as if sent while it stopped
    tree.crash(2)
    assert tree.started[2] == (2, "first")


def test_a_child_without_resume_starts_over() -> None:
    tree = Tree(resumes=False)
    try:
        tree.tell(("keep", "kept"))
        tree.crash(1)
        assert tree.started == [(0, None), (1, None)]
        assert not [d for d in tree.decisions.seen if d[0] == HAND_OVER]
    finally:
        tree.ref.stop()
