"""Stable names for the message types a trace records.

A trace names each message's type so a replay can rebuild it and the trace tools can
summarize it. A module path would tie every trace on disk to where a class lives today;
a registered name does not: a class can move or be renamed and keep its name. Plug-ins
register their messages (``register`` or the ``message`` decorator); names older traces
used are converted as a trace is read (actors.core.trace.compat).

A type nobody registered is still recorded, under its module path, so a toy actor in a
test can be traced; the kubelet's messages are all registered.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


class MessageNames:
    """Registered name <-> message class."""

    def __init__(self) -> None:
        self._classes: dict[str, type] = {}
        self._names: dict[type, str] = {}
        self._carries: dict[type, tuple[str, ...]] = {}

    def register(self, name: str, cls: type, carries: tuple[str, ...] = ()) -> None:
        """Record ``cls`` under ``name``; a name or a class is registered once.

        ``carries`` names fields that hold other messages (typed ``object``, or a tuple of
        them): JSON keeps only their content, so a trace also records their types.
        """
        if "." in name:
            raise ValueError(f"message name {name!r}: a registered name has no dots "
                             "(dots are how unregistered types are written)")
        known = self._classes.get(name)
        if known is not None and known is not cls:
            raise ValueError(f"message name {name!r} is taken by {known.__qualname__}")
        other = self._names.get(cls)
        if other is not None and other != name:
            raise ValueError(f"{cls.__qualname__} is registered as {other!r} already")
        self._classes[name] = cls
        self._names[cls] = name
        if carries:
            self._carries[cls] = carries

    def carried(self, value: object) -> dict[str, str | list[str]]:
        """The type names of the messages ``value`` carries, by field (empty: none)."""
        out: dict[str, str | list[str]] = {}
        for field in self._carries.get(type(value), ()):
            inner = getattr(value, field)
            out[field] = ([self.name_of(v) for v in inner] if isinstance(inner, tuple)
                          else self.name_of(inner))
        return out

    def name_of(self, value: object) -> str:
        """What a trace calls ``value``'s type."""
        cls = type(value)
        name = self._names.get(cls)
        return name if name is not None else f"{cls.__module__}.{cls.__qualname__}"

    def short(self, recorded: str) -> str:
        """A recorded type as people read it: the registered name, else the class name."""
        return recorded.rsplit(".", 1)[-1]

    def resolve(self, recorded: str) -> type:
        """The class a trace's type name stands for; LookupError if this code has none."""
        name = recorded
        cls = self._classes.get(name)
        if cls is not None:
            return cls
        module, _, qualname = name.rpartition(".")
        if not module:
            raise LookupError(f"no message type is registered as {name!r}")
        try:
            found: Any = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError) as err:
            raise LookupError(f"{name}: {err}") from err
        if not isinstance(found, type):
            raise LookupError(f"{name} is not a class")
        return found

    def names(self) -> dict[str, type]:
        return dict(self._classes)


MESSAGES = MessageNames()
"""The process's registry: the framework's messages and every plug-in's."""


def message(name: str, carries: tuple[str, ...] = ()) -> Callable[[T], T]:
    """Class decorator: register a message type under ``name`` (outermost decorator)."""

    def register(cls: T) -> T:
        MESSAGES.register(name, cls, carries)
        return cls

    return register
