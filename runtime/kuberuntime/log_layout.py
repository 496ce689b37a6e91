"""Where the kubelet puts container logs: the one place that knows the layout.

Upstream's layout (pkg/kubelet/kuberuntime BuildPodLogsDirectory, BuildContainerLogsDirectory
and buildContainerLogsPath): a pod's logs live in
``<pod-logs-dir>/<namespace>_<name>_<uid>`` (the sandbox's LogDirectory), each container's
in a directory of its name there, one file per instance named for its restart count:
``<container>/<restartCount>.log`` (the container's LogPath, relative to the sandbox's
LogDirectory). The kubelet chooses these paths itself, so it can tell a container's log
from the container's labels and metadata alone, without asking the runtime.
"""

from __future__ import annotations

import os
import re

LOG_SUFFIX = ".log"
_LOG_NAME = re.compile(r"^(\d+)\.log")


def pod_log_dir(pod_logs_dir: str, namespace: str, name: str, uid: str) -> str:
    """``<pod-logs-dir>/<ns>_<name>_<uid>``: a pod's log directory (its sandbox's)."""
    return os.path.join(pod_logs_dir, f"{namespace}_{name}_{uid}")


def container_log_dir(pod_dir: str, container_name: str) -> str:
    """The directory of a container's logs in its pod's log directory ``pod_dir``."""
    return os.path.join(pod_dir, container_name)


def container_log_file(container_name: str, restart_count: int) -> str:
    """``<container>/<restartCount>.log``: a container instance's log path relative to its
    pod's log directory (the LogPath of its CRI ContainerConfig)."""
    return os.path.join(container_name, f"{restart_count}{LOG_SUFFIX}")


def container_log_path(pod_logs_dir: str, namespace: str, name: str, uid: str,
                       container_name: str, restart_count: int) -> str:
    """The full path of a container instance's log, as the runtime writes it."""
    return os.path.join(pod_log_dir(pod_logs_dir, namespace, name, uid),
                        container_log_file(container_name, restart_count))


def restart_count_from_logs(log_dir: str) -> int:
    """One more than the highest ``<n>.log`` in the container's log dir (0 if none)."""
    try:
        names = os.listdir(log_dir)
    except OSError:
        return 0
    counts = [int(m.group(1)) for n in names if (m := _LOG_NAME.match(n))]
    return max(counts) + 1 if counts else 0
