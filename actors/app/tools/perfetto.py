"""A trace as Chrome trace-event JSON, which Perfetto's UI (ui.perfetto.dev) opens.

One process; one thread per actor (named after it) plus a "timers" thread where timer
ticks start. Events:
  X  handler        a handler run (name: the message type; args: sender, delivery, summary)
  X  call           a runtime call, nested in the handler that made it
  X  send           a message sent from outside any handler (timer ticks, watcher threads)
  X  backoff        a wait a message announces for its sender (the plug-in's waits hook,
                    actors.app.tools.plugins: a requeue, a container's back-off), and a
                    supervisor's delayed restart of a failed child
  s/f               a message flow from the sending handler to the receiving one (the
                    delivery id is the flow id; "f" binds to the enclosing slice)
  i  fault          a handler that raised
  i  supervision    restarts (spawns with incarnation > 0) and supervisor decisions;
                    escalations have global scope
  i  dead_letter    a message to a name with no live actor

Back-offs sit on their own thread next to the waiting actor's, one per lane the hook
names ("pod/… back-off", "pod/… back-off app"): a wait overlaps the actor's later
handlers, and slices on one thread must nest. A back-off is cut where the next one on the
same thread starts, and at the end of the trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.app.tools.plugins import TOOLS
from actors.app.tools.timeline import (
    TraceIndex,
    call_args,
    call_result,
    index_trace,
    is_escalation,
    short_type,
    summarize,
)
from actors.core.trace.reader import Trace

PID = 1
TIMERS = "timers"
OUTSIDE = "(outside actors)"


class _Threads:
    """Thread ids by name, with their metadata events."""

    def __init__(self, index: TraceIndex) -> None:
        self.index = index
        self.tids: dict[str, int] = {}
        self.meta: list[dict[str, Any]] = []
        self.names: dict[int, str] = {}
        self.owners: dict[int, str] = {}  # the actor a thread belongs to (its key, or the
        self.sort: dict[int, int] = {}    # actor it sits next to)
        self.last_end: dict[int, float] = {}

    def tid(self, key: str, name: str | None = None, sort_after: str | None = None) -> int:
        tid = self.tids.get(key)
        if tid is not None:
            return tid
        tid = len(self.tids) + 1
        self.tids[key] = tid
        sort_index = tid * 100
        if sort_after is not None and sort_after in self.tids:
            sort_index = self.tid(sort_after) * 100 + sum(
                1 for k in self.tids if k.startswith(sort_after + " "))
        self.names[tid] = name or self.index.label(key)
        self.owners[tid] = sort_after if sort_after is not None else key
        self.sort[tid] = sort_index
        self.meta.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_name",
                          "args": {"name": self.names[tid]}})
        self.meta.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index",
                          "args": {"sort_index": sort_index}})
        return tid

    def sequential(self, tid: int, ts: float, dur: float) -> float:
        """A start time for a slice on ``tid`` that does not overlap the one before it."""
        ts = max(ts, self.last_end.get(tid, ts))
        self.last_end[tid] = ts + dur
        return ts


@dataclass(slots=True)
class PerfettoEvents:
    """The export's events before they are written, with its threads: what the Perfetto
    export and the timeline page (actors.app.tools.page_data) both draw from.

    ``threads.names``/``owners``/``sort`` describe each thread id; ``events`` are sorted by
    time, the metadata events not among them.
    """

    index: TraceIndex
    threads: _Threads
    events: list[dict[str, Any]]


def export_perfetto(trace: Trace) -> dict[str, Any]:
    """The trace as {"traceEvents": [...], "displayTimeUnit": "ms"}."""
    built = perfetto_events(trace)
    process = {"ph": "M", "pid": PID, "tid": 0, "name": "process_name",
               "args": {"name": f"kubelet-actors (pid {trace.header.get('pid', '?')})"}}
    return {"traceEvents": [process, *built.threads.meta, *built.events],
            "displayTimeUnit": "ms",
            "otherData": {"files": [str(f) for f in trace.files],
                          "records": len(trace.records)}}


def perfetto_events(trace: Trace) -> PerfettoEvents:
    """The trace's threads and events (handlers, calls, sends, back-offs, flows, marks)."""
    index = index_trace(trace)
    start = index.start
    trace_end = _us(index.end, start)
    threads = _Threads(index)
    events: list[dict[str, Any]] = []
    spans: dict[int, tuple[int, float, float]] = {}  # delivery id -> (tid, ts, end)

    threads.tid(TIMERS, TIMERS)
    # Handlers first: everything else nests in them or points at them.
    for record in trace.records:
        if record.get("k") != "begin":
            continue
        id = record["id"]
        actor = str(record.get("actor", "?"))
        tid = threads.tid(actor)
        msg = index.msgs.get(id, {})
        end = index.ends.get(id)
        ts = _us(record["m"], start)
        finish = _us(end["m"], start) if end else trace_end
        spans[id] = (tid, ts, max(finish, ts))
        type_name = str(msg.get("type", "?"))
        args: dict[str, Any] = {"from": msg.get("from", ""), "delivery": id,
                                "incarnation": record.get("inc"),
                                "summary": summarize(type_name, msg.get("body"))}
        if end is None:
            args["unfinished"] = True
        if end is not None and end.get("error"):
            args["error"] = end["error"]
            events.append({"ph": "i", "s": "t", "name": "fault", "cat": "fault", "pid": PID,
                           "tid": tid, "ts": finish,
                           "args": {"error": end["error"], "delivery": id,
                                    "type": short_type(type_name)}})
        events.append({"ph": "X", "name": short_type(type_name), "cat": "handler", "pid": PID,
                       "tid": tid, "ts": ts, "dur": max(finish - ts, 0.0), "args": args})

    for record in trace.records:
        kind = record.get("k")
        if kind == "call":
            events.append(_call(record, index, threads, spans, start))
        elif kind == "msg":
            events.extend(_message(record, index, threads, spans, start))
        elif kind == "spawn":
            inc = record.get("inc", 0)
            if isinstance(inc, int) and inc > 0:
                actor = str(record.get("actor", "?"))
                events.append({"ph": "i", "s": "t", "name": f"restart {index.label(actor)}",
                               "cat": "supervision", "pid": PID, "tid": threads.tid(actor),
                               "ts": _us(record["m"], start),
                               "args": {"actor": actor, "incarnation": inc}})
        elif kind == "decision":
            actor = str(record.get("actor", "?"))
            what = str(record.get("what", "?"))
            escalation = is_escalation(what)
            events.append({"ph": "i", "s": "g" if escalation else "t",
                           "name": f"{what} {index.label(actor)}",
                           "cat": "supervision,escalation" if escalation else "supervision",
                           "pid": PID, "tid": threads.tid(actor),
                           "ts": _us(record["m"], start),
                           "args": {"actor": actor, "what": what,
                                    "detail": record.get("detail", {})}})
    events.extend(_backoffs(trace, index, threads, start, trace_end))
    events.sort(key=lambda e: (e["ts"], -e.get("dur", 0.0)))
    return PerfettoEvents(index, threads, events)


