"""The world as a replayed actor sees it: everything answers from the recording.

A Step holds what the recording says one handler did (messages sent, runtime calls made)
and read (clock and other inputs). The stubs check each action against it, in order, and
raise DivergenceFound at the first difference.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from actors.core.dispatch import Dispatch
from actors.core.trace.names import MESSAGES
from actors.core.trace.writer import encode
from actors.core.values import replace, value_fields

Record = dict[str, Any]


class World(Protocol):
    """What replay needs of the system whose trace it replays (its plug-in to core)."""

    def build(self, actor: str, incarnation: int, stubs: Stubs,
              handed_over: object = None) -> Any:
        """A fresh, unstarted instance of ``actor`` wired to ``stubs``; ``handed_over``:
        the recorded state its supervisor started it from (a HandOver's, as JSON), or None
        when it was started without one."""
        ...

    def replayable(self, actor: str) -> bool:
        """False for actors that read the outside world (their messages are inputs)."""
        ...

    def scratch_paths(self, config: Mapping[str, Any], scratch: str
                      ) -> tuple[tuple[str, str], ...]:
        """(scratch dir, recorded dir) pairs: where replayed handlers write instead."""
        ...

    def result_type(self, target: str, method: str) -> Any:
        """The type a call of ``target.method`` returns, to rebuild recorded answers."""
        ...

    def error_from(self, record: Record) -> Exception:
        """The exception a recorded call raised, rebuilt."""
        ...


@dataclass(slots=True)
class Stubs:
    """The world as a replayed actor sees it: all of it answers from the recording."""

    config: Mapping[str, Any]  # the trace header's config
    scratch: str  # a directory replayed handlers may write into
    dispatch: ReplayDispatch
    clock: ReplayClock
    timers: ReplayTimers
    answers: ReplayAnswers


def plain(value: object, paths: tuple[tuple[str, str], ...] = ()) -> Any:
    """A value as the JSON the recorder would have written for it.

    ``paths`` maps a replay's scratch directories back to the recorded node's, so a path
    an actor builds compares equal to the one it built when recorded.
    """
    data = encode(value)
    for scratch, original in paths:
        data = data.replace(scratch.encode(), original.encode())
    return msgspec.json.decode(data)


def short_type(name: str) -> str:
    return MESSAGES.short(name)


def known_keys_only(actual: Any, recorded: Any) -> Any:
    """``actual`` without the keys ``recorded`` lacks, at any depth (lists item by item).

    For traces written before TRACE_VERSION 2: a field the recording code did not have
    cannot be in its records, so a replay that encodes one is not diverging. Keys the
    recording has and the replay lacks, and every value, still count.
    """
    if isinstance(actual, dict) and isinstance(recorded, dict):
        return {key: known_keys_only(value, recorded[key])
                for key, value in actual.items() if key in recorded}
    if isinstance(actual, list) and isinstance(recorded, list):
        return [known_keys_only(a, r) for a, r in zip(actual, recorded, strict=False)] + \
            actual[len(recorded):]
    return actual


def without_added_defaults(actual: Any, recorded: Any, message: object,
                           paths: tuple[tuple[str, str], ...] = ()) -> Any:
    """``actual`` less the top-level fields the recording lacks that hold their default.

    The writer records every field of a message, so a field missing from a record did not
    exist in the code that recorded it. A build that added it with a default sends that
    default wherever the old code's behaviour is unchanged: not a divergence. A field that
    is absent from the recording but not at its default still is one.
    """
    if not (isinstance(actual, dict) and isinstance(recorded, dict)
            and (fields := value_fields(type(message))) is not None):
        return actual
    dropped = set()
    for f in fields:
        if f.name in recorded or f.name not in actual or f.default is None:
            continue
        if actual[f.name] == plain(f.default(), paths):
            dropped.add(f.name)
    return {k: v for k, v in actual.items() if k not in dropped}


class _Absent:
    """A side of a field comparison that has no value there (a key or item missing)."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()
"""The value of a field that one side of a divergence does not have."""


@dataclass(frozen=True, slots=True)
class FieldDiff:
    """One field where the recorded and the replayed value differ: ``path`` names it as a
    developer would write it (``body.status.phase``, ``args[0].labels.app``)."""

    path: str
    recorded: Any
    replayed: Any


def differing_fields(recorded: Any, replayed: Any, path: str = "") -> list[FieldDiff]:
    """The leaves where two JSON-like values differ, depth first in key order.

    Dicts are compared key by key and lists item by item, so a changed field shows as
    itself and not as the whole message; a key or item only one side has is ABSENT on the
    other. Values of different kinds (a dict against a string) are one difference.
    """
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        out: list[FieldDiff] = []
        for key in sorted(recorded.keys() | replayed.keys(), key=str):
            sub = f"{path}.{key}" if path else str(key)
            out += differing_fields(recorded.get(key, ABSENT), replayed.get(key, ABSENT), sub)
        return out
    if isinstance(recorded, list) and isinstance(replayed, list):
        out = []
        for i in range(max(len(recorded), len(replayed))):
            out += differing_fields(recorded[i] if i < len(recorded) else ABSENT,
                                    replayed[i] if i < len(replayed) else ABSENT,
                                    f"{path}[{i}]")
        return out
    if recorded != replayed:  # ABSENT equals nothing but itself
        return [FieldDiff(path or "(value)", recorded, replayed)]
    return []


def _cell(value: Any, width: int) -> str:
    """A value as a table cell: compact JSON, cut to ``width`` characters."""
    if value is ABSENT:
        text = "(absent)"
    elif isinstance(value, str):
        text = json.dumps(value)
    else:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def _headline(side: Any) -> str:
    """What a side of a divergence is, in a few words: a message's type and receiver, a
    call's target and method, or the value itself (an error, "no error")."""
    if side is None:
        return "nothing"
    if isinstance(side, dict):
        if "type" in side and "to" in side:
            return f"{side['type']} to {side['to']}"
        if "method" in side:
            return f"{side.get('target', 'runtime')}.{side['method']}(...)"
    return _cell(side, 80)


@dataclass(slots=True)
class Divergence:
    """Where replay first did something other than the recording."""

    delivery: int
    actor: str
    incarnation: int
    message: str  # the type of the delivery being handled
    sender: str
    sender_seq: int
    step: str
    expected: Any
    actual: Any
    chain: list[str] = field(default_factory=list)

    MAX_ROWS = 40  # a whole message replaced by another would list every field
    CELL = 60

    def fields(self) -> list[FieldDiff]:
        """The fields that differ between what was recorded and what replay produced; a
        side that is missing altogether (a message not sent) shows as ABSENT."""
        return differing_fields(ABSENT if self.expected is None else self.expected,
                                ABSENT if self.actual is None else self.actual)

    def describe(self) -> list[str]:
        """The report for a developer: the delivery being handled, what went wrong, what
        was expected and produced (their type and receiver, then field by field: path,
        recorded, replayed), and the chain of deliveries that led to it."""
        lines = [
            f"divergence at delivery #{self.delivery}: {self.actor} (incarnation "
            f"{self.incarnation}) handling {self.message} from {self.sender or '-'} "
            f"(sender seq {self.sender_seq})",
            f"  {self.step}",
            f"  recorded: {_headline(self.expected)}",
            f"  replayed: {_headline(self.actual)}",
        ]
        diffs = self.fields()
        shown = diffs[: self.MAX_ROWS]
        rows = [("field", "recorded", "replayed")] + [
            (d.path, _cell(d.recorded, self.CELL), _cell(d.replayed, self.CELL))
            for d in shown]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        for n, row in enumerate(rows):
            lines.append("  " + " | ".join(c.ljust(w) for c, w in zip(row, widths,
                                                                     strict=True)).rstrip())
            if n == 0:
                lines.append("  " + "-+-".join("-" * w for w in widths))
        if len(diffs) > len(shown):
            lines.append(f"  ... and {len(diffs) - len(shown)} more differing fields")
        if self.chain:
            lines.append("  caused by (newest first):")
            lines.extend(f"    {link}" for link in self.chain)
        return lines


class DivergenceFound(Exception):
    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.step)
        self.divergence = divergence


