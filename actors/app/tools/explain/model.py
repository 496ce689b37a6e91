"""What ``kubelet-actors explain`` reads and says: one pod's messages, and findings.

``PodHistory`` holds the trace messages about one pod (by UID), each decoded into its
kubelet message class, in the order the trace recorded them, with the runtime calls its
pod worker made. The finding modules of this package read it and return ``Finding``
values: a time, a kind, a plain sentence, and the delivery ids (``#N`` in ``trace show``)
of the messages the sentence was read from. Nothing here reads files or the clock: trace
records in, findings out.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

import actors.kubelet.trace  # noqa: F401 - the kubelet's message names, old traces' included
from actors.core.trace.names import MESSAGES
from actors.kubelet import names
from actors.kubelet.cluster.messages import PodStatusChanged
from actors.kubelet.events import RecordEvent
from actors.kubelet.messages import (
    KillRuntimePod,
    PodObserved,
    PodRejected,
    PodWorkerDone,
    ProbeVerdict,
    RuntimePodKilled,
    UpdatePod,
)
from actors.kubelet.probe_manager import ProbeOutcome
from runtime.pod.model import Container, Pod

M = TypeVar("M")

# The messages a pod's story is read from, and the one receiver each is taken at: a
# message sent to two actors (PodObserved to status and probes) counts once.
_TAKEN_AT: dict[type, str | None] = {
    UpdatePod: None,  # at its pod worker
    PodObserved: names.STATUS,
    PodRejected: names.STATUS,
    PodWorkerDone: names.SYNC_LOOP,
    ProbeOutcome: names.PROBES,
    ProbeVerdict: names.STATUS,
    RecordEvent: names.EVENTS,
    KillRuntimePod: names.KILLER,
    RuntimePodKilled: names.SYNC_LOOP,
    PodStatusChanged: names.POD_WRITER,
}


Value = str | int | float | bool
"""What a piece of evidence holds: as the trace recorded it."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """One fact a finding rests on, quoted from the trace: what a person would otherwise
    dig for in the events, the logs and the container's status.

    ``field`` names it (EVIDENCE_FIELDS says what each means), ``container`` the container
    it is about ("" for the pod: an admission or mount error), ``value`` is verbatim (a
    message as upstream's kubelet words it, a code, a delay), ``seq`` and ``time`` say
    where in the trace it was read: the delivery id ``trace show`` prints as ``#N`` and
    that message's wall-clock time.
    """

    field: str
    value: Value
    seq: int | None
    time: float | None
    container: str = ""  # the container it is about; "" for the pod

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "value": self.value, "container": self.container,
                "seq": self.seq,
                "time": iso_time(self.time) if self.time is not None else None}


EVIDENCE_FIELDS: dict[str, str] = {
    "exitCode": "the container's exit code",
    "signal": "the signal that ended it, read from an exit code above 128 (137: SIGKILL)",
    "reason": "the container's terminated reason (Error, Completed, OOMKilled, ...)",
    "oomKilled": "true when the kernel's OOM killer ended it",
    "terminationMessage": "what the container wrote to its terminationMessagePath "
                          "(or its log's tail, by terminationMessagePolicy)",
    "finishedAt": "when the container exited (RFC 3339)",
    "backOff": "the newest back-off delay in seconds (a crash loop's: 10 s doubling to "
               "300 s; an image pull's likewise)",
    "backOffMessage": "the container's waiting message (CrashLoopBackOff)",
    "nextStart": "when the back-off ends and the kubelet may start it again (RFC 3339)",
    "probeMessage": "the last failed attempt's Unhealthy event message",
    "probeOutput": "the last failed attempt's output (a command's output, an HTTP "
                   "probe's error)",
    "probeExitCode": "the exit code of the exec probe's command",
    "httpStatus": "the HTTP status the httpGet probe was answered with",
    "probeFailures": "the failed attempts in a row that led to the verdict",
    "failureThreshold": "the probe's failureThreshold",
    "hookMessage": "the FailedPostStartHook or FailedPreStopHook event's message",
    "hookOutput": "what the failed postStart or preStop hook said: its command's output "
                  "(stdout, then stderr) or its HTTP or TCP error, cut to 512 characters "
                  "(upstream keeps it out of the event; the kubelet logs it)",
    "hookExitCode": "the exit code of the failed exec hook's command",
    "killMessage": "the Killing event's message",
    "image": "the image the container names",
    "pullError": "ErrImagePull, ImagePullBackOff, ErrImageNeverPull or InvalidImageName",
    "pullMessage": "the runtime's error for the pull, verbatim",
    "admissionReason": "the admission failure's reason (OutOfcpu, NodeAffinity, ...)",
    "admissionMessage": "the pod's status message, as kubectl describe shows it (its "
                        "Message line): \"Pod was rejected: \" and the admission failure's "
                        "message (the event of the refusal carries the message alone)",
    "mountError": "the error of mounting the pod's volumes (FailedMount), verbatim",
    "sandboxError": "the error of creating the pod's sandbox, verbatim",
    "waitingReason": "a container's waiting reason (PodInitializing, ContainerCreating, ...)",
    "waitingMessage": "a container's waiting message",
    "initContainer": "the init container the pod waits for",
}
"""Every evidence field ``explain`` gives, and what it means."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One sentence of an explanation: when, what kind, the text, where it comes from.

    ``seqs`` are the delivery ids of the trace messages the sentence was read from (what
    ``trace show`` prints as ``#N``), oldest first; ``container`` is "" for the pod.
    ``evidence``: the facts the sentence rests on, each with its own place in the trace
    and its container (one per field and container: a pod's state quotes each container
    that waits or is not ready).
    """

    time: float  # wall-clock seconds (the trace's ``t``)
    kind: str
    text: str
    seqs: tuple[int, ...]
    container: str = ""
    evidence: tuple[Evidence, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"time": iso_time(self.time), "kind": self.kind, "container": self.container,
                "text": self.text, "seqs": list(self.seqs),
                "evidence": [e.to_json() for e in self.evidence]}

    def with_containers(self) -> Finding:
        """This finding with its own container named on each piece of evidence that names
        none (the finding modules quote a container's facts without repeating its name)."""
        if not self.container or all(e.container for e in self.evidence):
            return self
        return dataclasses.replace(self, evidence=tuple(
            e if e.container else dataclasses.replace(e, container=self.container)
            for e in self.evidence))

    @property
    def containers(self) -> tuple[str, ...]:
        """The containers its evidence is about, in order, each once."""
        return tuple(dict.fromkeys(e.container for e in self.evidence if e.container))


def evidence(field: str, value: Value | None, at: Seen | None, container: str = ""
             ) -> list[Evidence]:
    """One piece of evidence read at ``at``, about ``container`` ("": the finding's own)
    (none when there is no value: an empty message, a code the trace does not hold)."""
    if value is None or value == "":
        return []
    assert field in EVIDENCE_FIELDS, field
    return [Evidence(field, value, at.id if at is not None else None,
                     at.t if at is not None else None, container)]


@dataclass(frozen=True, slots=True)
class Seen:
    """One message of the pod's story: its delivery id, time, sender and parent."""

    id: int
    t: float
    m: float  # monotonic seconds, to measure spans within one run
    sender: str
    receiver: str
    parent: int | None
    message: object


@dataclass(frozen=True, slots=True)
class Call:
    """A runtime call a pod worker made while handling delivery ``within``."""

    within: int
    method: str
    args: tuple[Any, ...]
    t: float
    m: float  # when it returned (monotonic)
    duration: float
    error: str = ""

    @property
    def began(self) -> float:
        return self.m - self.duration


@dataclass(slots=True)
class PodHistory:
    """Everything the trace says about one pod, in recorded order."""

    uid: str
    name: str
    namespace: str
    seen: list[Seen] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    trace_end: float = 0.0  # wall time of the trace's last record
    pod: Pod | None = None  # the newest spec the kubelet had
    _index: dict[int, Seen] = field(default_factory=dict)

    def of(self, cls: type[M]) -> Iterator[tuple[Seen, M]]:
        """The messages of one class, oldest first."""
        for entry in self.seen:
            if isinstance(entry.message, cls):
                yield entry, entry.message

    def by_id(self, id: int) -> Seen | None:
        if len(self._index) != len(self.seen):
            self._index = {s.id: s for s in self.seen}
        return self._index.get(id)

    def events(self, reason: str | None = None, container: str | None = None
               ) -> Iterator[tuple[Seen, RecordEvent]]:
        """The pod's events (of ``reason``; about ``container``: "" for the pod's own)."""
        for entry, event in self.of(RecordEvent):
            if reason is not None and event.reason != reason:
                continue
            if container is not None and container_of_path(event.ref.field_path) != container:
                continue
            yield entry, event

    def container_spec(self, name: str) -> Container | None:
        if self.pod is None:
            return None
        return next((c for c in self.pod.all_containers() if c.name == name), None)


def container_of_path(path: str) -> str:
    """The container an event's field path names (``spec.containers{web}`` -> ``web``)."""
    if path.endswith("}") and "{" in path:
        return path[path.index("{") + 1:-1]
    return ""


def iso_time(t: float) -> str:
    """RFC 3339 in UTC, milliseconds: what ``-o json`` gives."""
    moment = datetime.datetime.fromtimestamp(t, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def clock_time(t: float) -> str:
    """HH:MM:SS in UTC, as sentences say it."""
    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%H:%M:%S")


def seconds(value: float) -> str:
    """A duration as people say it: ``30 s``, ``2.1 s``, ``150 ms``."""
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if abs(value - round(value)) < 0.05:
        return f"{round(value)} s"
    return f"{value:.1f} s"


def ids(*groups: Iterable[Seen | int | None]) -> tuple[int, ...]:
    """The delivery ids of ``groups``, each once, in order."""
    out: dict[int, None] = {}
    for group in groups:
        for item in group:
            if item is None:
                continue
            out[item if isinstance(item, int) else item.id] = None
    return tuple(sorted(out))


# --- reading a trace -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodKey:
    uid: str
    name: str
    namespace: str


def _pod_meta(body: Any) -> dict[str, Any]:
    if isinstance(body, dict):
        pod = body.get("pod")
        if isinstance(pod, dict) and isinstance(pod.get("metadata"), dict):
            meta: dict[str, Any] = pod["metadata"]
            return meta
    return {}


def pods_in(records: Iterable[dict[str, Any]]) -> list[PodKey]:
    """Every pod the trace's messages name (by UID, first name seen), in order of appearance."""
    found: dict[str, PodKey] = {}
    for record in records:
        if record.get("k") != "msg":
            continue
        kind = MESSAGES.short(str(record.get("type", "")))
        body = record.get("body")
        if kind in ("UpdatePod", "PodRejected", "PodObserved"):
            meta = _pod_meta(body)
            uid = meta.get("uid")
            if isinstance(uid, str) and uid and uid not in found:
                found[uid] = PodKey(uid, str(meta.get("name", "")),
                                    str(meta.get("namespace", "")))
        elif kind == "KillRuntimePod" and isinstance(body, dict):
            uid = body.get("uid")
            if isinstance(uid, str) and uid and uid not in found:
                found[uid] = PodKey(uid, str(body.get("name", "")),
                                    str(body.get("namespace", "")))
    return list(found.values())


def match_pods(known: list[PodKey], query: str, namespace: str | None) -> list[PodKey]:
    """The pods ``query`` names: ``name`` (in ``namespace``, else any), ``ns/name``, or a
    UID (or a prefix of one, at least 4 characters)."""
    if "/" in query:
        namespace, query = query.split("/", 1)
    by_name = [k for k in known if k.name == query
               and (namespace is None or k.namespace == namespace)]
    if by_name:
        return by_name
    return [k for k in known
            if k.uid == query or (len(query) >= 4 and k.uid.startswith(query))]


def _uid_of(kind: str, body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    if kind in ("UpdatePod", "PodObserved", "PodRejected", "PodStatusChanged"):
        uid = _pod_meta(body).get("uid")
    elif kind == "RecordEvent":
        ref = body.get("ref")
        uid = ref.get("uid") if isinstance(ref, dict) else None
    else:
        uid = body.get("uid")
    return uid if isinstance(uid, str) else None


def _decode(kind: str, body: Any) -> object | None:
    try:
        cls = MESSAGES.resolve(kind)
    except LookupError:
        return None
    if cls not in _TAKEN_AT:
        return None
    try:
        return msgspec.convert(body, cls)
    except (msgspec.ValidationError, TypeError):
        return None  # recorded by code whose message had another shape


def read_history(records: Iterable[dict[str, Any]], key: PodKey) -> PodHistory:
    """The messages (and the pod worker's runtime calls) about the pod ``key``."""
    history = PodHistory(key.uid, key.name, key.namespace)
    worker = names.worker_name(key.uid)
    worker_deliveries: set[int] = set()
    for record in records:
        t = record.get("t")
        if isinstance(t, int | float) and t > history.trace_end:
            history.trace_end = float(t)
        kind_of_record = record.get("k")
        if kind_of_record == "call":
            within = record.get("in")
            if within in worker_deliveries and record.get("actor") == worker:
                error = record.get("error")
                args = record.get("args")
                history.calls.append(Call(
                    int(within), str(record.get("method", "")),
                    tuple(args) if isinstance(args, list) else (), float(record.get("t", 0.0)),
                    float(record.get("m", 0.0)), float(record.get("dur") or 0.0),
                    str(error.get("detail", "")) if isinstance(error, dict) else
                    (str(error) if error else "")))
            continue
        if kind_of_record != "msg" or record.get("dead"):
            continue
        receiver = str(record.get("to", ""))
        if receiver == worker:
            worker_deliveries.add(int(record["id"]))
        kind = MESSAGES.short(str(record.get("type", "")))
        body = record.get("body")
        if _uid_of(kind, body) != key.uid:
            continue
        message = _decode(kind, body)
        if message is None:
            continue
        wanted = _TAKEN_AT[type(message)]
        if receiver != (worker if wanted is None else wanted):
            continue
        if isinstance(message, UpdatePod | PodObserved):
            history.pod = message.pod
        history.seen.append(Seen(int(record["id"]), float(record.get("t", 0.0)),
                                 float(record.get("m", 0.0)), str(record.get("from", "")),
                                 receiver, record.get("parent"), message))
    return history
