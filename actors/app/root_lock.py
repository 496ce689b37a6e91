"""The kubelet's root dir at start: one kubelet per root dir (two would fight over the
runtime: each other's pods look like orphans to each one, and the second would restart the
first's embedded containerd), and a shared mount, as upstream's setupDataDirs makes it."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from loguru import logger

from runtime.errors import ConfigError
from runtime.mounts import MountError, make_rshared

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


def share_root_dir(root_dir: str) -> None:
    """Make ``root_dir`` a shared mount unless it lies on one (upstream's MakeRShared in
    setupDataDirs; called before the runtime mounts anything under it), so the volumes
    under it can propagate mounts to and from containers (mountPropagation
    HostToContainer, Bidirectional). ConfigError when the kernel refuses, as upstream's
    kubelet does not start then."""
    try:
        made = make_rshared(root_dir)
    except MountError as err:
        raise ConfigError(f"--root-dir {root_dir}: error configuring root directory: "
                          f"{err}") from err
    if made:
        logger.info("made {} a shared mount (bound on itself), for mount propagation",
                    root_dir)
