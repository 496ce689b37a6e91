"""The trace tools: ``trace show`` (timeline), ``trace export --format perfetto``, the CLI."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import actors.app.tools.kubelet_plugin  # noqa: F401 - the kubelet's summaries, back-offs, pods
from actors.app.tools.perfetto import export_perfetto
from actors.app.tools.timeline import show
from actors.app.tools.trace_cli import main as cli_main
from actors.core.actor import Actor
from actors.core.dispatch import ActorRef, Dispatch
from actors.core.messages import Tick
from actors.core.trace.reader import Trace, read_trace
from actors.core.trace.writer import TraceWriter
from tests.helpers import wait_for

UID = "6f7a3968998c8ed2799338ccd0e45403"
OTHER = "0badc0de0badc0de0badc0de0badc0de"
SANDBOX = "1ce2239a7bf790c7aee9ef8496d97f2612168ab9db66eb5e23b33f90d153f904"
M0 = 1000.0


# --- a trace written by hand --------------------------------------------------------------


def _pod(name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": {"containers": [{"name": "app", "image": "busybox"}]}}


class _Builder:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = [
            {"k": "header", "v": 1, "pid": 42, "argv": [], "config": {}, "t": 0.0, "m": M0}]
        self.next_id = 0

    def add(self, kind: str, at: float, **fields: Any) -> dict[str, Any]:
        record = {"k": kind, **fields, "t": 1.7e9 + at, "m": M0 + at}
        self.records.append(record)
        return record

    def msg(self, at: float, sender: str, to: str, type_name: str, body: dict[str, Any],
            parent: int | None = None, dead: bool = False, inc: int = 0) -> int:
        self.next_id += 1
        self.add("msg", at, id=self.next_id, **{"from": sender}, seq=1, to=to,
                 inc=-1 if dead else inc, parent=parent, dead=dead,
                 type=f"actors.messages.{type_name}", body=body)
        return self.next_id

    def handled(self, id: int, actor: str, at: float, until: float, inc: int = 0,
                calls: tuple[dict[str, Any], ...] = (), error: str | None = None) -> None:
        self.add("begin", at, id=id, actor=actor, inc=inc)
        for call in calls:
            self.add("call", call.pop("at"), actor=actor, inc=inc, **{"in": id}, **call)
        end: dict[str, Any] = {"id": id, "actor": actor, "inc": inc}
        if error is not None:
            end["error"] = error
        self.add("end", until, **end)

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "trace-000001.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records))
        return directory


def hand_trace(directory: Path) -> Path:
    """A worker for "web" syncs (calls, one failing), crash-loops, fails and is restarted;
    "db" is updated once; a dead letter; an escalation."""
    b = _Builder()
    worker, other = f"pod/{UID}", f"pod/{OTHER}"
    b.add("spawn", 0.0, actor="supervisor", inc=0)
    b.add("spawn", 0.001, actor=worker, inc=0)
    tick = b.msg(0.010, "timers", "pleg", "Tick", {"kind": "relist", "at": M0})
    b.handled(tick, "pleg", 0.011, 0.020, calls=(
        {"at": 0.015, "target": "runtime", "method": "list_containers", "args": [],
         "dur": 0.003, "result": [{"labels": {"io.kubernetes.pod.uid": UID}}]},))
    relisted = b.msg(0.020, "pleg", "supervisor", "Relisted",
                     {"events": [{"uid": UID, "type": "ContainerDied"}],
                      "pods": [{"uid": UID, "name": "web", "namespace": "default",
                                "running": False}],
                      "running_containers": 0, "duration": 0.01}, parent=tick)
    b.handled(relisted, "supervisor", 0.021, 0.022)
    update = b.msg(0.100, "supervisor", worker, "UpdatePod",
                   {"pod": _pod("web", UID), "kind": "create"}, parent=relisted)
    b.handled(update, worker, 0.101, 0.300, calls=(
        {"at": 0.150, "target": "runtime", "method": "run_pod_sandbox",
         "args": [{"metadata": {"name": "web", "uid": UID}}, ""], "dur": 0.040,
         "result": SANDBOX},
        {"at": 0.250, "target": "runtime", "method": "start_container",
         "args": ["f17fd42e8005f3673ddf0678ff2ba51723372ac7a43e9548276fddf67688e220"],
         "dur": 0.020, "error": {"type": "CRIError", "detail": "exec format error"}},
    ))
    observed = b.msg(0.290, worker, "status", "PodObserved", {
        "pod": _pod("web", UID), "runtime": {"uid": UID, "name": "web", "namespace": "default"},
        "state": "syncing",
        "sync": {"steps": [{"action": "StartContainer", "target": "app",
                            "error": "CrashLoopBackOff",
                            "message": f"back-off 10s restarting failed container=app "
                                       f"pod=web_default({UID})", "backoff": 10.0}]}},
        parent=update)
    b.handled(observed, "status", 0.301, 0.302)
    done = b.msg(0.295, worker, "supervisor", "PodWorkerDone",
                 {"uid": UID, "state": "syncing", "requeue_after": 10.0,
                  "error": "CrashLoopBackOff", "runtime_error": False}, parent=update)
    b.handled(done, "supervisor", 0.303, 0.304)
    db = b.msg(0.400, "supervisor", other, "UpdatePod",
               {"pod": _pod("db", OTHER), "kind": "create"})
    b.handled(db, other, 0.401, 0.402)
    dead = b.msg(0.500, "supervisor", "probes", "ProbeVerdict",
                 {"uid": UID, "container_name": "app", "container_id": "c1",
                  "kind": "liveness", "result": "Failure"}, dead=True)
    assert dead
    boom = b.msg(1.000, "supervisor", worker, "UpdatePod",
                 {"pod": _pod("web", UID), "kind": "sync"})
    b.handled(boom, worker, 1.001, 1.010, error="RuntimeError('boom')")
    failed = b.msg(1.011, worker, "supervisor", "ChildFailed",
                   {"name": worker, "incarnation": 0, "error": "RuntimeError('boom')"})
    b.handled(failed, "supervisor", 1.012, 1.013)
    b.add("decision", 1.013, actor=worker, what="restart", detail={"delay": 0.5})
    restart = b.msg(1.513, "timers", "supervisor", "RestartChild",
                    {"name": worker, "incarnation": 0})
    b.handled(restart, "supervisor", 1.514, 1.515)
    b.add("spawn", 1.515, actor=worker, inc=1)
    b.add("decision", 2.0, actor="supervisor", what="escalate",
          detail={"restarts": 11, "within": 60})
    sync = b.msg(2.5, "timers", "supervisor", "Tick", {"kind": "sync", "at": M0 + 2.5})
    b.handled(sync, "supervisor", 2.501, 2.502)
    return b.write(directory)


def render(trace: Trace, **filters: Any) -> str:
    out = io.StringIO()
    show(trace, console=Console(file=out, width=300, color_system=None), **filters)
    return out.getvalue()


def entries(text: str) -> list[str]:
    """The timeline lines (not the header, not the calls under a handler)."""
    return [line for line in text.splitlines()[1:]
            if line[:11].strip().endswith("s") and not line.startswith(("pod ", "warning"))]


@pytest.fixture
def trace(tmp_path: Path) -> Trace:
    return read_trace(hand_trace(tmp_path / "trace"))


# --- show ---------------------------------------------------------------------------------


def test_show_prints_deliveries_calls_errors_and_supervision(trace: Trace) -> None:
    text = render(trace)
    assert "trace " in text.splitlines()[0] and "pid 42" in text.splitlines()[0]
    assert "pleg[0] Tick relist  ← timers  9.0ms" in text
    assert "supervisor[0] Relisted 1 events, 1 pods [ContainerDied]  ← pleg" in text
    assert "pod/6f7a3968:web[0] UpdatePod create web  ← supervisor  199.0ms  #3" in text
    assert "↳ run_pod_sandbox(web, \"\") 40.0ms ok 1ce2239a7bf7" in text
    assert "↳ start_container(f17fd42e8005) 20.0ms CRIError: exec format error" in text
    assert "PodWorkerDone syncing requeue 10.0s error: CrashLoopBackOff" in text
    assert "PodObserved web syncing sync StartContainer app: CrashLoopBackOff" in text
    assert "dead letter ProbeVerdict liveness Failure app  supervisor → probes" in text
    assert "✗ handler failed: RuntimeError('boom')" in text
    assert "supervisor[0] RestartChild pod/6f7a3968998c8ed2799338ccd0e45403[0]" in text
    assert "⟳ restart pod/6f7a3968:web[1]" in text
    assert "+ spawn supervisor[0]" in text
    assert "◆ supervisor: restart pod/6f7a3968:web  delay=0.5" in text
    assert "◆ supervisor: escalate supervisor  restarts=11 within=60" in text
    # times are seconds since the trace started, in record order
    first = entries(text)
    assert first[0].split()[0] == "0.000s"
    times = [float(line.split()[0][:-1]) for line in first]
    assert times == sorted(times)


def test_show_pod_filter_by_name_and_uid_prefix(trace: Trace) -> None:
    by_name = render(trace, pod="web")
    assert "pod 'web': 6f7a3968998c8ed2799338ccd0e45403, web" in by_name
    assert entries(by_name) == entries(render(trace, pod="6f7a39"))
    assert entries(by_name) == entries(render(trace, pod="default/web"))
    assert "UpdatePod create web" in by_name
    assert "UpdatePod create db" not in by_name
    assert "PodWorkerDone" in by_name and "ChildFailed" in by_name
    assert "dead letter ProbeVerdict" in by_name  # its body names the pod's UID
    assert "⟳ restart pod/6f7a3968:web[1]" in by_name
    assert "escalate" not in by_name
    # the relist carries the pod only in a runtime call's result: shown, with that call
    assert "pleg[0] Tick relist" in by_name and "list_containers()" in by_name
    assert "Tick sync" not in by_name
    db = render(trace, pod="db")
    assert "UpdatePod create db" in db and "web" not in db.split("\n", 2)[2]
    assert entries(render(trace, pod="nosuchpod")) == []


def test_show_actor_filter_exact_and_prefix(trace: Trace) -> None:
    pleg = entries(render(trace, actor="pleg"))
    assert len(pleg) == 1 and "pleg[0] Tick relist" in pleg[0]
    pods = entries(render(trace, actor="pod/"))
    assert any("UpdatePod create web" in line for line in pods)
    assert any("UpdatePod create db" in line for line in pods)
    assert not any("supervisor[0]" in line for line in pods)
    assert any("restart pod/" in line for line in pods)
    supervisor = render(trace, actor="supervisor")
    assert "escalate supervisor" in supervisor
    assert "dead letter ProbeVerdict" in supervisor  # sent by the supervisor


def test_show_type_filter(trace: Trace) -> None:
    ticks = entries(render(trace, types=["Tick"]))
    assert len(ticks) == 2 and all(" Tick " in line for line in ticks)
    mixed = entries(render(trace, types=["PodWorkerDone", "relisted"]))
    assert [line.split()[2] for line in mixed] == ["Relisted", "PodWorkerDone"]
    assert "spawn" not in render(trace, types=["Tick"])
    assert "+ spawn supervisor" in render(trace, types=["spawn"])


def test_show_time_window_and_limit(trace: Trace) -> None:
    window = entries(render(trace, since=0.1, until=0.45))
    assert window and all(0.1 <= float(line.split()[0][:-1]) <= 0.45 for line in window)
    assert any("UpdatePod create db" in line for line in window)
    assert not any("Tick" in line for line in window)
    limited = entries(render(trace, limit=3))
    assert len(limited) == 3
    assert limited == entries(render(trace))[:3]


def test_show_tolerates_a_torn_last_line(tmp_path: Path) -> None:
    directory = hand_trace(tmp_path / "trace")
    file = directory / "trace-000001.jsonl"
    with file.open("a") as out:
        out.write('{"k":"msg","id":99,"from":"sup')
    trace = read_trace(directory)
    assert trace.torn
    text = render(trace)
    assert "warning: " in text and "torn" in text
    assert "escalate" in text


def test_show_marks_unhandled_deliveries(tmp_path: Path) -> None:
    b = _Builder()
    b.msg(0.1, "supervisor", "status", "DesiredPods", {"pods": [_pod("web", UID)]})
    text = render(read_trace(b.write(tmp_path / "t")))
    assert "status[0] DesiredPods 1 pods" in text and "never handled" in text


# --- perfetto -----------------------------------------------------------------------------


def validate_perfetto(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Check the Chrome trace-event structure; returns the events."""
    assert data["displayTimeUnit"] == "ms"
    events = data["traceEvents"]
    json.dumps(data)  # serializable
    names = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)
    for event in events:
        assert event["pid"] == 1
        if event["ph"] == "M":
            continue
        assert event["tid"] in names, event
        assert isinstance(event["ts"], int | float) and event["ts"] >= 0, event
        if event["ph"] == "X":
            assert isinstance(event["dur"], int | float) and event["dur"] >= 0, event
            assert event["name"] and event["cat"]
        if event["ph"] == "i":
            assert event["s"] in ("t", "p", "g")
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == finishes.keys()
    for id, finish in finishes.items():
        assert finish["bp"] == "e"
        assert (finish["name"], finish["cat"]) == (starts[id]["name"], starts[id]["cat"])
    # X events on one thread nest properly
    by_tid: dict[int, list[dict[str, Any]]] = {}
    for event in events:
        if event["ph"] == "X":
            by_tid.setdefault(event["tid"], []).append(event)
    for slices in by_tid.values():
        stack: list[float] = []
        for event in sorted(slices, key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1] <= event["ts"] + 1e-3:  # (float noise below 1 ns)
                stack.pop()
            end = event["ts"] + event["dur"]
            assert not stack or end <= stack[-1] + 1e-3, (event, names[event["tid"]])
            stack.append(end)
    # every flow end sits on a handler slice that starts there
    for finish in finishes.values():
        assert any(s["ts"] == finish["ts"] and s["cat"] == "handler"
                   for s in by_tid[finish["tid"]])
    return list(events)


