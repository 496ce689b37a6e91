"""The framework's own messages: timer ticks, supervision reports, dead letters, stop.

Immutable values that import nothing outside actors.core, so any actor system built
on actors.core can use them.
"""

from __future__ import annotations

from msgspec import Struct

from actors.core.trace.names import message


@message("Tick")
class Tick(Struct, frozen=True):
    """A timer firing; ``kind`` names the timer (sync, housekeeping, relist, ...)."""

    kind: str
    at: float  # the monotonic time it was due


@message("ChildFailed", carries=("pending",))
class ChildFailed(Struct, frozen=True):
    """A supervised actor stopped on an exception."""

    name: str
    incarnation: int
    error: str
    pending: tuple[object, ...] = ()  # its mailbox at the moment of failure, in order


@message("ChildExited")
class ChildExited(Struct, frozen=True):
    """A supervised actor stopped on purpose (a normal exit: transient ones stay stopped)."""

    name: str
    incarnation: int
    reason: str = "normal"


@message("RestartChild")
class RestartChild(Struct, frozen=True):
    """A timer: restart ``name`` now (its back-off delay is over)."""

    name: str
    incarnation: int  # the incarnation that failed; a stale timer is ignored


@message("DeadLetter", carries=("message",))
class DeadLetter(Struct, frozen=True):
    """A message told to a name with no live actor, handed to the supervisor to hold."""

    sender: str
    to: str
    message: object


@message("Stop")
class Stop(Struct, frozen=True):
    """Stop the kubelet; ``reason`` is logged."""

    reason: str



@message("HandOver")
class HandOver(Struct, frozen=True):
    """What a supervised actor leaves its successor: told to its supervisor, which keeps the
    newest per child and starts the child's next incarnation from it (ChildSpec.resume).

    The rule: ``state`` is a value, never a live object. Frozen dataclasses or structs,
    tuples, strings and numbers only: no actor ref, pool, lock, file or anything that
    changes after it is sent. It is recorded in the trace like every message, and a
    replay builds the successor from the recorded copy, so the successor must not depend
    on anything the copy lacks. A child whose spec has no ``resume`` hands over nothing
    (its hand-overs are dropped), and incarnation 0 never gets one.
    """

    name: str  # the child that hands over
    incarnation: int  # its incarnation: a replaced one's late hand-over is stale
    state: object
