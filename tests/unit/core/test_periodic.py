"""PeriodicJob: one job per Tick off the actor's thread, never two at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from actors.core import Dispatch, ManualTimers, PeriodicJob
from actors.core.messages import Tick
from runtime.clock import FakeClock
from tests.helpers import wait_for


@dataclass(frozen=True, slots=True)
class Counted:
    n: int


@dataclass
class Seen:
    """What the jobs did, shared with the test."""

    release: threading.Event = field(default_factory=threading.Event)
    started: int = 0
    reports: list[int] = field(default_factory=list)


class Counter(PeriodicJob[Counted]):
    done_type = Counted

    def __init__(self, dispatch: Dispatch, timers: ManualTimers, period: float | None,
                 seen: Seen) -> None:
        super().__init__("counter", dispatch, timers, "count", period,
                         executor=ThreadPoolExecutor(2))
        self.seen = seen

    def job(self) -> Counted:
        self.seen.started += 1  # one job at a time: no lock needed, which is the point
        n = self.seen.started
        self.seen.release.wait(10)
        return Counted(n)

    def finished(self, done: Counted) -> None:
        self.seen.reports.append(done.n)


def test_a_tick_while_a_job_runs_starts_none_and_the_next_one_after_it_does() -> None:
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, FakeClock())
    seen = Seen()
    ref = Counter.start(dispatch, timers, 1.0, seen)
    dispatch.register("counter", ref)
    try:
        timers.advance(0.0)  # the first Tick, at once
        wait_for(lambda: seen.started == 1, 5.0, "the first job")
        dispatch.tell("counter", Tick("count", 0.0), sender="test")  # passes: one is running
        seen.release.set()
        wait_for(lambda: seen.reports == [1], 5.0, "the first report")
        assert seen.started == 1
        dispatch.tell("counter", Tick("count", 0.0), sender="test")
        wait_for(lambda: seen.reports == [1, 2], 5.0, "the second job")
    finally:
        ref.stop()


def test_without_a_period_no_job_ever_runs() -> None:
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, FakeClock())
    seen = Seen()
    ref = Counter.start(dispatch, timers, None, seen)
    dispatch.register("counter", ref)
    try:
        dispatch.tell("counter", Tick("count", 0.0), sender="test")
        ref.ask(Counted(0), block=True, timeout=5.0)  # the Tick was handled before it
        assert timers.next_due() is None
        assert seen.started == 0
    finally:
        ref.stop()



class Watching(Counter):
    """Notes, in ``seen.reports``, whether its job saw the actor stopping when it ended."""

    def job(self) -> Counted:
        self.seen.started += 1
        self.seen.release.wait(10)
        self.seen.reports.append(int(self.stopping))
        return Counted(0)

    def finished(self, done: Counted) -> None:
        pass  # the job noted what it saw


def test_a_job_running_through_the_stop_sees_the_actor_stopping() -> None:
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, FakeClock())
    seen = Seen()
    ref = Watching.start(dispatch, timers, 1.0, seen)
    dispatch.register("counter", ref)
    timers.advance(0.0)
    wait_for(lambda: seen.started == 1, 5.0, "the job")
    ref.stop()
    seen.release.set()
    wait_for(lambda: seen.reports == [1], 5.0, "the job's end")


def test_a_job_of_a_running_actor_does_not_see_it_stopping() -> None:
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, FakeClock())
    seen = Seen()
    ref = Watching.start(dispatch, timers, 1.0, seen)
    dispatch.register("counter", ref)
    try:
        timers.advance(0.0)
        seen.release.set()
        wait_for(lambda: seen.reports == [0], 5.0, "the job's end")
    finally:
        ref.stop()
