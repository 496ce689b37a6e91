"""The shutdown manager in the kubelet's tree, on a fake runtime and manual time, with a
fake logind lock: PrepareForShutdown(true) stops the normal pod before the critical one
(which still runs while the first group stops), both end Failed with upstream's reason,
message and DisruptionTarget condition, the lock is released after the last, and a pod
added meanwhile is refused with reason NodeShutdown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace

from actors.core.dispatch import Dispatch
from actors.core.timers import ManualTimers
from actors.kubelet import names, tree
from actors.kubelet.messages import GetPods, SourceSnapshot
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.pod_worker import WorkerTiming
from actors.kubelet.shutdown import NodeShutdownEvent, ShutdownSettings
from actors.kubelet.sync_loop import SyncLoopSettings
from actors.kubelet.tree import KubeletParts, ReplayConfig
from runtime.clock import FakeClock
from runtime.cri.types import ContainerState
from runtime.ids import ContainerID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.nodeshutdown import shutdown_periods
from runtime.pod.model import Pod
from runtime.status.types import PodStatus
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import FakeVolumeMounts, wait_for
from tests.unit.kubelet.test_shutdown_manager import FakeLock
from tests.unit.kubelet.test_sync_loop import IMAGE, pod

MESSAGE = "Pod was terminated in response to imminent node shutdown."


class ShuttingNode:
    def __init__(self, tmp_path: Path) -> None:
        self.clock = FakeClock()
        self.fake = FakeRuntime(self.clock, images=[IMAGE])
        self.dispatch = Dispatch()
        self.timers = ManualTimers(self.dispatch, self.clock)
        self.lock = FakeLock()
        self.stopped: list[str] = []  # the pod of each StopContainer, in order
        stop = self.fake.stop_container

        def recording_stop(container_id: ContainerID, timeout: int) -> None:
            (found,) = [c for c in self.fake.list_containers() if c.id == container_id]
            self.stopped.append(f"{found.labels.get(L.POD_UID)}/{timeout}")
            stop(container_id, timeout)

        self.fake.stop_container = recording_stop  # type: ignore[method-assign]
        settings = NodeSettings("node", root_dir=str(tmp_path / "root"),
                                pod_logs_dir=str(tmp_path / "logs"))
        manager = KubeRuntimeManager(self.fake, settings, self.clock,
                                     volume_mounts=FakeVolumeMounts())
        config = ReplayConfig(
            node=settings, timing=WorkerTiming(60.0),
            supervisor=SyncLoopSettings(expected_sources=frozenset({"file"})),
            shutdown=ShutdownSettings(shutdown_periods(30, 10, ())))
        self.supervisor = tree.start(KubeletParts(
            self.dispatch, self.timers, self.clock, self.fake, manager, config,
            KubeletMetrics(), shutdown_inhibitor=self.lock))
        wait_for(lambda: self.dispatch.ref(names.SHUTDOWN), 5.0, "the shutdown manager")

    def snapshot(self, *pods: Pod) -> None:
        self.dispatch.tell(names.SYNC_LOOP, SourceSnapshot("file", pods), sender="test")

    def statuses(self) -> dict[str, PodStatus]:
        ref = self.dispatch.ref(names.STATUS)
        assert ref is not None
        pods: tuple[tuple[Pod, PodStatus], ...] = ref.ask(GetPods(), block=True, timeout=5)
        return {p.uid: s for p, s in pods}

    def running(self, uid: str) -> bool:
        return any(c.labels.get(L.POD_UID) == uid and c.state == ContainerState.RUNNING
                   for c in self.fake.list_containers())

    def until(self, what: str, predicate: object) -> None:
        def check() -> bool:
            self.timers.advance(0.5)
            return bool(predicate())  # type: ignore[operator]
        wait_for(check, 15.0, what, interval=0.02)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[ShuttingNode]:
    n = ShuttingNode(tmp_path)
    yield n
    n.supervisor.stop()


def test_pods_stop_by_priority_and_end_failed(node: ShuttingNode) -> None:
    normal = pod("normal", "normal")
    critical = pod("critical", "critical")
    critical = replace(critical, spec=replace(critical.spec, priority=2000000000))
    node.snapshot(normal, critical)
    node.until("both running", lambda: node.running("normal") and node.running("critical"))

    node.dispatch.tell(names.SHUTDOWN, NodeShutdownEvent(True), sender="test")
    node.until("the lock released", lambda: node.lock.calls == ["release"])
    # The normal group first, with the pod's own grace (1 s, less than the group's 20 s,
    # raised to upstream's 2 s minimum by the kill), the critical group once it stopped.
    assert node.stopped == ["normal/2", "critical/2"]
    assert not node.running("normal") and not node.running("critical")
    for uid in ("normal", "critical"):
        status = node.statuses()[uid]
        assert (status.phase, status.reason, status.message) == ("Failed", "Terminated",
                                                                 MESSAGE)
        disruption = status.condition("DisruptionTarget")
        assert disruption is not None
        assert (disruption.status, disruption.reason, disruption.message) == (
            "True", "TerminationByKubelet", MESSAGE)

    node.snapshot(normal, critical, pod("late", "late"))
    node.until("late refused", lambda: "late" in node.statuses())
    late = node.statuses()["late"]
    assert (late.phase, late.reason, late.message) == (
        "Failed", "NodeShutdown",
        "Pod was rejected: Pod was rejected as the node is shutting down.")
    assert not node.running("late")
