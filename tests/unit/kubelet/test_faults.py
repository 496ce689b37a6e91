"""The kubelet's own drill fault: a crash between CreateContainer and StartContainer."""

from __future__ import annotations

from typing import Any

import pytest

from actors.core import context
from actors.core.faults import DrillFault, FaultPlan
from actors.kubelet.faults import CrashAfterCreate
from runtime.cri.intercept import intercept


class Runtime:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def create_container(self, *args: object) -> str:
        self.calls.append("create_container")
        return "c-1"


def test_crash_after_create_only_in_a_pod_worker_and_after_the_create() -> None:
    plan = FaultPlan(1)
    crash = CrashAfterCreate(plan, 1)
    plan.arm()
    inner = Runtime()
    runtime: Any = intercept(inner, Runtime, plan, crash)
    runtime.create_container()  # not in a pod worker
    previous = context.enter(context.Handling("pod/u1", 0, 7))
    try:
        with pytest.raises(DrillFault, match="between CreateContainer"):
            runtime.create_container()
        runtime.create_container()  # once only
    finally:
        context.enter(previous)
    assert inner.calls == ["create_container"] * 3
    assert crash.created == ["c-1"] and plan.fired[0].delivery == 7
