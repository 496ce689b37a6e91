"""A pod status as the API's JSON keeps what Go always encodes (runtime.status.wire)."""

from __future__ import annotations

import pytest

from runtime.status.types import (
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStatus,
    PodStatus,
)
from runtime.status.wire import status_to_api


def _status(state: ContainerState, last: ContainerState, key: str) -> PodStatus:
    cs = ContainerStatus(name="c", state=state, last_state=last, ready=False, restart_count=0,
                         image="busybox", image_id="sha256:1")
    return PodStatus(phase="Succeeded", **{key: (cs,)})  # type: ignore[arg-type]


@pytest.mark.parametrize("key, field", [
    ("container_statuses", "containerStatuses"),
    ("init_container_statuses", "initContainerStatuses"),
    ("ephemeral_container_statuses", "ephemeralContainerStatuses")])
def test_exit_code_zero_is_encoded_as_go_does(key: str, field: str) -> None:
    done = ContainerState(terminated=ContainerStateTerminated(exit_code=0, reason="Completed"))
    out = status_to_api(_status(done, done, key))
    (cs,) = out[field]
    assert cs["state"]["terminated"] == {"exitCode": 0, "reason": "Completed"}
    assert cs["lastState"]["terminated"]["exitCode"] == 0
    assert cs["restartCount"] == 0 and cs["ready"] is False


def test_other_exit_codes_and_running_states_unchanged() -> None:
    failed = ContainerState(terminated=ContainerStateTerminated(exit_code=3, reason="Error"))
    out = status_to_api(_status(ContainerState(running=ContainerStateRunning()), failed,
                                "container_statuses"))
    (cs,) = out["containerStatuses"]
    assert cs["state"] == {"running": {}}
    assert cs["lastState"]["terminated"]["exitCode"] == 3
