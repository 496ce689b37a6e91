"""A minimal inotify watch of one directory, for following container logs.

Linux's inotify through libc (ctypes): one non-blocking descriptor watching a directory
for writes to its files and for files created, moved or deleted in it (a log's
rotation). ``wait`` returns when something happened or the timeout passed; the events
themselves are drained and dropped: the caller reads the files again, which is the
only thing it does on any event.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select

from runtime.errors import KubeletError

IN_MODIFY = 0x00000002
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
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
        fd = _libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise InotifyError(f"inotify_init1: {os.strerror(err)}")
        if _libc.inotify_add_watch(fd, os.fsencode(directory), _MASK) < 0:
            err = ctypes.get_errno()
            os.close(fd)
            raise InotifyError(f"inotify_add_watch {directory}: {os.strerror(err)}")
        self._fd = fd
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
