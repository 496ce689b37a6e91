"""Supervision with Erlang/OTP semantics on pykka (which has none).

A supervisor owns children declared by ``ChildSpec`` and restarts them by its
``SupervisorSpec``:

- restart type: ``permanent`` children are always restarted, ``transient`` ones only after
  an abnormal exit (an exception: ``ChildFailed``; a ``ChildExited`` is normal), and
  ``temporary`` ones never;
- strategy: ``one_for_one`` restarts the child that failed; ``rest_for_one`` stops every
  child started after it (in reverse start order, each within its shutdown timeout) and
  starts them again in start order; ``one_for_all`` does that with every child. Dynamic
  children (``add``, OTP's simple_one_for_one) are always restarted on
  their own and never take part in a group restart;
- intensity: more than ``max_restarts`` restart events within ``within`` seconds (one
  event per failure, however many children it restarts, dynamic ones included) and the
  supervisor gives up: it stops every child (reverse start order) and then itself, with
  the reason logged; a nested supervisor reports that reason to its parent as a failure;
- back-off: the n-th consecutive restart of a child waits ``backoff_initial * 2**(n-1)``
  capped at ``backoff_max``, +-``backoff_jitter`` of it drawn from an injected
  ``random.Random``; a child that ran ``reset_after`` seconds without failing starts
  again from the first step. A delayed restart is a ``RestartChild`` timer to the
  supervisor, never a sleep;
- work in flight: a failed child's queued tells (``ChildFailed.pending``) and the tells to
  its name while it is down (dead letters, held here) are delivered to the next
  incarnation in order, except what the restart makes redundant: of several ``Tick``s of
  one kind only the newest, and whatever the spec's ``redundant`` predicate names (e.g.
  updates that the supervisor's rebuild message supersedes);
- shutdown: children stop in reverse start order, each given its ``shutdown_timeout``; one
  that does not stop in time is logged and abandoned;
- hand-over: a child may tell its supervisor a ``HandOver`` (a value, see its docstring);
  the newest of its current incarnation is kept, and a restart of a child whose spec has
  ``resume`` starts the next incarnation with ``resume(incarnation, state)`` instead of
  ``start``. What was handed over is recorded as a ``hand-over`` decision just before the
  successor is made, so a replay builds that successor from the trace alone.

All time is the injected clock's, except the shutdown wait, which waits on the child's
thread (a real event; the wait is injectable).
"""

from __future__ import annotations

import collections
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import ActorRef, Dispatch
from actors.core.messages import (
    ChildExited,
    ChildFailed,
    DeadLetter,
    HandOver,
    RestartChild,
    Tick,
)
from actors.core.timers import Cancellable, Timers
from runtime.clock import Clock

RestartType = Literal["permanent", "transient", "temporary"]
Strategy = Literal["one_for_one", "rest_for_one", "one_for_all"]
StartChild = Callable[[int], ActorRef]  # incarnation -> a started actor
WaitStopped = Callable[[ActorRef, float], bool]  # (ref, timeout) -> stopped in time
ResumeChild = Callable[[int, object], ActorRef]  # (incarnation, hand-over) -> a started actor

HAND_OVER = "hand-over"
"""The decision recorded as a successor is made from a hand-over (detail: child,
incarnation, state); a replay reads it back (actors.core.trace.replay)."""

CHILD_SHUTDOWN_TIMEOUT = 10.0
HELD_LIMIT = 10_000  # dead letters held per child while it is down
RETIRED_LIMIT = 4096  # names remembered as stopped on purpose


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """How to start one child and what to do when it stops."""

    name: str
    start: StartChild
    restart: RestartType = "permanent"
    shutdown_timeout: float = 5.0
    # Queued or held messages the next incarnation does not need (its rebuild covers them).
    redundant: Callable[[object], bool] | None = None
    # How to start an incarnation > 0 from what the previous one handed over (HandOver);
    # None: the child's hand-overs are dropped and every incarnation starts with ``start``.
    resume: ResumeChild | None = None


@dataclass(frozen=True, slots=True)
class SupervisorSpec:
    strategy: Strategy = "one_for_one"
    max_restarts: int = 10  # OTP's MaxR ...
    within: float = 60.0  # ... within MaxT seconds
    backoff_initial: float = 0.0
    backoff_max: float = 30.0
    backoff_jitter: float = 0.0  # 0..1, a fraction of the delay
    reset_after: float = 60.0


