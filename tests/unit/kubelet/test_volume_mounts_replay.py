"""A memory-backed volume's mount and teardown are node operations: a trace records them
and a replay answers them, never mounting nor unmounting on the machine it replays on."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.trace import KubeletWorld
from runtime.kuberuntime.volume_mounts import VOLUME_MOUNTS_TARGET
from runtime.pod.model import (
    Container,
    EmptyDirVolumeSource,
    ObjectMeta,
    Pod,
    PodSpec,
    Volume,
    VolumeMount,
)
from tests.helpers import FakeVolumeMounts
from tests.traces.scenarios import IMAGE, RecordedNode

UID = "u-mem"


def _memory_pod() -> Pod:
    return Pod(
        metadata=ObjectMeta(name="web", namespace="default", uid=UID,
                            annotations={"kubernetes.io/config.source": "file"}),
        spec=PodSpec(containers=(Container(
            name="c", image=IMAGE, image_pull_policy="IfNotPresent",
            volume_mounts=(VolumeMount(name="m", mount_path="/m"),)),),
            volumes=(Volume(name="m", empty_dir=EmptyDirVolumeSource(
                medium="Memory", size_limit="1Mi")),),
            termination_grace_period_seconds=1))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, FakeVolumeMounts]]:
    """The pod ran on its tmpfs and was removed; yields the trace and the mount table."""
    directory = tmp_path_factory.mktemp("trace") / "memory-volume"
    scratch = tmp_path_factory.mktemp("scratch")
    mounts = FakeVolumeMounts()
    node = RecordedNode(directory, scratch, volume_mounts=mounts)
    try:
        node.snapshot(_memory_pod())
        node.until("the pod to run", lambda: len(node.running(UID)) == 1)
        node.snapshot()
        node.until("the pod to be removed", lambda: node.fake.list_pod_sandbox() == ())
    finally:
        node.close()
    yield directory, mounts
    shutil.rmtree(directory, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)


def test_the_mount_and_teardown_are_recorded_and_a_replay_makes_neither(
        recorded: tuple[Path, FakeVolumeMounts]) -> None:
    directory, mounts = recorded
    assert [c[0] for c in mounts.calls] == ["mount", "tear_down"] and mounts.table == []
    trace = read_trace(directory)
    calls = [(r["method"], r["actor"]) for r in trace.records
             if r["k"] == "call" and r.get("target") == VOLUME_MOUNTS_TARGET]
    worker = names.worker_name(UID)
    assert ("mount", worker) in calls and ("tear_down", worker) in calls
    report = replay(trace, KubeletWorld())
    assert report.ok, format_report(report)
