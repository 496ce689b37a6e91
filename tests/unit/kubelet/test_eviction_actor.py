"""The eviction manager in the kubelet's tree, on a fake runtime and manual time: an
observation under a threshold evicts the right pod (killed, Failed with reason Evicted and
upstream's message), never a static one, raises the node condition, and admission then
refuses new pods; the node condition goes after the transition period."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from msgspec.structs import replace as sreplace

from actors.core.dispatch import Dispatch
from actors.core.testing import Inbox
from actors.core.timers import ManualTimers
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names, tree
from actors.kubelet.eviction import (
    ActivePods,
    EvictionManager,
    EvictionSettings,
    EvictPod,
    GetPressure,
    NodePressure,
    SignalsObserved,
)
from actors.kubelet.messages import CollectGarbage, GetPods, SourceSnapshot
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.pod_worker import WorkerTiming
from actors.kubelet.sync_loop import SyncLoopSettings
from actors.kubelet.trace import KubeletWorld
from actors.kubelet.tree import KubeletParts, ReplayConfig
from runtime.clock import FakeClock
from runtime.cri.types import ContainerState
from runtime.eviction.api import MEMORY_AVAILABLE, NODEFS_AVAILABLE
from runtime.eviction.local_storage import SIGNAL_CONTAINER, SIGNAL_EMPTY_DIR
from runtime.eviction.parse import parse_threshold_config
from runtime.eviction.signals import (
    ContainerUsage,
    NodeSignals,
    Observation,
    PodUsage,
    VolumeUsage,
)
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.admission import Node as AdmissionNode
from runtime.pod.model import EmptyDirVolumeSource, Pod, ResourceRequirements, Volume
from runtime.status.types import PodStatus
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import wait_for
from tests.traces.scenarios import RecordedNode
from tests.unit.kubelet.test_sync_loop import IMAGE, pod

Mi = 1 << 20
NODE = AdmissionNode(name="node", allocatable={"cpu": "2", "memory": "4Gi",
                                             "ephemeral-storage": "10Gi"})


def api_pod(uid: str, memory_request: str = "") -> Pod:
    p = pod(uid, uid)
    p = sreplace(p, metadata=sreplace(p.metadata, annotations={
        "kubernetes.io/config.source": "api"}))
    if memory_request:
        container = sreplace(p.spec.containers[0], resources=ResourceRequirements(
            requests={"memory": memory_request}))
        p = sreplace(p, spec=sreplace(p.spec, containers=(container,)))
    return p


class EvictingNode:
    """The kubelet's tree with an eviction manager, observations told by the test."""

    def __init__(self, tmp_path: Path, transition: float = 60.0,
                 local_storage: bool = True) -> None:
        self.clock = FakeClock()
        self.fake = FakeRuntime(self.clock, images=[IMAGE])
        self.dispatch = Dispatch()
        self.timers = ManualTimers(self.dispatch, self.clock)
        self.metrics = KubeletMetrics()
        settings = NodeSettings("node", root_dir=str(tmp_path / "root"),
                                pod_logs_dir=str(tmp_path / "logs"))
        manager = KubeRuntimeManager(self.fake, settings, self.clock)
        eviction = sreplace(parse_threshold_config(
            {MEMORY_AVAILABLE: "1Gi"}, pressure_transition_period=transition),
            local_storage_capacity_isolation=local_storage)
        config = ReplayConfig(node=settings, timing=WorkerTiming(60.0), supervisor=replace(
            SyncLoopSettings(), node=NODE, expected_sources=frozenset({"file"}),
            eviction=True),
            eviction=EvictionSettings(eviction))
        self.supervisor = tree.start(KubeletParts(
            self.dispatch, self.timers, self.clock, self.fake, manager, config, self.metrics))
        wait_for(lambda: self.dispatch.ref(names.EVICTION), 5.0, "the eviction actor")
        self.observed_at = 0.0

    def snapshot(self, *pods: Pod) -> None:
        self.dispatch.tell(names.SYNC_LOOP, SourceSnapshot("file", pods), sender="test")

    def observe(self, available: int, usage: dict[str, int]) -> None:
        """A stats collection: memory.available and each pod's working set."""
        self.observed_at += 10.0
        pods = tuple(PodUsage(uid, ws, 1, (ContainerUsage("c", ws),))
                     for uid, ws in usage.items())
        signals = NodeSignals(self.observed_at, (
            Observation(MEMORY_AVAILABLE, available, 4096 * Mi),), pods)
        self.dispatch.tell(names.EVICTION, SignalsObserved(signals), sender="test")

    def observe_usage(self, *pods: PodUsage) -> None:
        """A stats collection with plenty of memory and these pods' disk usage."""
        self.observed_at += 10.0
        signals = NodeSignals(self.observed_at, (
            Observation(MEMORY_AVAILABLE, 3000 * Mi, 4096 * Mi),), pods)
        self.dispatch.tell(names.EVICTION, SignalsObserved(signals), sender="test")

    def statuses(self) -> dict[str, PodStatus]:
        ref = self.dispatch.ref(names.STATUS)
        assert ref is not None
        pods: tuple[tuple[Pod, PodStatus], ...] = ref.ask(GetPods(), block=True, timeout=5)
        return {p.uid: s for p, s in pods}

    def pressure(self) -> tuple[str, ...]:
        """The node conditions, once the sync loop has them too (its mailbox is FIFO)."""
        ref = self.dispatch.ref(names.EVICTION)
        assert ref is not None
        conditions: tuple[str, ...] = ref.ask(GetPressure(), block=True, timeout=5)
        return conditions

    def phase(self, uid: str) -> str:
        status = self.statuses().get(uid)
        return status.phase if status is not None else ""

    def running(self, uid: str) -> bool:
        return any(c.labels.get(L.POD_UID) == uid and c.state == ContainerState.RUNNING
                   for c in self.fake.list_containers())

    def until(self, what: str, predicate: object, step: float = 1.0) -> None:
        def check() -> bool:
            self.timers.advance(step)
            return bool(predicate())  # type: ignore[operator]
        wait_for(check, 15.0, what, interval=0.02)

    def stop(self) -> None:
        if self.supervisor.is_alive():
            self.supervisor.stop()