@dataclass(slots=True)
class _Child:
    spec: ChildSpec
    dynamic: bool
    ref: ActorRef | None = None  # None while stopped (failed, or waiting for a restart)
    incarnation: int = 0
    started_at: float = 0.0
    consecutive: int = 0  # restarts in a row, for the back-off
    reported: bool = False  # its failure or exit was reported and handled
    held: list[object] = field(default_factory=list)
    timer: Cancellable | None = None  # a delayed restart with this child at its head
    group: tuple[str, ...] = ()  # what that restart starts, in start order
    handed_over: object = None  # the newest HandOver state (None: none yet)


@dataclass(slots=True)
class SupervisionStats:
    restarts: int = 0
    redelivered: int = 0
    dropped: collections.Counter[str] = field(default_factory=collections.Counter)
    abandoned: list[str] = field(default_factory=list)


def default_wait_stopped(ref: ActorRef, timeout: float) -> bool:
    return bool(ref.actor_stopped.wait(timeout=timeout))


def backoff_delay(spec: SupervisorSpec, n: int, rng: random.Random) -> float:
    """The delay before the ``n``-th consecutive restart (n >= 1)."""
    if spec.backoff_initial <= 0:
        return 0.0
    base = min(spec.backoff_initial * 2 ** (n - 1), spec.backoff_max)
    if spec.backoff_jitter > 0:
        base *= 1.0 + spec.backoff_jitter * float(rng.uniform(-1.0, 1.0))
    return max(float(base), 0.0)


