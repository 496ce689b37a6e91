"""A trace as a readable terminal timeline (``kubelet-actors trace show``).

One line per handled delivery: the time since the trace started, the actor and its
incarnation, the message type with a short summary (what the message's plug-in says,
actors.app.tools.plugins), the sender and how long the handler ran. Under it, indented,
the runtime calls the handler made. Dead letters and handler errors are red; spawns,
restarts and supervisor decisions are highlighted lines.

The trace is indexed once (deliveries, handler ends and calls by delivery id) and then
streamed in record order. Lines are styled spans written straight to the console's file
(rich renders each style's escape codes once; no rich layout per line), so a trace of a
hundred thousand records shows in a couple of seconds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from rich.color import ColorSystem
from rich.console import Console
from rich.style import Style

from actors.app.tools.plugins import TOOLS, clip
from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import Trace

_HEX_ID = re.compile(r"^[0-9a-f]{32,}$")
_BATCH = 400
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_COLOR_SYSTEMS = {"standard": ColorSystem.STANDARD, "256": ColorSystem.EIGHT_BIT,
                  "truecolor": ColorSystem.TRUECOLOR, "windows": ColorSystem.WINDOWS}


class Text:
    """One output line: text spans, each with an optional rich style name."""

    __slots__ = ("spans",)

    def __init__(self, text: str = "", style: str | None = None) -> None:
        self.spans: list[tuple[str, str | None]] = [(text, style)] if text else []

    def append(self, text: str, style: str | None = None) -> None:
        self.spans.append((text, style))

    def append_text(self, other: Text) -> None:
        self.spans.extend(other.spans)

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.spans)


# --- summaries (shared with actors.app.tools.perfetto) -----------------------------------


def short_type(type_name: str) -> str:
    """A recorded type as people read it: its registered name (old module paths mapped)."""
    return MESSAGES.short(type_name)


def _get(value: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def short_id(value: str) -> str:
    """A container or sandbox id (or a sha256: digest) as its first 12 hex characters."""
    if value.startswith("sha256:") and _HEX_ID.match(value[7:]):
        return value[:19]
    return value[:12] if _HEX_ID.match(value) else value


def actor_label(name: str, pod_names: dict[str, str] | None = None) -> str:
    """A pod's actor as its address cut to the UID's first 8 characters, with the pod's
    name (``pod/1a2b3c4d:web``); other actors as they are."""
    uid = TOOLS.pod_of(name)
    if uid is None:
        return name
    label = name[: len(name) - len(uid) + 8]
    pod_name = (pod_names or {}).get(name)
    return f"{label}:{pod_name}" if pod_name else label


def summarize(type_name: str, body: Any) -> str:
    """A one-line summary of a recorded message (its plug-in's, else its plain fields)."""
    return TOOLS.summarize(type_name, body)


def _arg_summary(arg: Any) -> str:
    if isinstance(arg, str):
        return short_id(arg) if arg else '""'
    if isinstance(arg, int | float | bool) or arg is None:
        return str(arg)
    if isinstance(arg, dict):
        name = _get(arg, "metadata", "name")
        if name:
            return str(name)
        if "image" in arg and isinstance(arg["image"], str):
            return str(arg["image"])
        if "id" in arg and isinstance(arg["id"], str):
            return short_id(arg["id"])
        return "{…}"
    if isinstance(arg, list):
        return f"[{len(arg)}]"
    return "…"


def call_args(args: Any) -> str:
    """The arguments of a runtime call, short: names, image refs, id prefixes."""
    if not isinstance(args, list):
        return ""
    return clip(", ".join(_arg_summary(a) for a in args), 70)


def call_result(record: dict[str, Any]) -> str:
    error = record.get("error")
    if error is not None:
        if isinstance(error, dict):
            return clip(f"{error.get('type', 'error')}: {error.get('detail', '')}", 90)
        return clip(str(error), 90)
    result = record.get("result")
    if isinstance(result, list):
        return f"ok ({len(result)} items)"
    if isinstance(result, str) and result:
        return f"ok {short_id(result)}"
    return "ok"


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "unfinished"
    if seconds >= 1:
        return f"{seconds:.2f}s"
    return f"{seconds * 1000:.1f}ms"


# --- the index --------------------------------------------------------------------------


@dataclass(slots=True)
class TraceIndex:
    """Records of a trace by delivery id, and the time the trace starts."""

    start: float
    end: float
    msgs: dict[int, dict[str, Any]] = field(default_factory=dict)
    begins: dict[int, dict[str, Any]] = field(default_factory=dict)
    ends: dict[int, dict[str, Any]] = field(default_factory=dict)
    calls: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    pod_names: dict[str, str] = field(default_factory=dict)  # a pod's actor -> pod name

    def label(self, actor: str) -> str:
        return actor_label(actor, self.pod_names)


def index_trace(trace: Trace) -> TraceIndex:
    records = trace.records
    first = records[0]["m"] if records else 0.0
    start = trace.header.get("m", first)
    if not isinstance(start, int | float) or start > first:
        start = first
    index = TraceIndex(float(start), float(records[-1]["m"]) if records else float(start))
    for record in records:
        kind = record.get("k")
        m = record.get("m", 0.0)
        if m > index.end:
            index.end = m
        if kind == "msg":
            index.msgs[record["id"]] = record
            to = record.get("to", "")
            uid = TOOLS.pod_of(to)
            if uid is not None and to not in index.pod_names:
                # A pod actor is labelled with its pod's name, as the messages it gets
                # name the pod (the plug-in's pods hook).
                name = next((pod.name for pod in TOOLS.pods_in(record.get("type", ""),
                                                               record.get("body"))
                             if pod.uid == uid and pod.name), None)
                if name:
                    index.pod_names[to] = name
        elif kind == "begin":
            index.begins.setdefault(record["id"], record)
        elif kind == "end":
            index.ends.setdefault(record["id"], record)
        elif kind == "call" and record.get("in") is not None:
            index.calls.setdefault(record["in"], []).append(record)
    return index


# --- pods -------------------------------------------------------------------------------


class PodMatcher:
    """Whether a record concerns one pod, given by name (or namespace/name) or UID prefix."""

    def __init__(self, trace: Trace, query: str) -> None:
        self.query = query
        name_query = query.rsplit("/", 1)[-1]
        pairs: set[tuple[str, str]] = set()
        for record in trace.records:
            kind = record.get("k")
            if kind == "msg":
                pairs.update(TOOLS.pods_in(record.get("type", ""), record.get("body")))
                for who in (record.get("to", ""), record.get("from", "")):
                    if (uid := TOOLS.pod_of(who)) is not None:
                        pairs.add(("", uid))
            elif (kind in ("spawn", "begin")
                  and (uid := TOOLS.pod_of(str(record.get("actor", "")))) is not None):
                pairs.add(("", uid))
        uids = {u for n, u in pairs if u.startswith(query) or (n and n == name_query)}
        names = {n for n, u in pairs if n and u in uids}
        self.uids = uids
        self.names = names
        self.actors = {a for u in uids if (a := TOOLS.actor_of(u)) is not None}
        needles = [u.encode() for u in uids] + [f'"{n}"'.encode() for n in names]
        if not needles:
            needles = [query.encode()]
        self._needles = needles

    def actor(self, name: str) -> bool:
        if self.actors:
            return name in self.actors
        uid = TOOLS.pod_of(name)
        return uid is not None and uid.startswith(self.query)

    def mentions(self, *values: Any) -> bool:
        for value in values:
            if value is None:
                continue
            try:
                data = msgspec.json.encode(value)
            except (TypeError, msgspec.EncodeError):
                data = repr(value).encode()
            if any(needle in data for needle in self._needles):
                return True
        return False

    def call(self, record: dict[str, Any]) -> bool:
        return self.mentions(record.get("args"), record.get("result"), record.get("error"))


# --- showing ----------------------------------------------------------------------------


@dataclass(slots=True)
class Filters:
    pod: PodMatcher | None = None
    actor: str | None = None
    types: frozenset[str] = frozenset()
    since: float | None = None
    until: float | None = None

    def actor_ok(self, *names: str) -> bool:
        if self.actor is None:
            return True
        return any(n == self.actor or (n and n.startswith(self.actor)) for n in names)

    def type_ok(self, type_name: str) -> bool:
        if not self.types:
            return True
        return type_name.lower() in self.types or short_type(type_name).lower() in self.types

    def time_ok(self, rel: float) -> bool:
        return (self.since is None or rel >= self.since) and (
            self.until is None or rel <= self.until)


def _who(index: TraceIndex, actor: str, inc: Any) -> str:
    label = index.label(actor)
    return f"{label}[{inc}]" if isinstance(inc, int) and inc >= 0 else label


def _time(rel: float) -> Text:
    return Text(f"{rel:10.3f}s ", style="dim")


def _call_line(record: dict[str, Any], indent: str) -> Text:
    failed = record.get("error") is not None
    line = Text(indent)
    line.append("↳ ", style="dim")
    target = record.get("target", "runtime")
    line.append(f"{target}." if target != "runtime" else "", style="dim")
    line.append(str(record.get("method", "?")), style="cyan")
    line.append(f"({call_args(record.get('args'))})")
    line.append(f" {duration_text(record.get('dur'))} ", style="dim")
    line.append(call_result(record), style="bold red" if failed else "green")
    return line


class _Printer:
    def __init__(self, console: Console, limit: int | None) -> None:
        self.console = console
        self.limit = limit
        self.shown = 0
        self._batch: list[Text] = []
        color = console.color_system
        self._color = None if console.no_color or color is None else _COLOR_SYSTEMS.get(color)
        self._styles: dict[str, tuple[str, str]] = {}

    def _styled(self, text: str, style: str | None) -> str:
        if _CONTROL.search(text):
            text = _CONTROL.sub(" ", text)
        if style is None or self._color is None:
            return text
        codes = self._styles.get(style)
        if codes is None:
            rendered = Style.parse(style).render("\0", color_system=self._color)
            before, _, after = rendered.partition("\0")
            codes = self._styles[style] = (before, after)
        return f"{codes[0]}{text}{codes[1]}"

    def write(self, lines: Iterable[Text]) -> None:
        out = "".join(
            "".join(self._styled(text, style) for text, style in line.spans) + "\n"
            for line in lines)
        self.console.file.write(out)

    @property
    def full(self) -> bool:
        return self.limit is not None and self.shown >= self.limit

    def entry(self, lines: Iterable[Text]) -> None:
        self.shown += 1
        self._batch.extend(lines)
        if len(self._batch) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        if self._batch:
            self.write(self._batch)
            self._batch = []
        self.console.file.flush()


def show(
    trace: Trace,
    pod: str | None = None,
    actor: str | None = None,
    types: Sequence[str] = (),
    since: float | None = None,
    until: float | None = None,
    limit: int | None = None,
    console: Console | None = None,
) -> int:
    """Print the timeline of ``trace``; returns how many entries it printed."""
    console = console or Console(highlight=False)
    index = index_trace(trace)
    filters = Filters(
        pod=PodMatcher(trace, pod) if pod else None,
        actor=actor or None,
        types=frozenset(t.lower() for t in types),
        since=since,
        until=until,
    )
    printer = _Printer(console, limit)
    _print_header(trace, index, filters, printer)
    start = index.start
    handled: set[int] = set()
    for record in trace.records:
        if printer.full:
            break
        kind = record.get("k")
        rel = record.get("m", start) - start
        if kind == "begin":
            handled.add(record["id"])
            if filters.time_ok(rel):
                lines = _delivery(record, index, filters, rel)
                if lines:
                    printer.entry(lines)
        elif kind == "msg" and record.get("dead"):
            if filters.time_ok(rel) and _message_ok(record, filters):
                printer.entry([_dead_letter(index, record, rel)])
        elif kind in ("spawn", "decision"):
            if filters.time_ok(rel) and _event_ok(record, filters):
                printer.entry([_event_line(index, record, rel)])
        elif (kind == "call" and record.get("in") is None and filters.time_ok(rel)
              and _loose_call_ok(record, filters)):
            line = _time(rel)
            line.append(_who(index, str(record.get("actor") or "(outside actors)"),
                             record.get("inc")), style="bold")
            line.append(" (outside a handler) ", style="dim")
            line.append_text(_call_line(record, ""))
            printer.entry([line])
    if not printer.full:
        for id, msg in index.msgs.items():
            if printer.full:
                break
            if id in handled or msg.get("dead"):
                continue
            rel = msg.get("m", start) - start
            if filters.time_ok(rel) and _message_ok(msg, filters):
                printer.entry([_unhandled(index, msg, rel)])
    printer.flush()
    return printer.shown


def _print_header(trace: Trace, index: TraceIndex, filters: Filters, printer: _Printer) -> None:
    header = trace.header
    files = ", ".join(str(f) for f in trace.files[:3]) + (" …" if len(trace.files) > 3 else "")
    line = Text(f"trace {files}: {len(trace.records)} records, "
                f"{index.end - index.start:.3f}s", style="bold")
    if header.get("pid"):
        line.append(f", pid {header['pid']}")
    lines = [line]
    if filters.pod is not None:
        found = ", ".join(sorted(filters.pod.names | filters.pod.uids)) or "nothing known"
        lines.append(Text(f"pod {filters.pod.query!r}: {found}", style="dim"))
    lines.extend(Text(f"warning: {torn}", style="yellow") for torn in trace.torn)
    lines.extend(Text(f"note: {note}", style="yellow") for note in trace.notes())
    printer.write(lines)


def _message_ok(msg: dict[str, Any], filters: Filters) -> bool:
    if not filters.type_ok(str(msg.get("type", ""))):
        return False
    if not filters.actor_ok(str(msg.get("to", "")), str(msg.get("from", ""))):
        return False
    pod = filters.pod
    return pod is None or (pod.actor(str(msg.get("to", ""))) or pod.actor(str(msg.get("from", "")))
                           or pod.mentions(msg.get("body")))


def _event_ok(record: dict[str, Any], filters: Filters) -> bool:
    if filters.types and not filters.type_ok(str(record["k"])):
        return False
    name = str(record.get("actor", ""))
    if not filters.actor_ok(name):
        return False
    pod = filters.pod
    return pod is None or pod.actor(name) or pod.mentions(record.get("detail"))


def _loose_call_ok(record: dict[str, Any], filters: Filters) -> bool:
    if filters.types and not filters.type_ok("call"):
        return False
    if not filters.actor_ok(str(record.get("actor", ""))):
        return False
    pod = filters.pod
    return pod is None or pod.actor(str(record.get("actor", ""))) or pod.call(record)


def _delivery(begin: dict[str, Any], index: TraceIndex, filters: Filters,
              rel: float) -> list[Text] | None:
    id = begin["id"]
    msg = index.msgs.get(id, {})
    actor = str(begin.get("actor", msg.get("to", "?")))
    type_name = str(msg.get("type", "?"))
    if not filters.type_ok(type_name) or not filters.actor_ok(actor):
        return None
    calls = index.calls.get(id, [])
    pod = filters.pod
    if pod is not None:
        direct = (pod.actor(actor) or pod.actor(str(msg.get("from", "")))
                  or pod.mentions(msg.get("body")))
        if not direct:
            calls = [c for c in calls if pod.call(c)]
            if not calls:
                return None
    end = index.ends.get(id)
    error = end.get("error") if end else None
    duration = end["m"] - begin["m"] if end else None
    line = _time(rel)
    line.append(_who(index, actor, begin.get("inc")), style="bold")
    line.append(" ")
    line.append(short_type(type_name), style="bold red" if error else "bold blue")
    summary = summarize(type_name, msg.get("body"))
    if summary:
        line.append(f" {summary}")
    line.append(f"  ← {index.label(msg.get('from') or '-')}", style="dim")
    line.append(f"  {duration_text(duration)}", style="yellow" if duration is None else "dim")
    line.append(f"  #{id}", style="dim")
    lines = [line]
    indent = " " * 14
    lines.extend(_call_line(c, indent) for c in calls)
    if error:
        lines.append(Text(f"{indent}✗ handler failed: {error}", style="bold red"))
    return lines


def _dead_letter(index: TraceIndex, msg: dict[str, Any], rel: float) -> Text:
    type_name = str(msg.get("type", "?"))
    line = _time(rel)
    line.append(f"dead letter {short_type(type_name)}", style="bold red")
    summary = summarize(type_name, msg.get("body"))
    if summary:
        line.append(f" {summary}", style="red")
    line.append(f"  {index.label(msg.get('from') or '-')} → {index.label(msg.get('to', '?'))}"
                " (no such actor)", style="red")
    line.append(f"  #{msg.get('id')}", style="dim")
    return line


def _unhandled(index: TraceIndex, msg: dict[str, Any], rel: float) -> Text:
    type_name = str(msg.get("type", "?"))
    line = _time(rel)
    line.append(_who(index, str(msg.get("to", "?")), msg.get("inc")), style="bold")
    line.append(f" {short_type(type_name)}", style="yellow")
    summary = summarize(type_name, msg.get("body"))
    if summary:
        line.append(f" {summary}")
    line.append(f"  ← {index.label(msg.get('from') or '-')}  never handled (queued when the"
                " trace ended, or dropped with a failed actor)", style="yellow")
    line.append(f"  #{msg.get('id')}", style="dim")
    return line


def _event_line(index: TraceIndex, record: dict[str, Any], rel: float) -> Text:
    line = _time(rel)
    actor = index.label(str(record.get("actor", "?")))
    if record["k"] == "spawn":
        inc = record.get("inc", 0)
        if isinstance(inc, int) and inc > 0:
            line.append(f"⟳ restart {actor}[{inc}]", style="bold yellow")
        else:
            line.append(f"+ spawn {actor}[{inc}]", style="green")
        return line
    what = str(record.get("what", "?"))
    style = "bold magenta" if is_escalation(what) else "bold yellow"
    line.append(f"◆ supervisor: {what} {actor}", style=style)
    detail = record.get("detail")
    if isinstance(detail, dict) and detail:
        text = " ".join(f"{k}={clip(str(v), 50)}" for k, v in detail.items())
        line.append(f"  {clip(text, 120)}", style="dim")
    return line


def is_escalation(what: str) -> bool:
    """Whether a supervisor decision gives up or escalates (versus restarting one child)."""
    lowered = what.lower()
    return any(word in lowered for word in ("escalat", "give", "gave", "stop", "shutdown"))
