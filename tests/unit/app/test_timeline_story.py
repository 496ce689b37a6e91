"""The pods' story on the timeline page (actors.app.tools.kubelet_story, page_data's
``story``): spans and marks with their labels, read from trace records. The browser test
is tests/e2e/test_timeline_story.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

# The kubelet's labels (its story and routine hooks) and its plug-in (pods, names):
import actors.app.tools.kubelet_labels
import actors.app.tools.kubelet_plugin  # noqa: F401
from actors.app.tools.page_data import page_data
from actors.core.messages import Tick
from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import Trace
from actors.kubelet.events import RecordEvent
from actors.kubelet.messages import (
    PodObserved,
    ProbeKind,
    Relisted,
    UpdateKind,
    UpdatePod,
    WorkerState,
)
from actors.kubelet.probe_manager import ProbeOutcome
from runtime.cri.types import ContainerState
from runtime.events.recorder import ObjectRef
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus, RuntimePodStatus
from runtime.kuberuntime.result import PodSyncResult, StepResult
from runtime.pod.model import Pod
from runtime.prober.results import ProbeResult

UID = "u1"
WORKER = f"pod/{UID}"
WALL = 1_700_000_000.0  # the wall clock at trace time 0
POD = msgspec.convert({"metadata": {"name": "web", "namespace": "default", "uid": UID},
                       "spec": {"terminationGracePeriodSeconds": 30,
                                "containers": [{"name": "c", "image": "busybox"}]}}, Pod)


class Records:
    """A trace's records, written as the recorder writes them (times: seconds since 0)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.next_id = 1

    def msg(self, at: float, sender: str, to: str, message: object,
            parent: int | None = None) -> int:
        id = self.next_id
        self.next_id += 1
        self.records.append({"k": "msg", "id": id, "from": sender, "seq": id, "to": to,
                             "inc": 0, "parent": parent, "dead": False,
                             "type": MESSAGES.name_of(message),
                             "body": msgspec.to_builtins(message), "t": WALL + at, "m": at})
        return id

    def handled(self, at: float, actor: str, delivery: int) -> None:
        self.records.append({"k": "begin", "id": delivery, "actor": actor, "inc": 0,
                             "t": WALL + at, "m": at})
        self.records.append({"k": "end", "id": delivery, "actor": actor, "inc": 0,
                             "t": WALL + at + 0.001, "m": at + 0.001})

    def call(self, at: float, actor: str, delivery: int, method: str, args: list[Any]) -> None:
        self.records.append({"k": "call", "target": "runtime", "method": method, "args": args,
                             "dur": 0.001, "actor": actor, "inc": 0, "in": delivery,
                             "t": WALL + at, "m": at, "result": None})

    def trace(self) -> Trace:
        return Trace(sorted(self.records, key=lambda r: r["m"]), {"m": 0.0}, (Path("t"),))


def _status(id: str, state: ContainerState, started: float, finished: float = 0.0,
            exit_code: int = 0, reason: str = "", restarts: int = 0) -> ContainerRuntimeStatus:
    return ContainerRuntimeStatus(id=ContainerID(id), name="c", state=state,
                                  created_at=WALL + started, started_at=WALL + started,
                                  finished_at=WALL + finished if finished else 0.0,
                                  exit_code=exit_code, reason=reason, restart_count=restarts)


def _observed(*statuses: ContainerRuntimeStatus,
              steps: tuple[StepResult, ...] = ()) -> PodObserved:
    runtime = RuntimePodStatus(uid=PodUID(UID), name="web", namespace="default",
                               container_statuses=statuses)
    return PodObserved(POD, runtime, PodSyncResult(steps), WorkerState.SYNCING)


def _attempt(seq: int, result: ProbeResult, output: str, at: float) -> ProbeOutcome:
    return ProbeOutcome(uid=PodUID(UID), container_name="c", kind=ProbeKind.READINESS,
                        container_id=ContainerID("c2"), seq=seq, result=result,
                        output=output, started_at=at, finished_at=at)