class Supervision:
    """The engine: runs on its owner's thread (every method is called from its handlers)."""

    def __init__(
        self,
        owner: str,
        spec: SupervisorSpec,
        dispatch: Dispatch,
        timers: Timers,
        clock: Clock,
        rng: random.Random | None = None,
        on_restarted: Callable[[str, int], None] | None = None,
        on_give_up: Callable[[str], None] | None = None,
        wait_stopped: WaitStopped = default_wait_stopped,
    ) -> None:
        self.owner = owner
        self.spec = spec
        self._dispatch = dispatch
        self._timers = timers
        self._clock = clock
        self._rng = rng or random.Random(0)
        self._on_restarted = on_restarted
        self._on_give_up = on_give_up
        self._wait_stopped = wait_stopped
        self._children: dict[str, _Child] = {}  # in start order (dicts keep it)
        self._restarts: collections.deque[tuple[float, str]] = collections.deque()
        self._retired: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._previous_hook: Callable[[str, str, object], bool | None] | None = None
        self.running = False
        self.gave_up: str | None = None
        self.stats = SupervisionStats()

    def _decide(self, what: str, **detail: Any) -> None:
        """Put a supervision decision in the trace, when one is recorded."""
        if self._dispatch.recorder is not None:
            self._dispatch.recorder.decision(self.owner, what, detail)

    # --- starting and stopping ---------------------------------------------------------

    def start(self, specs: list[ChildSpec]) -> None:
        """Install the dead-letter hook, then start ``specs`` in order."""
        self._previous_hook = self._dispatch.on_dead_letter
        self._dispatch.on_dead_letter = self._dead_letter_hook
        self.running = True
        for spec in specs:
            self._add(spec, dynamic=False)

    def add(self, spec: ChildSpec) -> ActorRef | None:
        """Start a dynamic child (simple_one_for_one); returns its ref."""
        return self._add(spec, dynamic=True).ref

    def _add(self, spec: ChildSpec, dynamic: bool) -> _Child:
        if spec.name in self._children:
            raise ValueError(f"{self.owner}: a child named {spec.name} exists already")
        self._retired.pop(spec.name, None)
        self._dispatch.adopt(spec.name, self.owner)
        child = self._children[spec.name] = _Child(spec, dynamic)
        self._start(child)
        return child

    def _start(self, child: _Child) -> None:
        resume, state = child.spec.resume, child.handed_over
        if resume is not None and state is not None and child.incarnation > 0:
            self._decide(HAND_OVER, child=child.spec.name, incarnation=child.incarnation,
                         state=state)
            child.ref = resume(child.incarnation, state)
        else:
            child.ref = child.spec.start(child.incarnation)
        child.started_at = self._clock.monotonic()
        child.reported = False
        self._dispatch.register(child.spec.name, child.ref, child.incarnation)

    def remove(self, name: str, reason: str = "removed", wait: bool = False) -> None:
        """Stop a child on purpose and forget it (no restart); late mail to it is dropped."""
        child = self._children.pop(name, None)
        if child is None:
            return
        self._retire(name, reason)
        if child.timer is not None:
            child.timer.cancel()
        self._count_lost(child, child.held, unhandled=False)
        child.held.clear()
        if child.ref is not None:
            self._stop(child, wait=wait)

    def _stop(self, child: _Child, wait: bool = True) -> bool:
        """Unregister the child, then ask it to stop (after the mail it already has)."""
        ref, child.ref = child.ref, None
        child.reported = True  # stopped on purpose: a late failure report of it is stale
        if ref is None:
            return True
        self._dispatch.unregister(child.spec.name, ref)
        try:
            ref.stop(block=False)
        except Exception:  # already dead
            return True
        if not wait:
            return True
        return self._await_stop(child.spec.name, ref, child.spec.shutdown_timeout)

    def _await_stop(self, name: str, ref: ActorRef, timeout: float) -> bool:
        if self._wait_stopped(ref, timeout):
            return True
        logger.error("{}: {} did not stop within {:g} s: abandoned", self.owner, name, timeout)
        self.stats.abandoned.append(name)
        return False

    def stop_all(self) -> None:
        """Stop every child in reverse start order: dynamic ones together, then each
        static one within its shutdown timeout."""
        if not self.running:
            return
        self.running = False
        if self._dispatch.on_dead_letter == self._dead_letter_hook:
            self._dispatch.on_dead_letter = self._previous_hook
        children = list(reversed(self._children.values()))
        for child in children:
            if child.timer is not None:
                child.timer.cancel()
        dynamic = [(c.spec, c.ref) for c in children if c.dynamic and c.ref is not None]
        for child in children:
            if child.dynamic and child.ref is not None:
                self._stop(child, wait=False)
        for spec, ref in dynamic:
            self._await_stop(spec.name, ref, spec.shutdown_timeout)
        for child in children:
            if not child.dynamic and child.ref is not None:
                self._stop(child)
        for name in self._children:
            self._dispatch.adopt(name, None)
        self._children.clear()

    # --- failures ----------------------------------------------------------------------

    def failed(self, report: ChildFailed) -> None:
        self._exited(report.name, report.incarnation, report.error, report.pending)

    def exited(self, report: ChildExited) -> None:
        self._exited(report.name, report.incarnation, None, ())

    def _exited(self, name: str, incarnation: int, error: str | None,
                pending: tuple[object, ...]) -> None:
        child = self._children.get(name)
        if child is None or child.incarnation != incarnation or child.reported:
            # An incarnation already replaced (or stopped in a group restart): its mail
            # goes to the name, where the current one (or the hold) takes it.
            for message in pending:
                self._dispatch.tell(name, message, sender=self.owner)
            return
        child.reported = True
        if child.ref is not None:
            self._dispatch.unregister(name, child.ref)
            child.ref = None
        child.held[:0] = pending  # the queue at failure came before anything held since
        how = f"failed: {error}" if error is not None else "exited"
        restart = child.spec.restart
        if restart == "temporary" or (restart == "transient" and error is None):
            logger.info("{}: {} ({}) {}; not restarted", self.owner, name, restart, how)
            self._decide("not-restarted", child=name, restart=restart, exit=how)
            self._children.pop(name)
            self._retire(name, f"{restart} child {how}")
            self._count_lost(child, child.held, unhandled=error is not None)
            return
        now = self._clock.monotonic()
        self._restarts.append((now, name))
        while self._restarts and now - self._restarts[0][0] > self.spec.within:
            self._restarts.popleft()
        if len(self._restarts) > self.spec.max_restarts:
            self.give_up(self._intensity_reason(name, error or "a normal exit"))
            return
        if now - child.started_at >= self.spec.reset_after:
            child.consecutive = 0
        child.consecutive += 1
        group = self._group(child)
        for other in reversed(group[1:]):
            sibling = self._children[other]
            if sibling.ref is not None:
                self._stop(sibling)
            elif sibling.timer is not None:  # its own delayed restart is now part of ours
                sibling.timer.cancel()
                sibling.timer = None
        child.group = tuple(group)
        delay = backoff_delay(self.spec, child.consecutive, self._rng)
        logger.warning("{}: {} {}; restart #{} {}", self.owner, name, how, child.consecutive,
                       f"in {delay:.2f} s" if delay > 0 else "now")
        if len(group) > 1:
            logger.warning("{}: {} restarts {} with it", self.owner, self.spec.strategy,
                           ", ".join(group[1:]))
        self._decide("restart", child=name, exit=how, attempt=child.consecutive, delay=delay,
                     group=list(group), strategy=self.spec.strategy)
        if delay > 0:
            child.timer = self._timers.once(delay, self.owner, RestartChild(name, incarnation))
        else:
            self._restart(child)

    def _group(self, child: _Child) -> list[str]:
        """The children a restart of ``child`` stops and starts, in start order."""
        if child.dynamic or self.spec.strategy == "one_for_one":
            return [child.spec.name]
        static = [n for n, c in self._children.items() if not c.dynamic]
        if self.spec.strategy == "one_for_all":
            static.remove(child.spec.name)
            return [child.spec.name, *static]
        return static[static.index(child.spec.name):]

    def restart_due(self, due: RestartChild) -> None:
        child = self._children.get(due.name)
        if child is None or child.incarnation != due.incarnation or child.ref is not None:
            return  # stale: removed, or restarted already
        if not self.running:
            return
        self._restart(child)

    def _restart(self, head: _Child) -> None:
        head.timer = None
        order = list(self._children)
        for name in sorted(head.group or (head.spec.name,), key=order.index):
            child = self._children.get(name)
            if child is None or child.ref is not None:
                continue
            child.incarnation += 1
            try:
                self._start(child)
            except Exception as err:  # the start itself failed: a failure like any other
                logger.opt(exception=err).error("{}: starting {} failed", self.owner, name)
                child.ref, child.reported = None, False
                self._exited(name, child.incarnation, repr(err), ())
                continue
            self.stats.restarts += 1
            logger.info("{}: {} restarted (incarnation {})", self.owner, name,
                        child.incarnation)
            held, child.held = child.held, []
            for message in self._filter(child, held):
                self.stats.redelivered += 1
                self._dispatch.tell(name, message, sender=self.owner)
            if self._on_restarted is not None:
                self._on_restarted(name, child.incarnation)
        head.group = ()

    def _filter(self, child: _Child, messages: list[object]) -> list[object]:
        """What the new incarnation needs of the old one's mail, in order."""
        last_tick: dict[str, int] = {}
        for i, message in enumerate(messages):
            if isinstance(message, Tick):
                last_tick[message.kind] = i
        keep: list[object] = []
        for i, message in enumerate(messages):
            stale_tick = isinstance(message, Tick) and last_tick[message.kind] != i
            if stale_tick or (child.spec.redundant is not None and child.spec.redundant(message)):
                self.stats.dropped[type(message).__name__] += 1
                continue
            keep.append(message)
        return keep

    def give_up(self, reason: str) -> None:
        """Escalate: stop every child, then let the owner stop (and tell its parent)."""
        if self.gave_up is not None:
            return
        self.gave_up = reason
        logger.error("{}", reason)
        self._decide("escalate", reason=reason)
        for child in self._children.values():
            self._count_lost(child, child.held, unhandled=True)
            child.held.clear()
        self.stop_all()
        if self._on_give_up is not None:
            self._on_give_up(reason)

    def _intensity_reason(self, name: str, error: str) -> str:
        names = collections.Counter(n for _, n in self._restarts)
        count, within = len(self._restarts), f"{self.spec.within:g} s"
        if len(names) == 1:
            what = f"{name} failed {count} times in {within}"
        else:
            parts = ", ".join(f"{n} {c}" for n, c in names.most_common())
            what = f"{count} restarts in {within} ({parts}), {name} last"
        return f"{self.owner}: {what} (last: {error}): giving up"

    # --- hand-overs ---------------------------------------------------------------------

    def handed_over(self, message: HandOver) -> None:
        """Keep the newest state a running child leaves its successor."""
        child = self._children.get(message.name)
        if child is None or child.spec.resume is None:
            logger.debug("{}: hand-over of {} dropped: no successor takes one", self.owner,
                         message.name)
            return
        if child.incarnation != message.incarnation:
            return  # a replaced incarnation's, sent as it stopped: its successor runs
        child.handed_over = message.state

    # --- dead letters ------------------------------------------------------------------

    def _dead_letter_hook(self, sender: str, to: str, message: object) -> bool | None:
        """On the sender's thread: claim a dead letter for the owner to hold or drop."""
        if not self.running or to == self.owner or isinstance(message, DeadLetter):
            return None
        if (to not in self._children and to not in self._retired
                and self._previous_hook is not None):
            return self._previous_hook(sender, to, message)
        return self._dispatch.tell(self.owner, DeadLetter(sender, to, message),
                                   sender="dispatch")

    def dead_letter(self, letter: DeadLetter) -> None:
        """Hold it while the child is down, pass it on if it is up again, else record it."""
        child = self._children.get(letter.to)
        kind = type(letter.message).__name__
        if child is not None:
            # Whether the child runs is read from the live actor: an input of this handler
            # (recorded, so a replay answers the same).
            if child.ref is not None and self._dispatch.observe("child.alive",
                                                                child.ref.is_alive()):
                self.stats.redelivered += 1
                self._dispatch.tell(letter.to, letter.message, sender=letter.sender)
            elif len(child.held) < HELD_LIMIT:
                child.held.append(letter.message)  # down: a restart (or its report) is coming
            else:
                self._record(kind, unhandled=True)
            return
        self._record(kind, unhandled=letter.to not in self._retired)

    def _count_lost(self, child: _Child, messages: list[object], unhandled: bool) -> None:
        for message in messages:
            self._record(type(message).__name__, unhandled)

    def _record(self, kind: str, unhandled: bool) -> None:
        self._dispatch.dead_letters[kind] += 1
        if unhandled:
            self._dispatch.dead_letters_unhandled[kind] += 1
        else:
            self.stats.dropped[kind] += 1

    def _retire(self, name: str, reason: str) -> None:
        self._dispatch.adopt(name, None)
        self._retired[name] = reason
        while len(self._retired) > RETIRED_LIMIT:
            self._retired.popitem(last=False)

    # --- inspection --------------------------------------------------------------------

    def names(self) -> list[str]:
        return list(self._children)

    def ref(self, name: str) -> ActorRef | None:
        child = self._children.get(name)
        return child.ref if child is not None else None

    def incarnation(self, name: str) -> int | None:
        child = self._children.get(name)
        return child.incarnation if child is not None else None

    def restart_pending(self, name: str) -> bool:
        child = self._children.get(name)
        return child is not None and child.ref is None


