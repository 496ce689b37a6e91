"""Reading a container's log files for ``/containerLogs``, once or following them.

A log is its rotated files, oldest first, then its current file (beyond upstream, whose
reader opens the current file only, so a log just rotated reads as empty). ``read_log``
yields the rendered output of a log: from where the options start it (``tailLines``
counted back across the files from the newest, ``sinceTime``/``sinceSeconds`` skipping
the rotated files written before that time, else the oldest file's start) to the end of
the current file, then, with ``follow``, what the container appends, until the container
stops running (asked of the runtime, as upstream's waitLogs asks ContainerStatus), the
caller's ``stop`` says so, or the byte limit is reached (``limitBytes``: no file after it
is read). Waiting is on inotify (a directory watch: writes to the file, and a rotation's
rename and new file), never a poll of the file (a change is followed by a pause of
``COALESCE``, 10 ms, so a busy log is read in batches); the running check is made at
most every ``RUNNING_CHECK`` seconds and at least as often, so a follow of a container
that exits ends within about that time.

Rotation as upstream's kubelet does it (runtime.kuberuntime.log_rotator): ``0.log`` is renamed to
``0.log.<timestamp>`` (older ones gzip-compressed to ``.gz``, the oldest removed) and the
runtime reopens ``0.log``. What a read guarantees while that goes on: ``open_logs`` lists
the files, opens each, and lists them again; the two listings must name the same files,
each still the file opened (else a rotation ran in between: it starts over). The files
it holds are then the whole log as it was at one moment, each once (a file and its
``.gz`` copy are never both in use), so every line written before the read is read once,
in order, whatever a rotation does afterwards (a renamed, compressed or removed file
stays readable through what was opened). Lines appended later to a held file are read
as they come (the runtime writes to the renamed file until it reopens its log); without
follow, lines in a file made after that moment are not (they came after the read began).
A follow drains the file it reads to its end, then goes on in the new file at the log's
path, so nothing is lost or repeated across a rotation (a follow more than one rotation
behind skips the files between, as upstream's does).
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO

from runtime.kuberuntime.inotify import DirectoryWatch
from runtime.kuberuntime.log_rotation import COMPRESS_SUFFIX, is_rotated_of, split_unused
from runtime.kuberuntime.logs import LogOptions, LogRenderer, ends_line

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
"""Bytes read at a time from a file's end backwards, looking for a tail's start."""

OPEN_ATTEMPTS = 10
"""Listings ``open_logs`` makes before it gives up on a log that rotates under it (a
rotation comes at most once a containerLogMonitorInterval, 3 s or more: one more
listing is all it ever takes)."""

SINCE_SLACK_NS = 1_000_000_000
"""How much later than its last write a record's time may be: a file last modified more
than this before ``since`` holds no record at or after it. A record's time is taken
before it is written, but a file's modification time comes from the kernel's coarse
clock (a few milliseconds behind); a second covers that with room to spare."""


def _log_files(path: str) -> tuple[str, ...]:
    """The files of the log at ``path`` in use, from one listing of its directory: the
    rotated ones oldest first (the timestamps sort as text; leftovers of an interrupted
    rotation left out, as upstream's GetAllLogs), then ``path`` itself if it is there
    (between a rotation's rename and the runtime's reopen it is not)."""
    directory, base = os.path.split(path)
    try:
        names = os.listdir(directory or ".")
    except FileNotFoundError:
        return ()
    inuse, _ = split_unused(n for n in names if is_rotated_of(base, n))
    current = (base,) if base in names else ()
    return tuple(os.path.join(directory, n) for n in (*inuse, *current))


def rotated_logs(path: str) -> tuple[str, ...]:
    """The rotated files of the log at ``path`` (``<path>.<timestamp>[.gz]``) in use,
    oldest first: upstream's GetAllLogs without the log itself."""
    return tuple(n for n in _log_files(path) if n != path)


def open_log(path: str) -> IO[bytes]:
    """A log file for reading, decompressed if it is a rotated ``.gz`` one."""
    if path.endswith(COMPRESS_SUFFIX):
        return gzip.GzipFile(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


class LogFile:
    """One open file of a log: its name, what it was when opened (``stat``: to tell it
    from a file put at its name since), and, for a ``.gz`` one a tail had to look into,
    its contents decompressed (read once)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.compressed = name.endswith(COMPRESS_SUFFIX)
        self.raw: IO[bytes] = open(name, "rb")  # noqa: SIM115 - closed by close()
        self.stat = os.fstat(self.raw.fileno())
        self._plain: IO[bytes] | None = None if self.compressed else self.raw

    def still_at_its_name(self) -> bool:
        """Whether the file at ``name`` is still this one."""
        try:
            now = os.stat(self.name)
        except FileNotFoundError:
            return False
        return (now.st_ino, now.st_dev) == (self.stat.st_ino, self.stat.st_dev)

    def seekable(self) -> IO[bytes]:
        """The contents, to read from anywhere (a ``.gz`` file decompressed whole)."""
        if self._plain is None:
            self.raw.seek(0)
            with gzip.GzipFile(fileobj=self.raw, mode="rb") as unzipped:
                self._plain = io.BytesIO(unzipped.read())
        return self._plain

    def reader(self, offset: int) -> IO[bytes]:
        """The contents from ``offset`` on (a ``.gz`` one decompressed as it is read,
        unless a tail decompressed it already)."""
        if self._plain is None:
            if offset == 0:
                self.raw.seek(0)
                return gzip.GzipFile(fileobj=self.raw, mode="rb")  # type: ignore[return-value]
            self.seekable()
        assert self._plain is not None
        self._plain.seek(offset)
        return self._plain

    def close(self) -> None:
        self.raw.close()


def _close_all(files: Sequence[LogFile]) -> None:
    for f in files:
        f.close()


def open_logs(path: str) -> list[LogFile]:
    """The files of the log at ``path``, opened, oldest first, as they were at one moment
    (see the module). OSError when there is none (the current file's own error, as
    upstream's open), or when every one of OPEN_ATTEMPTS listings raced a rotation."""
    for _ in range(OPEN_ATTEMPTS):
        names = _log_files(path)
        if not names:
            open(path, "rb").close()  # raises the current file's error
            continue  # it was just made: list again
        files: list[LogFile] = []
        try:
            for name in names:
                files.append(LogFile(name))
        except FileNotFoundError:  # renamed or removed since the listing
            _close_all(files)
            continue
        if _log_files(path) == names and all(f.still_at_its_name() for f in files):
            return files
        _close_all(files)
    raise OSError(errno.EAGAIN, f"the log kept rotating while its {OPEN_ATTEMPTS} "
                  "listings were opened")


def _records_backwards(f: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """Each whole record of ``f`` (its end offset, past the newline, and the record
    without it), the last first, read block by block from the end. A torn last record
    (mid-write) is not a record yet."""
    buf_start = f.seek(0, os.SEEK_END)
    buf = b""
    end: int | None = None  # in buf: just past the newline of the next record to yield
    while True:
        if end is None:
            last = buf.rfind(b"\n")
            end = last + 1 if last >= 0 else None
        if end is not None and end > 0:
            before = buf.rfind(b"\n", 0, end - 1)
            if before >= 0 or buf_start == 0:
                yield buf_start + end, buf[before + 1:end - 1]
                end = before + 1
                continue
        if buf_start == 0:
            return
        start = max(0, buf_start - TAIL_BLOCK)
        f.seek(start)
        block = f.read(buf_start - start)
        # Keep only what is still to be looked at: at most a record begun before.
        buf = block + (buf if end is None else buf[:end])
        if end is not None:
            end += len(block)
        buf_start = start


def _tail_start(files: Sequence[LogFile], lines: int) -> tuple[int, int]:
    """Where the last ``lines`` lines of ``files`` (read in order) begin: the index of a
    file and an offset in it, just past the line end before them. Counted from the end
    of the newest file backwards, into older ones only while too few lines are found (a
    ``.gz`` one is decompressed only then). A line ends at an F record and at the last
    record of all, whatever its tag (upstream: tail.FindTailLineStartIndex, with whole
    lines counted; a line begun in P records at the end of a file ends in the next)."""
    needed = max(lines, 0) + 1  # the line end just before the first line shown
    last = True
    for index in range(len(files) - 1, -1, -1):
        for end, record in _records_backwards(files[index].seekable()):
            if last or ends_line(record):
                needed -= 1
                if needed == 0:
                    return index, end
            last = False
    return 0, 0


def _since_start(files: Sequence[LogFile], since_ns: int) -> int:
    """The index of the first file that may hold a record at or after ``since_ns``: the
    rotated files last modified well before it are skipped unread (see SINCE_SLACK_NS)."""
    for index, f in enumerate(files[:-1]):
        if f.stat.st_mtime_ns + SINCE_SLACK_NS >= since_ns:
            return index
    return len(files) - 1


def _start(files: Sequence[LogFile], options: LogOptions) -> tuple[int, int]:
    """Where the output begins: a file's index and an offset in it."""
    first = 0
    if options.since_ns is not None:
        first = _since_start(files, options.since_ns)
    if options.tail_lines is not None:
        index, offset = _tail_start(files[first:], options.tail_lines)
        return first + index, offset
    return first, 0


def read_log(
    path: str,
    options: LogOptions,
    running: Callable[[], bool] = lambda: False,
    stop: Callable[[], bool] = lambda: False,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[bytes]:
    """The output for ``options`` of the log at ``path`` (its rotated files, then the
    file itself), in chunks (see the module).

    ``running`` is asked (at most every RUNNING_CHECK seconds) whether the container
    still writes; ``stop`` whether the caller is gone (the server stopping, the client
    disconnected). Raises OSError, before any output, if the files cannot be opened.
    """
    return _read(open_logs(path), path, options, running, stop, clock, sleep)


def _read(
    files: list[LogFile],
    path: str,
    options: LogOptions,
    running: Callable[[], bool],
    stop: Callable[[], bool],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> Iterator[bytes]:
    renderer = LogRenderer(options)
    watch: DirectoryWatch | None = None
    # The file the follow goes on in: the newest one (the runtime's, or the one it
    # writes to until it reopens its log). Others are read to their end.
    live = files[-1]
    f: IO[bytes] | None = None
    try:
        index, offset = _start(files, options)
        for older in files[index:-1]:
            if renderer.done:
                return
            f = older.reader(offset)
            offset = 0
            yield from _read_to_end(f, renderer)
            if f is not older.raw:
                f.close()
            f = None
        f = live.reader(offset)
        pending = b""
        last_check = clock()
        alive = True
        while not renderer.done:
            data = f.read(CHUNK)
            if data:
                out, pending = _feed_whole(renderer, pending, data)
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
        if f is not None:
            f.close()
        _close_all(files)
        if watch is not None:
            watch.close()


def _read_to_end(f: IO[bytes], renderer: LogRenderer) -> Iterator[bytes]:
    """The output of a rotated file read from where ``f`` stands to its end, until the
    renderer is done (its byte or line limit reached)."""
    pending = b""
    while not renderer.done:
        data = f.read(CHUNK)
        if not data:
            # A rotated file ends with a whole record; one that does not (cut short)
            # gives its last record on its own, not joined to the next file's first.
            out = renderer.feed(pending)
            if out:
                yield out
            return
        out, pending = _feed_whole(renderer, pending, data)
        if out:
            yield out


def _feed_whole(renderer: LogRenderer, pending: bytes, data: bytes) -> tuple[bytes, bytes]:
    """Feed ``renderer`` the whole records of ``pending`` + ``data``: its output, and the
    torn record after the last newline, kept for the next read."""
    buf = pending + data if pending else data
    cut = buf.rfind(b"\n") + 1
    return renderer.feed(buf[:cut]), buf[cut:]


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
