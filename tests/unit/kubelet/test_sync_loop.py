"""The actor system on the fake runtime, in virtual time: sources in, pods converge."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
import pytest
from loguru import logger

from actors.core.dispatch import Dispatch
from actors.core.supervision import SupervisorSpec
from actors.core.timers import ManualTimers
from actors.kubelet import names, tree
from actors.kubelet.messages import GetPods, SourceSnapshot
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.pod_worker import WorkerTiming
from actors.kubelet.sync_loop import KUBELET_SUPERVISION, GetHealth, SyncLoopSettings
from actors.kubelet.tree import KubeletParts, ReplayConfig
from runtime.clock import FakeClock
from runtime.cri.types import ContainerState, PodSandboxConfig, PodSandboxMetadata
from runtime.errors import CRIDeadlineExceeded, CRIUnavailable
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.status.types import PodStatus
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import FakeVolumeMounts, wait_for

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"


def pod(uid: str, name: str = "web", args: tuple[str, ...] = ()) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=uid,
                            annotations={"kubernetes.io/config.source": "file"}),
        spec=PodSpec(containers=(Container(name="c", image=IMAGE, args=args,
                                           image_pull_policy="IfNotPresent"),),
                     termination_grace_period_seconds=1),
    )


class Node:
    """A supervisor with real children on a fake runtime and manual timers."""

    def __init__(self, tmp_path: Path, max_pods: int = 110,
                 supervision: SupervisorSpec = KUBELET_SUPERVISION,
                 admission: SyncLoopSettings | None = None) -> None:
        self.clock = FakeClock()
        self.fake = FakeRuntime(self.clock, images=[IMAGE])
        self.dispatch = Dispatch()
        self.timers = ManualTimers(self.dispatch, self.clock)
        self.metrics = KubeletMetrics()
        settings = NodeSettings("node", root_dir=str(tmp_path / "root"),
                                pod_logs_dir=str(tmp_path / "logs"))
        self.manager = KubeRuntimeManager(self.fake, settings, self.clock,
                                          volume_mounts=FakeVolumeMounts())
        # ``admission`` gives the node and the sysctl allowlist; the rest is set here.
        config = ReplayConfig(node=settings, timing=WorkerTiming(60.0),
                              supervisor=replace(
                                  admission or SyncLoopSettings(), max_pods=max_pods,
                                  expected_sources=frozenset({"file"}),
                                  supervision=supervision))
        self.supervisor = tree.start(KubeletParts(
            self.dispatch, self.timers, self.clock, self.fake, self.manager, config,
            self.metrics))
        # The sync loop starts its children as it starts: wait until /pods can be asked.
        wait_for(lambda: self.dispatch.ref(names.STATUS), 5.0, "the status actor")

    def snapshot(self, *pods: Pod) -> None:
        self.dispatch.tell(names.SYNC_LOOP, SourceSnapshot("file", pods), sender="test")

    def statuses(self) -> dict[str, PodStatus]:
        ref = self.dispatch.ref("status")
        assert ref is not None
        pods: tuple[tuple[Pod, PodStatus], ...] = ref.ask(GetPods(), block=True, timeout=5)
        return {p.uid: s for p, s in pods}

    def running(self, uid: str) -> list[str]:
        return [c.labels[L.CONTAINER_NAME] for c in self.fake.list_containers()
                if c.labels.get(L.POD_UID) == uid and c.state == ContainerState.RUNNING]

    def tick(self, seconds: float = 1.0) -> None:
        self.timers.advance(seconds)

    def until(self, what: str, predicate: Any, ticks: bool = True) -> None:
        """Advance virtual time a second at a time until ``predicate`` holds."""
        def check() -> bool:
            if ticks:
                self.tick(1.0)
            return bool(predicate())
        wait_for(check, 15.0, what, interval=0.02)

    def stop(self) -> None:
        if self.supervisor.is_alive():
            self.supervisor.stop()


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.stop()


def test_a_pod_from_a_source_runs_and_shows_running(node: Node) -> None:
    node.snapshot(pod("u1"))
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    node.until("/pods to say Running", lambda: node.statuses()["u1"].phase == "Running")


def test_an_exited_container_is_restarted_after_the_relist(node: Node) -> None:
    node.snapshot(pod("u1"))
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    (container,) = node.fake.list_containers()
    node.fake.exit_container(container.id, 1)
    node.until("a restart", lambda: len(node.fake.list_containers()) == 2
               and node.running("u1") == ["c"])
    node.until("the restart count in /pods",
               lambda: node.statuses()["u1"].container_statuses[0].restart_count == 1)


def test_a_pod_removed_from_its_source_is_stopped_and_removed(node: Node) -> None:
    node.snapshot(pod("u1"))
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    node.snapshot()
    node.until("the pod to be removed", lambda: node.fake.list_pod_sandbox() == ())
    node.until("its status to go", lambda: "u1" not in node.statuses())


def test_a_removed_pod_whose_stop_failed_is_stopped_on_the_retry(node: Node) -> None:
    """A StopContainer past its deadline (500 pods removed at once on a small node) does
    not leave the pod running: the worker's retry brings the kill again."""
    node.snapshot(pod("u1"))
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    node.fake.fail("stop_container", CRIDeadlineExceeded("StopContainer", "Deadline Exceeded"),
                   times=2)
    node.snapshot()
    node.until("the pod to be removed", lambda: node.fake.list_pod_sandbox() == ())
    assert node.fake.called("stop_container") == 3
    node.until("its status to go", lambda: "u1" not in node.statuses())