def _threads(events: list[dict[str, Any]]) -> dict[str, int]:
    return {e["args"]["name"]: e["tid"] for e in events
            if e["ph"] == "M" and e["name"] == "thread_name"}


def test_perfetto_export_structure(trace: Trace) -> None:
    events = validate_perfetto(export_perfetto(trace))
    threads = _threads(events)
    assert {"timers", "pleg", "supervisor", "status", "pod/6f7a3968:web",
            "pod/0badc0de:db"} <= threads.keys()
    worker = threads["pod/6f7a3968:web"]
    handler = next(e for e in events if e["ph"] == "X" and e["cat"] == "handler"
                   and e["tid"] == worker and e["args"]["delivery"] == 3)
    assert handler["name"] == "UpdatePod"
    assert handler["ts"] == pytest.approx(101_000) and handler["dur"] == pytest.approx(199_000)
    assert handler["args"]["from"] == "supervisor"
    assert handler["args"]["summary"] == "create web"
    calls = [e for e in events if e["ph"] == "X" and e["cat"].startswith("call")
             and e["tid"] == worker]
    assert [c["name"] for c in calls] == ["run_pod_sandbox", "start_container"]
    assert calls[0]["ts"] == pytest.approx(110_000) and calls[0]["dur"] == pytest.approx(40_000)
    assert calls[1]["cat"] == "call,error" and calls[1]["args"]["error"]["type"] == "CRIError"
    # flows: the tick from the timers thread to pleg, relist to supervisor, and on
    flows = {e["id"]: e for e in events if e["ph"] == "s"}
    assert flows[1]["tid"] == threads["timers"]
    assert flows[2]["tid"] == threads["pleg"] and flows[3]["tid"] == threads["supervisor"]
    tick_send = next(e for e in events if e["ph"] == "X" and e["cat"] == "send"
                     and e["args"]["delivery"] == 1)
    assert tick_send["tid"] == threads["timers"] and tick_send["name"] == "send Tick"
    faults = [e for e in events if e["ph"] == "i" and e["name"] == "fault"]
    assert len(faults) == 1 and faults[0]["tid"] == worker
    assert faults[0]["args"]["error"] == "RuntimeError('boom')"
    supervision = {e["name"]: e for e in events if e["ph"] == "i"
                   and e["cat"].startswith("supervision")}
    assert supervision["restart pod/6f7a3968:web"]["s"] == "t"
    assert supervision["restart pod/6f7a3968:web"]["args"]["incarnation"] == 1
    assert supervision["escalate supervisor"]["s"] == "g"
    dead = [e for e in events if e["ph"] == "i" and e["cat"] == "dead_letter"]
    assert len(dead) == 1 and dead[0]["name"] == "dead letter ProbeVerdict"
    assert dead[0]["args"]["delivery"] not in flows  # a dead letter has no flow


