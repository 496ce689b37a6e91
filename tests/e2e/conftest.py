"""Fixtures for end-to-end tests against a real containerd on this machine.

- ``registry`` (session): the loopback registry with the pause and busybox images
  (scripts/images.sh build serve push); stopped at the end if this session started it.
- ``containerd`` (session): an EmbeddedContainerd in a fresh directory under /var/tmp, with
  its own bridge (``kat0``) and subnet (10.89.0.0/24); yields the EmbeddedContainerd
  (``.endpoint``, ``.base_dir``, ``.config``...). If it cannot start, the run fails loudly.
  At the end everything it made goes: pods, containerd, leftover shims and their processes,
  mounts (rootfs, shm, netns) under its dir, the bridge, and the dir.
- ``cri`` (function): a CRIClient on that containerd; at teardown it stops and removes every
  sandbox and container that was not there when the test began.

e2e runs on one machine are serialized by a lock file: they share the bridge name and subnet.
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
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
from loguru import logger

from actors.app.testbed.cleanup import cleanup_runtime_dir
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.errors import ContainerdError, CRINotFound
from runtime.ids import ContainerID, SandboxID
from tests.helpers import wait_for

REPO = Path(__file__).resolve().parents[2]
IMAGES_SH = REPO / "scripts" / "images.sh"
REGISTRY_ADDR = "127.0.0.1:5000"
PAUSE_IMAGE = "localhost:5000/kubelet-actors/pause:3.9"
BUSYBOX_IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
E2E_BRIDGE = "kat0"
E2E_SUBNET = "10.89.0.0/24"
E2E_DIR_PARENT = Path("/var/tmp")
E2E_DIR_PREFIX = "kat-e2e-"
LOCK_PATH = E2E_DIR_PARENT / "kubelet-actors-e2e.lock"
LOCK_WAIT_S = 600.0


@dataclass(frozen=True, slots=True)
class Registry:
    """The loopback registry the e2e images come from."""

    address: str
    pause_image: str
    busybox_image: str
    started_here: bool


def _registry_answers() -> bool:
    try:
        with urllib.request.urlopen(f"http://{REGISTRY_ADDR}/v2/", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _images_sh(*commands: str) -> None:
    proc = subprocess.run(
        ["bash", str(IMAGES_SH), *commands],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"scripts/images.sh {' '.join(commands)} failed ({proc.returncode}):\n"
            f"{proc.stdout}{proc.stderr}",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def registry(e2e_lock: None) -> Iterator[Registry]:
    """The pause and busybox images on localhost:5000, serving the registry if need be.

    Taken under the machine-wide lock, so two runs never race to serve or stop it.
    """
    started = not _registry_answers()
    _images_sh("build", "serve", "push")
    yield Registry(REGISTRY_ADDR, PAUSE_IMAGE, BUSYBOX_IMAGE, started)
    if started:
        _images_sh("stop")


# --- the machine-wide e2e lock -----------------------------------------------------------


@pytest.fixture(scope="session")
def e2e_lock() -> Iterator[None]:
    """Hold the machine-wide e2e lock for the session; clean up after dead sessions."""
    E2E_DIR_PARENT.mkdir(parents=True, exist_ok=True)
    f: IO[str] = open(LOCK_PATH, "a+")  # noqa: SIM115 - held for the whole session

    def take() -> bool:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    try:
        wait_for(take, LOCK_WAIT_S, f"the e2e lock {LOCK_PATH} (another e2e run holds it)")
    except AssertionError as err:
        f.close()
        pytest.fail(str(err), pytrace=False)
    try:
        # Under the lock, any e2e dir left behind belongs to a run that died: clean it up.
        for stale in sorted(E2E_DIR_PARENT.glob(f"{E2E_DIR_PREFIX}*")):
            logger.warning("cleaning up the e2e dir {} of an earlier run", stale)
            cleanup_runtime_dir(stale, E2E_BRIDGE)
        yield
    finally:
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


# --- containerd --------------------------------------------------------------------------


def new_embedded(base_dir: Path, **kwargs: object) -> EmbeddedContainerd:
    """An EmbeddedContainerd with the e2e network settings on ``base_dir``."""
    params: dict[str, object] = {
        "sandbox_image": PAUSE_IMAGE,
        "bridge_name": E2E_BRIDGE,
        "subnet": E2E_SUBNET,
        "start_timeout": 30.0,
    }
    params.update(kwargs)
    return EmbeddedContainerd(base_dir, **params)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def containerd(registry: Registry, e2e_lock: None) -> Iterator[EmbeddedContainerd]:
    """A running embedded containerd in its own directory, bridge and subnet."""
    base = Path(tempfile.mkdtemp(prefix=E2E_DIR_PREFIX, dir=E2E_DIR_PARENT))
    emb = new_embedded(base)
    try:
        emb.start()
    except ContainerdError as err:
        cleanup_runtime_dir(base, E2E_BRIDGE, emb)
        pytest.fail(f"the embedded containerd did not start: {err}", pytrace=False)
    logger.info("e2e containerd ready in {:.3f}s", emb.last_startup_seconds or 0.0)
    try:
        yield emb
    finally:
        cleanup_runtime_dir(base, E2E_BRIDGE, emb)


@pytest.fixture
def cri(containerd: EmbeddedContainerd) -> Iterator[CRIClient]:
    """A CRI client; whatever sandboxes and containers the test made are removed after it."""
    client = CRIClient(containerd.endpoint, timeout=60.0)
    pods_before = {p.id for p in client.list_pod_sandbox()}
    containers_before = {c.id for c in client.list_containers()}
    try:
        yield client
    finally:
        try:
            _remove_new(client, pods_before, containers_before)
        finally:
            client.close()


def _remove_new(
    client: CRIClient, pods_before: set[SandboxID], containers_before: set[ContainerID]
) -> None:
    for c in client.list_containers():
        if c.id not in containers_before:
            with contextlib.suppress(CRINotFound):
                client.stop_container(c.id, 0)
                client.remove_container(c.id)
    for p in client.list_pod_sandbox():
        if p.id not in pods_before:
            with contextlib.suppress(CRINotFound):
                client.stop_pod_sandbox(p.id)
                client.remove_pod_sandbox(p.id)


def pod_log_dir(containerd: EmbeddedContainerd, name: str) -> Path:
    """A fresh pod log directory inside the e2e containerd's dir (removed with it)."""
    path = containerd.base_dir / "pods" / f"{name}-{time.monotonic_ns()}"
    path.mkdir(parents=True)
    return path