@pytest.fixture
def node(tmp_path: Path) -> Iterator[EvictingNode]:
    n = EvictingNode(tmp_path)
    yield n
    n.stop()


def test_the_pod_using_most_memory_above_its_request_is_evicted(node: EvictingNode) -> None:
    static = pod("static", "static")  # a static pod: critical, never evicted
    modest, hungry = api_pod("modest", "512Mi"), api_pod("hungry", "64Mi")
    node.snapshot(static, modest, hungry)
    node.until("the pods to run", lambda: all(node.running(u) for u in
                                              ("static", "modest", "hungry")))
    usage = {"static": 900 * Mi, "modest": 100 * Mi, "hungry": 600 * Mi}
    node.observe(3000 * Mi, usage)
    node.until("a pass with no pressure", lambda: node.statuses()["hungry"].phase == "Running",
               step=10.0)
    node.observe(500 * Mi, usage)

    def evicted() -> bool:
        return node.statuses()["hungry"].phase == "Failed" and not node.running("hungry")

    node.until("the hungry pod to be evicted", evicted)
    status = node.statuses()["hungry"]
    assert status.reason == "Evicted"
    assert status.message == (
        "The node was low on resource: memory. Threshold quantity: 1Gi, available: 500Mi. "
        "Container c was using 600Mi, request is 64Mi, has larger consumption of memory. ")
    assert node.running("static") and node.running("modest")
    assert node.metrics.evictions.labels(MEMORY_AVAILABLE)._value.get() == 1

    # Under memory pressure a BestEffort pod is refused; one with requests runs.
    node.snapshot(static, modest, hungry, api_pod("late"), api_pod("sized", "10Mi"))
    node.until("the late pod to be refused", lambda: node.phase("late") == "Failed")
    assert (node.statuses()["late"].reason, node.statuses()["late"].message) == (
        "Evicted", "Pod was rejected: The node had condition: [MemoryPressure]. ")
    node.until("the sized pod to run", lambda: node.running("sized"))


