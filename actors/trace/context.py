"""Which actor, incarnation and delivery the current thread is handling, if any.

Set by KubeletActor around each handler, read by the recorders so every runtime call,
clock read and sent message is attributed to the actor and delivery that caused it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Handling:
    actor: str
    incarnation: int
    delivery: int | None  # the id of the delivery being handled (None: on_start, asks)


_local = threading.local()


def current() -> Handling | None:
    value: Handling | None = getattr(_local, "handling", None)
    return value


def enter(handling: Handling | None) -> Handling | None:
    """Make ``handling`` current; returns what was current before."""
    previous = current()
    _local.handling = handling
    return previous