class Step:
    """One recorded handler run: its delivery, what it sent, called and read."""

    def __init__(self, msg: Record, sent: list[Record], calls: list[Record],
                 inputs: list[Record], paths: tuple[tuple[str, str], ...] = (),
                 known_keys: bool = False) -> None:
        self.msg = msg
        self.paths = paths
        # Compare only the keys the recording has (a version 1 trace: its code knew fewer
        # fields); see known_keys_only.
        self.known_keys = known_keys
        self._sent = list(sent)
        self._calls = list(calls)
        self._inputs: dict[str, list[Any]] = defaultdict(list)
        for record in inputs:
            self._inputs[record["name"]].append(record.get("value"))
        self._last: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.sent_count = 0
        self.call_count = 0

    def divergence(self, step: str, expected: Any, actual: Any) -> Divergence:
        m = self.msg
        return Divergence(m["id"], m["to"], m["inc"], short_type(m["type"]), m["from"],
                          m["seq"], step, expected, actual)

    def expect_send(self, to: str, message: object) -> None:
        self.sent_count += 1
        actual = {"to": to, "type": short_type(MESSAGES.name_of(message)),
                  "body": plain(message, self.paths)}
        if isinstance(message, dict | list) and self._sent:
            # A message carried in an ``object`` field (held mail, dead letters) comes back
            # from JSON without its class: its content is what can be compared.
            actual["type"] = short_type(self._sent[0]["type"])
        if not self._sent:
            raise DivergenceFound(self.divergence(
                f"message {self.sent_count} sent by the handler is not in the recording",
                None, actual))
        record = self._sent.pop(0)
        expected = {"to": record["to"], "type": short_type(record["type"]),
                    "body": record["body"]}
        if self.known_keys:
            actual["body"] = known_keys_only(actual["body"], record["body"])
        else:
            actual["body"] = without_added_defaults(actual["body"], record["body"], message,
                                                    self.paths)
        if expected != actual:
            what = (f"recorded {expected['type']} to {expected['to']}, replayed "
                    f"{actual['type']} to {actual['to']}")
            if (expected["type"], expected["to"]) == (actual["type"], actual["to"]):
                what = f"same {actual['type']} to {actual['to']}, different content"
            raise DivergenceFound(self.divergence(
                f"message {self.sent_count} sent by the handler differs: {what}",
                expected, actual))

    def expect_call(self, target: str, method: str, args: tuple[Any, ...]) -> Record:
        """The recorded answer to this call.

        Calls are matched by content, first unanswered one first: a handler may fan out
        to threads (parallel kills) whose calls reach the runtime in any order.
        """
        with self._lock:
            self.call_count += 1
            actual = {"target": target, "method": method, "args": plain(args, self.paths)}
            for i, record in enumerate(self._calls):
                expected = {"target": record.get("target", "runtime"),
                            "method": record["method"], "args": record["args"]}
                compared = actual
                if self.known_keys:
                    compared = {**actual, "args": known_keys_only(actual["args"], record["args"])}
                if expected == compared:
                    return self._calls.pop(i)
            if not self._calls:
                raise DivergenceFound(self.divergence(
                    f"runtime call {self.call_count} is not in the recording", None, actual))
            record = self._calls[0]
            expected = {"target": record.get("target", "runtime"),
                        "method": record["method"], "args": record["args"]}
            raise DivergenceFound(self.divergence(
                f"runtime call {self.call_count} differs from what the recording has next: "
                f"recorded {record['method']}, replayed {method}", expected, actual))

    def read_input(self, name: str, default: Any) -> Any:
        queue = self._inputs.get(name)
        if queue:
            self._last[name] = queue.pop(0)
        return self._last.get(name, default)

    def finish(self) -> None:
        if self._sent:
            record = self._sent[0]
            raise DivergenceFound(self.divergence(
                f"the handler did not send message {self.sent_count + 1}",
                {"to": record["to"], "type": short_type(record["type"]),
                 "body": record["body"]}, None))
        if self._calls:
            record = self._calls[0]
            raise DivergenceFound(self.divergence(
                f"the handler did not make runtime call {self.call_count + 1}",
                {"method": record["method"], "args": record["args"]}, None))


