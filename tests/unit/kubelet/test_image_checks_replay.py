"""The image checked beside RunPodSandbox, on the whole tree: one ImageStatus per start,
and a trace that recorded the two concurrent calls in either order replays without
divergence (a replay matches a handler's calls by content, not order)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.core.trace.reader import Trace, read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.trace import KubeletWorld
from tests.traces.scenarios import RecordedNode, pod
from tests.unit.kubelet.test_start_calls import ONE_POD

WAIT_S = 5.0


@pytest.fixture
def node(tmp_path: Path) -> Iterator[RecordedNode]:
    made = RecordedNode(tmp_path / "trace", tmp_path / "scratch")
    yield made
    made.close()


def hold(fake: Any, method: str, until: threading.Event) -> None:
    """The fake's ``method`` waits (at most WAIT_S) for ``until`` before answering."""
    inner: Callable[..., Any] = getattr(fake, method)

    def held(*args: Any, **kwargs: Any) -> Any:
        until.wait(WAIT_S)
        return inner(*args, **kwargs)

    setattr(fake, method, held)


def after(fake: Any, method: str, done: threading.Event) -> None:
    """``done`` is set once the fake's ``method`` has answered."""
    inner: Callable[..., Any] = getattr(fake, method)

    def then(*args: Any, **kwargs: Any) -> Any:
        try:
            return inner(*args, **kwargs)
        finally:
            done.set()

    setattr(fake, method, then)


def start_one(node: RecordedNode) -> Counter[str]:
    """The node's CRI calls from handing it a pod until it is idle (no timer fires), once
    its start is past (test_start_calls.steady_node)."""
    node.snapshot()
    node.advance(2.0)
    assert node.settle()
    node.fake.clear_calls()
    node.snapshot(pod("u1", "web"))
    assert node.settle(), "the node did not settle"
    counts = Counter(c.method for c in node.fake.calls)
    assert len(node.running("u1")) == 1  # a call of its own: after the count
    return counts


def worker_calls(trace: Trace) -> list[str]:
    """The methods of the worker's sync that made the sandbox, as the trace recorded them
    (each call is recorded when it returned)."""
    worker = names.worker_name("u1")
    deliveries = {r["id"] for r in trace.messages() if r["to"] == worker}
    by_delivery: dict[int, list[str]] = {}
    for r in trace.records:
        if r["k"] == "call" and r.get("in") in deliveries:
            by_delivery.setdefault(r["in"], []).append(r["method"])
    (made,) = [m for m in by_delivery.values() if "run_pod_sandbox" in m]
    return made


def check_replays(node: RecordedNode, tmp_path: Path) -> list[str]:
    node.close()
    trace = read_trace(tmp_path / "trace")
    report = replay(trace, KubeletWorld())
    assert report.ok, format_report(report)
    return worker_calls(trace)


def test_a_start_makes_one_image_status(node: RecordedNode) -> None:
    assert dict(start_one(node)) == ONE_POD


def test_a_trace_with_the_check_answered_during_the_sandbox_replays(
        node: RecordedNode, tmp_path: Path) -> None:
    asked = threading.Event()
    after(node.fake, "image_status", asked)
    hold(node.fake, "run_pod_sandbox", asked)
    start_one(node)
    calls = check_replays(node, tmp_path)
    assert calls.index("image_status") < calls.index("run_pod_sandbox")


def test_a_trace_with_the_check_answered_after_the_sandbox_replays(
        node: RecordedNode, tmp_path: Path) -> None:
    made = threading.Event()
    after(node.fake, "run_pod_sandbox", made)
    hold(node.fake, "image_status", made)
    start_one(node)
    calls = check_replays(node, tmp_path)
    assert calls.index("run_pod_sandbox") < calls.index("image_status")
