"""A pod cgroup's outcome is an input: a trace records it and a replay answers it.

The kill-pod drill once failed to replay: a pod cgroup's directory was removed by another
process between its mkdir and its cpu.shares write, the worker's sync failed with
FailedCreatePodContainer, and the replay (which took every ensure as made) went on to
RunPodSandbox, which the recording did not have.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.core.trace.reader import Trace, read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet.trace import KubeletWorld
from runtime.cm.fake import FakeCgroupManager
from runtime.cm.names import CgroupName
from runtime.cm.pod_cgroups import POD_CGROUPS_TARGET, PodCgroups
from runtime.cm.resources import ResourceConfig
from tests.traces.scenarios import RecordedNode, pod

WORLD = KubeletWorld()


class FirstPodCgroupVanishes(FakeCgroupManager):
    """The first pod cgroup made is gone before its values are written, as when another
    process's orphan clean-up removed it (ENOENT from the write)."""

    def __init__(self) -> None:
        super().__init__()
        self.vanished: list[CgroupName] = []

    def create(self, name: CgroupName, config: ResourceConfig) -> None:
        if len(name) == 3 and not self.vanished:
            self.vanished.append(name)
            raise FileNotFoundError(errno.ENOENT, "No such file or directory",
                                    f"/sys/fs/cgroup/cpu/{'/'.join(name)}/cpu.shares")
        super().create(name, config)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, CgroupName]]:
    """A pod whose first sync's pod cgroup failed; the next sync made it and ran the pod;
    then the pod was removed."""
    directory = tmp_path_factory.mktemp("trace") / "pod-cgroup-vanished"
    scratch = tmp_path_factory.mktemp("scratch")
    fake = FirstPodCgroupVanishes()
    cgroups = PodCgroups(fake, (), "cgroupfs", 2000, 2**30)
    cgroups.start()
    node = RecordedNode(directory, scratch, pod_cgroups=cgroups)
    try:
        node.snapshot(pod("u1", "web"))
        node.until("the pod to run", lambda: len(node.running("u1")) == 1)
        assert fake.vanished == [("kubepods", "besteffort", "podu1")]
        assert ("kubepods", "besteffort", "podu1") in fake.cgroups
        node.snapshot()
        node.until("the pod to be removed", lambda: node.fake.list_pod_sandbox() == ()
                   and ("kubepods", "besteffort", "podu1") not in fake.cgroups)
    finally:
        node.close()
    yield directory, fake.vanished[0]
    shutil.rmtree(directory, ignore_errors=True)


def _pod_cgroup_calls(trace: Trace) -> list[tuple[str, bool]]:
    """Each recorded pod cgroup call: its method and whether it failed."""
    return [(r["method"], "error" in r) for r in trace.records
            if r["k"] == "call" and r.get("target") == POD_CGROUPS_TARGET]


def test_a_failed_pod_cgroup_is_recorded_and_replays_as_it_failed(
        recorded: tuple[Path, CgroupName]) -> None:
    directory, _ = recorded
    trace = read_trace(directory)
    calls = _pod_cgroup_calls(trace)
    assert calls[0] == ("ensure", True)
    assert ("ensure", False) in calls
    assert calls[-1] == ("destroy", False)
    report = replay(trace, WORLD)
    assert report.ok, format_report(report)
