"""The kubelet's pods as the timeline page tells them: runs, back-offs, probes, kills.

What a person reads first on the page (actors.app.tools.page_data, ``story``): per pod, a
row for the pod and a row per container, with

  spans  each run of a container, labelled with how it ended ("c: exited 42 (Error)",
         "c: running"); each back-off before a restart ("back-off 20s"); each stretch of
         failing probe attempts ("readiness failed: <the probe's output>", on a row of its
         own: "c readiness")
  marks  each restart ("c: restart 2"), each kill of a container by the kubelet (its
         Killing event's words and the grace the StopContainer call gave), the pod's
         deletion ("deleted (grace 30s)")

read from the trace alone: the pod worker's PodObserved (the runtime's status of every
instance: start, finish, exit code, reason; the sync's back-off steps), the probe
manager's ProbeOutcome (each attempt with its output; the Unhealthy events when no
attempt was recorded), the Killing events, the StopContainer calls and the UpdatePod that
kills the pod. Every message is taken at one receiver (a PodObserved goes to status and
to probes: it counts once).

A run's times are the runtime's (wall clock, moved onto the trace's clock by the offset of
the record that reported it), kept within what the trace saw: never later than the first
observation of the instance (running) or of its exit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

import actors.kubelet.trace  # noqa: F401 - the kubelet's message names, old traces' included
from actors.app.tools.page_data import StoryItem, framework_routine
from actors.app.tools.plugins import clip
from actors.app.tools.timeline import TraceIndex
from actors.core.trace.names import MESSAGES
from actors.kubelet import names
from actors.kubelet.events import RecordEvent
from actors.kubelet.messages import (
    PodObserved,
    Relisted,
    RuntimeHealth,
    UpdateKind,
    UpdatePod,
)
from actors.kubelet.probe_manager import ProbeOutcome
from runtime.cri.types import ContainerState
from runtime.events import reasons
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus
from runtime.prober.results import ProbeResult

M = TypeVar("M")

_LABEL_WIDTH = 80  # characters of a probe's output in a label (the detail has it whole)
_STOP_CALLS = frozenset({"stop_container", "StopContainer"})
CRASH_LOOP = "CrashLoopBackOff"

# The one receiver each message is read at.
_TAKEN_AT: dict[type, str | None] = {
    PodObserved: names.STATUS,
    ProbeOutcome: names.PROBES,
    RecordEvent: names.EVENTS,
    UpdatePod: None,  # at its pod worker
}


@dataclass(frozen=True, slots=True)
class _Seen:
    """A message as read: its delivery, when it was sent (trace clock), its wall offset."""

    id: int
    m: float
    offset: float  # wall clock minus trace clock at this record
    sender: str
    message: Any


def _messages(index: TraceIndex) -> Iterator[_Seen]:
    """The story's messages, decoded, in the order they were sent."""
    for id in sorted(index.msgs, key=lambda i: (index.msgs[i]["m"], i)):
        record = index.msgs[id]
        try:
            cls = MESSAGES.resolve(str(record.get("type", "")))
        except LookupError:
            continue
        if cls not in _TAKEN_AT:
            continue
        to = str(record.get("to") or "")
        taken_at = _TAKEN_AT[cls]
        if (to != taken_at) if taken_at is not None else not names.is_worker(to):
            continue
        try:
            message: object = msgspec.convert(record.get("body"), cls)
        except (msgspec.ValidationError, TypeError):
            continue  # recorded by code whose message had another shape
        m = float(record["m"])
        yield _Seen(id, m, float(record.get("t", m)) - m, str(record.get("from") or ""),
                    message)


@dataclass(slots=True)
class _Run:
    """One container instance as the trace saw it."""

    uid: str
    status: ContainerRuntimeStatus
    first: _Seen
    exited: _Seen | None = None


@dataclass(slots=True)
class _Probing:
    """A stretch of failing attempts of one probe of one container."""

    uid: str
    container: str
    kind: str
    output: str
    at: float
    last: float
    attempts: int
    delivery: int
    ended: float | None = None


@dataclass(slots=True)
class _Story:
    items: list[StoryItem] = field(default_factory=list)
    runs: dict[str, _Run] = field(default_factory=dict)  # container id -> its run
    backoff_until: dict[tuple[str, str], float] = field(default_factory=dict)
    probing: dict[tuple[str, str, str], _Probing] = field(default_factory=dict)
    probed: set[str] = field(default_factory=set)  # pods with recorded attempts
    unhealthy: list[tuple[_Seen, RecordEvent]] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)


def pod_story(index: TraceIndex) -> list[StoryItem]:
    """The labelled spans and marks of every pod in the trace (page_data's story hook)."""
    story = _Story()
    for seen in _messages(index):
        message = seen.message
        if isinstance(message, PodObserved):
            _observed(story, seen, message)
        elif isinstance(message, ProbeOutcome):
            _attempt(story, seen, message)
        elif isinstance(message, RecordEvent):
            _event(story, index, seen, message)
        elif isinstance(message, UpdatePod):
            _update(story, index, seen, message)
    story.items.extend(_runs(story, index))
    story.items.extend(_probe_spans(story, index))
    return story.items


