"""The daemon's native heap: a bounded number of malloc arenas, and free pages given back.

Each pykka actor is a thread, and glibc gives threads that meet in ``malloc`` arenas of
their own (up to eight per CPU). Memory freed in an arena stays mapped until its top is
free; with pod workers started and stopped all day, the process's RSS creeps while the
Python heap stays flat. Two glibc calls bound that: ``mallopt(M_ARENA_MAX)`` once before
the threads start, and ``malloc_trim(0)`` on a period, which returns the free pages of
every arena to the kernel (long-running Python services such as Dask's workers do the
same). Both are no-ops where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

from loguru import logger

M_ARENA_MAX = -8
"""glibc's mallopt parameter for the most arenas (malloc.h)."""

ARENAS = 2
"""Arenas for the daemon: its threads mostly wait, so two keep contention low."""

TRIM_PERIOD_S = 60.0
"""How often the daemon gives free heap pages back: a trim takes about a millisecond."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    if not hasattr(libc, "malloc_trim") or not hasattr(libc, "mallopt"):
        return None  # not glibc (musl has neither)
    return libc


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap malloc's arenas; call before threads start. True when the C library took it."""
    libc = _libc()
    if libc is None:
        return False
    taken = bool(libc.mallopt(M_ARENA_MAX, arenas))
    logger.debug("malloc arenas capped at {}: {}", arenas, taken)
    return taken


def give_back_free_memory() -> bool:
    """Return free heap pages to the kernel. True when some memory was released."""
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.malloc_trim(0))
