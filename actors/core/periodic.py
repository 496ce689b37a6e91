"""An actor that runs a job per Tick on a thread of its own, never two at once.

For work that is slow or blocking (I/O, CPU) and must not hold the actor's mailbox: the
Tick starts the job on the actor's pool; the job's result comes back as a message of the
subclass's ``done_type``, which frees the actor for the next Tick. A job slower than the
period makes Ticks pass, never pile up.
"""

from __future__ import annotations

import threading
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers

Done = TypeVar("Done")


class PeriodicJob(Actor, Generic[Done]):
    """Subclasses say what a job is (``job``, on the pool; it returns the message that
    reports it and catches its own errors) and what to do with its report
    (``finished``, on the actor's thread)."""

    done_type: type[Done]
    """The message ``job`` returns."""

    def __init__(self, name: str, dispatch: Dispatch, timers: Timers, tick_kind: str,
                 period: float | None, incarnation: int = 0, executor: Executor | None = None,
                 thread_prefix: str = "") -> None:
        """``period``: seconds between Ticks, the first at once; None: no job ever runs."""
        super().__init__(name, dispatch, incarnation)
        self._timers = timers
        self._tick_kind = tick_kind
        self._period = period
        self._pool: Executor = executor or ThreadPoolExecutor(
            1, thread_name_prefix=thread_prefix or name)
        self._busy = False
        self._ticker: Cancellable | None = None
        self._stopping = threading.Event()  # set from the actor's thread, read by a job's

    def on_start(self) -> None:
        if self._period is not None:
            self._ticker = self._timers.every(self._tick_kind, self.name, self._period,
                                              first=0.0)

    @property
    def stopping(self) -> bool:
        """Whether the actor is stopping: a job that fails now may fail for that (the
        daemon closes what the job uses once its actors stop, without waiting for it)."""
        return self._stopping.is_set()

    def on_stop(self) -> None:
        self._stopping.set()
        if self._ticker is not None:
            self._ticker.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind == self._tick_kind:
            if not self._busy and self._period is not None:
                self._busy = True
                self._pool.submit(self._run)
        elif isinstance(message, self.done_type):
            self._busy = False
            self.finished(message)
        else:
            return super().handle(message)
        return None

    def _run(self) -> None:
        self.send(self.name, self.job())

    def job(self) -> Done:
        """One run of the job, on the pool's thread: its report."""
        raise NotImplementedError

    def finished(self, done: Done) -> None:
        """The report of a job, on the actor's thread."""
