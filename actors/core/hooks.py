"""The framework's declared seams: what a recorder sees and where faults may be injected.

Every hook the framework calls is declared here with a no-op default (as trio declares
its Instrument), so a recorder implements what it cares about and the framework never
probes for a method. A Dispatch is given its recorder and its fault hooks when it is made;
actors and supervisors reach them through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Recorder:
    """Sees what the actor system does; every hook does nothing unless overridden.

    Hooks run on the thread that acted (any actor's, the timers', a pool's), so an
    implementation only enqueues and never blocks.
    """

    def delivery(self, id: int, sender: str, sender_seq: int, receiver: str,
                 incarnation: int, parent: int | None, message: object, dead: bool) -> None:
        """A message was put in ``receiver``'s mailbox (or, ``dead``, had nowhere to go)."""

    def begin(self, id: int, actor: str, incarnation: int) -> None:
        """``actor`` began handling delivery ``id``."""

    def end(self, id: int, actor: str, incarnation: int, error: BaseException | None) -> None:
        """``actor`` finished handling delivery ``id`` (``error``: the handler raised)."""

    def spawn(self, actor: str, incarnation: int) -> None:
        """An actor (or a new incarnation of one) was made."""

    def input(self, name: str, value: object) -> None:
        """A handler read ``value`` from outside its messages (a clock, a flag)."""

    def decision(self, actor: str, what: str, detail: Mapping[str, Any]) -> None:
        """A supervisor decided something (restart, not restarted, escalate)."""

    def call(self, target: str, method: str, args: tuple[Any, ...], duration: float,
             result: object, error: BaseException | None) -> None:
        """A handler called ``method`` of an outside service (``target``: which one)."""


class FaultHooks(Protocol):
    """Where a fault plan (the drills') may make an actor fail; see actors.core.faults."""

    def delivery(self, actor: str, incarnation: int, message: object) -> object | None:
        """A handler begins: raise now, or return a token armed for later (or None)."""

    def finish(self, armed: object) -> None:
        """The handler armed by ``delivery`` returned."""

    def leave(self) -> None:
        """The handler ended, however it ended."""

    def starting(self, actor: str, incarnation: int) -> None:
        """``actor`` is about to run on_start: raise to make the start fail."""
