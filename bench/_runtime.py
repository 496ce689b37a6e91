"""A private embedded containerd for benchmarks: lock, registry, start, full cleanup.

Shares the e2e tests' machine-wide lock (so a benchmark and an e2e run never overlap) and
their cleanup helpers (tests/e2e/conftest.py), but uses its own directory prefix, bridge and
subnet.
"""

from __future__ import annotations

import contextlib
import fcntl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from loguru import logger

from actors.app.testbed.cleanup import cleanup_runtime_dir
from runtime.containerd.embedded import EmbeddedContainerd
from tests.e2e.conftest import (
    BUSYBOX_IMAGE,
    IMAGES_SH,
    LOCK_PATH,
    PAUSE_IMAGE,
    REGISTRY_ADDR,
)

__all__ = [
    "BENCH_BRIDGE",
    "BENCH_SUBNET",
    "BUSYBOX_IMAGE",
    "PAUSE_IMAGE",
    "bench_lock",
    "embedded_containerd",
    "registry",
]

BENCH_BRIDGE = "kab0"
BENCH_SUBNET = "10.91.0.0/24"
BENCH_DIR_PARENT = Path("/var/tmp")
BENCH_DIR_PREFIX = "kab-bench-"
LOCK_WAIT_S = 600.0


def registry_answers() -> bool:
    try:
        with urllib.request.urlopen(f"http://{REGISTRY_ADDR}/v2/", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def images_sh(*commands: str) -> None:
    proc = subprocess.run(
        ["bash", str(IMAGES_SH), *commands],
        capture_output=True, text=True, timeout=300, check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"scripts/images.sh {' '.join(commands)} failed ({proc.returncode}):\n"
            f"{proc.stdout}{proc.stderr}"
        )


@contextlib.contextmanager
def registry() -> Iterator[bool]:
    """The loopback registry with the images; stopped at the end if started here."""
    started = not registry_answers()
    try:
        images_sh("build", "serve", "push")
    except RuntimeError:
        # Another session (an e2e run serves the registry outside the lock) may have started
        # it at the same moment, and ours lost the port: use theirs if it answers.
        deadline = time.monotonic() + 15.0
        while not registry_answers() and time.monotonic() < deadline:
            time.sleep(0.5)
        started = False
        images_sh("serve", "push")
    try:
        yield started
    finally:
        if started:
            images_sh("stop")


@contextlib.contextmanager
def bench_lock() -> Iterator[None]:
    """The e2e tests' machine-wide lock; stale benchmark dirs are cleaned up under it."""
    BENCH_DIR_PARENT.mkdir(parents=True, exist_ok=True)
    with open(LOCK_PATH, "a+") as f:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"{LOCK_PATH} still held after {LOCK_WAIT_S:.0f}s") from None
                time.sleep(0.5)
        try:
            for stale in sorted(BENCH_DIR_PARENT.glob(f"{BENCH_DIR_PREFIX}*")):
                logger.warning("cleaning up the bench dir {} of an earlier run", stale)
                cleanup_runtime_dir(stale, BENCH_BRIDGE)
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def embedded_containerd() -> Iterator[EmbeddedContainerd]:
    """A running containerd in a fresh /var/tmp dir; everything it made goes at the end."""
    base = Path(tempfile.mkdtemp(prefix=BENCH_DIR_PREFIX, dir=BENCH_DIR_PARENT))
    emb = EmbeddedContainerd(
        base, sandbox_image=PAUSE_IMAGE, bridge_name=BENCH_BRIDGE, subnet=BENCH_SUBNET,
        start_timeout=30.0,
    )
    try:
        emb.start()
        yield emb
    finally:
        cleanup_runtime_dir(base, BENCH_BRIDGE, emb)
