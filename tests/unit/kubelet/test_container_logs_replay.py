"""A pruned init container instance's log removal is an input: a trace records it and a
replay answers it, never removing a file of the node it replays on."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.trace import KubeletWorld
from runtime.cri.types import ContainerState
from runtime.ids import ContainerID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.container_logs import CONTAINER_LOGS_TARGET
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from tests.traces.scenarios import IMAGE, RecordedNode

UID = "u-init"


def _failing_init_pod() -> Pod:
    """Its init container fails; under Always it is started again, and the older exited
    instances are pruned."""
    def box(name: str) -> Container:
        return Container(name=name, image=IMAGE, image_pull_policy="IfNotPresent")

    return Pod(
        metadata=ObjectMeta(name="web", namespace="default", uid=UID,
                            annotations={"kubernetes.io/config.source": "file"}),
        spec=PodSpec(init_containers=(box("init"),), containers=(box("c"),),
                     restart_policy="Always", termination_grace_period_seconds=1))


def _init_instances(node: RecordedNode) -> list[tuple[ContainerID, ContainerState]]:
    return [(c.id, c.state) for c in node.fake.list_containers()
            if c.labels.get(L.POD_UID) == UID and c.labels.get(L.CONTAINER_NAME) == "init"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The init container failed three times; the first instance was pruned. Yields the
    trace and the pruned instance's log path (gone when the recording ended)."""
    directory = tmp_path_factory.mktemp("trace") / "init-pruned"
    scratch = tmp_path_factory.mktemp("scratch")
    node = RecordedNode(directory, scratch)
    try:
        node.snapshot(_failing_init_pod())
        node.until("the init container to run",
                   lambda: any(s == ContainerState.RUNNING for _, s in _init_instances(node)))
        (first, _), = _init_instances(node)
        first_log = Path(node.fake.container_status(first).log_path)
        for n in range(3):
            ((running, _),) = [i for i in _init_instances(node)
                               if i[1] == ContainerState.RUNNING]
            node.fake.exit_container(running, 1)
            node.until(f"init restart {n + 1}", lambda r=running: any(
                s == ContainerState.RUNNING and c != r for c, s in _init_instances(node)))
        assert first not in {c for c, _ in _init_instances(node)}
        assert not first_log.exists()
    finally:
        node.close()
    yield directory, first_log
    shutil.rmtree(directory, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)


def test_the_removal_is_recorded_and_a_replay_removes_no_file(
        recorded: tuple[Path, Path]) -> None:
    directory, first_log = recorded
    trace = read_trace(directory)
    cleaned = [r for r in trace.records
               if r["k"] == "call" and r.get("target") == CONTAINER_LOGS_TARGET]
    assert cleaned and cleaned[0]["args"][0] == str(first_log)
    assert cleaned[0]["actor"] == names.worker_name(UID)
    first_log.write_text("the recorded node's log\n")  # as if it were still there
    try:
        report = replay(trace, KubeletWorld())
        assert report.ok, format_report(report)
        assert first_log.exists()
    finally:
        first_log.unlink()