class _Holder:
    """Shared by the stubs: the step being replayed."""

    step: Step | None = None

    def current(self) -> Step:
        if self.step is None:
            raise RuntimeError("replay stub used outside a replayed handler")
        return self.step


class ReplayDispatch(Dispatch, _Holder):
    """Checks every message a handler sends; delivers nothing."""

    def __init__(self) -> None:
        super().__init__(recorder=None)
        self.step = None

    def tell(self, to: str, message: object, sender: str = "") -> bool:
        self.current().expect_send(to, message)
        return True

    def observe(self, name: str, value: Any) -> Any:
        return self.step.read_input(name, value) if self.step else value


class ReplayAnswers(_Holder):
    """An interceptor (runtime.cri.intercept) that never proceeds: every call of the
    replayed handler is checked against the recording and answered with what it got.

    ``world`` rebuilds a recorded answer (its type) and a recorded error.
    """

    def __init__(self, world: World) -> None:
        self.step = None
        self._world = world

    def around(self, target: str, method: str, args: tuple[Any, ...],
               proceed: Callable[[], Any]) -> Any:
        record = self.current().expect_call(target, method, args)
        if "error" in record:
            raise self._world.error_from(record["error"])
        result_type = self._world.result_type(target, method)
        if result_type is None or result_type is type(None):
            return None
        return msgspec.convert(record.get("result"), result_type)