# --- runs and back-offs -------------------------------------------------------------------


def _observed(story: _Story, seen: _Seen, observed: PodObserved) -> None:
    uid = str(observed.runtime.uid or observed.pod.metadata.uid or "")
    if not uid:
        return
    for status in observed.runtime.container_statuses:
        run = story.runs.get(status.id)
        if run is None:
            run = story.runs[status.id] = _Run(uid, status, seen)
        run.status = status
        if status.state == ContainerState.EXITED and run.exited is None:
            run.exited = seen
    for step in observed.sync.steps if observed.sync is not None else ():
        seconds = step.backoff_seconds
        if step.error != CRASH_LOOP or seconds is None:
            continue
        key = (uid, step.target)
        if story.backoff_until.get(key, -1.0) > seen.m:
            continue  # the same wait, seen again
        story.backoff_until[key] = seen.m + seconds
        story.items.append(StoryItem(uid, step.target, "backoff", f"back-off {seconds:g}s",
                                     seen.m, seen.m + seconds,
                                     step.message or f"{CRASH_LOOP}: back-off {seconds:g}s",
                                     seen.id))


def _wall(wall: float, seen: _Seen, low: float, high: float) -> float:
    """A runtime time (wall clock) on the trace's clock if it falls within [low, high]; else
    ``high``, the observation that reported it (a runtime on another clock, a fake one)."""
    at = wall - seen.offset
    return at if wall > 0 and low <= at <= high else high


def ending(status: ContainerRuntimeStatus) -> str:
    """How an instance ended, as its span's label says it: "exited 42 (Error)"."""
    text = f"exited {status.exit_code}"
    return f"{text} ({status.reason})" if status.reason else text


def _runs(story: _Story, index: TraceIndex) -> Iterator[StoryItem]:
    by_container: dict[tuple[str, str], list[_Run]] = {}
    for run in story.runs.values():
        by_container.setdefault((run.uid, run.status.name), []).append(run)
    for (uid, name), runs in by_container.items():
        runs.sort(key=lambda r: (r.status.created_at, r.status.restart_count))
        before: _Run | None = None
        for run in runs:
            status = run.status
            at = _wall(status.started_at, run.first, index.start, run.first.m)
            if run.exited is not None:
                end = _wall(status.finished_at, run.exited, at, run.exited.m)
                kind = "exited" if status.exit_code == 0 else "failed"
                label = f"{name}: {ending(status)}"
            else:
                kill = next((k.at for k in story.items if k.kind == "kill" and k.uid == uid
                             and k.row == name and k.at >= at), None)
                end, kind = (kill, "failed") if kill is not None else (index.end, "running")
                label = f"{name}: running" + (", killed" if kill is not None else "")
            detail = (f"{label}; container {status.id[:12]}, restart count "
                      f"{status.restart_count}")
            if status.message:
                detail += f"; message: {clip(status.message, 200)}"
            yield StoryItem(uid, name, kind, label, at, end, detail, run.first.id)
            if before is not None or status.restart_count > 0:
                why = (f"after {ending(before.status)}" if before is not None
                       and before.exited is not None else "")
                yield StoryItem(uid, name, "restart", f"{name}: restart {status.restart_count}",
                                at, None, f"{name} started again {why}".strip(),
                                run.first.id)
            before = run


# --- probes -------------------------------------------------------------------------------


def _attempt(story: _Story, seen: _Seen, outcome: ProbeOutcome) -> None:
    uid = str(outcome.uid)
    story.probed.add(uid)
    key = (uid, outcome.container_name, outcome.kind.value)
    open_ = story.probing.get(key)
    output = outcome.output.strip()
    if outcome.result == ProbeResult.FAILURE:
        if open_ is not None and open_.ended is None and open_.output == output:
            open_.attempts += 1
            open_.last = seen.m
            return
        if open_ is not None and open_.ended is None:
            open_.ended = seen.m
            story.items.append(_probe_item(open_))
        story.probing[key] = _Probing(uid, outcome.container_name, outcome.kind.value,
                                      output, seen.m, seen.m, 1, seen.id)
    elif open_ is not None and open_.ended is None:
        open_.ended = seen.m
        story.items.append(_probe_item(open_))
        del story.probing[key]


def _probe_item(probing: _Probing) -> StoryItem:
    said = probing.output or "(no output)"
    label = f"{probing.kind} failed: {clip(said.splitlines()[0] if said else said, _LABEL_WIDTH)}"
    times = "once" if probing.attempts == 1 else f"{probing.attempts} times"
    detail = f"{probing.kind} probe of {probing.container} failed {times}: {said}"
    end = probing.ended if probing.ended is not None else probing.last
    return StoryItem(probing.uid, probe_row(probing.container, probing.kind), "probe", label,
                     probing.at, end, detail, probing.delivery)


