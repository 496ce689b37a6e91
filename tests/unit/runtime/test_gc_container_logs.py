"""A container removed by garbage collection takes its logs with it: the log and every file
its rotations left (upstream's removeContainer calls the log manager's Clean), and
nothing of another instance's."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.clock import FakeClock
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ImageSpec,
    PodSandboxConfig,
    PodSandboxMetadata,
)
from runtime.ids import ContainerID, PodUID, SandboxID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.container_gc import (
    ContainerGCPlan,
    ContainerRemoval,
    GCContainer,
    GCState,
    RemovalReason,
)
from runtime.kuberuntime.gc_runtime import carry_out
from runtime.kuberuntime.log_rotator import clean_container_logs
from runtime.testing.fake_runtime import FakeRuntime

ROTATED = ("0.log.20261126-010000.gz", "0.log.20261126-010101", "0.log.20261126-010202.tmp")


def _instance(fake: FakeRuntime, sandbox: SandboxID, attempt: int) -> ContainerID:
    labels = {L.POD_NAME: "web", L.POD_NAMESPACE: "default", L.POD_UID: "uid-1",
              L.CONTAINER_NAME: "app"}
    config = ContainerConfig(ContainerMetadata("app", attempt), ImageSpec("busybox"),
                             log_path=f"app/{attempt}.log", labels=labels)
    cid = fake.create_container(sandbox, config, fake.sandbox_config(sandbox))
    fake.start_container(cid)  # makes the log, as containerd does
    return cid


def test_a_collected_container_takes_its_rotated_logs_with_it(tmp_path: Path) -> None:
    fake = FakeRuntime(FakeClock(), images=("busybox",))
    pod_dir = tmp_path / "default_web_uid-1"
    (pod_dir / "app").mkdir(parents=True)
    sandbox = fake.run_pod_sandbox(PodSandboxConfig(
        PodSandboxMetadata("web", "uid-1", "default"), log_directory=str(pod_dir)))
    dead = _instance(fake, sandbox, 0)
    fake.exit_container(dead, 1)
    _instance(fake, sandbox, 1)
    logs = pod_dir / "app"
    for name in (*ROTATED, "1.log.20261126-020000", "10.log"):
        (logs / name).write_bytes(b"x" * 10)
    plan = ContainerGCPlan(containers=(ContainerRemoval(
        GCContainer(dead, sandbox, PodUID("uid-1"), "web", "default", "app", GCState.EXITED,
                    0.0), RemovalReason.MAX_PER_CONTAINER),))

    outcome = carry_out(fake, str(tmp_path), plan, None)

    assert outcome.errors == ()
    assert [r.container.id for r in outcome.containers] == [dead]
    # The dead instance's log and its rotated, compressed and half-compressed files went;
    # the running instance's (1.log and its rotation) and 10.log are another's.
    assert sorted(p.name for p in logs.iterdir()) == [
        "1.log", "1.log.20261126-020000", "10.log"]


def test_cleaning_a_log_that_is_gone_removes_what_is_left(tmp_path: Path) -> None:
    (tmp_path / "0.log.20261126-010101").write_bytes(b"x")
    assert clean_container_logs(str(tmp_path / "0.log")) == (
        str(tmp_path / "0.log.20261126-010101"),)
    assert clean_container_logs(str(tmp_path / "0.log")) == ()
    assert list(tmp_path.iterdir()) == []


def test_a_relative_or_empty_log_path_removes_nothing(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime reported no log, or a path not on this node's disk as given: nothing in
    the working directory is taken for it."""
    (tmp_path / "0.log").write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    assert clean_container_logs("0.log") == ()
    assert clean_container_logs("") == ()
    assert (tmp_path / "0.log").exists()
