"""Container log rotation, the doing half: one pass over the running containers, each
log over the size rotated as runtime.kuberuntime.log_rotation plans it.

A pass (upstream's rotateLogs and its workers' processContainer) lists the runtime's
running containers with one ListContainers (a container that is not running writes
nothing more: its files are left as they are) and finds each one's log. Upstream asks
every container's ContainerStatus for its log path, every pass; but the kubelet chose that
path itself (runtime.kuberuntime.log_layout), and a container's pod labels and metadata
(name, attempt) say what it is. So this stats the file there, and asks ContainerStatus
only when the file has reached the size or is missing, to act on the path the runtime
really writes to; a container without the kubelet's labels (made by another tool) is
asked every pass, as upstream asks all. Then, on the runtime's path:

* skips a log outside the pod logs directory (not the kubelet's to touch);
* when the log file is missing, asks the runtime to reopen it (upstream does, so a log
  lost to a failed rotation comes back);
* when it has reached the policy's size, carries the plan out: removes, compresses
  (``<name>.tmp`` first, renamed to ``<name>.gz``, then the original removed), renames
  the log and calls CRI ReopenContainerLog, renaming the log back if that fails so the
  next pass tries again (as upstream).

Containers are handled by up to ``max_workers`` threads (containerLogMaxWorkers). What
was done and what failed comes back as a RotationPass, for the caller to log.
"""

from __future__ import annotations

import glob
import gzip
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from msgspec import Struct
from msgspec.structs import replace

from runtime.cri.service import RuntimeService
from runtime.cri.types import Container, ContainerFilter, ContainerState
from runtime.errors import CRIError, CRINotFound, LogRotationError
from runtime.ids import ContainerID
from runtime.kuberuntime.labels import ContainerLabelInfo, parse_container_labels
from runtime.kuberuntime.log_layout import container_log_path
from runtime.kuberuntime.log_rotation import (
    COMPRESS_SUFFIX,
    TMP_SUFFIX,
    LogRotatePolicy,
    RotationPlan,
    is_rotated_of,
    plan_rotation,
)


class RotatedLog(Struct, frozen=True):
    """One rotation done (or one that failed: ``error`` says where)."""

    container_id: str
    pod: str
    namespace: str
    uid: str
    container: str
    path: str
    size: int
    rotated_to: str = ""
    removed: tuple[str, ...] = ()
    compressed: tuple[str, ...] = ()
    error: str = ""


class RotationPass(Struct, frozen=True):
    """What one pass did: the running containers looked at, each rotation (done or
    failed) and, when the pass could not list the containers, why."""

    containers: int = 0
    rotations: tuple[RotatedLog, ...] = ()
    error: str = ""


