"""Minimal inotify watches of one directory, through libc (ctypes).

``DirectoryWatch`` is for following container logs: one non-blocking descriptor watching
a directory for writes to its files and for files created, moved or deleted in it (a
log's rotation). ``wait`` returns when something happened or the timeout passed; the
events themselves are drained and dropped: the caller reads the files again, which is
the only thing it does on any event.

``DirectoryEvents`` is for the static-pod manifest directory: it hands over each event
(the entry's name and what happened) as soon as the kernel queues it, and can be woken
from another thread to stop. No polling and no debounce, unlike a general file-watching
library, so a new manifest is seen in well under a millisecond.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import select
import struct
import threading

from msgspec import Struct

from runtime.errors import KubeletError

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_MASK = IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


class InotifyError(KubeletError):
    """inotify could not be set up (too many watches, a missing directory)."""


class DirectoryWatch:
    """Wakes a waiter when a file in ``directory`` is written, created, moved or
    deleted."""

    def __init__(self, directory: str) -> None:
        self._fd = fd = _inotify(directory, _MASK)
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)

    def wait(self, timeout: float) -> bool:
        """Block until an event or ``timeout`` seconds; True if something happened.
        Every pending event is consumed."""
        if not self._poll.poll(max(0, int(timeout * 1000))):
            return False
        try:
            while os.read(self._fd, 65536):
                pass
        except BlockingIOError:
            pass
        return True

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name


class DirectoryEvent(Struct, frozen=True):
    """One inotify event: the entry's name in the directory ("" for the directory itself
    or a queue overflow) and the event's mask."""

    name: str
    mask: int

    @property
    def gone(self) -> bool:
        """The directory itself was deleted or moved away: its watch has ended."""
        return bool(self.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))


def _inotify(directory: str, mask: int) -> int:
    fd = int(_libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise InotifyError(f"inotify_init1: {os.strerror(err)}")
    if _libc.inotify_add_watch(fd, os.fsencode(directory), mask) < 0:
        err = ctypes.get_errno()
        os.close(fd)
        raise InotifyError(f"inotify_add_watch {directory}: {os.strerror(err)}")
    return fd


def parse_events(buffer: bytes) -> tuple[DirectoryEvent, ...]:
    """The events in what one read of an inotify descriptor returned."""
    events: list[DirectoryEvent] = []
    offset = 0
    while offset + _EVENT.size <= len(buffer):
        _wd, mask, _cookie, length = _EVENT.unpack_from(buffer, offset)
        offset += _EVENT.size
        raw = buffer[offset:offset + length].rstrip(b"\0")
        offset += length
        events.append(DirectoryEvent(os.fsdecode(raw), mask))
    return tuple(events)


class DirectoryEvents:
    """The events of one directory, each handed over as soon as it happens.

    ``read`` blocks until events come (every one queued by then is returned, in order)
    or ``wake`` is called from another thread (then it returns None, and so does every
    later ``read``). The caller closes it when done.
    """

    def __init__(self, directory: str, mask: int) -> None:
        self._fd = _inotify(directory, mask)
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN)
        self._poll.register(self._wake_r, select.POLLIN)
        self._woken = False
        self._lock = threading.Lock()  # wake (another thread) never writes a closed fd

    def read(self) -> tuple[DirectoryEvent, ...] | None:
        """The next events; None once woken."""
        while not self._woken:
            ready = {fd for fd, _ in self._poll.poll()}
            if self._wake_r in ready:
                self._woken = True
                break
            chunks: list[bytes] = []
            try:
                while chunk := os.read(self._fd, 65536):
                    chunks.append(chunk)
            except BlockingIOError:
                pass
            events = parse_events(b"".join(chunks))
            if events:
                return events
        return None

    def wake(self) -> None:
        """Make a ``read`` (now or next) return None: the watching thread is to stop."""
        with self._lock:
            if self._wake_w < 0:
                return  # closed: nothing reads any more
            with contextlib.suppress(BlockingIOError):  # the pipe is full: woken already
                os.write(self._wake_w, b"x")

    def close(self) -> None:
        with self._lock:
            for fd in (self._fd, self._wake_r, self._wake_w):
                if fd >= 0:
                    os.close(fd)
            self._fd = self._wake_r = self._wake_w = -1