def test_perfetto_backoff_spans(trace: Trace) -> None:
    events = validate_perfetto(export_perfetto(trace))
    threads = _threads(events)
    backoffs = {e["name"]: e for e in events if e.get("cat") == "backoff"}
    requeue = backoffs["back-off 10.0s"]
    assert requeue["tid"] == threads["pod/6f7a3968:web back-off"]
    assert requeue["ts"] == pytest.approx(295_000)
    # cut at the end of the trace (2.502 s)
    assert requeue["dur"] == pytest.approx(2_502_000 - 295_000)
    assert requeue["args"]["seconds"] == 10.0 and requeue["args"]["cut"] is True
    crash = backoffs["CrashLoopBackOff app 10s"]
    assert crash["tid"] == threads["pod/6f7a3968:web back-off app"]
    restart = backoffs["restart back-off 0.50s"]
    assert restart["tid"] == threads["pod/6f7a3968:web restart back-off"]
    assert restart["ts"] == pytest.approx(1_012_000) and restart["dur"] == pytest.approx(502_000)


def _observed_steps(tmp_path: Path, *steps: dict[str, Any]) -> Trace:
    """One PodObserved of "web" whose sync took ``steps``."""
    b = _Builder()
    observed = b.msg(0.1, f"pod/{UID}", "status", "PodObserved", {
        "pod": _pod("web", UID), "state": "syncing", "sync": {"steps": list(steps)},
        "runtime": {"uid": UID, "name": "web", "namespace": "default"}})
    b.handled(observed, "status", 0.1, 100.0)
    return read_trace(b.write(tmp_path / "observed"))


