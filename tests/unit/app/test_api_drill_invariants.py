"""The API drills' invariants (actors.app.drills.api_invariants), table by table."""

from __future__ import annotations

from typing import Any

import pytest

from actors.app.drills import api_invariants as inv
from actors.app.drills.emulator import Seen


def seen(at: float, verb: str = "list", resource: str = "pods", code: int = 0,
         name: str = "") -> Seen:
    return Seen(at, verb, resource, name, None, code)


@pytest.mark.parametrize("seconds, attempts", [
    (0.0, 1), (0.79, 1), (0.8, 2), (2.39, 2), (2.4, 3), (5.6, 4), (12.0, 5), (100.0, 8)])
def test_max_backoff_attempts_of_client_go_backoff(seconds: float, attempts: int) -> None:
    # 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30...: the delays' running sums are 0.8, 2.4, 5.6...
    assert inv.max_backoff_attempts(seconds) == attempts


@pytest.mark.parametrize("requests, problems", [
    ([seen(0, code=500), seen(0.9), seen(1.0)], 0),
    ([seen(0, code=500), seen(0.5)], 1),
    ([seen(0), seen(0.1, "watch"), seen(0.2)], 0),  # no fault: a reopened watch is fine
    ([seen(0, "watch", code=500), seen(0.76, code=500), seen(0.8)], 1),
])
def test_tight_loop_after_a_fault(requests: list[Seen], problems: int) -> None:
    assert len(inv.tight_loop(requests)) == problems


def test_reflector_requests_are_the_pod_lists_and_watches_in_order() -> None:
    got = inv.reflector_requests([seen(2, "watch"), seen(1), seen(0, "get"),
                                  seen(0.5, "list", "services")])
    assert [(r.at, r.verb) for r in got] == [(1, "list"), (2, "watch")]


def test_too_many_rounds_counts_failed_requests_only() -> None:
    failed = [seen(t, code=500) for t in (0, 0.8, 2.4)]
    assert inv.too_many_rounds([*failed, seen(3)], 3.0, "pod") == []
    assert inv.too_many_rounds([*failed, seen(2.5, code=500)], 3.0, "pod")


@pytest.mark.parametrize("requests, problems", [
    ([seen(0, "update", "leases", 429, "n"), seen(2.0, "update", "leases", 0, "n")], 0),
    ([seen(0, "update", "leases", 429, "n"), seen(1.0, "update", "leases", 0, "n")], 1),
    ([seen(0, "update", "leases", 429, "n"), seen(1.0, "get", "leases", 0, "n")], 0),
    ([seen(0, "get", "pods", 429, "a"), seen(0.5, "get", "pods", 0, "b")], 0),
    ([seen(0, "get", "pods", 500, "a"), seen(0.5, "get", "pods", 0, "a")], 0),
])
def test_retry_after_ignored(requests: list[Seen], problems: int) -> None:
    assert len(inv.retry_after_ignored(requests, 2.0)) == problems


def test_relists_within_bounds() -> None:
    two = [seen(0), seen(0.1, "watch"), seen(1)]
    assert inv.relists(two, 1, 2, "x") == []
    assert inv.relists(two, 0, 0, "after cut watches")


def write(rv: int, name: str, ready: str | None, state: str = "running", restarts: int = 0,
          cid: str = "containerd://a", uid: str = "u1", kind: str = "MODIFIED",
          exit_code: int | None = None) -> dict[str, Any]:
    return {"rv": rv, "type": kind, "namespace": "default", "name": name, "uid": uid,
            "mirror": False, "phase": "Running", "ready": ready,
            "containers": [{"name": "main", "state": state, "containerID": cid,
                            "restartCount": restarts, "exitCode": exit_code}]}


@pytest.mark.parametrize("history, problems", [
    ([write(1, "web", None, "waiting", cid=""), write(2, "web", "False"),
      write(3, "web", "True"), write(4, "web", "True")], 0),
    ([write(1, "web", "True"), write(2, "web", "False")], 1),
    ([write(1, "web", "True"), write(2, "web", None)], 1),
    ([write(1, "web", "True"), write(2, "web", "True", kind="DELETED"),
      write(3, "web", "False", uid="u2")], 0),  # a new pod of the same name
    ([write(1, "other", "True"), write(2, "web", "False")], 0),
])
def test_ready_flips(history: list[dict[str, Any]], problems: int) -> None:
    assert len(inv.ready_flips(history, "web")) == problems


@pytest.mark.parametrize("history, problems", [
    ([write(1, "web", "False", "waiting", cid=""), write(2, "web", "True")], 0),
    ([write(1, "web", "True"), write(2, "web", "True", restarts=1)], 1),
    ([write(1, "web", "True"), write(2, "web", "True", cid="containerd://b")], 1),
    ([write(1, "web", "True"), write(2, "web", "True", cid="containerd://b", uid="u2")], 0),
])
def test_restarts(history: list[dict[str, Any]], problems: int) -> None:
    assert len(inv.restarts(history, "web")) == problems


@pytest.mark.parametrize("states, problems", [
    (["waiting", "running", "terminated", "terminated"], 0),
    (["running", "terminated", "running"], 1),
    (["terminated", "waiting"], 1),
])
def test_regressions(states: list[str], problems: int) -> None:
    history = [write(i, "job", "False", s) for i, s in enumerate(states)]
    assert len(inv.regressions(history, "job")) == problems


def pod(state: dict[str, Any], phase: str = "Running", ready: str = "True") -> dict[str, Any]:
    return {"status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}],
                       "containerStatuses": [{"name": "main", "state": state}]}}


@pytest.mark.parametrize("obj, problems", [
    (pod({"terminated": {"exitCode": 0}}), 0),
    (pod({"terminated": {"exitCode": 3}}), 1),
    (pod({"terminated": {"reason": "Completed"}}), 1),  # no exitCode: not Go's encoding
    (pod({"running": {}}), 1),
    (None, 1),
])
def test_terminated_shown(obj: dict[str, Any] | None, problems: int) -> None:
    assert len(inv.terminated_shown(obj, "main", 0)) == problems


@pytest.mark.parametrize("obj, problems", [
    (pod({"running": {}}), 0),
    (pod({"running": {}}, ready="False"), 1),
    (pod({"waiting": {}}), 1),
    (pod({"running": {}}, phase="Pending"), 1),
    (None, 1),
])
def test_running_ready(obj: dict[str, Any] | None, problems: int) -> None:
    assert len(inv.running_ready(obj)) == problems
