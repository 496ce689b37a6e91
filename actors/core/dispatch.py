"""The one delivery point: every message between actors, and every timer firing, passes here.

Actors are named ("cache", "worker/7", ...) and addressed by name, so a
replaced actor receives what is sent to its name after it is registered again. A message
to a name with no live actor is a dead letter: counted, logged and handed to the
dead-letter hook. A recorder (for traces) sees every delivery.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pykka
from loguru import logger
from msgspec import Struct

from actors.core import context
from actors.core.envelope import Envelope
from actors.core.hooks import FaultHooks, Recorder

ActorRef = pykka.ActorRef[Any]
"""A started actor's reference, whatever the actor's class."""


class Registration(Struct, frozen=True):
    ref: ActorRef
    incarnation: int


class Dispatch:
    """Named actor registry and delivery point."""

    def __init__(self, recorder: Recorder | None = None,
                 faults: FaultHooks | None = None) -> None:
        self._actors: dict[str, Registration] = {}
        self._parents: dict[str, str] = {}
        self._lock = threading.Lock()
        self._next_id = 0
        self._sender_seq: Counter[str] = Counter()  # per sender, while recording
        # Both None unless tracing or drilling: then a delivery costs one test each.
        self.recorder = recorder
        self.faults = faults
        self.dead_letters: Counter[str] = Counter()
        # Dead letters nobody redelivered or dropped by rule (drills assert it stays empty).
        self.dead_letters_unhandled: Counter[str] = Counter()
        self.delivered: Counter[str] = Counter()
        # Called with (sender, to, message); returning True claims the message (a
        # supervisor holds it for a restart), so it is not counted as a dead letter here.
        self.on_dead_letter: Callable[[str, str, object], bool | None] | None = None

    def register(self, name: str, ref: ActorRef, incarnation: int = 0) -> None:
        """Address ``name`` to ``ref`` (a new incarnation replaces the old one)."""
        with self._lock:
            self._actors[name] = Registration(ref, incarnation)

    def adopt(self, name: str, parent: str | None) -> None:
        """Record the supervisor that starts ``name`` (None: forget it).

        Recorded before the child's first start, so a child that fails in its very
        first moment (before its ref is registered) still knows whom to tell.
        """
        with self._lock:
            if parent is None:
                self._parents.pop(name, None)
                # Its supervisor forgot it (a pod worker whose pod is gone): so does the
                # sequence of what it sent, or every pod ever seen would keep a count.
                self._sender_seq.pop(name, None)
            else:
                self._parents[name] = parent

    def parent_of(self, name: str) -> str | None:
        """The supervisor ``name`` reports its failures to (None: a root actor)."""
        with self._lock:
            return self._parents.get(name)

    def unregister(self, name: str, ref: ActorRef | None = None) -> None:
        """Forget ``name`` (only if it still points at ``ref``, when given)."""
        with self._lock:
            current = self._actors.get(name)
            if current is not None and (ref is None or current.ref is ref):
                del self._actors[name]

    def ref(self, name: str) -> ActorRef | None:
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
            seq = 0
            if self.recorder is not None:  # only a trace reads it
                seq = self._sender_seq[sender] = self._sender_seq[sender] + 1
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
        if self.recorder is not None:
            self.recorder.input(name, value)
        return value

    def mailbox_depths(self, group: Callable[[str], str] = str) -> dict[str, int]:
        """Messages waiting per actor, summed by ``group(name)`` (e.g. one line for a
        whole family of dynamic children)."""
        with self._lock:
            entries = list(self._actors.items())
        depths: Counter[str] = Counter()
        for name, entry in entries:
            # pykka declares an inbox by put/get/empty; a thread actor's is a queue.Queue.
            inbox: Any = entry.ref.actor_inbox
            depths[group(name)] += inbox.qsize()
        return dict(depths)