def probe_row(container: str, kind: str) -> str:
    """The row a container's probe failures sit on (apart from its runs, which they overlap
    in time): "c readiness"."""
    return f"{container} {kind}"


def _probe_spans(story: _Story, index: TraceIndex) -> Iterator[StoryItem]:
    for probing in story.probing.values():
        if probing.ended is None:
            probing.ended = index.end
            yield _probe_item(probing)
    # Pods whose attempts the trace does not hold: their Unhealthy events, as they are.
    for seen, event in story.unhealthy:
        uid = str(event.ref.uid)
        if uid in story.probed:
            continue
        container = _container_of(event.ref.field_path)
        kind = event.message.split(" ", 1)[0].lower()  # "Readiness probe failed: ..."
        yield StoryItem(uid, probe_row(container, kind), "probe",
                        clip(event.message, _LABEL_WIDTH + 20), seen.m, seen.m, event.message,
                        seen.id)


# --- kills and the deletion ---------------------------------------------------------------


def _container_of(path: str) -> str:
    """The container an event's field path names (``spec.containers{web}`` -> ``web``)."""
    return path[path.index("{") + 1:-1] if path.endswith("}") and "{" in path else ""


def _grace_of_stop(index: TraceIndex, delivery: int | None, container: str | None,
                   story: _Story) -> int | None:
    """The grace the worker's StopContainer call gave (of ``container``, or any)."""
    parent = index.msgs.get(delivery or -1, {}).get("parent")
    for call in index.calls.get(parent, []) if isinstance(parent, int) else []:
        args = call.get("args")
        if call.get("method") not in _STOP_CALLS or not isinstance(args, list) or len(args) < 2:
            continue
        run = story.runs.get(str(args[0]))
        if container is None or (run is not None and run.status.name == container):
            grace = args[1]
            return int(grace) if isinstance(grace, int | float) else None
    return None


def _event(story: _Story, index: TraceIndex, seen: _Seen, event: RecordEvent) -> None:
    uid = str(event.ref.uid)
    if event.reason == reasons.CONTAINER_UNHEALTHY:
        story.unhealthy.append((seen, event))
    elif event.reason == reasons.KILLING_CONTAINER:
        container = _container_of(event.ref.field_path)
        grace = _grace_of_stop(index, seen.id, container, story)
        label = event.message + (f" (grace {grace}s)" if grace is not None else "")
        story.items.append(StoryItem(uid, container, "kill", label, seen.m, None,
                                     f"Killing: {label}", seen.id))


def _update(story: _Story, index: TraceIndex, seen: _Seen, update: UpdatePod) -> None:
    uid = names.worker_uid(str(index.msgs[seen.id].get("to", "")))
    meta = update.pod.metadata
    deleting = update.remove or meta.deletion_timestamp is not None
    if uid in story.deleted or not (deleting or update.kind == UpdateKind.KILL):
        return
    story.deleted.add(uid)
    grace = update.grace_override
    if grace is None:
        grace = meta.deletion_grace_period_seconds
    if grace is None:
        grace = _first_stop_grace(index, seen)
    if grace is None:
        spec = update.pod.spec.termination_grace_period_seconds
        grace = 30 if spec is None else spec
    what = "deleted" if deleting else "killed"
    label = f"{what} (grace {grace}s)"
    detail = label + (f": {update.reason}" if update.reason else "")
    if update.failed_reason:
        detail += f"; {update.failed_reason}: {update.failed_message}"
    story.items.append(StoryItem(str(uid), "", "delete", label, seen.m, None, detail, seen.id))


def _first_stop_grace(index: TraceIndex, seen: _Seen) -> int | None:
    """The grace of the first StopContainer call the pod's worker made after ``seen``."""
    worker = str(index.msgs[seen.id].get("to", ""))
    later = sorted((call for calls in index.calls.values() for call in calls
                    if call.get("actor") == worker and float(call.get("m", 0.0)) >= seen.m
                    and call.get("method") in _STOP_CALLS),
                   key=lambda call: float(call.get("m", 0.0)))
    for call in later:
        args = call.get("args")
        if isinstance(args, list) and len(args) >= 2 and isinstance(args[1], int | float):
            return int(args[1])
    return None


# --- routine traffic ----------------------------------------------------------------------


def routine(type_name: str, body: Any) -> bool:
    """Timer ticks, a relist that found no change, a runtime that stays healthy."""
    if framework_routine(type_name, body):
        return True
    try:
        cls = MESSAGES.resolve(type_name)
    except LookupError:
        return False
    if cls is Relisted:
        return isinstance(body, dict) and not body.get("events")
    if cls is RuntimeHealth:
        return isinstance(body, dict) and bool(body.get("ok"))
    return False
