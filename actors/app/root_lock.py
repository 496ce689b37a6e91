"""One kubelet per root dir: two would fight over the runtime (each other's pods look like
orphans to each one, and the second would restart the first's embedded containerd)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from runtime.errors import ConfigError

LOCK_NAME = "kubelet-actors.lock"


@contextlib.contextmanager
def hold_root_dir(root_dir: str) -> Iterator[None]:
    """Hold ``<root_dir>/kubelet-actors.lock`` while the kubelet runs; ConfigError if taken."""
    os.makedirs(root_dir, exist_ok=True)
    path = os.path.join(root_dir, LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as err:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            raise ConfigError(
                f"--root-dir {root_dir}: already in use by kubelet-actors (pid {holder}); "
                "one kubelet per root dir"
            ) from err
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock
