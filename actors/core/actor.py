"""The base of every actor: named, addressed through Dispatch, supervised by its parent.

Pykka stops an actor for good when a tell handler raises and drops its queued tells; an
Actor reports that to the supervisor that started it (ChildFailed, with the queued mail)
so it can be replaced.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import pykka
from loguru import logger

from actors.core import context
from actors.core.dispatch import Dispatch
from actors.core.envelope import Envelope
from actors.core.messages import ChildFailed
from actors.core.pykka_compat import StartReportingActor


class Actor(StartReportingActor):
    """An actor with a name, an incarnation number and a parent to report failures to."""

    def __init__(self, name: str, dispatch: Dispatch, incarnation: int = 0) -> None:
        super().__init__()
        self.name = name
        self.dispatch = dispatch
        self.incarnation = incarnation
        if dispatch.recorder is not None:
            dispatch.recorder.spawn(name, incarnation)

    def send(self, to: str, message: object) -> bool:
        return self.dispatch.tell(to, message, sender=self.name)

    @property
    def parent(self) -> str | None:
        """The supervisor that started this incarnation (None for a root actor)."""
        return self.dispatch.parent_of(self.name)

    def before_start(self) -> None:
        faults = self.dispatch.faults
        if faults is not None:
            faults.starting(self.name, self.incarnation)

    def on_receive(self, message: Any) -> Any:
        delivery: int | None = None
        if isinstance(message, Envelope):
            delivery, message = message.id, message.message
        previous = context.enter(context.Handling(self.name, self.incarnation, delivery))
        recorder = self.dispatch.recorder if delivery is not None else None
        if recorder is not None and delivery is not None:
            recorder.begin(delivery, self.name, self.incarnation)
        error: BaseException | None = None
        faults = self.dispatch.faults
        try:
            if faults is None:
                return self.handle(message)
            armed = faults.delivery(self.name, self.incarnation, message)
            result = self.handle(message)
            if armed is not None:
                faults.finish(armed)
            return result
        except BaseException as err:
            error = err
            raise
        finally:
            if faults is not None:
                faults.leave()
            context.enter(previous)
            if recorder is not None and delivery is not None:
                recorder.end(delivery, self.name, self.incarnation, error)

    def handle(self, message: Any) -> Any:
        """Subclasses: act on one message."""
        logger.warning("{} got a message it does not handle: {}", self.name, type(message))
        return None

    def on_failure(
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        logger.opt(exception=(exception_type, exception_value, traceback)).error(
            "actor {} (incarnation {}) failed", self.name, self.incarnation
        )
        parent = self.parent
        # Unregister first: from here on a tell to the name is a dead letter (which the
        # supervisor holds for the restart), so nothing lands in the mailbox after the drain.
        self.dispatch.unregister(self.name, self.actor_ref)
        pending = self._drain_mailbox()
        if parent is not None:
            self.send(parent, ChildFailed(self.name, self.incarnation, repr(exception_value),
                                          pending))

    def _drain_mailbox(self) -> tuple[object, ...]:
        """Take what pykka would drop: the queued tells, in order (asks get ActorDeadError)."""
        pending: list[object] = []
        while not self.actor_inbox.empty():  # only this thread takes from it
            queued = self.actor_inbox.get()
            message, reply_to = queued.message, queued.reply_to
            if reply_to is not None:
                dead = pykka.ActorDeadError(f"{self.name} failed before handling the message")
                reply_to.set_exception(exc_info=(type(dead), dead, None))
                continue
            if isinstance(message, Envelope):
                message = message.message
            if type(message).__module__.startswith("pykka"):
                continue  # a stop or proxy call for the dead incarnation
            pending.append(message)
        return tuple(pending)