def test_orphans_are_removed_only_once_sources_are_ready(node: Node) -> None:
    labels = {L.POD_UID: "ghost", L.POD_NAME: "ghost", L.POD_NAMESPACE: "default"}
    node.fake.run_pod_sandbox(PodSandboxConfig(PodSandboxMetadata("ghost", "ghost", "default"),
                                               labels=labels))
    for _ in range(5):
        node.tick(1.0)  # relists and housekeeping run, but no source has spoken
    assert len(node.fake.list_pod_sandbox()) == 1
    node.snapshot()
    node.until("the orphan to be removed", lambda: node.fake.list_pod_sandbox() == ())


def test_max_pods_rejects_the_extra_pod(tmp_path: Path) -> None:
    node = Node(tmp_path, max_pods=1)
    try:
        node.snapshot(pod("u1", "a"), pod("u2", "b"))
        node.until("one pod to run", lambda: node.running("u1") == ["c"])
        status = wait_for(lambda: node.statuses().get("u2"), 5.0, "the rejected pod's status")
        assert status is not None and status.phase == "Failed" and status.reason == "OutOfpods"
        assert status.message == ("Pod was rejected: Node didn't have enough resource: pods, "
                                  "requested: 1, used: 1, capacity: 1")
        assert node.running("u2") == []
    finally:
        node.stop()


def test_a_replaced_static_pod_waits_for_the_old_one_to_stop(node: Node) -> None:
    node.snapshot(pod("old", "web"))
    node.until("the old pod to run", lambda: node.running("old") == ["c"])
    node.snapshot(pod("new", "web", args=("v2",)))
    node.until("the new pod to run", lambda: node.running("new") == ["c"])
    methods = [c.method for c in node.fake.calls]
    first_new_create = max(i for i, m in enumerate(methods) if m == "run_pod_sandbox")
    last_stop = max(i for i, m in enumerate(methods) if m == "stop_pod_sandbox")
    assert last_stop < first_new_create
    assert node.running("old") == []


def test_a_crashed_pleg_is_replaced_and_relisting_resumes(node: Node) -> None:
    node.snapshot(pod("u1"))
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    node.fake.fail("list_pod_sandbox", RuntimeError("a bug in the relist"))
    node.until("the PLEG restart to be counted",
               lambda: node.metrics.registry.get_sample_value(
                   "kubelet_actors_restarts_total", {"actor": "pleg"}) == 1)
    (container,) = node.fake.list_containers()
    node.fake.exit_container(container.id, 1)
    node.until("the new PLEG to see the exit and the pod restart",
               lambda: len(node.fake.list_containers()) == 2 and node.running("u1") == ["c"])


def test_runtime_down_pauses_syncs_and_health_says_why(node: Node) -> None:
    node.snapshot(pod("u1"))
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    node.fake.fail_always("status", CRIUnavailable("Status", "connection refused", "UNAVAILABLE"))
    node.fake.fail_always("list_pod_sandbox",
                          CRIUnavailable("ListPodSandbox", "connection refused", "UNAVAILABLE"))
    ref = node.dispatch.ref("supervisor")
    assert ref is not None
    node.until("health to report the runtime",
               lambda: "refused" in (ref.ask(GetHealth(), block=True, timeout=5)["runtime"] or ""))
    (container,) = node.fake.list_containers()
    node.fake.exit_container(container.id, 1)
    for _ in range(3):
        node.tick(1.0)
    assert node.fake.called("create_container") == 1  # nothing done while it is down
    node.fake.clear_failures()
    node.until("the pod to converge again", lambda: node.running("u1") == ["c"])
    node.until("health to recover",
               lambda: ref.ask(GetHealth(), block=True, timeout=5)["runtime"] is None)


