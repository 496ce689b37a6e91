"""Fault injection for drills: a seeded plan of where an actor fails.

Nothing here runs unless a plan is given to the Dispatch (``Dispatch(faults=plan)``): an
Actor finds no fault hooks there and pays one test per delivery. A plan holds:

- handler faults (``ActorFault``): the actor named (or any actor under a prefix such as
  ``worker/``) raises a ``DrillFault`` while it handles a matching delivery: right after its
  handler began (``runtime_call=0``: the delivery is taken, nothing of it done), or on the
  handler's N-th runtime call (``runtime_call=N``: the handler is half way through its
  work), or, if it made fewer calls, when the handler returns (before the delivery ends);
- start faults (``ActorFault(on_start=True)``): the next ``times`` (re)starts of the actor
  raise just before ``on_start``.

The runtime-call countdown needs the plan between the actors and the services they call:
the plan is an interceptor (runtime.cri.intercept) for that. Faults of a particular
service (a kubelet's CRI) are interceptors of their own that call ``fire``.

Faults fire only once the plan is armed (``arm``), so a kubelet can start cleanly first.
Every firing is kept in ``fired`` (time, actor, incarnation, delivery, where).
"""

from __future__ import annotations

import contextvars
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from actors.core import context


class DrillFault(Exception):
    """A fault a drill injected on purpose."""


# Where a handler fault struck, as its DrillFault says (and so the trace's record of the
# handler's end): replay reads it back to fail the handler at the same point.
BEGAN = " began"  # "handler of Ping began": before the handler ran, nothing of it done
RETURNED = "handler returned before its faulted runtime call"  # after all of its work


def fault_point(error: str | None) -> str | None:
    """Where the injected fault in a handler's recorded ``error`` (its repr) struck:
    "begin" (the handler never ran), "return" (it did all its work, then failed), "call"
    (on a runtime call, whose record carries the fault as its error); None if ``error`` is
    no injected fault."""
    if not error or not error.startswith(f"{DrillFault.__name__}("):
        return None
    where = error.rstrip("')\"")
    if where.endswith(BEGAN):
        return "begin"
    if where.endswith(RETURNED):
        return "return"
    return "call"


@dataclass(frozen=True, slots=True)
class ActorFault:
    """Where one actor fails. ``actor`` is a name, or a prefix ending in "/"."""

    actor: str
    message: str | None = None  # the message type's name to match; None: any
    skip: int = 0  # matching deliveries (or starts) let through first
    runtime_call: int = 0  # 0: when the handler begins; N: on its N-th runtime call
    times: int = 1
    on_start: bool = False

    def matches(self, name: str) -> bool:
        return name.startswith(self.actor) if self.actor.endswith("/") else name == self.actor


@dataclass(frozen=True, slots=True)
class Fired:
    at: float  # time.monotonic()
    actor: str
    incarnation: int
    delivery: int | None
    where: str


@dataclass(slots=True)
class _Slot:
    fault: ActorFault
    seen: int = 0
    fired: int = 0

    @property
    def spent(self) -> bool:
        return self.fired >= self.fault.times


@dataclass(slots=True)
class _Armed:
    """One faulted delivery in progress: the runtime calls left before it fires."""

    actor: str
    incarnation: int
    delivery: int | None
    calls_left: int
    done: bool = False


_current: contextvars.ContextVar[_Armed | None] = contextvars.ContextVar(
    "kubelet_actors_fault", default=None)


@dataclass(slots=True)
class FaultPlan:
    """A seeded set of faults; ``rng`` is the drills' only source of randomness."""

    seed: int = 0
    faults: list[ActorFault] = field(default_factory=list)
    rng: random.Random = field(init=False)
    armed: bool = False
    fired: list[Fired] = field(default_factory=list)
    _slots: list[_Slot] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._slots = [_Slot(f) for f in self.faults]

    def add(self, fault: ActorFault) -> None:
        with self._lock:
            self.faults.append(fault)
            self._slots.append(_Slot(fault))

    def arm(self) -> None:
        self.armed = True

    def disarm(self) -> None:
        self.armed = False

    @property
    def first_fired(self) -> float | None:
        return self.fired[0].at if self.fired else None

    def fired_count(self, where_prefix: str = "") -> int:
        return sum(1 for f in self.fired if f.where.startswith(where_prefix))

    def fire(self, actor: str, incarnation: int, delivery: int | None, where: str) -> None:
        """Note the firing and raise the DrillFault (for this plan's faults and others')."""
        self.fired.append(Fired(time.monotonic(), actor, incarnation, delivery, where))
        raise DrillFault(f"drill fault in {actor} (incarnation {incarnation}): {where}")

    def _take(self, name: str, message: str | None, on_start: bool) -> _Slot | None:
        """The slot this delivery (or start) triggers, counting it; None if none."""
        if not self.armed:
            return None
        with self._lock:
            for slot in self._slots:
                f = slot.fault
                if f.on_start != on_start or slot.spent or not f.matches(name):
                    continue
                if f.message is not None and f.message != message:
                    continue
                slot.seen += 1
                if slot.seen <= f.skip:
                    continue
                slot.fired += 1
                return slot
        return None

    # --- the fault hooks (actors.core.hooks.FaultHooks) ------------------------------

    def delivery(self, actor: str, incarnation: int, message: object) -> _Armed | None:
        """Called as a handler begins; raises now, or arms the runtime-call countdown."""
        slot = self._take(actor, type(message).__name__, on_start=False)
        if slot is None:
            return None
        handling = context.current()
        delivery = handling.delivery if handling is not None else None
        if slot.fault.runtime_call <= 0:
            self.fire(actor, incarnation, delivery,
                      f"handler of {type(message).__name__}{BEGAN}")
        armed = _Armed(actor, incarnation, delivery, slot.fault.runtime_call)
        _current.set(armed)
        return armed

    def finish(self, armed: object) -> None:
        """The handler returned before its N-th runtime call: fail it now."""
        _current.set(None)
        if isinstance(armed, _Armed) and not armed.done:
            armed.done = True
            self.fire(armed.actor, armed.incarnation, armed.delivery, RETURNED)

    @staticmethod
    def leave() -> None:
        _current.set(None)

    def starting(self, actor: str, incarnation: int) -> None:
        """Called right before on_start: raises if a start fault is due for ``actor``."""
        if self._take(actor, None, on_start=True) is not None:
            self.fire(actor, incarnation, None, "on_start")

    # --- the services the actors call (an interceptor) ----------------------------------

    def around(self, target: str, method: str, args: tuple[Any, ...],
               proceed: Callable[[], Any]) -> Any:
        """Count the call against an armed handler's runtime-call fault; fire on the N-th."""
        armed = _current.get()
        if armed is not None and not armed.done:
            armed.calls_left -= 1
            if armed.calls_left <= 0:
                armed.done = True
                self.fire(armed.actor, armed.incarnation, armed.delivery,
                          f"runtime call {method}")
        return proceed()
