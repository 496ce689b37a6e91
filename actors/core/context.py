"""Which actor, incarnation and delivery the current code is handling, if any.

Set by Actor around each handler, read by the recorders so every runtime call,
clock read and sent message is attributed to the actor and delivery that caused it. A
context variable, so work a handler fans out to threads with a copied context (the
runtime manager's parallel kills) is still attributed to it.
"""

from __future__ import annotations

import contextvars

from msgspec import Struct


class Handling(Struct, frozen=True):
    actor: str
    incarnation: int
    delivery: int | None  # the id of the delivery being handled (None: on_start, asks)


_handling: contextvars.ContextVar[Handling | None] = contextvars.ContextVar(
    "kubelet_actors_handling", default=None)


def current() -> Handling | None:
    return _handling.get()


def enter(handling: Handling | None) -> Handling | None:
    """Make ``handling`` current; returns what was current before."""
    previous = _handling.get()
    _handling.set(handling)
    return previous
