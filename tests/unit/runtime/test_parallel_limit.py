"""The bound on CRI calls that make or unmake pods: how many run at once, and which."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import pytest

from runtime.cri.intercept import intercept
from runtime.cri.parallel_limit import (
    HEAVY_CALLS,
    STOPS_PER_CPU,
    ParallelLimit,
    default_limit,
)
from runtime.cri.service import CRIRuntime
from runtime.errors import CRIError

WAIT_S = 10.0


class Gate:
    """A runtime whose calls block until released, counting how many are inside at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._lock = threading.Lock()
        self.inside = 0
        self.most = 0
        self.entered = threading.Condition(self._lock)

    def _call(self, fail: bool = False) -> None:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
            self.entered.notify_all()
        try:
            if not self.release.wait(WAIT_S):
                raise AssertionError("never released")
            if fail:
                raise CRIError("StartContainer", "boom")
        finally:
            with self._lock:
                self.inside -= 1

    def wait_inside(self, n: int) -> None:
        with self._lock:
            if not self.entered.wait_for(lambda: self.inside >= n, WAIT_S):
                raise AssertionError(f"{self.inside} calls inside, waited for {n}")

    def start_container(self, container_id: str) -> None:
        self._call()

    def create_container(self, *args: Any) -> None:
        self._call(fail=True)

    def stop_container(self, container_id: str, timeout: int) -> None:
        self._call()

    def list_containers(self, filter: Any = None) -> tuple[()]:
        self._call()
        return ()


def run_all(calls: list[Callable[[], Any]]) -> list[threading.Thread]:
    def quiet(call: Callable[[], Any]) -> None:
        with contextlib.suppress(CRIError):
            call()

    threads = [threading.Thread(target=quiet, args=(c,), daemon=True) for c in calls]
    for t in threads:
        t.start()
    return threads


def join(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join(WAIT_S)
        assert not t.is_alive()


def test_heavy_calls_run_at_most_limit_at_once() -> None:
    gate = Gate()
    runtime: Any = intercept(gate, CRIRuntime, ParallelLimit(3))
    threads = run_all([lambda: runtime.start_container("c")] * 10)
    gate.wait_inside(3)
    with gate._lock:
        assert gate.inside == 3  # the other 7 wait for a slot, outside the runtime
    gate.release.set()
    join(threads)
    assert gate.most == 3


def test_reads_are_not_held_behind_heavy_calls() -> None:
    gate = Gate()
    runtime: Any = intercept(gate, CRIRuntime, ParallelLimit(1))
    heavy = run_all([lambda: runtime.start_container("c")] * 3)
    gate.wait_inside(1)
    reads = run_all([lambda: runtime.list_containers()] * 4)
    gate.wait_inside(5)  # one heavy call and all four reads at once
    gate.release.set()
    join(heavy + reads)


def test_a_failed_call_gives_its_slot_back() -> None:
    gate = Gate()
    runtime: Any = intercept(gate, CRIRuntime, ParallelLimit(1))
    gate.release.set()
    for _ in range(3):
        with pytest.raises(CRIError, match="boom"):
            runtime.create_container("s", None, None)
    threads = run_all([lambda: runtime.start_container("c")])
    join(threads)


def test_stops_have_slots_of_their_own() -> None:
    """Pods waiting out their grace periods do not hold up other pods' starts."""
    gate = Gate()
    runtime: Any = intercept(gate, CRIRuntime, ParallelLimit(1, stop_limit=2))
    threads = run_all([lambda: runtime.stop_container("c", 30)] * 5
                      + [lambda: runtime.start_container("c")] * 5)
    gate.wait_inside(3)  # two stops and one start
    with gate._lock:
        assert gate.inside == 3
    gate.release.set()
    join(threads)
    assert gate.most == 3


def test_reads_are_not_heavy() -> None:
    assert "stop_container" not in HEAVY_CALLS  # it has slots of its own
    assert {"list_containers", "list_pod_sandbox", "container_status"}.isdisjoint(HEAVY_CALLS)
    assert {"run_pod_sandbox", "create_container", "start_container"} <= HEAVY_CALLS


@pytest.mark.parametrize(("cpus", "limit"), [(1, 4), (2, 8), (16, 64), (None, None)])
def test_the_default_grows_with_the_cpus(cpus: int | None, limit: int | None) -> None:
    if cpus is None:
        assert default_limit() >= 4
    else:
        assert default_limit(cpus) == limit


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ParallelLimit(0)
    with pytest.raises(ValueError, match="at least 1"):
        ParallelLimit(4, stop_limit=0)
    assert ParallelLimit(stop_limit=None).stop_limit == default_limit(per_cpu=STOPS_PER_CPU)