def test_perfetto_container_backoffs_come_from_the_steps_backoff_field(tmp_path: Path) -> None:
    trace = _observed_steps(
        tmp_path,
        # The delay is the typed field; the text is not read (it says 10s here).
        {"action": "StartContainer", "target": "app", "error": "CrashLoopBackOff",
         "message": "back-off 10s restarting failed container=app", "backoff": 40.0},
        {"action": "StartContainer", "target": "side", "error": "ImagePullBackOff",
         "message": 'Back-off pulling image "nginx"', "backoff": 20.0},
        # A sentence about a back-off without the field (an older trace) is no span.
        {"action": "StartContainer", "target": "old", "error": "CrashLoopBackOff",
         "message": "back-off 10s restarting failed container=old"})
    events = validate_perfetto(export_perfetto(trace))
    threads = _threads(events)
    spans = {e["name"]: e for e in events if e.get("cat") == "backoff"}
    assert spans.keys() == {"CrashLoopBackOff app 40s", "ImagePullBackOff side 20s"}
    crash = spans["CrashLoopBackOff app 40s"]
    assert crash["tid"] == threads["pod/6f7a3968 back-off app"]
    assert crash["args"] == {"seconds": 40.0, "container": "app", "delivery": 1}
    assert crash["dur"] == pytest.approx(40_000_000)
    assert spans["ImagePullBackOff side 20s"]["tid"] == threads["pod/6f7a3968 back-off side"]


