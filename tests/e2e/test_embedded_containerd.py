"""The embedded containerd against the real thing: start, run pods, fail loudly, survive stop."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.testbed import (
    BUSYBOX_IMAGE,
    DIR_PARENT,
    E2E,
    HeldLock,
    cleanup_runtime_dir,
    new_embedded,
    shims_for,
)
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ContainerState,
    ImageSpec,
    PodSandboxConfig,
    PodSandboxMetadata,
    SandboxState,
)
from runtime.errors import ContainerdError
from runtime.ids import ContainerID, SandboxID
from tests.e2e.conftest import pod_log_dir
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e


def _sandbox_config(containerd: EmbeddedContainerd, name: str) -> PodSandboxConfig:
    return PodSandboxConfig(
        metadata=PodSandboxMetadata(name=name, uid=f"uid-{name}", namespace="e2e"),
        hostname=name,
        log_directory=str(pod_log_dir(containerd, name)),
        labels={"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "e2e"},
    )


def _ensure_image(cri: CRIClient, image: str) -> None:
    if cri.image_status(ImageSpec(image)) is None:
        cri.pull_image(ImageSpec(image))


def _run_busybox(
    cri: CRIClient, containerd: EmbeddedContainerd, name: str, script: str
) -> tuple[SandboxID, ContainerID, PodSandboxConfig]:
    """A pod with one busybox container running ``sh -c script``, started."""
    sandbox_config = _sandbox_config(containerd, name)
    sandbox_id = cri.run_pod_sandbox(sandbox_config)
    _ensure_image(cri, BUSYBOX_IMAGE)
    container_id = cri.create_container(
        sandbox_id,
        ContainerConfig(
            metadata=ContainerMetadata(name="main"),
            image=ImageSpec(BUSYBOX_IMAGE),
            command=("sh", "-c", script),
            log_path="main/0.log",
        ),
        sandbox_config,
    )
    cri.start_container(container_id)
    return sandbox_id, container_id, sandbox_config


def _state(cri: CRIClient, container_id: ContainerID) -> ContainerState:
    return cri.container_status(container_id).state


def test_containerd_answers_version(containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    assert containerd.is_running()
    assert containerd.poll() is None
    assert containerd.pid is not None
    assert containerd.endpoint == f"unix://{containerd.base_dir}/containerd/containerd.sock"
    info = cri.version()
    assert info.runtime_api_version == "v1"
    assert info.runtime_name == "containerd"
    status = cri.status()
    runtime_ready = status.condition("RuntimeReady")
    network_ready = status.condition("NetworkReady")
    assert runtime_ready is not None and runtime_ready.status
    assert network_ready is not None and network_ready.status, network_ready
    assert containerd.last_startup_seconds is not None
    assert containerd.last_startup_seconds < 30


def test_pod_sandbox_runs_and_gets_an_ip(containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    sandbox_id = cri.run_pod_sandbox(_sandbox_config(containerd, "sandbox-ip"))
    status = cri.pod_sandbox_status(sandbox_id)
    assert status.state == SandboxState.READY
    assert ipaddress.ip_address(status.ip) in ipaddress.ip_network(containerd.config.subnet)
    # The pod's network namespace is mounted under containerd's own state dir.
    netns = list(containerd.config.netns_dir.iterdir())
    assert netns, f"no netns under {containerd.config.netns_dir}"


def test_busybox_container_runs_and_logs(containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    _, container_id, sandbox_config = _run_busybox(
        cri, containerd, "busybox-logs", "echo hi; sleep 3600"
    )
    wait_for(lambda: _state(cri, container_id) == ContainerState.RUNNING, 10, "container RUNNING")
    log_file = Path(sandbox_config.log_directory) / "main" / "0.log"
    wait_for(
        lambda: log_file.exists() and " stdout F hi" in log_file.read_text(),
        10,
        f"'hi' in {log_file}",
    )


def test_missing_binary_raises_naming_it() -> None:
    with tempfile.TemporaryDirectory(prefix="kat-bad-", dir=DIR_PARENT) as d:
        emb = EmbeddedContainerd(d, containerd_binary="/nonexistent/containerd")
        with pytest.raises(ContainerdError, match="/nonexistent/containerd"):
            emb.start()
        assert not emb.is_running()


@pytest.fixture
def scratch_dir(e2e_lock: HeldLock) -> Iterator[Path]:
    """A directory for a short-lived containerd that must not start (cleaned up whole)."""
    base = Path(tempfile.mkdtemp(prefix="kat-e2e-bad-", dir=DIR_PARENT))
    try:
        yield base
    finally:
        cleanup_runtime_dir(base, "kat1")


def test_blocked_socket_path_raises_with_containerds_reason(scratch_dir: Path) -> None:
    # A directory where the socket should be: containerd cannot listen and exits.
    (scratch_dir / "containerd" / "containerd.sock" / "blocker").mkdir(parents=True)
    emb = new_embedded(scratch_dir, "kat1", "10.89.1.0/24")
    with pytest.raises(ContainerdError) as info:
        emb.start()
    message = str(info.value)
    assert "exited with code" in message
    assert "failed to get listener for main endpoint" in message
    assert str(emb.log_path) in message
    assert not emb.is_running()


def test_read_only_state_dir_raises_with_containerds_reason(scratch_dir: Path) -> None:
    state = scratch_dir / "containerd" / "state"
    state.mkdir(parents=True, mode=0o711)
    os.chmod(state, 0o711)
    subprocess.run(["mount", "--bind", str(state), str(state)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(state)], check=True)
    emb = new_embedded(scratch_dir, "kat1", "10.89.1.0/24")
    with pytest.raises(ContainerdError, match="read-only file system") as info:
        emb.start()
    assert "CRI plugin" in str(info.value)
    assert not emb.is_running()


def test_readiness_deadline_raises_and_stops_containerd(scratch_dir: Path) -> None:
    def never_ready(endpoint: str) -> None:
        raise RuntimeError(f"{endpoint} is not ready for this test")

    emb = new_embedded(scratch_dir, "kat1", "10.89.1.0/24", readiness=never_ready)
    with pytest.raises(ContainerdError, match=r"not ready .* within 1s.*not ready for this test"):
        emb.start(timeout=1.0)
    assert not emb.is_running()
    assert emb.poll() is not None


def test_stop_leaves_containers_running_and_a_new_containerd_adopts_them(
    containerd: EmbeddedContainerd, cri: CRIClient
) -> None:
    _, container_id, _ = _run_busybox(cri, containerd, "survivor", "sleep 3600")
    wait_for(lambda: _state(cri, container_id) == ContainerState.RUNNING, 10, "container RUNNING")
    shims_before = shims_for(containerd.socket_path)
    assert shims_before, "no shim found for the running pod"

    code = containerd.stop()
    try:
        assert code == 0
        assert not containerd.is_running()
        assert containerd.poll() == 0
        # containerd is gone; the shims (and so the containers) are not.
        assert set(shims_for(containerd.socket_path)) == set(shims_before)

        twin = new_embedded(containerd.base_dir, E2E.bridge, E2E.subnet)
        twin.start()
        try:
            with CRIClient(twin.endpoint, timeout=30.0) as client:
                wait_for(
                    lambda: _state(client, container_id) == ContainerState.RUNNING,
                    10,
                    "the container RUNNING under the new containerd",
                )
        finally:
            assert twin.stop() == 0
    finally:
        containerd.start()
    # The session's containerd is back and still sees it.
    assert _state(cri, container_id) == ContainerState.RUNNING
