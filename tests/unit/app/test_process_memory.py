"""The daemon's native heap upkeep (actors.app.process_memory) on this machine's glibc."""

from __future__ import annotations

import ctypes

import pytest

from actors.app import process_memory
from actors.app.process_memory import give_back_free_memory, limit_arenas


def test_the_arena_cap_is_taken_by_glibc() -> None:
    assert limit_arenas(process_memory.ARENAS) is True


def test_free_pages_in_the_middle_of_the_heap_are_given_back() -> None:
    libc = process_memory._libc()
    assert libc is not None, "this machine's C library is glibc"
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = (ctypes.c_void_p,)
    # Blocks under the mmap threshold come from the heap; the last one, kept, pins the
    # top, so only malloc_trim (not free's own trim of the top) can return the others.
    blocks = [libc.malloc(64 * 1024) for _ in range(256)]
    for block in blocks:
        ctypes.memset(block, 1, 64 * 1024)  # touched: resident
    pin = libc.malloc(64 * 1024)
    try:
        for block in blocks:
            libc.free(block)
        assert give_back_free_memory() is True
    finally:
        libc.free(pin)


def test_without_glibc_both_do_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_memory, "_libc", lambda: None)
    assert limit_arenas() is False
    assert give_back_free_memory() is False