class Unreachable:
    """What stands behind ReplayAnswers: nothing is ever called through to it."""


def recorded_error(record: Record) -> Exception:
    """An exception of the recorded one's name (a bug, an injected fault), so the handler
    and the comparison of its outcome see what they saw when recorded."""
    name = str(record.get("type", "Exception"))
    recorded: type[Exception] = type(name, (Exception,), {})
    return recorded(str(record.get("detail", "")))


class ReplayClock(_Holder):
    """Virtual time: every read returns what the recorded handler read."""

    def __init__(self, monotonic: float, wall: float) -> None:
        self.step = None
        self._mono = monotonic
        self._wall = wall

    def now(self) -> float:
        return float(self.step.read_input("clock.now", self._wall) if self.step else self._wall)

    def monotonic(self) -> float:
        if self.step is None:
            return self._mono
        return float(self.step.read_input("clock.monotonic", self._mono))

    def sleep(self, seconds: float) -> None:
        if self.step is not None:
            self.step.read_input("clock.sleep", seconds)


class _Handle:
    def cancel(self) -> None:
        return None


class ReplayTimers:
    """Timers that never fire: their ticks are recorded deliveries already."""

    def every(self, kind: str, to: str, period: float, first: float | None = None) -> _Handle:
        return _Handle()

    def once(self, delay: float, to: str, message: object) -> _Handle:
        return _Handle()


class InertExecutor(Executor):
    """Runs nothing: in a replay, what pool threads did comes back as recorded messages."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        return Future()


def _rebuild(type_name: str, body: Any) -> Any:
    return msgspec.convert(body, MESSAGES.resolve(type_name))


def decode_message(record: Record) -> object:
    """Rebuild the recorded message as the Python value the handler got, with the messages
    it carries (held mail, dead letters) rebuilt as their own types, not as their JSON: a
    handler may test their type (a supervisor drops redundant held mail by type)."""
    try:
        message = _rebuild(record["type"], record["body"])
        for name, types in record.get("carried", {}).items():
            body = record["body"][name]
            value = (tuple(map(_rebuild, types, body)) if isinstance(types, list)
                     else _rebuild(types, body))
            message = replace(message, **{name: value})
        return message
    except (LookupError, msgspec.ValidationError, TypeError) as err:
        step = Step(record, [], [], [])
        raise DivergenceFound(step.divergence(
            f"the recorded {record['type']} cannot be rebuilt by this code: {err}",
            record["body"], None)) from err