def test_the_viewers_know_no_kubelet_message_names() -> None:
    """The timeline and the export ask the kubelet's plug-in; they name none of its types."""
    import actors.app.tools.perfetto
    import actors.app.tools.plugins
    import actors.app.tools.timeline
    from actors.core.trace.names import MESSAGES

    kubelet_names = {name for name, cls in MESSAGES.names().items()
                     if cls.__module__.startswith("actors.kubelet.")}
    assert {"UpdatePod", "PodObserved", "Relisted", "PodWorkerDone"} <= kubelet_names
    for module in (actors.app.tools.timeline, actors.app.tools.perfetto,
                   actors.app.tools.plugins):
        source = Path(str(module.__file__)).read_text()
        named = {name for name in kubelet_names if name in source}
        assert not named, f"{module.__name__} names kubelet messages: {sorted(named)}"
        assert "back-off (" not in source  # and parses no delay out of a sentence


# --- a real recording ---------------------------------------------------------------------


@dataclass(frozen=True)
class Ping:
    n: int


@dataclass(frozen=True)
class Boom:
    pass


class Pinger(Actor):
    def __init__(self, dispatch: Dispatch, writer: TraceWriter) -> None:
        super().__init__("pinger", dispatch)
        self.writer = writer

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick):
            self.writer.call("runtime", "list_containers", (), 0.001, [], None)
            self.send("ponger", Ping(1))
            self.send("nobody", Ping(0))
        return None


class Ponger(Actor):
    def __init__(self, dispatch: Dispatch, seen: list[Any], incarnation: int = 0) -> None:
        super().__init__("ponger", dispatch, incarnation)
        self.seen = seen

    def handle(self, message: Any) -> Any:
        self.seen.append(message)
        if isinstance(message, Boom):
            raise RuntimeError("boom")
        return None


