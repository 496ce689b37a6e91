"""The trace tools' plug-in hooks: summaries, waits and pods come from what a program
registers for its message classes, not from the framework."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from rich.console import Console

from actors.app.tools.perfetto import export_perfetto
from actors.app.tools.plugins import TOOLS, PodRef, TraceTools, Wait, generic_summary
from actors.app.tools.timeline import show
from actors.core.trace.names import MESSAGES, message
from actors.core.trace.reader import Trace

UID = "5eed5eed5eed5eed5eed5eed5eed5eed"


@message("ToyGreeting")
@dataclass(frozen=True, slots=True)
class Greeting:
    """A toy message with a summary of its own."""

    who: str
    times: int = 1


@TOOLS.summary(Greeting)
def _greeting(greeting: Greeting) -> str:
    return f"hello {greeting.who} x{greeting.times}"


@message("ToyNap")
@dataclass(frozen=True, slots=True)
class Nap:
    """A toy message announcing a wait, about one pod."""

    seconds: float
    pod_name: str
    pod_uid: str


@TOOLS.waits(Nap)
def _nap(nap: Nap) -> Iterator[Wait]:
    yield Wait("nap", nap.seconds, f"nap {nap.seconds:g}s", {"why": "tired"})


@TOOLS.pods(Nap)
def _nap_pod(nap: Nap) -> Iterator[PodRef]:
    yield PodRef(nap.pod_name, nap.pod_uid)


@dataclass(frozen=True, slots=True)
class Plain:
    """A toy message nobody registered anything for (traced under its module path)."""

    n: int
    note: str


def _trace(*messages: tuple[str, str, str, Any]) -> Trace:
    """Each (sender, receiver, type, body) delivered and handled 10 ms apart."""
    records: list[dict[str, Any]] = []
    for id, (sender, to, type_name, body) in enumerate(messages, 1):
        at = id * 0.01
        records += [
            {"k": "msg", "id": id, "from": sender, "seq": id, "to": to, "inc": 0,
             "parent": None, "dead": False, "type": type_name, "body": body, "m": at, "t": at},
            {"k": "begin", "id": id, "actor": to, "inc": 0, "m": at, "t": at},
            {"k": "end", "id": id, "actor": to, "inc": 0, "m": at + 0.001, "t": at + 0.001},
        ]
    header = {"k": "header", "v": 2, "pid": 7, "config": {}, "m": 0.0, "t": 0.0}
    return Trace(records, header, ())


def _render(trace: Trace, **filters: Any) -> str:
    out = io.StringIO()
    show(trace, console=Console(file=out, width=300, color_system=None), **filters)
    return out.getvalue()


def _handler_summaries(trace: Trace) -> dict[str, str]:
    events = export_perfetto(trace)["traceEvents"]
    return {e["name"]: e["args"]["summary"] for e in events if e.get("cat") == "handler"}


def test_a_registered_summary_is_what_the_tools_show() -> None:
    trace = _trace(("a", "b", "ToyGreeting", {"who": "world", "times": 2}))
    assert "b[0] ToyGreeting hello world x2  ← a" in _render(trace)
    assert _handler_summaries(trace) == {"ToyGreeting": "hello world x2"}


def test_without_a_summary_hook_the_plain_fields_are_shown() -> None:
    plain = MESSAGES.name_of(Plain(1, "x"))
    assert "." in plain  # unregistered: its module path, which still resolves
    trace = _trace(("a", "b", plain, {"n": 3, "note": "hi"}),
                   ("a", "b", "NoSuchMessage", {"n": 4}))
    text = _render(trace)
    assert "b[0] Plain n=3 note=hi  ← a" in text
    assert "b[0] NoSuchMessage n=4  ← a" in text


def test_a_body_that_does_not_convert_gets_the_generic_summary() -> None:
    # Recorded by code whose Greeting had another shape: no typed message, no hook.
    trace = _trace(("a", "b", "ToyGreeting", {"name": "old", "times": "many"}))
    assert "b[0] ToyGreeting name=old times=many  ← a" in _render(trace)
    assert TOOLS.summarize("ToyGreeting", None) == ""
    assert generic_summary("a scalar body") == "a scalar body"


def test_waits_become_back_off_spans_on_the_senders_lane() -> None:
    trace = _trace(("sleeper", "b", "ToyNap", {"seconds": 0.005, "pod_name": "web",
                                               "pod_uid": UID}),
                   ("a", "b", "ToyGreeting", {"who": "x"}))
    events = export_perfetto(trace)["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    (span,) = [e for e in events if e.get("cat") == "backoff"]
    assert span["name"] == "nap 0.005s" and threads[span["tid"]] == "sleeper nap"
    assert span["ts"] == pytest.approx(10_000) and span["dur"] == pytest.approx(5_000)
    assert span["args"] == {"seconds": 0.005, "why": "tired", "delivery": 1}


def test_the_pods_hook_drives_the_pod_filter_and_pod_actor_labels(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A toy system whose pods are served by actors named pod/<uid> (the kubelet's plug-in
    # says the same of its workers; this test must not depend on it being imported).
    monkeypatch.setattr(TOOLS, "_pod_of", lambda actor: actor[4:] if actor.startswith("pod/")
                        else None)
    monkeypatch.setattr(TOOLS, "_actor_of", lambda uid: f"pod/{uid}")
    trace = _trace(("a", f"pod/{UID}", "ToyNap", {"seconds": 1.0, "pod_name": "web",
                                                   "pod_uid": UID}),
                   ("a", "b", "ToyGreeting", {"who": "x"}))
    text = _render(trace, pod="web")
    assert f"pod 'web': {UID}, web" in text
    assert "pod/5eed5eed:web[0] ToyNap" in text  # labelled with the name the hook gave
    assert "ToyGreeting" not in text


def test_a_class_has_one_hook_of_each_kind() -> None:
    tools = TraceTools()
    tools.summary(Greeting)(_greeting)
    tools.summary(Greeting)(_greeting)  # the same hook again: a module imported twice
    with pytest.raises(ValueError, match="has a summary hook already"):
        tools.summary(Greeting)(lambda greeting: "another")
