"""OTP supervision on pykka: small actors that raise on command, in virtual time."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import ChildExited, Tick
from actors.core.supervision import (
    ChildSpec,
    RestartType,
    SupervisorActor,
    SupervisorSpec,
    backoff_delay,
)
from actors.core.timers import ManualTimers
from runtime.clock import FakeClock
from tests.helpers import wait_for

Event = tuple[str, int, object]  # (child, incarnation, what)


class Log:
    """What every test child did, in the order it happened (appends are atomic)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def of(self, name: str) -> list[tuple[int, object]]:
        return [(n, what) for who, n, what in self.events if who == name]

    def after(self, mark: int) -> list[Event]:
        return self.events[mark:]


class Child(Actor):
    """Logs its start, stop and messages; ("raise", x) raises, ("block", ev) waits on ev,
    ("exit",) exits normally (tells its supervisor, then stops)."""

    def __init__(self, name: str, dispatch: Dispatch, incarnation: int, log: Log) -> None:
        super().__init__(name, dispatch, incarnation)
        self.log = log

    def on_start(self) -> None:
        self.log.events.append((self.name, self.incarnation, "start"))

    def on_stop(self) -> None:
        self.log.events.append((self.name, self.incarnation, "stop"))

    def handle(self, message: Any) -> Any:
        if isinstance(message, tuple) and message and message[0] == "raise":
            raise RuntimeError(message[1])
        if isinstance(message, tuple) and message and message[0] == "block":
            message[1].wait(10.0)
            return None
        if message == ("exit",):
            assert self.parent is not None
            self.send(self.parent, ChildExited(self.name, self.incarnation))
            self.actor_ref.stop(block=False)
            return None
        self.log.events.append((self.name, self.incarnation, message))
        return None