class Boss(Actor):
    """Restarts the ponger once, as a supervisor would."""

    def __init__(self, dispatch: Dispatch, writer: TraceWriter, seen: list[Any]) -> None:
        super().__init__("supervisor", dispatch)
        self.writer = writer
        self.seen = seen

    def handle(self, message: Any) -> Any:
        self.writer.decision(message.name, "restart", {"after": message.error})
        ref = Ponger.start(self.dispatch, self.seen, 1)  # records its spawn
        self.dispatch.register("ponger", ref, 1)
        self.seen.append(message)
        return None


def recorded_trace(directory: Path) -> Trace:
    writer = TraceWriter(directory)
    dispatch = Dispatch(recorder=writer)
    seen: list[Any] = []
    dispatch.adopt("ponger", "supervisor")
    refs: list[ActorRef] = [Boss.start(dispatch, writer, seen),
                            Pinger.start(dispatch, writer), Ponger.start(dispatch, seen)]
    for name, ref in zip(("supervisor", "pinger", "ponger"), refs, strict=True):
        dispatch.register(name, ref)
    try:
        dispatch.tell("pinger", Tick("relist", 1.0), sender="timers")
        wait_for(lambda: any(isinstance(m, Ping) for m in seen), 5, "the ping")
        dispatch.tell("ponger", Boom(), sender="test")
        wait_for(lambda: dispatch.ref("ponger") not in (None, refs[2]), 5, "the restart")
        dispatch.tell("ponger", Ping(2), sender="test")
        wait_for(lambda: sum(isinstance(m, Ping) for m in seen) == 2, 5, "the second ping")
    finally:
        for name in ("pinger", "ponger", "supervisor"):
            live = dispatch.ref(name)
            if live is not None:
                live.stop()
        writer.close()
    return read_trace(directory)


def test_show_and_export_a_real_recording(tmp_path: Path) -> None:
    trace = recorded_trace(tmp_path / "rec")
    text = render(trace)
    assert "pinger[0] Tick relist  ← timers" in text
    assert "↳ list_containers() 1.0ms ok (0 items)" in text
    assert "ponger[0] Ping n=1  ← pinger" in text
    assert "dead letter Ping n=0  pinger → nobody (no such actor)" in text
    assert "ponger[0] Boom  ← test" in text and "✗ handler failed: RuntimeError('boom')" in text
    assert "supervisor[0] ChildFailed ponger[0]: RuntimeError('boom')  ← ponger" in text
    assert "◆ supervisor: restart ponger" in text
    assert "⟳ restart ponger[1]" in text
    assert "ponger[1] Ping n=2  ← test" in text
    assert entries(render(trace, actor="ponger", types=["Ping"]))[-1].split()[1] == "ponger[1]"

    events = validate_perfetto(export_perfetto(trace))
    threads = _threads(events)
    assert {"timers", "pinger", "ponger", "supervisor"} <= threads.keys()
    ping = next(m for m in trace.messages() if m["to"] == "ponger" and m["from"] == "pinger")
    start = next(e for e in events if e["ph"] == "s" and e["id"] == ping["id"])
    finish = next(e for e in events if e["ph"] == "f" and e["id"] == ping["id"])
    assert (start["tid"], finish["tid"]) == (threads["pinger"], threads["ponger"])
    assert any(e["ph"] == "X" and e["name"] == "list_containers" and e["tid"] == threads["pinger"]
               for e in events)
    assert any(e["ph"] == "i" and e["name"] == "fault" for e in events)
    assert any(e["ph"] == "i" and e["name"] == "restart ponger" for e in events)


# --- the CLI ------------------------------------------------------------------------------


def test_cli_show_and_filters(trace: Trace, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "trace")
    assert cli_main(["show", path, "--pod", "db", "--limit", "5"]) == 0
    out = capsys.readouterr().out
    assert "UpdatePod create db" in out and "create web" not in out
    assert cli_main(["show", path + "/trace-000001.jsonl", "--actor", "pleg",
                     "--type", "Tick,Relisted", "--since", "0", "--until", "1"]) == 0
    out = capsys.readouterr().out
    assert "pleg[0] Tick relist" in out and "supervisor[0]" not in out
    # --type before the trace leaves the trace alone; repeated, the types add up.
    assert cli_main(["show", "--type", "UpdatePod", "--type", "Tick", path]) == 0
    out = capsys.readouterr().out
    assert "UpdatePod create db" in out and "pleg[0] Tick relist" in out
    assert cli_main(["show", "--type", "UpdatePod", path]) == 0
    out = capsys.readouterr().out
    assert "UpdatePod create db" in out and "Tick relist" not in out


