"""What the trace tools ask of the program a trace comes from: summaries, waits, pods.

The timeline (``trace show``) and the Perfetto export know records, actors and the
framework's own messages, not what a program's messages mean. A program says that here,
per message class, by registering hooks with ``TOOLS`` (once, when its plug-in module is
imported; the CLI imports the plug-ins before it shows or exports a trace):

  summary   the message in one line: the timeline's entry, the export's ``summary`` arg
  waits     what the message's sender now waits for (a requeue, a back-off), as
            ``Wait`` values: the export draws each as a span
  pods      the pods (``PodRef``) the message concerns: ``trace show --pod`` follows them

and, once, how its actors map to pods (``pod_actors``): which actor serves a pod, and
which pod an actor serves, so the tools label and filter pod actors without spelling
their addresses.

A hook gets the message as its class, rebuilt from the recorded body with
``msgspec.convert(body, MESSAGES.resolve(type))``, so it reads typed fields and parses no
text. A message whose type this code does not know, whose class has no hook, or whose
body does not convert (recorded by other code) gets the generic summary (its plain fields
as key=value), no waits and no pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import msgspec

from actors.core.messages import ChildExited, ChildFailed, DeadLetter, RestartChild, Stop, Tick
from actors.core.trace.names import MESSAGES

M = TypeVar("M")


class PodRef(NamedTuple):
    """A pod a message concerns: its name ("" when the message does not say) and UID."""

    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class Wait:
    """A wait a message announces for its sender, from the moment it was sent.

    ``lane`` names the span's track next to the sender's ("back-off", "back-off app"): waits
    on one lane follow each other, a new one cutting the one before. ``name`` is the span's
    title; ``args`` are shown with it.
    """

    lane: str
    seconds: float
    name: str
    args: Mapping[str, object] = field(default_factory=dict)


Summarizer = Callable[[Any], str]
WaitsHook = Callable[[Any], Iterable[Wait]]
PodsHook = Callable[[Any], Iterable[PodRef]]


def clip(text: str, width: int = 60) -> str:
    """``text`` cut to ``width`` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def generic_summary(body: Any) -> str:
    """A message body as its plain fields, key=value, when nobody says better."""
    if not isinstance(body, dict):
        return clip(str(body)) if body is not None else ""
    parts = [f"{k}={clip(str(v), 24)}" for k, v in body.items()
             if isinstance(v, str | int | float | bool) and v not in ("", None)]
    return clip(" ".join(parts))


class TraceTools:
    """The hooks registered per message class, and the tools' questions answered by them."""

    def __init__(self) -> None:
        self._summaries: dict[type, Summarizer] = {}
        self._waits: dict[type, WaitsHook] = {}
        self._pods: dict[type, PodsHook] = {}
        self._pod_of: Callable[[str], str | None] = lambda actor: None
        self._actor_of: Callable[[str], str] | None = None

    # --- registering ------------------------------------------------------------------

    def summary(self, cls: type[M]) -> Callable[[Callable[[M], str]], Callable[[M], str]]:
        """Decorator: ``hook(message) -> str`` summarizes messages of ``cls``."""

        def register(hook: Callable[[M], str]) -> Callable[[M], str]:
            _register(self._summaries, "summary", cls, hook)
            return hook

        return register

    def waits(self, cls: type[M]) -> Callable[[Callable[[M], Iterable[Wait]]],
                                              Callable[[M], Iterable[Wait]]]:
        """Decorator: ``hook(message) -> Iterable[Wait]`` for messages of ``cls``."""

        def register(hook: Callable[[M], Iterable[Wait]]) -> Callable[[M], Iterable[Wait]]:
            _register(self._waits, "waits", cls, hook)
            return hook

        return register

    def pods(self, cls: type[M]) -> Callable[[Callable[[M], Iterable[PodRef]]],
                                             Callable[[M], Iterable[PodRef]]]:
        """Decorator: ``hook(message) -> Iterable[PodRef]`` for messages of ``cls``."""

        def register(hook: Callable[[M], Iterable[PodRef]]) -> Callable[[M], Iterable[PodRef]]:
            _register(self._pods, "pods", cls, hook)
            return hook

        return register

    def pod_actors(self, pod_of: Callable[[str], str | None],
                   actor_of: Callable[[str], str]) -> None:
        """``pod_of(actor)``: the UID of the pod an actor serves (None: not a pod's);
        ``actor_of(uid)``: the address of the actor serving a pod."""
        self._pod_of, self._actor_of = pod_of, actor_of

    # --- asking -----------------------------------------------------------------------

    def pod_of(self, actor: str) -> str | None:
        """The UID of the pod ``actor`` serves, if it serves one."""
        return self._pod_of(actor)

    def actor_of(self, uid: str) -> str | None:
        """The address of the actor that serves pod ``uid`` (None: no plug-in says)."""
        return self._actor_of(uid) if self._actor_of is not None else None

    def summarize(self, type_name: str, body: Any) -> str:
        """A one-line summary of a recorded message."""
        found = self._typed(self._summaries, type_name, body)
        if found is None:
            return generic_summary(body)
        hook, message = found
        return hook(message)

    def waits_in(self, type_name: str, body: Any) -> list[Wait]:
        """The waits a recorded message announces for its sender."""
        found = self._typed(self._waits, type_name, body)
        return list(found[0](found[1])) if found is not None else []

    def pods_in(self, type_name: str, body: Any) -> list[PodRef]:
        """The pods a recorded message concerns."""
        found = self._typed(self._pods, type_name, body)
        return list(found[0](found[1])) if found is not None else []

    @staticmethod
    def _typed(hooks: Mapping[type, Callable[[Any], M]], type_name: str,
               body: Any) -> tuple[Callable[[Any], M], object] | None:
        """The hook for a recorded message's class, with the message rebuilt as that class.

        The class is found first and the body converted only when it has a hook: a
        timeline of a long trace asks about every record.
        """
        try:
            cls = MESSAGES.resolve(type_name)
        except LookupError:
            return None
        hook = next((hooks[base] for base in cls.__mro__ if base in hooks), None)
        if hook is None:
            return None
        try:
            return hook, msgspec.convert(body, cls)
        except (msgspec.ValidationError, TypeError):
            return None  # recorded by code whose message had another shape


def _register(table: dict[type, Callable[[Any], Any]], what: str, cls: type,
              hook: Callable[[Any], Any]) -> None:
    known = table.get(cls)
    if known is not None and known is not hook:
        raise ValueError(f"{cls.__qualname__} has a {what} hook already: "
                         f"{known.__qualname__}")
    table[cls] = hook


TOOLS = TraceTools()
"""The process's hooks: the framework's (below) and every plug-in's."""


# --- the framework's own messages ---------------------------------------------------------


@TOOLS.summary(Tick)
def _tick(message: Tick) -> str:
    return message.kind


@TOOLS.summary(ChildFailed)
def _child_failed(message: ChildFailed) -> str:
    return f"{message.name}[{message.incarnation}]: " + clip(message.error)


@TOOLS.summary(ChildExited)
def _child_exited(message: ChildExited) -> str:
    return f"{message.name}[{message.incarnation}]: {message.reason}"


@TOOLS.summary(RestartChild)
def _restart_child(message: RestartChild) -> str:
    return f"{message.name}[{message.incarnation}]"


@TOOLS.summary(DeadLetter)
def _dead_letter(message: DeadLetter) -> str:
    return f"{message.sender or '-'} → {message.to}"


@TOOLS.summary(Stop)
def _stop(message: Stop) -> str:
    return message.reason