def _us(m: float, start: float) -> float:
    return round((m - start) * 1_000_000, 3)


def _call(record: dict[str, Any], index: TraceIndex, threads: _Threads,
          spans: dict[int, tuple[int, float, float]], start: float) -> dict[str, Any]:
    dur = float(record.get("dur") or 0.0) * 1_000_000
    finish = _us(record["m"], start)
    ts = finish - dur
    span = spans.get(record["in"]) if record.get("in") is not None else None
    if span is not None:
        tid, low, high = span
        ts = min(max(ts, low), high)
        dur = max(min(finish, high) - ts, 0.0)
    else:
        tid = threads.tid(str(record.get("actor") or OUTSIDE))
        ts = threads.sequential(tid, ts, dur)
    args: dict[str, Any] = {"target": record.get("target", ""),
                            "args": call_args(record.get("args")),
                            "result": call_result(record), "delivery": record.get("in")}
    failed = record.get("error") is not None
    if failed:
        args["error"] = record["error"]
    return {"ph": "X", "name": str(record.get("method", "?")),
            "cat": "call,error" if failed else "call", "pid": PID, "tid": tid,
            "ts": round(ts, 3), "dur": round(dur, 3), "args": args}


def _message(msg: dict[str, Any], index: TraceIndex, threads: _Threads,
             spans: dict[int, tuple[int, float, float]], start: float) -> list[dict[str, Any]]:
    id = msg["id"]
    type_name = str(msg.get("type", "?"))
    sender = str(msg.get("from") or "")
    sent = _us(msg["m"], start)
    received = spans.get(id)
    if received is not None:
        sent = min(sent, received[1])
    events: list[dict[str, Any]] = []
    parent = spans.get(msg["parent"]) if msg.get("parent") is not None else None
    if parent is not None:
        tid, low, high = parent
        sent = min(max(sent, low), high)
    else:
        key = TIMERS if sender == TIMERS else f"{sender or '?'} (outside a handler)"
        tid = threads.tid(key, key, sort_after=sender if sender and sender != TIMERS else None)
        sent = threads.sequential(tid, sent, 1.0)
        events.append({"ph": "X", "name": f"send {short_type(type_name)}", "cat": "send",
                       "pid": PID, "tid": tid, "ts": sent, "dur": 1.0,
                       "args": {"to": msg.get("to", ""), "delivery": id,
                                "summary": summarize(type_name, msg.get("body"))}})
    if msg.get("dead"):
        events.append({"ph": "i", "s": "t", "name": f"dead letter {short_type(type_name)}",
                       "cat": "dead_letter", "pid": PID, "tid": tid, "ts": sent,
                       "args": {"to": msg.get("to", ""), "from": sender, "delivery": id}})
        return events
    if received is None:
        return events
    name = short_type(type_name)
    events.append({"ph": "s", "id": id, "name": name, "cat": "flow", "pid": PID, "tid": tid,
                   "ts": sent})
    events.append({"ph": "f", "bp": "e", "id": id, "name": name, "cat": "flow", "pid": PID,
                   "tid": received[0], "ts": received[1]})
    return events