class SupervisorActor(Actor):
    """An actor that supervises children with a ``Supervision`` (subclass for more)."""

    def __init__(
        self,
        name: str,
        dispatch: Dispatch,
        timers: Timers,
        clock: Clock,
        spec: SupervisorSpec,
        children: list[ChildSpec],
        rng: random.Random | None = None,
        incarnation: int = 0,
        wait_stopped: WaitStopped = default_wait_stopped,
    ) -> None:
        super().__init__(name, dispatch, incarnation)
        self._child_specs = children
        self.supervision = Supervision(name, spec, dispatch, timers, clock, rng,
                                       self.child_restarted, self._give_up, wait_stopped)

    def on_start(self) -> None:
        # A nested supervisor is registered by its own parent; a root one registers itself.
        if self.dispatch.ref(self.name) is None:
            self.dispatch.register(self.name, self.actor_ref, self.incarnation)
        self.supervision.start(self._child_specs)

    def on_stop(self) -> None:
        self.supervision.stop_all()
        self.dispatch.unregister(self.name, self.actor_ref)

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        self.supervision.stop_all()  # nothing outlives its supervisor
        super().on_failure(exception_type, exception_value, traceback)

    def handle(self, message: Any) -> Any:
        if isinstance(message, ChildFailed):
            self.supervision.failed(message)
        elif isinstance(message, ChildExited):
            self.supervision.exited(message)
        elif isinstance(message, RestartChild):
            self.supervision.restart_due(message)
        elif isinstance(message, DeadLetter):
            self.supervision.dead_letter(message)
        elif isinstance(message, HandOver):
            self.supervision.handed_over(message)
        else:
            return super().handle(message)
        return None

    def child_restarted(self, name: str, incarnation: int) -> None:
        """Hook: ``name`` runs again; send it what rebuilds its state."""

    def _give_up(self, reason: str) -> None:
        parent = self.parent
        if parent is not None:
            self.send(parent, ChildFailed(self.name, self.incarnation, reason))
        self.dispatch.unregister(self.name, self.actor_ref)
        self.actor_ref.stop(block=False)
