"""What a /containerLogs request asks and which instance answers it: upstream's tables
(TestValidatePodLogOptions, TestLogOptions, kubelet_pods_test
TestValidateContainerLogStatus)."""

from __future__ import annotations

import pytest

from actors.app.http.log_request import (
    LogRequest,
    LogRequestError,
    log_container_id,
    parse_log_query,
    validation_errors,
)
from runtime.kuberuntime.logs import LogOptions, parse_timestamp
from runtime.status.types import (
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    PodStatus,
)

NOW = 1_700_000_000 * 1_000_000_000
STAMP = "2024-05-01T10:00:00Z"


@pytest.mark.parametrize("args", [
    (None, None, None, None, None),  # empty PodLogOptions
    (8, None, None, None, None),
    (None, 12, None, None, None),
    (None, None, 10, None, None),
    (8, 12, None, None, None),
    (8, 12, 10, None, None),
    (None, None, None, 1, None),
    (None, None, None, None, "Stdout"),
    (None, None, None, None, "Stderr"),
    (8, None, None, None, "All"),
])
def test_valid_pod_log_options(args: tuple[int | None, int | None, int | None, int | None,
                                           str | None]) -> None:
    assert validation_errors(*args) == []


@pytest.mark.parametrize(("args", "count"), [
    ((-8, None, None, None, None), 1),  # negative tail
    ((None, 0, None, None, None), 1),  # limitBytes less than 1
    ((None, None, 0, None, None), 1),  # sinceSeconds less than 1
    ((None, None, 10, 1, None), 1),  # both sinceSeconds and sinceTime
    ((None, None, None, None, "invalid"), 1),
    ((8, None, None, None, "Stdout"), 1),  # tailLines with a specific stream
    ((-8, 0, 0, None, "invalid"), 5),  # the stream is also "specific" with tailLines
])
def test_invalid_pod_log_options(args: tuple[int | None, int | None, int | None, int | None,
                                             str | None], count: int) -> None:
    assert len(validation_errors(*args)) == count


@pytest.mark.parametrize(("query", "expected"), [
    ({}, LogRequest(LogOptions())),
    ({"tailLines": ["8"]}, LogRequest(LogOptions(tail_lines=8))),
    ({"limitBytes": ["64"]}, LogRequest(LogOptions(limit_bytes=64))),
    ({"sinceTime": [STAMP]}, LogRequest(LogOptions(since_ns=parse_timestamp(STAMP.encode())))),
    ({"sinceSeconds": ["10"]}, LogRequest(LogOptions(since_ns=NOW - 10_000_000_000))),
    ({"follow": [""], "previous": ["1"], "timestamps": ["FALSE"]},
     LogRequest(LogOptions(follow=True), previous=True)),
    ({"follow": ["0"], "stream": ["Stderr"]}, LogRequest(LogOptions(stream="Stderr"))),
    ({"tail": ["3"], "tailLines": ["8"]}, LogRequest(LogOptions(tail_lines=3))),
    ({"tail": ["all"], "tailLines": ["8"]}, LogRequest(LogOptions())),
    ({"sinceTime": ["null"]}, LogRequest(LogOptions())),
])
def test_log_options(query: dict[str, list[str]], expected: LogRequest) -> None:
    """TestLogOptions, from the query as the kubelet decodes it."""
    assert parse_log_query(query, "p", NOW) == expected


@pytest.mark.parametrize(("query", "code"), [
    ({"tailLines": ["-1"]}, 422),
    ({"tailLines": ["1.5"]}, 400),
    ({"limitBytes": ["99999999999999999999"]}, 400),
    ({"sinceTime": ["2024-05-01"]}, 400),
    ({"sinceTime": [STAMP], "sinceSeconds": ["1"]}, 422),
])
def test_bad_queries(query: dict[str, list[str]], code: int) -> None:
    with pytest.raises(LogRequestError) as caught:
        parse_log_query(query, "p", NOW)
    assert caught.value.code == code


def _status(state: ContainerState, last: ContainerState | None = None,
            container_id: str = "containerd://current") -> PodStatus:
    return PodStatus(phase="Running", container_statuses=(ContainerStatus(
        name="c", state=state, last_state=last or ContainerState(), ready=False,
        restart_count=0, image="i", image_id="", container_id=container_id),))


RUNNING = ContainerState(running=ContainerStateRunning())
OLD = ContainerState(terminated=ContainerStateTerminated(container_id="containerd://old"))
DONE = ContainerState(terminated=ContainerStateTerminated(container_id="containerd://done"))
DONE_NO_ID = ContainerState(terminated=ContainerStateTerminated())


@pytest.mark.parametrize(("status", "previous", "expected"), [
    (_status(RUNNING), False, "containerd://current"),
    (_status(RUNNING, OLD), True, "containerd://old"),
    (_status(RUNNING), True,
     'previous terminated container "c" in pod "p" not found'),
    (_status(DONE), False, "containerd://done"),
    (_status(DONE_NO_ID, OLD), False, "containerd://old"),
    (_status(DONE_NO_ID), False, 'container "c" in pod "p" is terminated'),
    (_status(ContainerState(), OLD), False, "containerd://old"),
    (_status(ContainerState(waiting=ContainerStateWaiting(reason="ErrImagePull"))), False,
     'container "c" in pod "p" is waiting to start: image can\'t be pulled'),
    (_status(ContainerState(waiting=ContainerStateWaiting(reason="ImagePullBackOff"))), False,
     'container "c" in pod "p" is waiting to start: trying and failing to pull image'),
    (_status(ContainerState(waiting=ContainerStateWaiting(reason="ContainerCreating"))),
     False, 'container "c" in pod "p" is waiting to start: ContainerCreating'),
    (_status(ContainerState()), False,
     'container "c" in pod "p" is waiting to start - no logs yet'),
    (PodStatus(phase="Pending"), False, 'container "c" in pod "p" is not available'),
])
def test_validate_container_log_status(status: PodStatus, previous: bool,
                                       expected: str) -> None:
    """TestValidateContainerLogStatus: the instance, or upstream's reason (400)."""
    try:
        assert log_container_id("p", status, "c", previous) == expected
    except LogRequestError as err:
        assert (err.code, err.message) == (400, expected)
