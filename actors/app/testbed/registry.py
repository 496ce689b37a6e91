"""The loopback registry the test bed pulls its images from, and the images in it.

images.sh (shipped beside this file, with pause.c) builds the pause and busybox images
without internet, serves them from Debian's docker-registry on REGISTRY_ADDR and pushes
them there; every step is idempotent and quick when done already.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from actors.app.testbed.beds import TestbedError
from runtime.containerd.config import DEFAULT_SANDBOX_IMAGE

REGISTRY_ADDR = "127.0.0.1:5000"
PAUSE_IMAGE = DEFAULT_SANDBOX_IMAGE
BUSYBOX_IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
BUSYBOX_NONROOT_IMAGE = "localhost:5000/kubelet-actors/busybox:1.35-nonroot"  # user 1234
IMAGES_SH = Path(__file__).with_name("images.sh")
IMAGES_SH_TIMEOUT_S = 300.0
RACE_WAIT_S = 15.0


@dataclass(frozen=True, slots=True)
class Registry:
    """The registry serving the images; ``started_here``: stopped when its user is done."""

    address: str
    pause_image: str
    busybox_image: str
    started_here: bool


def registry_answers() -> bool:
    """Whether a registry answers the v2 API on REGISTRY_ADDR."""
    try:
        with urllib.request.urlopen(f"http://{REGISTRY_ADDR}/v2/", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def images_sh(*commands: str) -> None:
    """Run images.sh with ``commands`` (build, serve, push, stop, status)."""
    what = f"{IMAGES_SH} {' '.join(commands)}"
    if not IMAGES_SH.is_file():
        raise TestbedError(f"{IMAGES_SH} is missing (an install without the package data?)")
    try:
        proc = subprocess.run(["bash", str(IMAGES_SH), *commands], capture_output=True,
                              text=True, timeout=IMAGES_SH_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise TestbedError(f"{what} did not run: {err}") from err
    if proc.returncode != 0:
        raise TestbedError(f"{what} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")


@contextlib.contextmanager
def serve_images() -> Iterator[Registry]:
    """The images built and pushed to the registry, served here if no registry answers;
    a registry started here is stopped at the end. Take it under the machine-wide lock."""
    started = not registry_answers()
    try:
        images_sh("build", "serve", "push")
    except TestbedError as err:
        # scripts/setup.sh serves the registry outside the lock, and may have taken the port
        # a moment before ours: use that registry if it answers.
        logger.warning("the registry did not come up here, trying one that answers: {}", err)
        deadline = time.monotonic() + RACE_WAIT_S
        while not registry_answers():
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)
        started = False
        images_sh("build", "push")
    try:
        yield Registry(REGISTRY_ADDR, PAUSE_IMAGE, BUSYBOX_IMAGE, started)
    finally:
        if started:
            images_sh("stop")
