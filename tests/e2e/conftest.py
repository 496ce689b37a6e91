"""Fixtures for end-to-end tests against a real containerd on this machine.

The test bed itself (the lock, the registry and images, private containerds, cleanup) is the
product's, actors.app.testbed; these fixtures hold it for a session and turn its errors
into test failures.

- ``e2e_lock`` (session): the machine-wide lock (e2e runs, drills and benchmarks share
  ports, so one runs at a time); under it, the e2e dirs of dead runs are cleaned up.
  Yields the HeldLock, which a test can hand to a child process.
- ``registry`` (session): the loopback registry with the pause and busybox images; stopped
  at the end if this session started it.
- ``containerd`` (session): an EmbeddedContainerd in a fresh directory under /var/tmp, on
  the e2e bridge and subnet (testbed.E2E); yields the EmbeddedContainerd (``.endpoint``,
  ``.base_dir``, ``.config``...). If it cannot start, the run fails loudly. At the end
  everything it made goes: pods, containerd, leftover shims and their processes, mounts
  (rootfs, shm, netns) under its dir, the bridge, and the dir.
- ``cri`` (function): a CRIClient on that containerd; at teardown it stops and removes every
  sandbox and container that was not there when the test began.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

import pytest
from loguru import logger

from actors.app.testbed import (
    E2E,
    HeldLock,
    Registry,
    TestbedError,
    machine_lock,
    private_containerd,
    serve_images,
)
from runtime.cm.cgroupfs import CgroupFS
from runtime.cm.pod_cgroups import PodCgroups
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.errors import CRIError, CRINotFound
from runtime.ids import ContainerID, SandboxID
from tests.helpers import wait_for

REPO = Path(__file__).resolve().parents[2]

T = TypeVar("T")


def _held(context: AbstractContextManager[T]) -> Iterator[T]:
    """A session fixture's body for a test bed context: its TestbedError fails the run."""
    with contextlib.ExitStack() as stack:
        try:
            value = stack.enter_context(context)
        except TestbedError as err:
            pytest.fail(str(err), pytrace=False)
        yield value


@pytest.fixture(scope="session")
def e2e_lock() -> Iterator[HeldLock]:
    """Hold the machine-wide lock for the session; clean up after dead e2e sessions."""
    yield from _held(machine_lock(E2E))


@pytest.fixture(scope="session")
def registry(e2e_lock: HeldLock) -> Iterator[Registry]:
    """The pause and busybox images on localhost:5000, serving the registry if need be.

    Taken under the machine-wide lock, so two runs never race to serve or stop it.
    """
    yield from _held(serve_images())


@pytest.fixture(scope="session")
def containerd(registry: Registry, e2e_lock: HeldLock) -> Iterator[EmbeddedContainerd]:
    """A running embedded containerd in its own directory, bridge and subnet."""
    for emb in _held(private_containerd(E2E)):
        logger.info("e2e containerd ready in {:.3f}s", emb.last_startup_seconds or 0.0)
        yield emb


@pytest.fixture
def cri(containerd: EmbeddedContainerd) -> Iterator[CRIClient]:
    """A CRI client; whatever sandboxes and containers the test made are removed after it."""
    client = CRIClient(containerd.endpoint, timeout=60.0)
    pods_before = {p.id for p in client.list_pod_sandbox()}
    containers_before = {c.id for c in client.list_containers()}
    cgroups_before = _pod_cgroups()
    try:
        yield client
    finally:
        try:
            _remove_new(client, pods_before, containers_before)
            _remove_new_pod_cgroups(cgroups_before)
        finally:
            client.close()


def _pod_cgroups() -> set[tuple[str, ...]]:
    """The pod cgroups under the default kubepods (cgroupfs driver), as names."""
    cgroups = PodCgroups(CgroupFS("cgroupfs"), (), "cgroupfs", 1000, 0)
    return set(cgroups.pod_cgroups().values())


def _remove_new_pod_cgroups(before: set[tuple[str, ...]]) -> None:
    """A test that leaves pods running (as SIGTERM does) leaves their cgroups when the
    pods are removed behind the daemon's back: remove those, now empty."""
    manager = CgroupFS("cgroupfs")

    def destroyed(name: tuple[str, ...]) -> bool:
        manager.destroy(name)
        return True

    for name in _pod_cgroups() - before:
        if not manager.pids(name):
            # A container's own cgroup may stay busy (EBUSY) a moment after its removal,
            # while its shim tears it down: try again until it goes.
            wait_for(functools.partial(destroyed, name), 10.0,
                     f"the pod cgroup {'/'.join(name)} to be removable", ignore=(OSError,))


def _remove_new(
    client: CRIClient, pods_before: set[SandboxID], containers_before: set[ContainerID]
) -> None:
    def gone(container_id: ContainerID) -> bool:
        with contextlib.suppress(CRINotFound):
            client.stop_container(container_id, 0)
            client.remove_container(container_id)
        return True

    for c in client.list_containers():
        if c.id not in containers_before:
            # containerd may still call it running a moment after its stop ("container is
            # still running, to stop first") while its shim reports the exit: again until
            # it goes.
            wait_for(functools.partial(gone, c.id), 30.0, f"container {c.id} removed",
                     ignore=(CRIError,))
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
