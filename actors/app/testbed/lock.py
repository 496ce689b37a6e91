"""The machine-wide lock every user of the test bed holds while it runs.

The e2e tests, the drills and the benchmarks start containerds, bridges and a registry on
shared ports; the lock (flock on LOCK_PATH) keeps two of them from running at once on a
machine. Under it, the directories a user's dead runs left are cleaned up.

A process can hand the lock it holds to a child (an e2e test running ``kubelet-actors
drill`` from a wheel): the child inherits the locked file descriptor, named in the
environment by LOCK_FD_ENV, and runs under its parent's lock instead of waiting for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from loguru import logger

from actors.app.testbed.beds import DIR_PARENT, Bed, TestbedError
from actors.app.testbed.cleanup import cleanup_runtime_dir

LOCK_PATH = DIR_PARENT / "kubelet-actors-e2e.lock"
LOCK_WAIT_S = 600.0
LOCK_FD_ENV = "KUBELET_ACTORS_TESTBED_LOCK_FD"
POLL_S = 0.2


@dataclass(frozen=True, slots=True)
class HeldLock:
    """The lock as this process holds it: ``fd`` is the locked file's descriptor."""

    fd: int
    inherited: bool

    def child_env(self) -> dict[str, str]:
        """The environment for a child that runs under this lock (pass ``fd`` to it too)."""
        return {LOCK_FD_ENV: str(self.fd)}


def _inherited(fd_text: str) -> int:
    """The lock's descriptor a parent handed down, checked to be LOCK_PATH and locked."""
    try:
        fd = int(fd_text)
        mine, theirs = os.fstat(fd), os.stat(LOCK_PATH)
    except (ValueError, OSError) as err:
        raise TestbedError(f"{LOCK_FD_ENV}={fd_text!r} is no open descriptor of {LOCK_PATH}: "
                           f"{err}") from err
    if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
        raise TestbedError(f"{LOCK_FD_ENV}={fd} is not {LOCK_PATH}")
    try:
        # Succeeds at once on the descriptor that holds the lock (it is the parent's).
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as err:
        raise TestbedError(f"{LOCK_FD_ENV}={fd} does not hold {LOCK_PATH}: another "
                           "process does") from err
    return fd


def _take(f: IO[str], wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise TestbedError(
                    f"{LOCK_PATH} is still held after {wait_s:g} s: another e2e run, drill "
                    "or benchmark is running on this machine") from None
            time.sleep(POLL_S)


@contextlib.contextmanager
def machine_lock(bed: Bed, wait_s: float = LOCK_WAIT_S) -> Iterator[HeldLock]:
    """Hold the machine-wide lock (waiting up to ``wait_s``), or run under the one a parent
    handed down; under it, ``bed``'s directories of dead runs are cleaned up first."""
    handed_down = os.environ.get(LOCK_FD_ENV)
    if handed_down is not None:
        held = HeldLock(_inherited(handed_down), inherited=True)
        _clean_stale(bed)
        # Never unlocked here: the descriptor and its lock are the parent's.
        yield held
        return
    try:
        DIR_PARENT.mkdir(parents=True, exist_ok=True)
        f = open(LOCK_PATH, "a+")  # noqa: SIM115 - held until the with block ends
    except OSError as err:
        raise TestbedError(f"cannot open the lock {LOCK_PATH}: {err}") from err
    with f:
        _take(f, wait_s)
        try:
            _clean_stale(bed)
            yield HeldLock(f.fileno(), inherited=False)
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _clean_stale(bed: Bed) -> None:
    for stale in bed.dirs():
        logger.warning("cleaning up the {} dir {} of an earlier run", bed.user, stale)
        cleanup_runtime_dir(stale, bed.slot_of(stale).bridge)
