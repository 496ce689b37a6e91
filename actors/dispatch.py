"""The one delivery point: every message between actors, and every timer firing, passes here.

Actors are named ("supervisor", "pleg", "pod/<uid>", ...) and addressed by name, so a
replaced actor receives what is sent to its name after it is registered again. A message
to a name with no live actor is a dead letter: counted, logged and handed to the
dead-letter hook. A recorder (for traces) sees every delivery.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pykka
from loguru import logger


class Recorder(Protocol):
    """Sees every delivery, in the order the dispatch point made them."""

    def delivered(self, sender: str, receiver: str, incarnation: int, message: object) -> None:
        ...


@dataclass(frozen=True, slots=True)
class Registration:
    ref: Any  # pykka.ActorRef; typed Any because pykka ships no type information
    incarnation: int


class Dispatch:
    """Named actor registry and delivery point."""

    def __init__(self, recorder: Recorder | None = None) -> None:
        self._actors: dict[str, Registration] = {}
        self._lock = threading.Lock()
        self.recorder = recorder
        self.dead_letters: Counter[str] = Counter()
        self.delivered: Counter[str] = Counter()
        self.on_dead_letter: Callable[[str, str, object], None] | None = None

    def register(self, name: str, ref: Any, incarnation: int = 0) -> None:
        with self._lock:
            self._actors[name] = Registration(ref, incarnation)

    def unregister(self, name: str, ref: Any | None = None) -> None:
        """Forget ``name`` (only if it still points at ``ref``, when given)."""
        with self._lock:
            current = self._actors.get(name)
            if current is not None and (ref is None or current.ref is ref):
                del self._actors[name]

    def ref(self, name: str) -> Any | None:
        with self._lock:
            entry = self._actors.get(name)
        return entry.ref if entry else None

    def names(self, prefix: str = "") -> list[str]:
        with self._lock:
            return [n for n in self._actors if n.startswith(prefix)]

    def tell(self, to: str, message: object, sender: str = "") -> bool:
        """Deliver ``message`` to the actor named ``to``; False if it was a dead letter."""
        with self._lock:
            entry = self._actors.get(to)
        if entry is not None:
            try:
                entry.ref.tell(message)
            except pykka.ActorDeadError:
                entry = None
        if entry is None:
            kind = type(message).__name__
            self.dead_letters[kind] += 1
            logger.debug("dead letter {} from {} to {}", kind, sender or "-", to)
            if self.on_dead_letter is not None:
                self.on_dead_letter(sender, to, message)
            return False
        self.delivered[type(message).__name__] += 1
        if self.recorder is not None:
            self.recorder.delivered(sender, to, entry.incarnation, message)
        return True

    def mailbox_depths(self) -> dict[str, int]:
        """Messages waiting per actor (pod workers summed under "pod")."""
        with self._lock:
            entries = list(self._actors.items())
        depths: Counter[str] = Counter()
        for name, entry in entries:
            group = "pod" if name.startswith("pod/") else name
            try:
                depths[group] += entry.ref.actor_inbox.qsize()
            except AttributeError:
                depths[group] += 0
        return dict(depths)