def restarts(node: Node, actor: str) -> float | None:
    return node.metrics.registry.get_sample_value("kubelet_actors_restarts_total",
                                                  {"actor": actor})


def test_a_crashed_pod_worker_is_replaced_and_its_pod_synced_again(node: Node) -> None:
    node.snapshot(pod("u1"))
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    node.fake.fail("pod_sandbox_status", RuntimeError("a bug in the worker"))
    (container,) = node.fake.list_containers()
    node.fake.exit_container(container.id, 1)  # the relist makes the worker sync: it fails
    node.until("the worker restart", lambda: restarts(node, "pod") == 1)
    node.until("the new worker to restart the container",
               lambda: len(node.fake.list_containers()) == 2 and node.running("u1") == ["c"])
    assert node.fake.called("create_container") == 2  # nothing started twice
    assert not node.dispatch.dead_letters_unhandled


def test_a_kill_in_flight_is_issued_again_to_the_replacement(node: Node) -> None:
    node.snapshot(pod("u1"))
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    # (The kill's first call: a pod removed is stopped from the status its worker read.)
    node.fake.fail("stop_container", RuntimeError("a bug in the worker"))
    node.snapshot()  # the pod goes: the worker's kill fails on the bug
    node.until("the worker restart", lambda: restarts(node, "pod") == 1)
    node.until("the pod to be removed all the same", lambda: node.fake.list_pod_sandbox() == ())
    node.until("its status to go", lambda: "u1" not in node.statuses())
    assert not node.dispatch.dead_letters_unhandled


def test_a_child_failing_too_often_stops_the_kubelet_with_the_reason(tmp_path: Path) -> None:
    spec = replace(KUBELET_SUPERVISION, max_restarts=3, within=60.0)
    node = Node(tmp_path, supervision=spec)
    errors: list[str] = []
    sink = logger.add(lambda m: errors.append(m.record["message"]), level="ERROR")
    try:
        node.fake.fail_always("list_pod_sandbox", RuntimeError("a bug in the relist"))
        node.until("the supervisor to give up", lambda: not node.supervisor.is_alive())
        assert node.dispatch.names() == []  # every child stopped
        assert ("supervisor: pleg failed 4 times in 60 s (last: RuntimeError('a bug in the "
                "relist')): giving up") in errors
    finally:
        logger.remove(sink)
        node.stop()


def test_a_static_pod_removed_and_put_back_starts_again_with_new_containers(node: Node) -> None:
    """Upstream pod_workers: a pod re-added under the UID of one being terminated is
    started afresh once that one has stopped (restartRequested)."""
    node.snapshot(pod("u1"))
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    (first,) = [c.id for c in node.fake.list_containers()]
    node.snapshot()
    node.snapshot(pod("u1"))  # put back before the first one is gone
    node.until("a new container to run", lambda: node.running("u1") == ["c"]
               and first not in {c.id for c in node.fake.list_containers()})
    (again,) = node.fake.list_containers()
    assert again.labels[L.POD_UID] == "u1"
    assert again.annotations[L.RESTART_COUNT] == "0"  # the old pod's containers are gone
    node.until("/pods to say Running", lambda: node.statuses()["u1"].phase == "Running")


def test_a_pod_past_its_active_deadline_is_killed_and_failed(node: Node) -> None:
    timed = pod("u1")
    timed = msgspec.structs.replace(
        timed, spec=msgspec.structs.replace(timed.spec, active_deadline_seconds=3))
    node.snapshot(timed)
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    node.until("the deadline to fail the pod",
               lambda: node.statuses()["u1"].phase == "Failed")
    status = node.statuses()["u1"]
    assert status.reason == "DeadlineExceeded"
    assert status.message == "Pod was active on the node longer than the specified deadline"
    node.until("its containers to stop", lambda: node.running("u1") == [])


def test_an_active_deadline_added_to_a_running_pod_fails_it(node: Node) -> None:
    """Upstream pods.go "should allow activeDeadlineSeconds to be updated": same UID,
    the deadline set later, counted from the pod's start."""
    node.snapshot(pod("u1"))
    node.until("the container to run", lambda: node.running("u1") == ["c"])
    for _ in range(3):
        node.tick(1.0)
    timed = pod("u1")
    timed = msgspec.structs.replace(
        timed, spec=msgspec.structs.replace(timed.spec, active_deadline_seconds=5))
    node.snapshot(timed)
    node.until("the deadline to fail the pod",
               lambda: node.statuses()["u1"].phase == "Failed")
    assert node.statuses()["u1"].reason == "DeadlineExceeded"
    node.until("its containers to stop", lambda: node.running("u1") == [])
