"""The fields of an immutable value, whichever way its class is made.

Messages and the values they carry are frozen msgspec Structs (a class built in C in
microseconds, where a frozen slotted dataclass costs about half a millisecond of a start)
or frozen dataclasses. What takes a value apart without knowing its class (the trace's
interning, replay's rebuilding and comparing) asks here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import msgspec

V = TypeVar("V")


class ValueField(NamedTuple):
    """A field: its name, and how its default is made (None: it has none)."""

    name: str
    default: Callable[[], Any] | None


def value_fields(cls: type) -> tuple[ValueField, ...] | None:
    """The fields of a Struct or dataclass type, in order; None for any other type."""
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        return tuple(ValueField(f.name, _default(f.default, f.default_factory,
                                                 msgspec.NODEFAULT))
                     for f in msgspec.structs.fields(cls))
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        return tuple(ValueField(f.name, _default(f.default, f.default_factory,
                                                 dataclasses.MISSING))
                     for f in dataclasses.fields(cls))
    return None


def _default(default: Any, factory: Any, missing: object) -> Callable[[], Any] | None:
    if default is not missing:
        return lambda: default
    if factory is not missing:
        made: Callable[[], Any] = factory
        return made
    return None


def replace(value: V, **changes: Any) -> V:
    """A copy of the Struct or dataclass ``value`` with ``changes``, for code that holds
    values of both kinds."""
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.replace(value, **changes)
    copy: V = dataclasses.replace(value, **changes)  # type: ignore[type-var]
    return copy