def test_static_pods_alone_are_never_evicted_and_the_condition_transitions(
        tmp_path: Path) -> None:
    node = EvictingNode(tmp_path, transition=30.0)
    try:
        node.snapshot(pod("static", "static"))
        node.until("the static pod to run", lambda: node.running("static"))
        node.observe(100 * Mi, {"static": 2000 * Mi})
        node.until("memory pressure", lambda: node.pressure() == ("MemoryPressure",),
                   step=10.0)
        assert node.running("static")
        node.snapshot(pod("static", "static"), api_pod("early"))
        node.until("a BestEffort pod to be refused", lambda: node.phase("early") == "Failed")
        # Relieved: the pressure holds for the transition period, then goes; a
        # BestEffort pod is admitted again.
        node.observe(3000 * Mi, {"static": 100 * Mi})
        node.until("the transition period", lambda: node.pressure() == (), step=10.0)
        assert node.metrics.evictions.labels(MEMORY_AVAILABLE)._value.get() == 0
        node.snapshot(pod("static", "static"), api_pod("later"))
        node.until("a BestEffort pod to run again", lambda: node.running("later"))
    finally:
        node.stop()


def test_an_eviction_replays_without_divergence(tmp_path: Path) -> None:
    """The eviction manager's inputs are messages: a recorded eviction replays exactly."""
    directory = tmp_path / "trace"
    recorded = RecordedNode(directory, tmp_path / "scratch", eviction=EvictionSettings(
        parse_threshold_config({MEMORY_AVAILABLE: "1Gi"})))
    try:
        recorded.snapshot(api_pod("hungry"), pod("static", "static"))
        recorded.until("the pods to run", lambda: recorded.running("hungry")
                       and recorded.running("static"))
        recorded.advance(2.0)  # housekeeping: the eviction manager hears of the pods
        signals = NodeSignals(recorded.fake_clock.now(), (
            Observation(MEMORY_AVAILABLE, 500 * Mi, 4096 * Mi),),
            (PodUsage("hungry", 600 * Mi, 1, (ContainerUsage("c", 600 * Mi),)),))
        recorded.dispatch.tell(names.EVICTION, SignalsObserved(signals), sender="test")
        recorded.settle()
        recorded.until("the hungry pod stopped", lambda: not recorded.running("hungry"))
        assert recorded.running("static")
    finally:
        recorded.close()
    report = replay(read_trace(directory), KubeletWorld())
    assert report.ok, format_report(report)
    assert {names.EVICTION, "pod/hungry", names.SYNC_LOOP} <= report.actors


def test_disk_pressure_asks_the_garbage_collector_before_evicting() -> None:
    """For a disk signal the manager first sends CollectGarbage to the collector's address
    and evicts only when newer observations still show the threshold met."""
    clock = FakeClock()
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, clock)
    inbox = Inbox(dispatch, names.SYNC_LOOP, "gc")
    config = parse_threshold_config({NODEFS_AVAILABLE: "10Gi"})
    manager = EvictionManager.start(dispatch, timers, clock, EvictionSettings(
        config, reclaim="gc"), "node")
    dispatch.register(names.EVICTION, manager)
    try:
        victim = api_pod("victim")

        def observe(at: float) -> None:
            signals = NodeSignals(at, (Observation(NODEFS_AVAILABLE, Mi, 100 << 30),),
                                  (PodUsage("victim", containers=(
                                      ContainerUsage("c", rootfs=Mi, logs=Mi),)),))
            dispatch.tell(names.EVICTION, SignalsObserved(signals), sender="test")

        dispatch.tell(names.EVICTION, ActivePods((victim,)), sender="test")
        observe(1.0)
        timers.advance(10.0)
        asked = inbox.wait(CollectGarbage)
        assert asked == CollectGarbage(
            f"the node is low on ephemeral-storage ({NODEFS_AVAILABLE})", names.EVICTION)
        assert inbox.wait(NodePressure).conditions == ("DiskPressure",)
        timers.advance(10.0)  # no newer observations: still waiting on the collector
        assert inbox.count() == 2 and not inbox.all(EvictPod)
        observe(2.0)
        timers.advance(10.0)
        order = inbox.wait(EvictPod)
        assert (order.uid, order.grace_period, order.reason) == ("victim", 1, "Evicted")
        assert len(inbox.all(CollectGarbage)) == 1
    finally:
        manager.stop()
        inbox.stop()