def test_cli_export_to_stdout_and_file(trace: Trace, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "trace")
    assert cli_main(["export", path, "--format", "perfetto"]) == 0
    validate_perfetto(json.loads(capsys.readouterr().out))
    out = tmp_path / "out.json"
    assert cli_main(["export", path, "-o", "perfetto", str(out)]) == 0
    validate_perfetto(json.loads(out.read_text()))
    assert str(out) in capsys.readouterr().err
    other = tmp_path / "other.json"
    assert cli_main(["export", path, "--output-file", str(other)]) == 0
    assert json.loads(other.read_text()) == json.loads(out.read_text())
    assert cli_main(["export", path, str(other), "-o", "perfetto"]) == 0
    assert cli_main(["export", path, "-o", "perfetto", str(out), "extra"]) == 2
    assert capsys.readouterr().err.rstrip().endswith(f"unrecognized arguments: {out} extra")
    assert cli_main(["export", path, str(out), "--output-file", str(other)]) == 2
    assert "the file is named twice" in capsys.readouterr().err


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing"
    assert cli_main(["show", str(missing)]) == 1
    err = capsys.readouterr().err
    assert str(missing) in err and "no such trace file or directory" in err

    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli_main(["export", str(empty), "--format", "perfetto"]) == 1
    err = capsys.readouterr().err
    assert str(empty) in err and "no trace-*.jsonl files" in err

    garbled = tmp_path / "garbled"
    garbled.mkdir()
    (garbled / "trace-000001.jsonl").write_text('not json\n{"k":"spawn","t":0,"m":0}\n')
    assert cli_main(["show", str(garbled)]) == 1
    assert "trace-000001.jsonl: line 1" in capsys.readouterr().err

    hand_trace(tmp_path / "ok")
    assert cli_main(["export", str(tmp_path / "ok"), "-o", "svg"]) == 2
    assert "unknown output format 'svg' (known: perfetto)" in capsys.readouterr().err
    assert cli_main([]) == 2
    assert "usage: kubelet-actors trace" in capsys.readouterr().err
    assert cli_main(["frobnicate"]) == 2
    capsys.readouterr()
    assert cli_main(["show", str(tmp_path / "ok"), "--limit", "0"]) == 2
    assert "--limit: must be positive" in capsys.readouterr().err
    assert cli_main(["show", str(tmp_path / "ok"), "--since", "soon"]) == 2
    assert "not a number of seconds" in capsys.readouterr().err
    assert cli_main(["show", str(tmp_path / "ok"), "--since", "2", "--until", "1"]) == 2
    capsys.readouterr()
    assert cli_main(["show", "--help"]) == 0
    assert "exit codes: 0 done" in capsys.readouterr().out
    assert cli_main(["replay", str(tmp_path / "ok"), "--until", "3"]) == 2
    assert "--until-delivery N (--until is seconds from the start in trace show)" in (
        capsys.readouterr().err)


def test_cli_torn_trace_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = hand_trace(tmp_path / "trace")
    with (directory / "trace-000001.jsonl").open("a") as out:
        out.write('{"k":"end","id"')
    assert cli_main(["export", str(directory), "--format", "perfetto"]) == 0
    captured = capsys.readouterr()
    assert "torn" in captured.err
    validate_perfetto(json.loads(captured.out))


def test_cli_replay_replays_with_the_kubelets_world(
        capsys: pytest.CaptureFixture[str]) -> None:
    kept = Path(__file__).resolve().parents[2] / "traces" / "restart-and-remove"
    assert cli_main(["replay", str(kept)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # A kept trace was recorded by an earlier commit: the report may say so first.
    if lines[0].startswith("note: this trace was recorded by kubelet-actors"):
        lines = lines[1:]
    assert lines[0].startswith("no divergence: replayed ")
    assert cli_main(["replay", str(kept / "nothing")]) == 1


def test_bin_main_dispatches_trace(trace: Trace, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    from bin.main import main as bin_main

    with pytest.raises(SystemExit) as exit:
        bin_main(["trace", "show", str(tmp_path / "trace"), "--type", "Tick"])
    assert exit.value.code == 0
    assert "pleg[0] Tick relist" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit:
        bin_main(["trace", "show", str(tmp_path / "nothing")])
    assert exit.value.code == 1
