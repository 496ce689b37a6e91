"""A delivery: a message with the id the dispatch point gave it."""

from __future__ import annotations

from msgspec import Struct


class Envelope(Struct, frozen=True):
    """What actually travels through a mailbox: the delivery id, then the message."""

    id: int
    message: object