def _backoffs(trace: Trace, index: TraceIndex, threads: _Threads, start: float,
              trace_end: float) -> list[dict[str, Any]]:
    """Back-off spans, each cut where the next one on its thread starts."""
    found: list[tuple[str, str, float, float, dict[str, Any]]] = []
    for msg in index.msgs.values():
        waiting = str(msg.get("from") or "?")
        for wait in TOOLS.waits_in(str(msg.get("type", "")), msg.get("body")):
            found.append((waiting, f"{waiting} {wait.lane}", _us(msg["m"], start),
                          wait.seconds, {"name": wait.name, "seconds": wait.seconds,
                                         **wait.args, "delivery": msg["id"]}))
    found.extend(_restart_backoffs(index, start))
    found.sort(key=lambda f: (f[1], f[2]))
    events: list[dict[str, Any]] = []
    for i, (worker, key, ts, seconds, args) in enumerate(found):
        finish = min(ts + seconds * 1_000_000, trace_end)
        if i + 1 < len(found) and found[i + 1][1] == key:
            finish = min(finish, found[i + 1][2])
        if finish < ts + seconds * 1_000_000:
            args["cut"] = True
        label = f"{index.label(worker)} {key[len(worker) + 1:]}"
        tid = threads.tid(key, label, sort_after=worker)
        events.append({"ph": "X", "name": args.pop("name"), "cat": "backoff", "pid": PID,
                       "tid": tid, "ts": ts, "dur": round(max(finish - ts, 0.0), 3),
                       "args": args})
    return events


def _restart_backoffs(index: TraceIndex,
                      start: float) -> list[tuple[str, str, float, float, dict[str, Any]]]:
    """A supervisor's delayed restart: from handling ChildFailed to handling its RestartChild."""
    failed: dict[tuple[Any, Any], float] = {}
    found: list[tuple[str, str, float, float, dict[str, Any]]] = []
    for id, msg in index.msgs.items():
        body = msg.get("body")
        if not isinstance(body, dict):
            continue
        kind = short_type(str(msg.get("type", "")))
        if kind not in ("ChildFailed", "RestartChild"):
            continue
        begin = index.begins.get(id)
        at = begin["m"] if begin else msg["m"]
        key = (body.get("name"), body.get("incarnation"))
        if kind == "ChildFailed":
            failed[key] = at
        elif key in failed:
            name = str(key[0])
            seconds = at - failed.pop(key)
            found.append((name, f"{name} restart back-off", _us(at - seconds, start), seconds,
                          {"name": f"restart back-off {seconds:.2f}s", "seconds": seconds,
                           "incarnation": key[1], "delivery": id}))
    return found
