"""The records a trace file holds, as the writer makes them (actors.core.trace.writer).

One msgspec Struct per kind, tagged by ``k``: a hook builds its record in one C call, and
the writer thread encodes a whole batch of them in another (``encode_lines``), where
building dicts key by key and encoding them one by one cost more than the rest of
recording. A field at ``UNSET`` is left out of the line (``carried`` and ``interned``
when there is nothing to say, ``error`` or ``result`` of a call, ``error`` of an end),
so the lines are the JSON objects the reader always read (actors.core.trace.reader).
Records are not tracked by the garbage collector (``gc=False``: nothing refers back to a
record, so it is never in a cycle): thousands a second would otherwise bring on
collections of the daemon's whole heap more often.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType


class MsgRecord(msgspec.Struct, tag_field="k", tag="msg", gc=False):
    """A delivery or dead letter: ``type`` and the ``body`` are filled in by the writer."""

    id: int
    from_: str = msgspec.field(name="from")
    seq: int
    to: str
    inc: int
    parent: int | None
    dead: bool
    type: str
    body: Any
    t: float
    m: float
    carried: dict[str, Any] | UnsetType = UNSET
    interned: dict[str, Any] | UnsetType = UNSET


class BeginRecord(msgspec.Struct, tag_field="k", tag="begin", gc=False):
    id: int
    actor: str
    inc: int
    t: float
    m: float


class EndRecord(msgspec.Struct, tag_field="k", tag="end", gc=False):
    id: int
    actor: str
    inc: int
    t: float
    m: float
    error: str | UnsetType = UNSET


class CallRecord(msgspec.Struct, tag_field="k", tag="call", gc=False):
    """A call of an outside service; the writer fills in ``error`` or ``result``."""

    target: str
    method: str
    args: tuple[Any, ...]
    dur: float
    actor: str
    inc: int
    in_: int | None = msgspec.field(name="in")
    t: float
    m: float
    result: Any = UNSET
    error: Any = UNSET
    interned: dict[str, Any] | UnsetType = UNSET


class InputRecord(msgspec.Struct, tag_field="k", tag="input", gc=False):
    name: str
    value: Any
    actor: str
    inc: int
    in_: int | None = msgspec.field(name="in")
    t: float
    m: float


class SpawnRecord(msgspec.Struct, tag_field="k", tag="spawn", gc=False):
    actor: str
    inc: int
    t: float
    m: float


class DecisionRecord(msgspec.Struct, tag_field="k", tag="decision", gc=False):
    actor: str
    what: str
    detail: dict[str, Any]
    t: float
    m: float


class ValueRecord(msgspec.Struct, tag_field="k", tag="val", gc=False):
    """A large value, once per file (actors.core.trace.interning); ``value``: its JSON."""

    id: int
    value: msgspec.Raw


HookRecord = (MsgRecord | BeginRecord | EndRecord | CallRecord | InputRecord | SpawnRecord
              | DecisionRecord)
"""What a recorder's hook makes: each with its times ``t`` and ``m``."""
Record = HookRecord | ValueRecord
