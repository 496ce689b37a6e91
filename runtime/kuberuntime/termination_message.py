"""Termination messages: what a container leaves behind for ``state.terminated.message``.

Upstream's kubelet (pkg/kubelet/kuberuntime/kuberuntime_container.go) bind-mounts a
kubelet-owned, world-writable empty file at the container's ``terminationMessagePath`` and,
once the container exited, reads at most the last 4096 bytes of it
(getTerminationMessage). With ``FallbackToLogsOnError``, a container that failed (non-zero
exit, and not ``ContainerCannotRun``) and left the file empty gets the last 80 lines of its
log, at most the last 2048 bytes of them (readLastStringFromContainerLogs). The message is
appended to the runtime's own message after ": ". The status manager then cuts each
container's message to an even share of 12 KiB per pod (normalizeStatus).

The decisions are pure functions over bytes; ``read_termination_message`` does the file
reads for a CRI container status.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from runtime.cri.types import ContainerState, ContainerStatus
from runtime.kuberuntime.labels import parse_container_labels
from runtime.kuberuntime.logs import LogOptions, render_logs

MAX_CONTAINER_MESSAGE = 4 * 1024
"""Bytes of the message file read per container (MaxContainerTerminationMessageLength)."""
MAX_LOG_LINES = 80
"""Log lines a FallbackToLogsOnError message takes (MaxContainerTerminationMessageLogLines)."""
MAX_LOG_BYTES = 2048
"""Bytes of those lines kept, the last ones (MaxContainerTerminationMessageLogLength)."""
MAX_POD_MESSAGES = 12 * 1024
"""Bytes of termination messages per pod, split evenly over its containers
(MaxPodTerminationMessageLogLength)."""

FALLBACK_TO_LOGS = "FallbackToLogsOnError"


def read_at_most(path: str, limit: int) -> bytes:
    """The last ``limit`` bytes of the file (upstream tail.ReadAtMost); OSError as raised."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(size - limit, 0))
        return f.read(limit)


def log_tail_message(log: bytes) -> str:
    """The last 80 lines of a CRI log file's contents, cut to their last 2048 bytes, as
    upstream's circular buffer keeps them."""
    text = render_logs(log, LogOptions(tail_lines=MAX_LOG_LINES))
    return text[-MAX_LOG_BYTES:].decode("utf-8", "replace")


def wants_logs(policy: str, exit_code: int, reason: str) -> bool:
    """Upstream's fallbackToLogs: the policy asks for it and the container failed after it
    ran (a container that could not even start has no logs)."""
    return policy == FALLBACK_TO_LOGS and exit_code != 0 and reason != "ContainerCannotRun"


def message_from_file(
    host_path: str | None, fallback: bool, read: Callable[[str, int], bytes] = read_at_most
) -> tuple[str, bool]:
    """Upstream getTerminationMessage: (message, whether to read the log instead).

    ``host_path`` is where the termination message path was mounted from (None: not
    mounted, e.g. no terminationMessagePath). A missing file means nothing was written; any
    other read error becomes the message itself, as upstream reports it.
    """
    if host_path is None:
        return "", fallback
    try:
        data = read(host_path, MAX_CONTAINER_MESSAGE)
    except FileNotFoundError:
        return "", fallback
    except OSError as err:
        return f"Error on reading termination log {host_path}: {err}", False
    return data.decode("utf-8", "replace"), fallback and not data


def combine(runtime_message: str, termination: str) -> str:
    """The runtime's message, then the container's own after ": " (upstream's order)."""
    if not termination:
        return runtime_message
    return f"{runtime_message}: {termination}" if runtime_message else termination


def read_termination_message(status: ContainerStatus) -> str:
    """The message an exited container left, by its annotated path and policy; "" for a
    container that has not exited or left nothing."""
    if status.state != ContainerState.EXITED:
        return ""
    info = parse_container_labels(status.labels, status.annotations)
    fallback = wants_logs(info.termination_message_policy, status.exit_code, status.reason)
    host_path: str | None = None
    if info.termination_message_path:
        host_path = next((m.host_path for m in status.mounts
                          if m.container_path == info.termination_message_path), None)
    message, check_logs = message_from_file(host_path, fallback)
    if check_logs:
        try:
            message = log_tail_message(read_log_tail(status.log_path))
        except OSError as err:
            message = f"Error on reading termination message from logs: {err}"
    return message


LOG_TAIL_BYTES = 64 * 1024
"""How much of the end of a log file is read for a message: far more than 80 lines'
last 2048 bytes of content take, so a long log is never read whole on every status."""


def read_log_tail(path: str, limit: int = LOG_TAIL_BYTES) -> bytes:
    """The last whole records of a CRI log file, at most ``limit`` bytes of it."""
    data = read_at_most(path, limit)
    if len(data) == limit:
        # Started mid-file: drop the first, probably torn, record.
        data = data[data.find(b"\n") + 1:]
    return data


def per_container_share(containers: int) -> int:
    """Each container's share of the pod's 12 KiB (upstream normalizeStatus)."""
    return MAX_POD_MESSAGES // containers if containers > 0 else MAX_POD_MESSAGES


def cut(message: str, limit: int) -> str:
    """The first ``limit`` bytes of the message, as upstream slices the Go string."""
    raw = message.encode("utf-8")
    if len(raw) <= limit:
        return message
    return raw[:limit].decode("utf-8", "ignore")
