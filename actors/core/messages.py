"""The framework's own messages: timer ticks, supervision reports, dead letters, stop.

Immutable values that import nothing outside actors.core, so any actor system built
on actors.core can use them.
"""

from __future__ import annotations

from dataclasses import dataclass

from actors.core.trace.names import message


@message("Tick")
@dataclass(frozen=True, slots=True)
class Tick:
    """A timer firing; ``kind`` names the timer (sync, housekeeping, relist, ...)."""

    kind: str
    at: float  # the monotonic time it was due


@message("ChildFailed", carries=("pending",))
@dataclass(frozen=True, slots=True)
class ChildFailed:
    """A supervised actor stopped on an exception."""

    name: str
    incarnation: int
    error: str
    pending: tuple[object, ...] = ()  # its mailbox at the moment of failure, in order


@message("ChildExited")
@dataclass(frozen=True, slots=True)
class ChildExited:
    """A supervised actor stopped on purpose (a normal exit: transient ones stay stopped)."""

    name: str
    incarnation: int
    reason: str = "normal"


@message("RestartChild")
@dataclass(frozen=True, slots=True)
class RestartChild:
    """A timer: restart ``name`` now (its back-off delay is over)."""

    name: str
    incarnation: int  # the incarnation that failed; a stale timer is ignored


@message("DeadLetter", carries=("message",))
@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A message told to a name with no live actor, handed to the supervisor to hold."""

    sender: str
    to: str
    message: object


@message("Stop")
@dataclass(frozen=True, slots=True)
class Stop:
    """Stop the kubelet; ``reason`` is logged."""

    reason: str

