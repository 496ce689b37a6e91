"""Reading a container's log files for ``/containerLogs``, once or following them.

``read_log`` yields the rendered output of a log: the current file from the tail's
start (upstream reads only the current file too), then, with ``follow``, what the
container appends, until the container stops running (asked of the runtime, as
upstream's waitLogs asks ContainerStatus), the caller's ``stop`` says so, or the
byte limit is reached. Waiting is on inotify (a directory watch: writes to the file,
and a rotation's rename and new file), never a poll of the file (a change is followed by
a pause of ``COALESCE``, 10 ms, so a busy log is read in batches); the running check is made at
most every ``RUNNING_CHECK`` seconds and at least as often, so a follow of a container
that exits ends within about that time.

Rotation as upstream's kubelet does it (runtime.kuberuntime.log_rotator): ``0.log`` is renamed to
``0.log.<timestamp>`` (older ones gzip-compressed) and the runtime reopens ``0.log``.
A follow drains the renamed file to its end, then goes on in the new one, so nothing is
lost or repeated. ``rotated_logs`` lists the older files in order; ``open_log`` reads
``.gz`` ones, for readers that want the history.
"""

from __future__ import annotations

import gzip
import os
import time
from collections.abc import Callable, Iterator
from typing import IO

from runtime.kuberuntime.inotify import DirectoryWatch
from runtime.kuberuntime.log_rotation import is_rotated_of, split_unused
from runtime.kuberuntime.logs import LogOptions, LogRenderer, tail_start

RUNNING_CHECK = 0.5
"""Seconds between two asks of the runtime whether the followed container still runs
(upstream: before each wait, waits of at most 1 s)."""

COALESCE = 0.01
"""Seconds a follow lets a writer go on after a change before it reads: a runtime writes
one record at a time, and a wake per record would cost a busy log's follower more than
reading it (at most this much latency for a line)."""

CHUNK = 1 << 20
"""Bytes read at a time: big reads keep a fast writer's follow cheap."""

TAIL_BLOCK = 64 << 10


def rotated_logs(path: str) -> tuple[str, ...]:
    """The rotated files of the log at ``path`` (``<path>.<timestamp>[.gz]``) in use,
    oldest first (the timestamps sort as text): upstream's GetAllLogs without the log
    itself (leftovers of an interrupted rotation left out)."""
    directory, base = os.path.split(path)
    try:
        names = os.listdir(directory or ".")
    except FileNotFoundError:
        return ()
    inuse, _ = split_unused(n for n in names if is_rotated_of(base, n))
    return tuple(os.path.join(directory, n) for n in inuse)


def open_log(path: str) -> IO[bytes]:
    """A log file for reading, decompressed if it is a rotated ``.gz`` one."""
    if path.endswith(".gz"):
        return gzip.GzipFile(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _tail_offset(f: IO[bytes], lines: int) -> int:
    """Where the last ``lines`` lines of the open file begin: read back block by block
    until enough lines are in hand (upstream: tail.FindTailLineStartIndex). Only whole
    records count: a torn last record (mid-write) is not a line yet."""
    size = f.seek(0, os.SEEK_END)
    start = size
    data = b""
    while start > 0:
        end, start = start, max(0, start - TAIL_BLOCK)
        f.seek(start)
        data = f.read(end - start) + data
        cut = data.find(b"\n") + 1 if start > 0 else 0
        if start > 0 and cut == 0:
            continue  # not one whole record in hand yet
        offset = tail_start(data[cut:data.rfind(b"\n") + 1], lines)
        if offset > 0 or start == 0:
            return start + cut + offset
    return 0


def read_log(
    path: str,
    options: LogOptions,
    running: Callable[[], bool] = lambda: False,
    stop: Callable[[], bool] = lambda: False,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[bytes]:
    """The output for ``options`` of the log at ``path``, in chunks (see the module).

    ``running`` is asked (at most every RUNNING_CHECK seconds) whether the container
    still writes; ``stop`` whether the caller is gone (the server stopping, the client
    disconnected). Raises OSError, before any output, if the file cannot be opened.
    """
    return _read(open(path, "rb"), path, options, running, stop, clock, sleep)


def _read(
    f: IO[bytes],
    path: str,
    options: LogOptions,
    running: Callable[[], bool],
    stop: Callable[[], bool],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> Iterator[bytes]:
    renderer = LogRenderer(options)
    watch: DirectoryWatch | None = None
    try:
        if options.tail_lines is not None:
            f.seek(_tail_offset(f, options.tail_lines))
        pending = b""
        last_check = clock()
        alive = True
        while not renderer.done:
            data = f.read(CHUNK)
            if data:
                buf = pending + data if pending else data
                cut = buf.rfind(b"\n") + 1
                pending = buf[cut:]
                out = renderer.feed(buf[:cut])
                if out:
                    yield out
                continue
            if not options.follow:
                # The end of a file nobody follows: a torn last record is still shown,
                # as upstream writes an incomplete last line once.
                out = renderer.feed(pending)
                if out:
                    yield out
                return
            newer = _rotated_away(f, path)
            if newer is not None:
                f.close()
                f = newer
                continue
            if not alive or stop():
                return
            if watch is None:
                # Created at the first end of file, then read once more: a write between
                # the read and the watch is not missed (as upstream does with fsnotify).
                watch = DirectoryWatch(os.path.dirname(path) or ".")
                continue
            now = clock()
            if now - last_check >= RUNNING_CHECK:
                last_check = now
                if not running():
                    # Read to the end once more: what it wrote before it stopped.
                    alive = False
                    continue
            if watch.wait(max(0.0, RUNNING_CHECK - (clock() - last_check))):
                sleep(COALESCE)
    finally:
        f.close()
        if watch is not None:
            watch.close()


def _rotated_away(f: IO[bytes], path: str) -> IO[bytes] | None:
    """The new file at ``path`` when ``f`` (read to its end) is no longer it: the log
    was rotated. The old file is read to its end first by the caller's loop, so this is
    asked only at an end of file; None when ``path`` is still ``f`` or not yet
    recreated."""
    try:
        current = os.stat(path)
    except FileNotFoundError:
        return None
    mine = os.fstat(f.fileno())
    if (current.st_ino, current.st_dev) == (mine.st_ino, mine.st_dev):
        return None
    # A last read of the old file: the runtime may have written between our end of
    # file and the rename (it writes to the old file until it reopens the log).
    if f.read(1):
        f.seek(-1, os.SEEK_CUR)
        return None
    try:
        return open(path, "rb")
    except FileNotFoundError:
        return None