class TestSupervisor(SupervisorActor):
    """A SupervisorActor the test can look into."""

    __test__ = False

    def __init__(self, holder: list[TestSupervisor], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        holder.append(self)

    def handle(self, message: Any) -> Any:
        if isinstance(message, tuple) and message[:1] == ("remove",):
            self.supervision.remove(message[1], "no longer wanted")
            return None
        if message == ("settle",):
            return None
        return super().handle(message)


class Tree:
    """A supervisor named "supervisor" over test children, with manual timers."""

    def __init__(self, spec: SupervisorSpec, children: list[tuple[str, RestartType]],
                 shutdown_timeout: float = 5.0, seed: int = 7,
                 redundant: Callable[[object], bool] | None = None) -> None:
        self.clock = FakeClock()
        self.dispatch = Dispatch()
        self.timers = ManualTimers(self.dispatch, self.clock)
        self.log = Log()
        specs = [ChildSpec(name, self._starter(name), restart, shutdown_timeout, redundant)
                 for name, restart in children]
        holder: list[TestSupervisor] = []
        self.ref = TestSupervisor.start(holder, "supervisor", self.dispatch, self.timers,
                                        self.clock, spec, specs, random.Random(seed))
        self.actor = holder[0]
        self.engine = self.actor.supervision
        for name, _ in children:
            self.wait_started(name, 0)

    def _starter(self, name: str) -> Callable[[int], Any]:
        return lambda n: Child.start(name, self.dispatch, n, self.log)

    def tell(self, name: str, message: object) -> bool:
        return self.dispatch.tell(name, message, sender="test")

    def wait_started(self, name: str, incarnation: int) -> None:
        wait_for(lambda: (incarnation, "start") in self.log.of(name), 5.0,
                 f"{name} incarnation {incarnation} to start")

    def settle(self) -> None:
        """Wait until the supervisor has handled everything sent to it so far."""
        self.ref.ask(("settle",), block=True, timeout=5.0)

    def stop(self) -> None:
        if self.ref.is_alive():
            self.ref.stop(timeout=10.0)


@pytest.fixture
def trees() -> Iterator[list[Tree]]:
    made: list[Tree] = []
    yield made
    for tree in made:
        tree.stop()


def tree(made: list[Tree], spec: SupervisorSpec, names: str = "abcd",
         restart: RestartType = "permanent", **kwargs: Any) -> Tree:
    t = Tree(spec, [(n, restart) for n in names], **kwargs)
    made.append(t)
    return t


def starts_and_stops(events: list[Event]) -> list[str]:
    return [f"{what} {who}{n}" for who, n, what in events if what in ("start", "stop")]


# --- strategies ---------------------------------------------------------------------------


def test_one_for_one_restarts_only_the_failed_child(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec("one_for_one"), "abc")
    mark = len(t.log.events)
    t.tell("b", ("raise", "boom"))
    t.wait_started("b", 1)
    t.settle()
    assert starts_and_stops(t.log.after(mark)) == ["start b1"]
    t.tell("b", "hello")
    wait_for(lambda: (1, "hello") in t.log.of("b"), 5.0, "the new b to get mail")
    assert t.engine.stats.restarts == 1


def test_rest_for_one_stops_the_later_children_in_reverse_and_starts_in_order(
        trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec("rest_for_one"), "abcd")
    mark = len(t.log.events)
    t.tell("b", ("raise", "boom"))
    t.wait_started("d", 1)
    assert starts_and_stops(t.log.after(mark)) == [
        "stop d0", "stop c0", "start b1", "start c1", "start d1"]
    assert t.engine.incarnation("a") == 0


def test_one_for_all_restarts_every_child(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec("one_for_all"), "abc")
    mark = len(t.log.events)
    t.tell("b", ("raise", "boom"))
    t.wait_started("c", 1)
    assert starts_and_stops(t.log.after(mark)) == [
        "stop c0", "stop a0", "start a1", "start b1", "start c1"]


# --- restart types --------------------------------------------------------------------------


def test_permanent_children_come_back_even_after_a_normal_exit(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec(), "a", "permanent")
    t.tell("a", ("exit",))
    t.wait_started("a", 1)


def test_transient_children_come_back_only_after_an_exception(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec(), "ab", "transient")
    t.tell("a", ("raise", "boom"))
    t.wait_started("a", 1)
    t.tell("b", ("exit",))
    wait_for(lambda: (0, "stop") in t.log.of("b"), 5.0, "b to exit")
    t.settle()
    assert "b" not in t.engine.names() and t.dispatch.ref("b") is None
    assert t.engine.stats.restarts == 1


def test_temporary_children_never_come_back_and_their_mail_is_unhandled(
        trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec(backoff_initial=1.0), "a", "temporary")
    gate = threading.Event()
    t.tell("a", ("block", gate))
    t.tell("a", ("raise", "boom"))
    t.tell("a", "lost")
    gate.set()
    wait_for(lambda: "a" not in t.engine.names(), 5.0, "a to be dropped")
    t.timers.advance(10.0)
    t.settle()
    assert t.log.of("a") == [(0, "start")]
    assert t.dispatch.dead_letters_unhandled == {"str": 1}


# --- intensity ----------------------------------------------------------------------------


def test_too_many_restarts_stop_everything_with_a_readable_reason(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec("one_for_one", max_restarts=3, within=60.0), "abc")
    for n in range(3):
        t.tell("b", ("raise", f"x{n}"))
        t.wait_started("b", n + 1)
        t.timers.advance(5.0)
    mark = len(t.log.events)
    t.tell("b", ("raise", "x"))
    wait_for(lambda: not t.ref.is_alive(), 5.0, "the supervisor to give up")
    assert t.engine.gave_up == (
        "supervisor: b failed 4 times in 60 s (last: RuntimeError('x')): giving up")
    assert starts_and_stops(t.log.after(mark)) == ["stop c0", "stop a0"]
    assert t.dispatch.names() == []


def test_restarts_spread_wider_than_the_window_are_fine(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec("one_for_one", max_restarts=2, within=10.0), "a")
    for n in range(6):
        t.tell("a", ("raise", f"x{n}"))
        t.wait_started("a", n + 1)
        t.timers.advance(6.0)
    assert t.ref.is_alive() and t.engine.gave_up is None


def test_the_reason_names_every_child_when_several_failed(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec("one_for_one", max_restarts=1, within=60.0), "ab")
    t.tell("a", ("raise", "x"))
    t.wait_started("a", 1)
    t.tell("b", ("raise", "y"))
    wait_for(lambda: not t.ref.is_alive(), 5.0, "the supervisor to give up")
    assert t.engine.gave_up == ("supervisor: 2 restarts in 60 s (a 1, b 1), b last "
                                "(last: RuntimeError('y')): giving up")


# --- back-off -------------------------------------------------------------------------------


def test_backoff_doubles_with_jitter_up_to_the_cap_and_resets_after_quiet(
        trees: list[Tree]) -> None:
    spec = SupervisorSpec("one_for_one", max_restarts=100, within=60.0, backoff_initial=1.0,
                          backoff_max=8.0, backoff_jitter=0.25, reset_after=30.0)
    t = tree(trees, spec, "a", seed=42)
    twin = random.Random(42)  # draws what the supervisor draws
    incarnation = 0

    def fail_and_measure() -> float:
        nonlocal incarnation
        t.tell("a", ("raise", "boom"))
        wait_for(lambda: t.timers.next_due() is not None, 5.0, "a restart timer")
        due = t.timers.next_due()
        assert due is not None
        delay = due - t.clock.monotonic()
        assert t.engine.restart_pending("a") and t.dispatch.ref("a") is None
        t.timers.advance(delay)
        incarnation += 1
        t.wait_started("a", incarnation)
        return delay

    for base in (1.0, 2.0, 4.0, 8.0, 8.0):
        delay = fail_and_measure()
        assert base * 0.75 <= delay <= base * 1.25
        assert delay == pytest.approx(base * (1 + 0.25 * twin.uniform(-1.0, 1.0)))
    t.timers.advance(30.0)  # ran quietly for reset_after
    delay = fail_and_measure()
    assert delay == pytest.approx(1.0 * (1 + 0.25 * twin.uniform(-1.0, 1.0)))


def test_backoff_delay_without_jitter() -> None:
    spec = SupervisorSpec(backoff_initial=0.5, backoff_max=3.0)
    rng = random.Random(1)
    assert [backoff_delay(spec, n, rng) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert backoff_delay(SupervisorSpec(), 3, rng) == 0.0


# --- work in flight -------------------------------------------------------------------------


def test_queued_mail_goes_to_the_new_incarnation_in_order(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec(), "a")
    gate = threading.Event()
    t.tell("a", ("block", gate))
    t.tell("a", ("raise", "boom"))
    for message in ("m1", Tick("relist", 1.0), "m2", Tick("relist", 2.0), "m3"):
        t.tell("a", message)
    gate.set()
    t.wait_started("a", 1)
    wait_for(lambda: (1, "m3") in t.log.of("a"), 5.0, "the queued mail")
    assert [what for n, what in t.log.of("a") if n == 1] == [
        "start", "m1", "m2", Tick("relist", 2.0), "m3"]  # only the newest tick of a kind
    assert t.engine.stats.dropped == {"Tick": 1}
    assert not t.dispatch.dead_letters and not t.dispatch.dead_letters_unhandled


def test_mail_the_spec_calls_redundant_is_dropped(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec(), "a", redundant=lambda m: m == "stale")
    gate = threading.Event()
    t.tell("a", ("block", gate))
    t.tell("a", ("raise", "boom"))
    t.tell("a", "stale")
    t.tell("a", "fresh")
    gate.set()
    wait_for(lambda: (1, "fresh") in t.log.of("a"), 5.0, "the queued mail")
    assert [what for n, what in t.log.of("a") if n == 1] == ["start", "fresh"]


def test_dead_letters_are_held_while_a_restart_is_pending_then_delivered(
        trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec(backoff_initial=5.0), "ab")
    t.tell("a", ("raise", "boom"))
    wait_for(lambda: t.engine.restart_pending("a"), 5.0, "a restart to be pending")
    assert t.tell("a", "late1") is False  # no live actor: a dead letter, held
    assert t.tell("a", "late2") is False
    t.settle()
    assert t.log.of("a") == [(0, "start")]
    t.timers.advance(5.0)
    wait_for(lambda: (1, "late2") in t.log.of("a"), 5.0, "the held mail")
    assert [what for n, what in t.log.of("a") if n == 1] == ["start", "late1", "late2"]
    assert not t.dispatch.dead_letters and not t.dispatch.dead_letters_unhandled
    assert t.engine.stats.redelivered == 2


def test_dead_letters_to_no_child_are_counted_unhandled(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec(), "a")
    t.tell("nobody", "hello")
    t.settle()
    assert t.dispatch.dead_letters == {"str": 1}
    assert t.dispatch.dead_letters_unhandled == {"str": 1}


def test_dead_letters_to_a_removed_child_are_dropped_on_purpose(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec(), "ab")
    t.ref.ask(("remove", "b"), block=True, timeout=5.0)
    wait_for(lambda: (0, "stop") in t.log.of("b"), 5.0, "b to stop")
    t.tell("b", "late")
    t.settle()
    assert t.dispatch.dead_letters == {"str": 1}
    assert not t.dispatch.dead_letters_unhandled


def test_a_second_failure_while_a_group_restart_is_pending_keeps_start_order(
        trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec("rest_for_one", backoff_initial=5.0), "abc")
    t.tell("c", ("raise", "first"))
    wait_for(lambda: t.engine.restart_pending("c"), 5.0, "c's restart to be pending")
    mark = len(t.log.events)
    t.tell("a", ("raise", "second"))
    wait_for(lambda: (0, "stop") in t.log.of("b"), 5.0, "b to stop")
    t.timers.advance(20.0)
    t.wait_started("c", 1)
    assert starts_and_stops(t.log.after(mark)) == ["stop b0", "start a1", "start b1",
                                                   "start c1"]


# --- shutdown -----------------------------------------------------------------------------


def test_shutdown_stops_children_in_reverse_order(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec(), "abc")
    mark = len(t.log.events)
    t.stop()
    assert starts_and_stops(t.log.after(mark)) == ["stop c0", "stop b0", "stop a0"]


def test_a_child_that_does_not_stop_in_time_is_abandoned(trees: list[Tree]) -> None:
    t = tree(trees, SupervisorSpec(), "ab", shutdown_timeout=0.2)
    gate = threading.Event()
    t.tell("a", ("block", gate))
    try:
        t.stop()  # returns: a is given 0.2 s, then abandoned
        assert not t.ref.is_alive()
        assert t.engine.stats.abandoned == ["a"]
        assert (0, "stop") in t.log.of("b") and (0, "stop") not in t.log.of("a")
    finally:
        gate.set()
    wait_for(lambda: (0, "stop") in t.log.of("a"), 5.0, "a to stop once unblocked")
