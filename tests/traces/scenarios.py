"""Deterministic scenarios recorded as traces: on the fake runtime, in virtual time.

`python -m tests.traces.scenarios` records them into tests/traces/*/ (the regression
traces that tests/unit/kubelet/test_replay.py replays against the current code). Re-record only
when a change of behaviour is intended, and say so in the commit.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from actors.core.dispatch import Dispatch
from actors.core.timers import ManualTimers
from actors.core.trace.recording import RecordingClock, RecordingInterceptor
from actors.core.trace.writer import TraceWriter
from actors.kubelet import names, tree
from actors.kubelet.messages import SourceSnapshot
from actors.kubelet.pod_worker import WorkerTiming
from actors.kubelet.sync_loop import SyncLoopSettings
from actors.kubelet.tree import KubeletParts, ReplayConfig
from runtime.clock import FakeClock
from runtime.cri.intercept import intercept
from runtime.cri.service import CRIRuntime
from runtime.cri.types import ContainerState
from runtime.ids import ContainerID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import wait_for

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
HERE = Path(__file__).resolve().parent


def pod(uid: str, name: str, policy: str = "Always") -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=uid,
                            annotations={"kubernetes.io/config.source": "file"}),
        spec=PodSpec(containers=(Container(name="c", image=IMAGE,
                                           image_pull_policy="IfNotPresent"),),
                     restart_policy=policy, termination_grace_period_seconds=1),
    )


class RecordedNode:
    """The kubelet's tree on a fake runtime, recording a trace into ``directory``."""

    def __init__(self, directory: Path, scratch: Path) -> None:
        self.fake_clock = FakeClock()
        self.fake = FakeRuntime(self.fake_clock, images=[IMAGE])
        config = ReplayConfig(
            node=NodeSettings("node", root_dir=str(scratch / "root"),
                              pod_logs_dir=str(scratch / "logs")),
            timing=WorkerTiming(60.0),
            supervisor=SyncLoopSettings(expected_sources=frozenset({"file"})))
        self.writer = TraceWriter(directory, config=config.to_header())
        self.dispatch = d = Dispatch(recorder=self.writer)
        runtime = intercept(self.fake, CRIRuntime, RecordingInterceptor(self.writer))
        clock: Any = RecordingClock(self.fake_clock, self.writer)
        self.timers = ManualTimers(d, self.fake_clock)
        manager = KubeRuntimeManager(runtime, config.node, clock)
        self.sync_loop = tree.start(KubeletParts(d, self.timers, clock, runtime, manager,
                                                 config))

    def snapshot(self, *pods: Pod) -> None:
        self.dispatch.tell(names.SYNC_LOOP, SourceSnapshot("file", pods),
                           sender=names.SOURCE_FILE)

    def running(self, uid: str) -> list[ContainerID]:
        return [c.id for c in self.fake.list_containers()
                if c.labels.get(L.POD_UID) == uid and c.state == ContainerState.RUNNING]

    def until(self, what: str, predicate: Any) -> None:
        def check() -> bool:
            self.timers.advance(1.0)
            return bool(predicate())
        wait_for(check, 20.0, what, interval=0.05)

    def close(self) -> None:
        self.sync_loop.stop()
        self.writer.close()


def restart_and_remove(directory: Path) -> None:
    """A pod runs, its container exits and is restarted, then the pod is removed."""
    scratch = Path(tempfile.mkdtemp(prefix="scenario-"))
    node = RecordedNode(directory, scratch)
    try:
        node.snapshot(pod("u1", "web"))
        node.until("the pod to run", lambda: len(node.running("u1")) == 1)
        (first,) = node.running("u1")
        node.fake.exit_container(first, 1)
        node.until("a restart", lambda: len(node.running("u1")) == 1
                   and node.running("u1") != [first])
        node.snapshot()
        node.until("the pod to be removed", lambda: node.fake.list_pod_sandbox() == ())
    finally:
        node.close()
        shutil.rmtree(scratch, ignore_errors=True)


def completed_under_never(directory: Path) -> None:
    """A pod under restartPolicy Never whose container exits 0: never restarted."""
    scratch = Path(tempfile.mkdtemp(prefix="scenario-"))
    node = RecordedNode(directory, scratch)
    try:
        node.snapshot(pod("u2", "job", policy="Never"))
        node.until("the pod to run", lambda: len(node.running("u2")) == 1)
        (only,) = node.running("u2")
        node.fake.exit_container(only, 0)
        node.until("the sandbox to stop", lambda: node.fake.called("stop_pod_sandbox") >= 1)
        for _ in range(3):
            node.timers.advance(1.0)
    finally:
        node.close()
        shutil.rmtree(scratch, ignore_errors=True)


SCENARIOS = {"restart-and-remove": restart_and_remove,
             "completed-under-never": completed_under_never}


def record_all(target: Path = HERE) -> None:
    for name, scenario in SCENARIOS.items():
        directory = target / name
        shutil.rmtree(directory, ignore_errors=True)
        scenario(directory)
        print(f"recorded {directory}")


if __name__ == "__main__":
    record_all(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
