"""Termination messages: upstream's getTerminationMessage, readLastStringFromContainerLogs
and the status manager's 12 KiB per pod (kuberuntime_container_test.go, status_manager)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.cri.types import ContainerMetadata, ContainerState, ContainerStatus, Mount
from runtime.ids import ContainerID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.termination_message import (
    MAX_CONTAINER_MESSAGE,
    combine,
    log_tail_message,
    message_from_file,
    per_container_share,
    read_log_tail,
    read_termination_message,
    wants_logs,
)
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.status.messages import cap_termination_messages
from runtime.status.types import (
    ContainerState as APIState,
)
from runtime.status.types import (
    ContainerStateTerminated,
    PodStatus,
)
from runtime.status.types import (
    ContainerStatus as APIStatus,
)


@pytest.mark.parametrize(("policy", "exit_code", "reason", "expected"), [
    ("File", 1, "Error", False),
    ("FallbackToLogsOnError", 0, "Completed", False),
    ("FallbackToLogsOnError", 1, "Error", True),
    ("FallbackToLogsOnError", 137, "OOMKilled", True),
    ("FallbackToLogsOnError", 128, "ContainerCannotRun", False),
])
def test_fallback_to_logs_only_for_a_failed_container_that_ran(
        policy: str, exit_code: int, reason: str, expected: bool) -> None:
    assert wants_logs(policy, exit_code, reason) is expected


def test_message_from_file_cases(tmp_path: Path) -> None:
    written = tmp_path / "written"
    written.write_text("DONE")
    empty = tmp_path / "empty"
    empty.write_text("")
    assert message_from_file(str(written), True) == ("DONE", False)
    assert message_from_file(str(empty), True) == ("", True)
    assert message_from_file(str(empty), False) == ("", False)
    assert message_from_file(str(tmp_path / "missing"), True) == ("", True)
    assert message_from_file(None, True) == ("", True)
    message, logs = message_from_file(str(tmp_path), True)  # a directory: not readable
    assert message.startswith(f"Error on reading termination log {tmp_path}:") and not logs


def test_only_the_last_4096_bytes_of_the_file_are_read(tmp_path: Path) -> None:
    path = tmp_path / "m"
    path.write_bytes(b"a" * 100 + b"b" * MAX_CONTAINER_MESSAGE)
    assert message_from_file(str(path), False)[0] == "b" * MAX_CONTAINER_MESSAGE


def _log(lines: list[str]) -> bytes:
    return b"".join(f"2024-05-01T10:00:00.{i:09d}Z stdout F {line}\n".encode()
                    for i, line in enumerate(lines))


def test_log_tail_takes_80_lines_then_the_last_2048_bytes() -> None:
    assert log_tail_message(_log([f"line {i}" for i in range(100)])) == "".join(
        f"line {i}\n" for i in range(20, 100))
    long = log_tail_message(_log(["x" * 1000, "y" * 1000, "z" * 1000]))
    assert len(long) == 2048 and long.endswith("z" * 1000 + "\n")


def test_combine_puts_the_runtime_message_first() -> None:
    assert combine("", "DONE") == "DONE"
    assert combine("runtime", "") == "runtime"
    assert combine("runtime", "DONE") == "runtime: DONE"


def _exited(tmp_path: Path, policy: str, exit_code: int, written: str,
            log: bytes) -> ContainerStatus:
    message = tmp_path / "termination-0"
    message.write_text(written)
    log_path = tmp_path / "0.log"
    log_path.write_bytes(log)
    return ContainerStatus(
        id=ContainerID("c1"), metadata=ContainerMetadata("c"), state=ContainerState.EXITED,
        created_at=1.0, exit_code=exit_code,
        annotations={L.TERMINATION_MESSAGE_PATH: "/dev/termination-log",
                     L.TERMINATION_MESSAGE_POLICY: policy},
        mounts=(Mount("/dev/termination-log", str(message)),), log_path=str(log_path))


def test_read_termination_message_by_policy(tmp_path: Path) -> None:
    log = _log(["DONE"])
    assert read_termination_message(_exited(tmp_path, "File", 1, "", log)) == ""
    assert read_termination_message(_exited(tmp_path, "File", 0, "OK", log)) == "OK"
    assert read_termination_message(
        _exited(tmp_path, "FallbackToLogsOnError", 1, "", log)) == "DONE\n"
    assert read_termination_message(
        _exited(tmp_path, "FallbackToLogsOnError", 0, "", log)) == ""
    assert read_termination_message(
        _exited(tmp_path, "FallbackToLogsOnError", 0, "OK", log)) == "OK"
    running = ContainerStatus(id=ContainerID("c2"), metadata=ContainerMetadata("c"),
                              state=ContainerState.RUNNING, created_at=1.0)
    assert read_termination_message(running) == ""


def _terminated(name: str, message: str) -> APIStatus:
    state = APIState(terminated=ContainerStateTerminated(exit_code=1, message=message))
    return APIStatus(name=name, state=state, last_state=state, ready=False, restart_count=0,
                     image="i", image_id="")


def test_the_pod_shares_12_kib_evenly_over_every_container() -> None:
    assert per_container_share(3) == 4096
    assert per_container_share(0) == 12 * 1024
    spec = PodSpec(init_containers=(Container(name="i", image="x"),),
                   containers=(Container(name="a", image="x"), Container(name="b", image="x"),
                               Container(name="c", image="x")))
    pod = Pod(metadata=ObjectMeta(name="p", uid="u"), spec=spec)
    status = PodStatus(phase="Failed",
                       init_container_statuses=(_terminated("i", "i" * 5000),),
                       container_statuses=(_terminated("a", "a" * 3072),
                                           _terminated("b", "b" * 3073),
                                           _terminated("c", "é" * 2000)))
    capped = cap_termination_messages(pod, status)
    messages = [s.state.terminated.message for s in
                (*capped.init_container_statuses, *capped.container_statuses)
                if s.state.terminated is not None]
    assert [len(m.encode()) for m in messages] == [3072, 3072, 3072, 3072]
    assert all(s.last_state.terminated is not None
               and len(s.last_state.terminated.message.encode()) <= 3072
               for s in capped.container_statuses)


def test_only_the_end_of_a_long_log_is_read(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(_log([f"early {i}" for i in range(5000)] + ["last words"]))
    tail = read_log_tail(str(path), limit=1024)
    assert len(tail) <= 1024 and tail.startswith(b"2024-")  # whole records only
    assert log_tail_message(tail).endswith("last words\n")
    assert read_log_tail(str(path), limit=10**9) == path.read_bytes()
