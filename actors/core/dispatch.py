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

from actors.core import context
from actors.core.envelope import Envelope


class Recorder(Protocol):
    """Sees every delivery (and dead letter), in the order the mailboxes got them."""

    def delivery(
        self,
        id: int,
        sender: str,
        sender_seq: int,
        receiver: str,
        incarnation: int,
        parent: int | None,
        message: object,
        dead: bool,
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class Registration:
    ref: Any  # pykka.ActorRef; typed Any because pykka ships no type information
    incarnation: int


class Dispatch:
    """Named actor registry and delivery point."""

    def __init__(self, recorder: Recorder | None = None) -> None:
        self._actors: dict[str, Registration] = {}
        self._lock = threading.Lock()
        self._next_id = 0
        self._sender_seq: Counter[str] = Counter()
        self.recorder = recorder
        self.dead_letters: Counter[str] = Counter()
        # Dead letters nobody redelivered or dropped by rule (drills assert it stays empty).
        self.dead_letters_unhandled: Counter[str] = Counter()
        self.delivered: Counter[str] = Counter()
        # Called with (sender, to, message); returning True claims the message (a
        # supervisor holds it for a restart), so it is not counted as a dead letter here.
        self.on_dead_letter: Callable[[str, str, object], bool | None] | None = None

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
        """Deliver ``message`` to the actor named ``to``; False if it was a dead letter.

        The message travels in an Envelope with a delivery id. Putting it in the mailbox
        and recording it happen under one lock, so the recorded order of deliveries to an
        actor is the order its mailbox holds them (what replay relies on).
        """
        handling = context.current()
        parent = handling.delivery if handling is not None else None
        sender = sender or (handling.actor if handling is not None else "")
        with self._lock:
            self._next_id += 1
            delivery = self._next_id
            self._sender_seq[sender] += 1
            seq = self._sender_seq[sender]
            entry = self._actors.get(to)
            if entry is not None:
                try:
                    entry.ref.tell(Envelope(delivery, message))
                except pykka.ActorDeadError:
                    entry = None
            if self.recorder is not None:
                self.recorder.delivery(delivery, sender, seq, to,
                                       entry.incarnation if entry else -1, parent, message,
                                       dead=entry is None)
        kind = type(message).__name__
        if entry is None:
            hook = self.on_dead_letter
            if hook is not None and hook(sender, to, message) is True:
                return False
            self.dead_letters[kind] += 1
            logger.debug("dead letter {} from {} to {}", kind, sender or "-", to)
            return False
        self.delivered[kind] += 1
        return True

    def observe(self, name: str, value: Any) -> Any:
        """An input a handler reads from outside its messages (a flag, a random draw):
        recorded when tracing, so a replay can answer with the same value."""
        recorder: Any = self.recorder
        if recorder is not None and hasattr(recorder, "input"):
            recorder.input(name, value)
        return value

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
