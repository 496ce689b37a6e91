"""Container log rotation, the planning half: given a container's current log, its size,
the files next to it and the policy, what to remove, compress and rename.

Upstream's kubelet (pkg/kubelet/logs container_log_manager.go) rotates the log of a
running container once it has reached ``--container-log-max-size``:

1. leftovers of an interrupted rotation are removed: ``.tmp`` files (a compression cut
   short) and an uncompressed file whose ``.gz`` exists (compressed, not yet removed);
2. the oldest rotated files are removed until ``--container-log-max-files`` - 2 are left
   (the runtime's new file and the one about to be rotated make up the count);
3. the rotated files left that are not compressed yet are gzip-compressed to ``.gz``;
4. the current log is renamed to ``<log>.<timestamp>`` (local time, ``YYYYMMDD-hhmmss``)
   and stays uncompressed: the runtime may still write to it until it reopens its log,
   and a reader may still be reading it.

The doing (files, CRI ReopenContainerLog) is runtime.kuberuntime.log_rotator.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from msgspec import Struct

from runtime.pod.quantity import parse_quantity

TIMESTAMP_FORMAT = "%Y%m%d-%H%M%S"
"""upstream's timestampFormat, 20060102-150405, in strftime's words."""
COMPRESS_SUFFIX = ".gz"
TMP_SUFFIX = ".tmp"

DEFAULT_MAX_SIZE = "10Mi"
DEFAULT_MAX_FILES = 5
DEFAULT_MAX_WORKERS = 1
DEFAULT_MONITOR_INTERVAL = 10.0
MIN_MONITOR_INTERVAL = 3.0
"""upstream's validation: containerLogMonitorInterval must be at least 3s."""


class LogRotatePolicy(Struct, frozen=True):
    """upstream's LogRotatePolicy: rotate a log at ``max_size`` bytes, keep at most
    ``max_files`` files per container (the current one included)."""

    max_size: int
    max_files: int


def parse_max_size(size: str) -> int:
    """``containerLogMaxSize`` (a resource quantity: 10Mi, 500Ki, 1G) in bytes, as
    upstream's parseMaxSize; negative turns rotation off. ValueError in upstream's words."""
    try:
        quantity = parse_quantity(size)
    except ValueError as err:
        raise ValueError(f'failed to parse container log max size "{size}": {err}') from err
    if quantity != quantity.to_integral_value():
        raise ValueError(f'failed to parse container log max size "{size}": '
                         "invalid max log size")
    return int(quantity)


class RotationPlan(Struct, frozen=True):
    """What one rotation does, in order: remove ``unused`` and ``excess``, compress
    ``compress`` (each to ``<name>.gz``), rename the current log to ``rotate_to``."""

    unused: tuple[str, ...]
    excess: tuple[str, ...]
    compress: tuple[str, ...]
    rotate_to: str


def rotated_name(log: str, now: float) -> str:
    """The name the current log at ``log`` gets when rotated at ``now`` (epoch seconds)."""
    return f"{log}.{time.strftime(TIMESTAMP_FORMAT, time.localtime(now))}"


def split_unused(files: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``files`` (a log's rotated files) as (in use, unused), each sorted: upstream's
    filterUnusedLogs. ``.tmp`` files are unused; ``.gz`` ones in use; an uncompressed one
    is unused when its ``.gz`` exists (its compression finished, its removal did not)."""
    names = set(files)
    inuse: list[str] = []
    unused: list[str] = []
    for name in sorted(names):
        if name.endswith(TMP_SUFFIX):
            unused.append(name)
        elif name.endswith(COMPRESS_SUFFIX) or name + COMPRESS_SUFFIX not in names:
            inuse.append(name)
        else:
            unused.append(name)
    return tuple(inuse), tuple(unused)


def is_rotated_of(log: str, name: str) -> bool:
    """Whether ``name`` is one of the files rotation makes of ``log`` (upstream's
    ``<log>.*`` glob)."""
    return name.startswith(log + ".")


def plan_rotation(log: str, size: int, rotated: Iterable[str], policy: LogRotatePolicy,
                  now: float) -> RotationPlan | None:
    """The rotation of ``log`` (``size`` bytes; ``rotated``: the ``<log>.*`` files next to
    it) under ``policy`` at ``now``, or None when it is not due: smaller than the policy's
    size (as upstream), or a file of this second's name is already there (two rotations
    within one second: upstream's rename would overwrite it; this waits a pass)."""
    if size < policy.max_size:
        return None
    inuse, unused = split_unused(rotated)
    target = rotated_name(log, now)
    if target in inuse or target + COMPRESS_SUFFIX in inuse:
        return None
    keep = max(policy.max_files - 2, 0)
    cut = max(len(inuse) - keep, 0)
    excess, kept = inuse[:cut], inuse[cut:]
    compress = tuple(name for name in kept if not name.endswith(COMPRESS_SUFFIX))
    return RotationPlan(unused, excess, compress, target)
