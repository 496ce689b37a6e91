"""ProbeWorker, the pure per-probe state machine: thresholds, initial delay, startup gating,
holding after a failure, resets on a new container id, error retries."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.ids import ContainerID
from runtime.pod.model import ExecAction, Probe
from runtime.prober.results import ProbeResult
from runtime.prober.worker import LIVENESS, MAX_ATTEMPTS, READINESS, STARTUP, ProbeWorker

S, F, U = ProbeResult.SUCCESS, ProbeResult.FAILURE, ProbeResult.UNKNOWN
CID = ContainerID("c1")


def probe(**kw: Any) -> Probe:
    return Probe(exec=ExecAction(command=("true",)), **kw)


def run(worker: ProbeWorker, outcomes: list[ProbeResult], start: float = 0.0) -> list[
    ProbeResult | None
]:
    """Feed outcomes one attempt at a time, each when due; the verdict after each."""
    verdicts: list[ProbeResult | None] = []
    now = start
    for outcome in outcomes:
        due = worker.next_due
        assert due is not None, "the worker should be waiting for an attempt"
        now = max(now, due)
        assert worker.due(now)
        worker.begin(now)
        assert worker.next_due is None  # nothing new while one is in flight
        verdicts.append(worker.step(now, outcome))
    return verdicts


@pytest.mark.parametrize(
    ("kind", "initial"),
    [(LIVENESS, S), (READINESS, F), (STARTUP, U)],
)
def test_initial_results(kind: str, initial: ProbeResult) -> None:
    assert ProbeWorker(kind, probe(), CID).result == initial


@pytest.mark.parametrize(
    ("kind", "thresholds", "outcomes", "verdicts", "final"),
    [
        # readiness: successThreshold 1 flips on the first success
        (READINESS, {}, [S], [S], S),
        # readiness: successThreshold 3 needs three in a row; a failure restarts the run
        (READINESS, {"success_threshold": 3}, [S, S, F, S, S, S],
         [None, None, None, None, None, S], S),
        # readiness: failureThreshold 3 after success
        (READINESS, {"failure_threshold": 3}, [S, F, F, S, F, F, F],
         [S, None, None, None, None, None, F], F),
        # readiness keeps probing after a failure and recovers
        (READINESS, {"failure_threshold": 1}, [S, F, S], [S, F, S], S),
        # liveness: failureThreshold 3; the initial Success is not sent again
        (LIVENESS, {"failure_threshold": 3}, [S, F, F, F], [None, None, None, F], F),
        # liveness: failureThreshold 1
        (LIVENESS, {"failure_threshold": 1}, [F], [F], F),
        # liveness: interrupted failure runs never flip
        (LIVENESS, {"failure_threshold": 2}, [F, S, F, S, F, S], [None] * 6, S),
        # liveness ignores successThreshold (validation forces 1)
        (LIVENESS, {"success_threshold": 5, "failure_threshold": 1}, [S], [None], S),
        # startup: success flips at once, failure after the threshold
        (STARTUP, {}, [F, S], [None, S], S),
        (STARTUP, {"failure_threshold": 2}, [F, F], [None, F], F),
    ],
)
def test_thresholds(
    kind: str,
    thresholds: dict[str, int],
    outcomes: list[ProbeResult],
    verdicts: list[ProbeResult | None],
    final: ProbeResult,
) -> None:
    worker = ProbeWorker(kind, probe(**thresholds), CID)
    assert run(worker, outcomes) == verdicts
    assert worker.result == final


@pytest.mark.parametrize(("kind", "threshold"), [(LIVENESS, 1), (LIVENESS, 3), (STARTUP, 2)])
def test_failure_holds_until_new_container(kind: str, threshold: int) -> None:
    worker = ProbeWorker(kind, probe(failure_threshold=threshold), CID)
    assert run(worker, [F] * threshold)[-1] == F
    assert worker.on_hold
    assert worker.next_due is None and not worker.due(1e9)
    # the same container again: still held
    assert worker.observe(CID, True, 0.0) is None
    assert worker.next_due is None
    # a new container resets to the initial result and probes again
    assert worker.observe(ContainerID("c2"), True, 50.0) is None
    assert not worker.on_hold
    assert worker.result == (S if kind == LIVENESS else U)
    assert worker.next_due == 50.0


def test_readiness_reset_publishes_failure() -> None:
    worker = ProbeWorker(READINESS, probe(), CID)
    assert run(worker, [S]) == [S]
    assert worker.observe(ContainerID("c2"), True, 0.0) == F
    assert worker.result == F


@pytest.mark.parametrize(
    ("period", "delay", "starts"),
    [
        (10, 0, [100.0, 110.0, 120.0]),
        (10, 15, [115.0, 125.0, 135.0]),
        (5, 2, [102.0, 107.0, 112.0]),
    ],
)
def test_initial_delay_and_period(period: int, delay: int, starts: list[float]) -> None:
    started_at = 100.0
    worker = ProbeWorker(READINESS, probe(period_seconds=period), CID,
                         not_before=started_at + delay)
    seen: list[float] = []
    now = started_at
    while len(seen) < len(starts):
        if worker.due(now):
            worker.begin(now)
            seen.append(now)
            worker.step(now + 0.5, S)
        now = round(now + 0.1, 6)
    assert seen == starts
    assert not worker.due(starts[-1] + period - 0.01)


def test_startup_gates_liveness_and_readiness() -> None:
    startup = ProbeWorker(STARTUP, probe(failure_threshold=30), CID)
    live = ProbeWorker(LIVENESS, probe(), CID, started=False)
    ready = ProbeWorker(READINESS, probe(), CID, started=False)
    for worker in (live, ready):
        assert worker.next_due is None and not worker.due(1e9)
    assert run(startup, [F, F, S]) == [None, None, S]
    # the startup probe stops once it succeeded
    assert startup.next_due is None
    for worker in (live, ready):
        worker.started = True
        assert worker.due(0.0)


@pytest.mark.parametrize("kind", [LIVENESS, READINESS, STARTUP])
def test_errors_retry_then_count_as_failure(kind: str) -> None:
    worker = ProbeWorker(kind, probe(failure_threshold=1), CID)
    worker.begin(10.0)
    # an error is retried at once, without waiting for the period
    assert worker.step(10.5, U) is None
    assert worker.next_due == 10.5
    worker.begin(10.5)
    assert worker.step(11.0, U) is None
    worker.begin(11.0)
    verdict = worker.step(11.5, U)
    assert MAX_ATTEMPTS == 3
    assert worker.result == F
    assert verdict == (None if kind == READINESS else F)  # readiness starts at Failure


def test_error_then_answer_resets_retries_and_keeps_period() -> None:
    worker = ProbeWorker(READINESS, probe(period_seconds=10), CID)
    worker.begin(0.0)
    assert worker.step(0.2, U) is None
    worker.begin(0.2)
    assert worker.step(0.4, S) == S
    assert worker.next_due == 10.0  # anchored to the round's first attempt
    for start in (10.0, 10.2):
        worker.begin(start)
        assert worker.step(start + 0.1, U) is None
    worker.begin(10.4)
    assert worker.step(10.5, S) is None  # the run of errors was broken: no failure


@pytest.mark.parametrize(
    ("kind", "verdict"),
    [(READINESS, F), (LIVENESS, None), (STARTUP, None)],
)
def test_not_running(kind: str, verdict: ProbeResult | None) -> None:
    worker = ProbeWorker(kind, probe(), CID)
    if kind == READINESS:
        run(worker, [S])
    assert worker.observe(CID, False, 0.0) == verdict
    assert worker.next_due is None
    # a result arriving for a container that stopped meanwhile changes nothing
    assert worker.step(5.0, F) is None
    assert worker.observe(CID, False, 0.0) is None  # sent once only


def test_in_flight_blocks_and_abandon_reschedules() -> None:
    worker = ProbeWorker(READINESS, probe(), CID)
    token = worker.begin(0.0)
    assert worker.in_flight == token
    assert not worker.due(100.0)
    worker.abandon()
    assert worker.due(100.0)


def test_unknown_kind_rejected() -> None:
    with pytest.raises(ValueError, match="unknown probe kind"):
        ProbeWorker("sideways", probe(), CID)
