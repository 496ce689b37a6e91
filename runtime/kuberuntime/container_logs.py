"""A removed container's log files, removed through a service the kubelet calls.

Upstream's removeContainer removes a container's log and the files its rotations left
(ContainerLogManager.Clean) along with the container. A pod worker does that when it
prunes an init container's older instances; a replayed pod worker must not, since the
path is the recorded node's. So the removal passes one narrow interface
(``ContainerLogFiles``) that a trace records and a replay answers, failures included,
never touching a file on the machine it replays on.
"""

from __future__ import annotations

from typing import Protocol

from runtime.kuberuntime.log_rotator import clean_container_logs

__all__ = ["CONTAINER_LOGS_TARGET", "ContainerLogFiles", "NodeContainerLogFiles"]

CONTAINER_LOGS_TARGET = "containerlogs"
"""The service's name in traces (the ``target`` of its recorded calls)."""


class ContainerLogFiles(Protocol):
    """Removes the log files of containers the kubelet removed."""

    def clean(self, log_path: str) -> tuple[str, ...]:
        """Remove the log at ``log_path`` (as the runtime reported it) and what its
        rotations left beside it; the paths removed. A relative or empty path (no log)
        removes nothing. LogRotationError names the file that could not be removed."""


class NodeContainerLogFiles:
    """The real node's files."""

    def clean(self, log_path: str) -> tuple[str, ...]:
        return clean_container_logs(log_path)
