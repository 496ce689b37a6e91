"""When a pod worker syncs again after a failed sync: the 10 s error back-off, or sooner when
every failure is a back-off wait that ends sooner (crashLoopBackOff.maxContainerRestartPeriod)."""

from __future__ import annotations

from actors.kubelet.pod_worker import _retry_after
from runtime.kuberuntime.result import PodSyncResult, StepResult

CRASH_1S = StepResult("StartContainer", "a", "CrashLoopBackOff", "back-off 1s", 1.0)
CRASH_40S = StepResult("StartContainer", "b", "CrashLoopBackOff", "back-off 40s", 40.0)
FAILED = StepResult("StartContainer", "c", "RunContainerError", "boom")
WORKED = StepResult("StartContainer", "d")


def test_only_back_off_waits_retry_when_the_shortest_ends() -> None:
    assert _retry_after(PodSyncResult((WORKED, CRASH_1S)), 10.0) == 1.0
    assert _retry_after(PodSyncResult((CRASH_1S, CRASH_40S)), 10.0) == 1.0


def test_never_later_than_the_error_back_off() -> None:
    assert _retry_after(PodSyncResult((CRASH_40S,)), 10.0) == 10.0


def test_any_other_failure_takes_the_error_back_off() -> None:
    assert _retry_after(PodSyncResult((CRASH_1S, FAILED)), 10.0) == 10.0
