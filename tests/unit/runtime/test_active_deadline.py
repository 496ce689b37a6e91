"""activeDeadlineSeconds (upstream active_deadline_test.go): past once now - start >= the
deadline, never without one."""

from __future__ import annotations

import pytest

from runtime.pod.active_deadline import past_active_deadline, remaining
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec


def _pod(deadline: int | None) -> Pod:
    return Pod(metadata=ObjectMeta(name="p", uid="u"),
               spec=PodSpec(containers=(Container(name="c", image="x"),),
                            active_deadline_seconds=deadline))


@pytest.mark.parametrize(("deadline", "start", "now", "past"), [
    (None, 0.0, 10_000.0, False),  # no deadline: never
    (30, 100.0, 129.0, False),
    (30, 100.0, 130.0, True),  # upstream: duration >= allowed
    (30, 100.0, 131.0, True),
    (0, 100.0, 100.0, True),
])
def test_past_active_deadline(deadline: int | None, start: float, now: float,
                              past: bool) -> None:
    assert past_active_deadline(_pod(deadline), start, now) is past


def test_remaining() -> None:
    assert remaining(_pod(None), 0.0, 5.0) is None
    assert remaining(_pod(10), 100.0, 104.0) == 6.0
