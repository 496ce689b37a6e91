"""Large values written once per trace file, and referred to by a value id after that.

A pod's whole spec travels in many messages (the source's snapshot, UpdatePod, every
PodObserved of its worker), and a relist answers with the same containers second after
second: written out in full each time, they are most of a trace's bytes. The writer puts
such a value in a ``val`` record the first time a file holds it, and in later records
leaves ``null`` in its place and names it in the record's ``interned`` field:
``{"body.pod": 3}`` (a record key, then keys inside it), or a list of ids for a tuple,
with ``null`` for the items written in place. The reader puts the values back, so what
reads a trace (replay, ``trace show``, the timeline page) sees every record whole, as a
trace written before interning (format version 2) has it.

Messages and what they carry are immutable (tuples, frozen dataclasses and Structs): such a
large value already encoded is known by its identity (held here, so its id is not reused)
and is not encoded again; a mutable one (a dict, a list) is encoded each time and found by
its content. Each file has its own ids and writes its own values, so any file of a trace
can be read without the ones before it. What the writer holds is bounded (the values it
saw last, by count and by bytes): a value it has let go is written again when it comes
back, under a new id.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from actors.core.values import value_fields

INTERN_MIN_BYTES = 256
"""A value smaller than this is written in place: a reference would save little."""
_KNOWN_VALUES = 1024
"""How many large values the writer keeps by identity (the most recently seen)."""
_KNOWN_BYTES = 8 * 1024 * 1024
"""How many bytes of values the writer remembers its file holds (the most recently used)."""

Encode = Callable[[object], bytes]
_ATOMIC = frozenset({str, int, float, bool, type(None), bytes})
"""Types whose values are never worth a reference (and cost nothing to write in place)."""


class UnknownValue(LookupError):
    """A record refers to a value id its file does not hold."""


class Interner:
    """The writer's side: which values its current file holds, and their ids."""

    def __init__(self, encode: Encode) -> None:
        self._encode = encode
        self._by_identity: OrderedDict[int, tuple[object, bytes]] = OrderedDict()
        self._ids: OrderedDict[bytes, int] = OrderedDict()
        self._id_bytes = 0
        self._next_id = 0
        self._field_names: dict[type, tuple[str, ...] | None] = {}
        self._frozen_types: dict[type, bool] = {}
        self.pending: list[tuple[int, bytes]] = []
        """Values new to the file, for the writer to put before the record using them."""

    def new_file(self) -> None:
        """A new file starts: it holds no value yet."""
        self._ids.clear()
        self._id_bytes = self._next_id = 0

    def _encoded(self, value: object) -> bytes:
        if not self._frozen(type(value)):
            return self._encode(value)
        key = id(value)
        known = self._by_identity.get(key)
        if known is not None and known[0] is value:
            self._by_identity.move_to_end(key)
            return known[1]
        data = self._encode(value)
        if len(data) >= INTERN_MIN_BYTES:
            self._by_identity[key] = (value, data)
            if len(self._by_identity) > _KNOWN_VALUES:
                self._by_identity.popitem(last=False)
        return data

    def _id(self, value: object) -> int | None:
        """The id of ``value`` in the current file (written now if new), or None: small."""
        if type(value) in _ATOMIC:
            return None
        data = self._encoded(value)
        if len(data) < INTERN_MIN_BYTES:
            return None
        ids = self._ids
        vid = ids.get(data)
        if vid is not None:
            ids.move_to_end(data)
            return vid
        self._next_id += 1
        vid = ids[data] = self._next_id
        self._id_bytes += len(data)
        while self._id_bytes > _KNOWN_BYTES:
            self._id_bytes -= len(ids.popitem(last=False)[0])
        self.pending.append((vid, data))
        return vid

    def _frozen(self, cls: type) -> bool:
        """Whether values of ``cls`` cannot change (so one seen before is not encoded again):
        tuples, frozen dataclasses and frozen msgspec Structs, as messages are made."""
        frozen = self._frozen_types.get(cls)
        if frozen is None:
            params = getattr(cls, "__dataclass_params__", None)
            config = getattr(cls, "__struct_config__", None)
            frozen = self._frozen_types[cls] = (
                issubclass(cls, tuple) or (params is not None and bool(params.frozen))
                or (config is not None and bool(config.frozen)))
        return frozen

    def value(self, value: object) -> tuple[object, int | None]:
        """``value`` as a record holds it: (None, its id) if interned, else (it, None)."""
        vid = self._id(value)
        return (None, vid) if vid is not None else (value, None)

    def message(self, message: object, interned: dict[str, Any]) -> object:
        """A message's body with its large fields interned (noted in ``interned``): the
        message itself when it has none."""
        names = self._names(message)
        if names is None:
            return message
        body: dict[str, Any] | None = None
        for name in names:
            field = getattr(message, name)
            kind = type(field)
            if kind in _ATOMIC:
                continue
            value: Any
            if kind is tuple:
                ids = [self._id(item) for item in field]
                if ids.count(None) == len(ids):
                    continue
                interned[f"body.{name}"] = ids
                value = [None if i is not None else item for item, i in zip(field, ids,
                                                                            strict=True)]
            else:
                vid = self._id(field)
                if vid is None:
                    continue
                interned[f"body.{name}"] = vid
                value = None
            if body is None:
                body = {n: getattr(message, n) for n in names}
            body[name] = value
        return message if body is None else body

    def _names(self, message: object) -> tuple[str, ...] | None:
        """A message type's fields, if a dict of them encodes as the message does (checked
        on the type's first message); None: the message is written as it is."""
        cls = type(message)
        if cls in self._field_names:
            return self._field_names[cls]
        names: tuple[str, ...] | None = None
        fields = value_fields(cls)
        if fields is not None:
            names = tuple(f.name for f in fields)
            if self._encode({n: getattr(message, n) for n in names}) != self._encode(message):
                names = None  # a type with an encoding of its own: not taken apart
        self._field_names[cls] = names
        return names


def resolve(record: dict[str, Any], values: dict[int, bytes],
            decode: Callable[[bytes], Any]) -> None:
    """Put the interned values of ``record`` back in place (from its file's ``values``)."""
    interned: dict[str, Any] = record.pop("interned")
    for path, ids in interned.items():
        *parents, key = path.split(".")
        holder: Any = record
        for parent in parents:
            holder = holder[parent]
        if isinstance(ids, list):
            items = holder[key]
            for index, vid in enumerate(ids):
                if vid is not None:
                    items[index] = decode(_value(values, vid))
        else:
            holder[key] = decode(_value(values, ids))


def _value(values: dict[int, bytes], vid: int) -> bytes:
    try:
        return values[vid]
    except KeyError:
        raise UnknownValue(f"value {vid} is not in this file before the record using it"
                           ) from None
