"""A trace as the timeline page's data: compact column arrays (``trace html``, /debug/timeline).

The page (actors.app.tools.timeline_page) draws lanes, spans and message arrows on a
canvas; what it draws comes from here, built on the Perfetto export's events
(actors.app.tools.perfetto.perfetto_events) so that a handler run, a runtime call, a
back-off and a message's send and receive points sit where Perfetto puts them:

  lanes     one per Perfetto thread (an actor, its back-off lanes, its sends from outside a
            handler, the timers), in Perfetto's order, each with the pod it serves (-1: none)
            and a group the program's labels give it (``PAGE_LABELS``)
  spans     handler runs, runtime calls, outside sends and back-offs: lane, start, duration,
            kind, title, the delivery they belong to
  msgs      every delivery: sender and receiver lanes, sent and received times, its cause
            (the delivery whose handler sent it: the envelope's ``parent``), the pods it
            concerns, its summary and its fields
  marks     handler faults, restarts, supervisor decisions and dead letters
  story     what a person reads first: per pod, a row for the pod and one per container
            row the program names, with labelled spans (a container's runs and how each
            ended, back-offs, failing probes) and marks (restarts, kills, the deletion),
            from the program's ``story`` hook (``PAGE_LABELS``); its rows are lanes too
            (``lanes.story`` 1), listed first
  routine   per message, 1 when the program calls it routine traffic (timer ticks, a
            relist that found nothing): the page folds those into a density band unless
            asked to draw them

Columns are lists of numbers or of indexes into a shared string table, so a trace of a
hundred thousand messages is a few megabytes of JSON that the browser parses in one go.
Times are microseconds since the trace started. Bodies are cut to a bounded size (long
strings, long lists, deep nesting): the page shows fields, not whole pod specs.

The viewers know no program: a message's summary, the pods it concerns and a pod actor's pod come
from the plug-in hooks (actors.app.tools.plugins.TOOLS); the lane groups and span titles a
program wants come from ``PAGE_LABELS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from actors.app.tools.perfetto import TIMERS, perfetto_events
from actors.app.tools.plugins import TOOLS
from actors.app.tools.timeline import TraceIndex, short_type, summarize
from actors.core.messages import Tick
from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import Trace

PAGE_VERSION = 2
SPAN_KINDS = ("handler", "call", "send", "backoff")
MARK_KINDS = ("fault", "supervision", "dead_letter")
STORY_SPANS = ("running", "exited", "failed", "backoff", "probe")
"""A story span: a run still going, a run that ended with 0, one that ended otherwise (or
was killed), a wait before a restart, a probe failing."""
STORY_MARKS = ("restart", "kill", "delete")
"""A story mark: a container started again, the kubelet stopping one, the pod deleted."""


@dataclass(frozen=True, slots=True)
class StoryItem:
    """One labelled thing on a pod's story rows: a span (``end`` set) or a mark.

    ``row`` is the row's name under its pod ("" for the pod's own row, else e.g. the
    container's name); ``kind`` one of STORY_SPANS (a span) or STORY_MARKS (a mark);
    ``at``/``end`` are trace times (the records' monotonic ``m``), ``end`` None for a mark;
    ``label`` is what the page writes on it, ``detail`` what it shows on hover and click;
    ``delivery`` the message it was read from (-1: none).
    """

    uid: str
    row: str
    kind: str
    label: str
    at: float
    end: float | None = None
    detail: str = ""
    delivery: int = -1
_STRING_CAP = 300
_LIST_CAP = 20
_DEPTH_CAP = 6
_SMALL_BODY = 1024  # bytes of JSON: a body this small is shown whole


class PageLabels:
    """What a program says about its lanes and spans on the page (a registry like TOOLS).

    ``lane_group(actor)``: the heading a lane is listed under ("" for none);
    ``span_title(actor, type)``: a handler span's title (None: the message type);
    ``story(index)``: the pods' story (StoryItem values, any order);
    ``routine(type, body)``: whether a message is routine traffic the page folds away.
    """

    def __init__(self) -> None:
        self._group: Callable[[str], str] = lambda actor: ""
        self._title: Callable[[str, str], str | None] = lambda actor, type_name: None
        self._story: Callable[[TraceIndex], Iterable[StoryItem]] = lambda index: ()
        self._routine: Callable[[str, Any], bool] = _framework_routine

    def register(self, lane_group: Callable[[str], str],
                 span_title: Callable[[str, str], str | None],
                 story: Callable[[TraceIndex], Iterable[StoryItem]] | None = None,
                 routine: Callable[[str, Any], bool] | None = None) -> None:
        self._group, self._title = lane_group, span_title
        if story is not None:
            self._story = story
        if routine is not None:
            self._routine = routine

    def story(self, index: TraceIndex) -> list[StoryItem]:
        return list(self._story(index))

    def routine(self, type_name: str, body: Any) -> bool:
        return self._routine(type_name, body)

    def lane_group(self, actor: str) -> str:
        return self._group(actor)

    def span_title(self, actor: str, type_name: str) -> str | None:
        return self._title(actor, type_name)


def _framework_routine(type_name: str, body: Any) -> bool:
    """The framework's own routine traffic: timer ticks."""
    return short_type(type_name) == _TICK


_TICK = short_type(MESSAGES.name_of(Tick(kind="", at=0.0)))


def framework_routine(type_name: str, body: Any) -> bool:
    """Whether a message is the framework's routine traffic (a program's ``routine`` hook
    adds its own to this)."""
    return _framework_routine(type_name, body)


PAGE_LABELS = PageLabels()
"""The process's labels (the kubelet registers its own: actors.app.tools.kubelet_labels)."""


class _Strings:
    """A string table: each distinct string once, referred to by index."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.items)
            self.items.append(text)
        return found


def clip_value(value: Any, depth: int = 0) -> Any:
    """``value`` with long strings, long lists and deep nesting cut (marked with "…")."""
    if isinstance(value, str):
        return value if len(value) <= _STRING_CAP else value[:_STRING_CAP - 1] + "…"
    if depth >= _DEPTH_CAP and isinstance(value, dict | list) and value:
        return "{…}" if isinstance(value, dict) else "[…]"
    if isinstance(value, dict):
        return {str(k): clip_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        head = [clip_value(v, depth + 1) for v in value[:_LIST_CAP]]
        if len(value) > _LIST_CAP:
            head.append(f"… {len(value) - _LIST_CAP} more")
        return head
    return value


def _us(value: float) -> float:
    return round(value, 1)


def page_data(trace: Trace, title: str = "") -> dict[str, Any]:
    """The page's data model for ``trace`` (JSON-ready: lists, numbers and strings)."""
    built = perfetto_events(trace)
    index, threads = built.index, built.threads
    strings = _Strings()

    # Lanes: Perfetto's threads in its order; each pod actor's lanes carry its pod.
    pods: dict[str, int] = {}  # uid -> pod index
    pod_names: dict[str, str] = {}
    for msg in index.msgs.values():
        for ref in TOOLS.pods_in(str(msg.get("type", "")), msg.get("body")):
            if ref.name:
                pod_names.setdefault(ref.uid, ref.name)

    def pod_index(uid: str) -> int:
        found = pods.get(uid)
        if found is None:
            found = pods[uid] = len(pods)
        return found

    tids = sorted(threads.names, key=lambda t: (threads.sort[t], t))
    lane_of = {tid: i for i, tid in enumerate(tids)}
    lanes: dict[str, list[Any]] = {"name": [], "actor": [], "pod": [], "group": [],
                                   "story": []}
    for tid in tids:
        owner = threads.owners[tid]
        uid = TOOLS.pod_of(owner)
        lanes["name"].append(threads.names[tid])
        lanes["actor"].append(owner)
        lanes["pod"].append(pod_index(uid) if uid is not None else -1)
        lanes["group"].append(strings(PAGE_LABELS.lane_group(owner) if owner != TIMERS
                                      else TIMERS))
        lanes["story"].append(0)

    # Spans and marks, straight from the export's events; flows give each message's ends.
    spans: dict[str, list[Any]] = {"lane": [], "ts": [], "dur": [], "kind": [], "name": [],
                                   "msg": [], "detail": []}
    marks: dict[str, list[Any]] = {"lane": [], "ts": [], "kind": [], "name": []}
    sent: dict[int, tuple[int, float]] = {}      # delivery -> (lane, ts)
    received: dict[int, tuple[int, float]] = {}
    handler_lane: dict[int, int] = {}
    summaries: dict[int, str] = {}  # delivery -> the export's summary of it
    span_rows: list[tuple[int, float, float, int, int, int, str]] = []
    for event in built.events:
        ph = event["ph"]
        lane = lane_of.get(event.get("tid", -1), -1)
        args = event.get("args", {})
        if ph == "X":
            kind = str(event.get("cat", "")).split(",")[0]
            if kind not in SPAN_KINDS:
                continue
            delivery = args.get("delivery")
            name = str(event["name"])
            detail = ""
            if kind in ("handler", "send"):
                summaries[int(delivery)] = str(args.get("summary", ""))
            if kind == "handler":
                handler_lane[int(delivery)] = lane
                msg = index.msgs.get(int(delivery), {})
                name = PAGE_LABELS.span_title(str(msg.get("to", "")),
                                              short_type(str(msg.get("type", "")))) or name
                detail = str(args.get("error", ""))
            elif kind == "call":
                detail = f"{args.get('target', '')}.{name}({args.get('args', '')}) → " \
                         f"{args.get('result', '')}"
            elif kind == "backoff":
                detail = " ".join(f"{k}={v}" for k, v in args.items()
                                  if k != "delivery" and v not in (None, ""))
            elif kind == "send":
                detail = str(args.get("summary", ""))
            span_rows.append((lane, float(event["ts"]), float(event.get("dur", 0.0)),
                              SPAN_KINDS.index(kind), strings(name),
                              int(delivery) if isinstance(delivery, int) else -1, detail))
        elif ph == "s":
            sent[int(event["id"])] = (lane, float(event["ts"]))
        elif ph == "f":
            received[int(event["id"])] = (lane, float(event["ts"]))
        elif ph == "i":
            kind = str(event.get("cat", "")).split(",")[0]
            if kind not in MARK_KINDS:
                continue
            if kind == "dead_letter":
                sent[int(args["delivery"])] = (lane, float(event["ts"]))
            marks["lane"].append(lane)
            marks["ts"].append(_us(float(event["ts"])))
            marks["kind"].append(MARK_KINDS.index(kind))
            marks["name"].append(strings(str(event["name"])))

    # Messages in the order they were sent; a cause is the index of the parent delivery.
    ids = sorted(index.msgs, key=lambda i: (index.msgs[i]["m"], i))
    position = {id: n for n, id in enumerate(ids)}
    pod_sets: list[list[int]] = [[]]
    pod_set_index: dict[tuple[int, ...], int] = {(): 0}
    bodies: list[Any] = []
    body_index: dict[bytes, int] = {}
    msgs: dict[str, list[Any]] = {"id": [], "type": [], "from": [], "to": [], "ts": [],
                                  "te": [], "cause": [], "pods": [], "dead": [],
                                  "summary": [], "body": [], "routine": []}
    start = index.start
    for id in ids:
        msg = index.msgs[id]
        type_name = str(msg.get("type", "?"))
        body = msg.get("body")
        sender, to = str(msg.get("from") or ""), str(msg.get("to") or "")
        at = (float(msg["m"]) - start) * 1_000_000
        src = sent.get(id)
        if src is None:
            parent = msg.get("parent")
            lane = handler_lane.get(parent, -1) if isinstance(parent, int) else -1
            if lane < 0:
                lane = lane_of.get(threads.tids.get(sender, -1),
                                   lane_of.get(threads.tids.get(TIMERS, -1), -1))
            src = (lane, at)
        dst = received.get(id)
        to_lane = dst[0] if dst else lane_of.get(threads.tids.get(to, -1), -1)
        concerned = {pod_index(ref.uid) for ref in TOOLS.pods_in(type_name, body)}
        # The pods of the actors at its ends, and of the lanes it is drawn between (a dead
        # letter the dispatch point sends during a pod worker's handler starts there).
        for lane in (src[0], to_lane):
            if lane >= 0 and lanes["pod"][lane] >= 0:
                concerned.add(lanes["pod"][lane])
        for actor in (sender, to):
            uid = TOOLS.pod_of(actor)
            if uid is not None:
                concerned.add(pod_index(uid))
        key = tuple(sorted(concerned))
        set_index = pod_set_index.get(key)
        if set_index is None:
            set_index = pod_set_index[key] = len(pod_sets)
            pod_sets.append(list(key))
        # Equal bodies are stored once; a small one needs no cutting.
        encoded = msgspec.json.encode(body)
        b = body_index.get(encoded)
        if b is None:
            b = body_index[encoded] = len(bodies)
            bodies.append(body if len(encoded) <= _SMALL_BODY else clip_value(body))
        parent = msg.get("parent")
        msgs["id"].append(id)
        msgs["type"].append(strings(short_type(type_name)))
        msgs["from"].append(src[0])
        msgs["to"].append(to_lane)
        msgs["ts"].append(_us(src[1]))
        msgs["te"].append(_us(dst[1]) if dst else -1)
        msgs["cause"].append(position.get(parent, -1) if isinstance(parent, int) else -1)
        msgs["pods"].append(set_index)
        msgs["dead"].append(1 if msg.get("dead") else 0)
        summary = summaries.get(id)
        msgs["summary"].append(strings(summary if summary is not None
                                       else summarize(type_name, body)))
        msgs["body"].append(b)
        msgs["routine"].append(1 if PAGE_LABELS.routine(type_name, body) else 0)

    for lane, ts, dur, kind_index, name_index, delivery, detail in sorted(span_rows):
        spans["lane"].append(lane)
        spans["ts"].append(_us(ts))
        spans["dur"].append(_us(dur))
        spans["kind"].append(kind_index)
        spans["name"].append(name_index)
        spans["msg"].append(position.get(delivery, -1))
        spans["detail"].append(strings(detail))

    story = _story(PAGE_LABELS.story(index), index, lanes, strings, pod_index, pod_names,
                   position)
    by_uid = sorted(pods, key=pods.__getitem__)
    return {
        "v": PAGE_VERSION,
        "title": title or ", ".join(str(f) for f in trace.files[:2]),
        "records": len(trace.records),
        "duration": _us((index.end - start) * 1_000_000),
        "warnings": list(trace.torn),
        "strings": strings.items,
        "spanKinds": list(SPAN_KINDS),
        "markKinds": list(MARK_KINDS),
        "lanes": lanes,
        "pods": {"uid": by_uid, "name": [pod_names.get(uid, "") for uid in by_uid]},
        "podSets": pod_sets,
        "msgs": msgs,
        "bodies": bodies,
        "spans": spans,
        "marks": marks,
        "story": story,
    }


def _story(items: list[StoryItem], index: TraceIndex, lanes: dict[str, list[Any]],
           strings: _Strings, pod_index: Callable[[str], int], pod_names: dict[str, str],
           position: dict[int, int]) -> dict[str, Any]:
    """The story's rows (appended to ``lanes``) and its spans and marks, as columns.

    Rows come per pod in the order its first item comes, the pod's own row first, then
    its other rows in the order their first item comes.
    """
    start, end = index.start, index.end
    rows: dict[tuple[str, str], int] = {}
    order: dict[str, list[str]] = {}
    for item in sorted(items, key=lambda i: i.at):
        names = order.setdefault(item.uid, [""])
        if item.row not in names:
            names.append(item.row)
    group = strings("pods")
    for uid, names in order.items():
        pod = pod_names.get(uid) or uid[:8]
        for row in names:
            rows[(uid, row)] = len(lanes["name"])
            lanes["name"].append(pod if not row else f"{pod} · {row}")
            lanes["actor"].append(f"story:{uid}")
            lanes["pod"].append(pod_index(uid))
            lanes["group"].append(group)
            lanes["story"].append(1)
    spans: dict[str, list[Any]] = {"lane": [], "ts": [], "dur": [], "kind": [], "label": [],
                                   "detail": [], "msg": []}
    marks: dict[str, list[Any]] = {"lane": [], "ts": [], "kind": [], "label": [],
                                   "detail": [], "msg": []}
    for item in sorted(items, key=lambda i: (rows[(i.uid, i.row)], i.at)):
        at = _us((min(max(item.at, start), end) - start) * 1_000_000)
        target = spans if item.end is not None else marks
        target["lane"].append(rows[(item.uid, item.row)])
        target["ts"].append(at)
        if item.end is not None:
            finish = _us((min(max(item.end, item.at), end) - start) * 1_000_000)
            spans["dur"].append(_us(max(finish - at, 0.0)))
            spans["kind"].append(STORY_SPANS.index(item.kind))
        else:
            marks["kind"].append(STORY_MARKS.index(item.kind))
        target["label"].append(strings(item.label))
        target["detail"].append(strings(item.detail))
        target["msg"].append(position.get(item.delivery, -1))
    return {"spanKinds": list(STORY_SPANS), "markKinds": list(STORY_MARKS),
            "spans": spans, "marks": marks}