class ContainerLogRotator:
    """Rotates the logs of the running containers of ``runtime`` under ``policy``."""

    def __init__(self, runtime: RuntimeService, policy: LogRotatePolicy, pod_logs_dir: str,
                 now: Callable[[], float] = time.time, max_workers: int = 1) -> None:
        self._runtime = runtime
        self.policy = policy
        self._pod_logs_dir = pod_logs_dir
        self._logs_dir = os.path.realpath(pod_logs_dir)
        self._now = now
        self._max_workers = max(1, max_workers)

    def rotate_all(self) -> RotationPass:
        """One pass over the running containers (see the module)."""
        try:
            running = self._runtime.list_containers(ContainerFilter(state=ContainerState.RUNNING))
        except CRIError as err:
            return RotationPass(error=f"failed to list containers: {err}")
        if self._max_workers == 1 or len(running) < 2:
            done = [self.rotate_container(c) for c in running]
        else:
            with ThreadPoolExecutor(self._max_workers,
                                    thread_name_prefix="log-rotation") as pool:
                done = list(pool.map(self.rotate_container, running))
        return RotationPass(len(running), tuple(r for r in done if r is not None))

    def rotate_container(self, container: Container) -> RotatedLog | None:
        """Rotate ``container``'s log if it is due; None when nothing was due (or the
        container went away meanwhile)."""
        info = parse_container_labels(container.labels, container.annotations)
        expected = self.expected_log_path(container, info)
        if expected is not None and self._below_size(expected):
            return None  # the common case: no runtime call
        try:
            status = self._runtime.container_status(container.id)
        except CRINotFound:
            return None  # removed since the listing
        except CRIError as err:
            return RotatedLog(container.id, info.pod_name, info.pod_namespace, info.pod_uid,
                              info.container_name, "", 0,
                              error=f"failed to get container status: {err}")
        path = status.log_path
        base = RotatedLog(container.id, info.pod_name, info.pod_namespace, info.pod_uid,
                          info.container_name or container.metadata.name, path, 0)
        if not path or not self._ours(path):
            return None
        size = 0
        try:
            found = self._size(container.id, path)
            if found is None:
                return None
            size = found
            plan = plan_rotation(path, size, self._rotated_files(path), self.policy,
                                 self._now())
            if plan is None:
                return None
            self._carry_out(container.id, path, plan)
        except LogRotationError as err:
            return replace(base, size=size, error=str(err))
        return replace(base, size=size, rotated_to=plan.rotate_to,
                       removed=plan.unused + plan.excess, compressed=plan.compress)

    def expected_log_path(self, container: Container,
                          info: ContainerLabelInfo) -> str | None:
        """Where the kubelet told the runtime to write ``container``'s log, from its
        labels and metadata; None for a container without the kubelet's labels."""
        name = container.metadata.name
        if not (info.pod_name and info.pod_namespace and info.pod_uid and name
                and info.container_name == name):
            return None
        return container_log_path(self._pod_logs_dir, info.pod_namespace, info.pod_name,
                                  info.pod_uid, name, container.metadata.attempt)

    def _below_size(self, path: str) -> bool:
        """Whether the log at ``path`` is there and smaller than the policy's size: not
        due, nothing to ask the runtime (a missing or unreadable file is asked about)."""
        try:
            return os.stat(path).st_size < self.policy.max_size
        except OSError:
            return False

    def _ours(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real.startswith(self._logs_dir + os.sep)

    def _size(self, container_id: ContainerID, path: str) -> int | None:
        """The log's size; a missing log is reopened first (None: still missing)."""
        try:
            return os.stat(path).st_size
        except FileNotFoundError:
            pass
        except OSError as err:
            raise LogRotationError(f"failed to stat container log {path}: {err}") from err
        try:
            self._runtime.reopen_container_log(container_id)
        except CRIError as err:
            raise LogRotationError(
                f"container log {path} doesn't exist, reopen container log failed: {err}"
            ) from err
        try:
            return os.stat(path).st_size
        except OSError as err:
            raise LogRotationError(
                f"failed to stat container log {path} after reopen: {err}") from err

    @staticmethod
    def _rotated_files(path: str) -> tuple[str, ...]:
        directory = os.path.dirname(path)
        try:
            names = os.listdir(directory)
        except OSError as err:
            raise LogRotationError(f"failed to list the log files of {path}: {err}") from err
        full = (os.path.join(directory, name) for name in names)
        return tuple(name for name in full if is_rotated_of(path, name))

    def _carry_out(self, container_id: ContainerID, path: str, plan: RotationPlan) -> None:
        for name in plan.unused:
            _remove(name, "unused log")
        for name in plan.excess:
            _remove(name, "old log")
        for name in plan.compress:
            compress_log(name)
        self._rotate_latest(container_id, path, plan.rotate_to)

    def _rotate_latest(self, container_id: ContainerID, path: str, rotated: str) -> None:
        try:
            os.rename(path, rotated)
        except OSError as err:
            raise LogRotationError(f"failed to rotate log {path} to {rotated}: {err}") from err
        try:
            self._runtime.reopen_container_log(container_id)
        except CRIError as err:
            # Back where it was, so the next pass tries again (a kubelet that dies here
            # leaves the runtime writing to the renamed file, as upstream's would).
            try:
                os.rename(rotated, path)
            except OSError as back:
                raise LogRotationError(
                    f"failed to reopen container log {container_id} ({err}), and to rename "
                    f"{rotated} back to {path}: {back}") from err
            raise LogRotationError(
                f"failed to reopen container log {container_id}: {err}") from err


def _remove(path: str, what: str) -> bool:
    """Remove ``path``; whether it was there. LogRotationError names it when it cannot."""
    try:
        os.remove(path)
    except FileNotFoundError:
        return False
    except OSError as err:
        raise LogRotationError(f"failed to remove {what} {path}: {err}") from err
    return True


def compress_log(path: str) -> str:
    """``path`` gzip-compressed to ``<path>.gz`` (through ``<path>.tmp``, so a cut-short
    compression leaves only a ``.tmp`` the next rotation removes), the original removed;
    returns the ``.gz`` name (upstream's compressLog)."""
    tmp, done = path + TMP_SUFFIX, path + COMPRESS_SUFFIX
    try:
        mode = os.stat(path).st_mode & 0o7777
        with open(path, "rb") as src, open(tmp, "wb") as raw:
            os.fchmod(raw.fileno(), mode)
            with gzip.GzipFile(fileobj=raw, mode="wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
        os.rename(tmp, done)
    except OSError as err:
        _remove(tmp, "temporary log")
        raise LogRotationError(f"failed to compress log {path} to {done}: {err}") from err
    _remove(path, "log after compress")
    return done


def clean_container_logs(log_path: str) -> tuple[str, ...]:
    """Remove a removed container's log and every file its rotations left beside it
    (``<log>.<time>``, ``.gz``, ``.tmp``): upstream's ContainerLogManager.Clean, which its
    removeContainer calls, so a container instance's logs go with it. Returns what was
    removed; LogRotationError names the file that could not be. An empty or relative path
    (the runtime reported no log, or one it keeps elsewhere) removes nothing."""
    if not log_path or not os.path.isabs(log_path):
        return ()
    return tuple(name for name in sorted(glob.glob(glob.escape(log_path) + "*"))
                 if _remove(name, "container log"))