def storage_pod(uid: str, size_limit: str = "", storage_limit: str = "") -> Pod:
    """An API pod with a disk emptyDir (``size_limit``) and an ephemeral-storage limit."""
    p = api_pod(uid)
    c = p.spec.containers[0]
    if storage_limit:
        c = sreplace(c, resources=ResourceRequirements(
            limits={"ephemeral-storage": storage_limit}))
    volumes = (Volume(name="scratch", empty_dir=EmptyDirVolumeSource(
        size_limit=size_limit or None)),)
    return sreplace(p, spec=sreplace(p.spec, containers=(c,), volumes=volumes))


def test_pods_over_their_local_storage_limits_are_evicted_in_one_pass(
        node: EvictingNode) -> None:
    """No pressure: a pod over its emptyDir sizeLimit and one over its container limit are
    both evicted in the same pass, Failed with upstream's messages and no DisruptionTarget;
    a pod under its limits keeps running."""
    full = storage_pod("full", size_limit="10Mi")
    chatty = storage_pod("chatty", storage_limit="5Mi")
    calm = storage_pod("calm", size_limit="10Mi", storage_limit="5Mi")
    node.snapshot(full, chatty, calm)
    node.until("the pods to run", lambda: all(node.running(u) for u in
                                              ("full", "chatty", "calm")))
    node.observe_usage(
        PodUsage("full", volumes=(VolumeUsage("scratch", 20 * Mi),)),
        PodUsage("chatty", containers=(ContainerUsage("c", rootfs=4 * Mi, logs=2 * Mi),)),
        PodUsage("calm", containers=(ContainerUsage("c", rootfs=Mi, logs=Mi),),
                 volumes=(VolumeUsage("scratch", 9 * Mi),)))

    def evicted() -> bool:
        return all(node.phase(u) == "Failed" and not node.running(u)
                   for u in ("full", "chatty"))

    node.until("both pods to be evicted", evicted)
    statuses = node.statuses()
    assert (statuses["full"].reason, statuses["full"].message) == (
        "Evicted", 'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". ')
    assert (statuses["chatty"].reason, statuses["chatty"].message) == (
        "Evicted", 'Container c exceeded its local ephemeral storage limit "5Mi". ')
    for uid in ("full", "chatty"):
        assert all(c.type != "DisruptionTarget" for c in statuses[uid].conditions)
    assert node.running("calm") and node.pressure() == ()
    assert node.metrics.evictions.labels(SIGNAL_EMPTY_DIR)._value.get() == 1
    assert node.metrics.evictions.labels(SIGNAL_CONTAINER)._value.get() == 1


@pytest.mark.parametrize("isolation", [True, False])
def test_local_storage_limits_evict_only_with_capacity_isolation(isolation: bool) -> None:
    """--local-storage-capacity-isolation=false: a pod over its emptyDir sizeLimit stays;
    on (the default) it is evicted with no threshold configured at all, at 1 s grace and
    without the DisruptionTarget condition."""
    clock = FakeClock()
    dispatch = Dispatch()
    timers = ManualTimers(dispatch, clock)
    inbox = Inbox(dispatch, names.SYNC_LOOP)
    config = sreplace(parse_threshold_config({}), local_storage_capacity_isolation=isolation)
    metrics = KubeletMetrics()
    manager = EvictionManager.start(dispatch, timers, clock, EvictionSettings(config), "node",
                                    metrics=metrics)
    dispatch.register(names.EVICTION, manager)
    try:
        dispatch.tell(names.EVICTION, ActivePods((storage_pod("full", size_limit="10Mi"),)),
                      sender="test")
        dispatch.tell(names.EVICTION, SignalsObserved(NodeSignals(1.0, (), (PodUsage(
            "full", volumes=(VolumeUsage("scratch", 20 * Mi),)),))), sender="test")
        timers.advance(10.0)
        timers.advance(10.0)
        ref = dispatch.ref(names.EVICTION)
        assert ref is not None and ref.ask(GetPressure(), block=True, timeout=5) == ()
        # Both passes ran (the ask came after their Ticks): counted when evicted.
        assert metrics.evictions.labels(SIGNAL_EMPTY_DIR)._value.get() == int(isolation)
        if not isolation:
            return
        order = inbox.wait(EvictPod)
        assert order == EvictPod("full", 1, "Evicted",
                                 'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". ',
                                 disruption=False)
        assert len(inbox.all(EvictPod)) == 1  # the second pass waits for it to stop
    finally:
        manager.stop()
        inbox.stop()