def crash_loop_unready_and_deleted() -> Trace:
    """web's container c exits 42, waits out a 20 s back-off, runs again while its
    readiness probe says "db is down" twice, then web is deleted."""
    r = Records()
    r.msg(0.5, "supervisor", WORKER, UpdatePod(POD, UpdateKind.CREATE))
    r.msg(1.0, WORKER, "status", _observed(_status("c1", ContainerState.RUNNING, 0.8)))
    crashed = _status("c1", ContainerState.EXITED, 0.8, 2.0, 42, "Error")
    backoff = StepResult("StartContainer", "c", "CrashLoopBackOff",
                         "back-off 20s restarting failed container=c pod=web_default(u1)", 20.0)
    r.msg(2.5, WORKER, "status", _observed(crashed, steps=(backoff,)))
    r.msg(3.0, WORKER, "status", _observed(crashed, steps=(backoff,)))  # the same wait
    again = _status("c2", ContainerState.RUNNING, 22.6, restarts=1)
    r.msg(23.0, WORKER, "status", _observed(again, crashed))
    for seq, at in ((1, 24.0), (2, 25.0)):
        r.msg(at, "probes/pool", "probes", _attempt(seq, ProbeResult.FAILURE, "db is down\n", at))
    r.msg(26.0, "probes/pool", "probes", _attempt(3, ProbeResult.SUCCESS, "", 26.0))
    r.msg(27.0, "timers", "pleg", Tick(kind="relist", at=27.0))
    r.msg(27.1, "pleg", "supervisor",
          Relisted(events=(), pods=(), running_containers=0, duration=0.01))
    kill = r.msg(30.0, "supervisor", WORKER,
                 UpdatePod(POD, UpdateKind.KILL, reason="removed from its source", remove=True))
    r.handled(30.0, WORKER, kill)
    ref = ObjectRef("Pod", "default", "web", UID, field_path="spec.containers{c}")
    r.msg(30.01, WORKER, "events", RecordEvent(ref, "Normal", "Killing", "Stopping container c"),
          parent=kill)
    r.call(30.02, WORKER, kill, "stop_container", ["c2", 30])
    r.msg(31.0, WORKER, "status", _observed(
        _status("c2", ContainerState.EXITED, 22.6, 30.5, 0, "Completed", restarts=1), crashed))
    r.msg(40.0, "timers", "pleg", Tick(kind="relist", at=40.0))
    return r.trace()


def _story(data: dict[str, Any]) -> tuple[list[tuple[str, str, float, float, str, str]],
                                          list[tuple[str, str, float, str, str]]]:
    """(lane, kind, start s, end s, label, detail) per span; (lane, kind, at s, label, detail)
    per mark."""
    s, lanes, story = data["strings"], data["lanes"]["name"], data["story"]
    spans = story["spans"]
    marks = story["marks"]
    return ([(lanes[spans["lane"][i]], story["spanKinds"][spans["kind"][i]],
              round(spans["ts"][i] / 1e6, 2), round((spans["ts"][i] + spans["dur"][i]) / 1e6, 2),
              s[spans["label"][i]], s[spans["detail"][i]]) for i in range(len(spans["lane"]))],
            [(lanes[marks["lane"][i]], story["markKinds"][marks["kind"][i]],
              round(marks["ts"][i] / 1e6, 2), s[marks["label"][i]], s[marks["detail"][i]])
             for i in range(len(marks["lane"]))])


def test_runs_back_offs_and_probes_are_labelled_spans_on_the_pods_rows() -> None:
    data = page_data(crash_loop_unready_and_deleted())
    spans, _ = _story(data)
    by_label = {label: (lane, kind, start, end) for lane, kind, start, end, label, _ in spans}
    # The runtime's own times: c1 ran from 0.8 s to its exit at 2.0 s.
    assert by_label["c: exited 42 (Error)"] == ("web · c", "failed", 0.8, 2.0)
    # One back-off of 20 s, though two observations reported it.
    assert by_label["back-off 20s"] == ("web · c", "backoff", 2.5, 22.5)
    assert [label for *_, label, _ in spans if label.startswith("back-off")] == ["back-off 20s"]
    assert by_label["c: exited 0 (Completed)"] == ("web · c", "exited", 22.6, 30.5)
    # Two failed attempts with the same output: one span, until the attempt that passed.
    assert by_label["readiness failed: db is down"] == ("web · c readiness", "probe", 24.0,
                                                        26.0)
    detail = next(d for *_, label, d in spans if label.startswith("readiness"))
    assert detail == "readiness probe of c failed 2 times: db is down"
    lanes = data["lanes"]
    rows = [name for name, story in zip(lanes["name"], lanes["story"], strict=True) if story]
    assert rows == ["web", "web · c", "web · c readiness"]


def test_restarts_kills_and_the_deletion_are_marks_with_their_reason() -> None:
    _, marks = _story(page_data(crash_loop_unready_and_deleted()))
    assert ("web · c", "restart", 22.6, "c: restart 1",
            "c started again after exited 42 (Error)") in marks
    assert ("web · c", "kill", 30.01, "Stopping container c (grace 30s)",
            "Killing: Stopping container c (grace 30s)") in marks
    assert ("web", "delete", 30.0, "deleted (grace 30s)",
            "deleted (grace 30s): removed from its source") in marks


def test_ticks_and_relists_that_found_nothing_are_routine() -> None:
    data = page_data(crash_loop_unready_and_deleted())
    s, msgs = data["strings"], data["msgs"]
    routine = {s[t] for t, r in zip(msgs["type"], msgs["routine"], strict=True) if r}
    told = {s[t] for t, r in zip(msgs["type"], msgs["routine"], strict=True) if not r}
    assert routine == {"Tick", "Relisted"}
    assert {"PodObserved", "UpdatePod", "RecordEvent", "ProbeOutcome"} <= told
