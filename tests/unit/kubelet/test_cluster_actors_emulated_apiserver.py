"""The cluster actors' handlers against the emulated API server, called in the test's
thread (no actor started): the pod writer's status PATCHes, deletions and mirror pods, the
API pod source's snapshots, and the health the node status is computed from."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.testing import Inbox
from actors.core.timers import ManualTimers
from actors.kubelet import names
from actors.kubelet.cluster.context import Cluster, ClusterSettings
from actors.kubelet.cluster.lease import LeaseActor
from actors.kubelet.cluster.messages import (
    APIPodConditions,
    APIPodList,
    APIPods,
    HealthReport,
    PodStatusChanged,
    ReportHealth,
    StaticPodsWanted,
)
from actors.kubelet.cluster.node_status import (
    TICK_FAST_STATUS,
    NodeStatusActor,
    node_health,
)
from actors.kubelet.cluster.pod_source import APISource, api_pod, decode_api_pod
from actors.kubelet.cluster.pod_writer import PodWriter
from actors.kubelet.messages import PodForgotten, SourceSnapshot
from actors.kubelet.sync_loop import SyncLoop
from runtime.clock import FakeClock
from runtime.cri.service import CRIRuntime
from runtime.cri.types import Image, RuntimeCondition, RuntimeStatus, VersionInfo
from runtime.errors import CRIUnavailable
from runtime.ids import PodUID
from runtime.kubeapi.client import LEASES, NODES, PODS, KubeClient
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.nodestatus import NodeConfig
from runtime.kubeapi.reflector import Snapshot
from runtime.kubeapi.transport import Transport
from runtime.pod.manifest import parse_manifest
from runtime.pod.model import Pod
from runtime.pod.static import make_static_pod
from runtime.status.types import PodCondition, PodStatus
from tests.apiserver import EmulatedAPIServer
from tests.helpers import wait_for

NODE = "n1"


@pytest.fixture
def server() -> Iterator[EmulatedAPIServer]:
    with EmulatedAPIServer(bookmark_interval=0.2) as srv:
        yield srv


@pytest.fixture
def admin(server: EmulatedAPIServer, tmp_path: Path) -> Iterator[KubeClient]:
    transport = Transport(load_kubeconfig(server.write_kubeconfig(tmp_path / "admin")))
    yield KubeClient(transport)
    transport.close()


@pytest.fixture
def cluster(server: EmulatedAPIServer, tmp_path: Path) -> Iterator[Cluster]:
    rest = load_kubeconfig(server.write_kubeconfig(
        tmp_path / "kubelet", f"system:node:{NODE}", groups=("system:nodes",)))
    client, heartbeat = Transport(rest), Transport(rest)
    yield Cluster(KubeClient(client), KubeClient(heartbeat),
                  NodeConfig(node_name=NODE, hostname=NODE, node_ip="10.0.0.1",
                             architecture="amd64"))
    client.close()
    heartbeat.close()


def writer(cluster: Cluster) -> PodWriter:
    clock = FakeClock()
    dispatch = Dispatch()
    return PodWriter(dispatch, ManualTimers(dispatch, clock), clock, cluster)


def bound_pod(admin: KubeClient, name: str) -> dict[str, Any]:
    return admin.create(PODS, {"metadata": {"name": name}, "spec": {
        "nodeName": NODE, "automountServiceAccountToken": False,
        "containers": [{"name": "main", "image": "busybox"}]}}, "default")


def running(ready: str = "True") -> PodStatus:
    return PodStatus(phase="Running", host_ip="10.0.0.1", conditions=(
        PodCondition(type="Ready", status=ready, last_transition_time="2026-01-01T00:00:00Z"),))


def seen(w: PodWriter, admin: KubeClient) -> None:
    """What the API pod source would tell the writer now."""
    w.handle(APIPods(tuple(api_pod(p) for p in admin.list(PODS, "default").items)))


def test_status_is_patched_with_the_uid_and_not_sent_when_unchanged_emulated_apiserver(
        cluster: Cluster, admin: KubeClient) -> None:
    raw = bound_pod(admin, "web")
    # A condition a controller owns: the kubelet's writes keep it (mergePodStatus).
    admin.patch(PODS, "web", {"status": {"conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "Test"}]}},
        namespace="default", subresource="status")
    w = writer(cluster)
    seen(w, admin)
    pod = decode_api_pod(raw)
    w.handle(PodStatusChanged(pod, running()))
    status = admin.get(PODS, "web", "default")["status"]
    assert status["phase"] == "Running" and status["hostIP"] == "10.0.0.1"
    assert {c["type"] for c in status["conditions"]} == {"Ready", "DisruptionTarget"}
    assert w.patches == 1
    w.handle(PodStatusChanged(pod, running()))
    assert w.patches == 1  # the same status: an empty patch is not sent
    w.handle(PodStatusChanged(pod, running("False")))
    assert w.patches == 2


def test_a_replaced_pod_is_not_written_to_emulated_apiserver(
        cluster: Cluster, admin: KubeClient) -> None:
    old = decode_api_pod(bound_pod(admin, "web"))
    admin.delete(PODS, "web", "default", grace_period_seconds=0)
    bound_pod(admin, "web")  # same name, another UID
    w = writer(cluster)
    seen(w, admin)
    w.handle(PodStatusChanged(old, running()))
    assert w.patches == 0
    assert admin.get(PODS, "web", "default").get("status", {}).get("phase") != "Running"


def test_a_deleted_pod_goes_once_the_kubelet_forgot_it_emulated_apiserver(
        cluster: Cluster, admin: KubeClient) -> None:
    raw = bound_pod(admin, "web")
    uid = raw["metadata"]["uid"]
    w = writer(cluster)
    w.handle(PodStatusChanged(decode_api_pod(raw), running()))
    admin.delete(PODS, "web", "default", grace_period_seconds=30)
    seen(w, admin)
    assert admin.get(PODS, "web", "default")["metadata"]["deletionTimestamp"]
    assert w.deletions == 0  # still running on the node: not deleted yet
    w.handle(PodForgotten(PodUID(uid)))
    assert w.deletions == 1
    assert not admin.list(PODS, "default").items


def static_pod(command: str) -> Pod:
    (pod,) = parse_manifest(
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: s}}\nspec:\n  containers:\n"
        f"  - {{name: main, image: busybox, command: [{command}]}}\n".encode(), "s.yaml")
    return make_static_pod(pod, NODE, "file", "/etc/pods/s.yaml")


def test_mirror_pods_created_replaced_and_deleted_emulated_apiserver(
        cluster: Cluster, admin: KubeClient) -> None:
    cluster.registration.set("node-uid")
    w = writer(cluster)
    first = static_pod("sleep")
    w.handle(PodStatusChanged(first, running()))
    (mirror,) = admin.list(PODS, "default").items
    meta = mirror["metadata"]
    assert meta["name"] == f"s-{NODE}" and meta["uid"] != first.uid
    assert meta["annotations"]["kubernetes.io/config.mirror"] == first.uid
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": NODE,
                                        "uid": "node-uid", "controller": True}]
    seen(w, admin)
    w.handle(PodStatusChanged(first, running("False")))
    assert admin.get(PODS, f"s-{NODE}", "default")["status"]["phase"] == "Running"

    # The manifest changes: a new UID and hash; the stale mirror is replaced.
    second = static_pod("echo")
    w.handle(PodForgotten(PodUID(first.uid)))
    w.handle(PodStatusChanged(second, running()))
    seen(w, admin)
    (mirror,) = admin.list(PODS, "default").items
    assert mirror["metadata"]["annotations"]["kubernetes.io/config.mirror"] == second.uid

    # Someone deletes the mirror pod: it comes back at the next look.
    admin.delete(PODS, f"s-{NODE}", "default")
    seen(w, admin)
    (mirror,) = admin.list(PODS, "default").items
    assert mirror["metadata"]["annotations"]["kubernetes.io/config.mirror"] == second.uid

    # The static pod goes: so does its mirror.
    w.handle(PodForgotten(PodUID(second.uid)))
    assert not admin.list(PODS, "default").items


def test_the_api_source_sends_pods_to_run_and_leaves_mirror_pods_out_emulated_apiserver(
        cluster: Cluster, admin: KubeClient) -> None:
    dispatch = Dispatch()
    inbox = Inbox(dispatch, names.SYNC_LOOP, names.POD_WRITER)
    try:
        source = APISource(dispatch, FakeClock(), cluster)
        bound_pod(admin, "web")
        cluster.registration.set("node-uid")
        w = writer(cluster)
        w.handle(PodStatusChanged(static_pod("sleep"), running()))  # makes a mirror pod
        items = tuple(admin.list(PODS, "default").items)
        source.handle(APIPodList("1", items))
        wait_for(lambda: inbox.all(SourceSnapshot), 5, "a snapshot")
        (snapshot,) = inbox.all(SourceSnapshot)
        assert snapshot.source == "api"
        assert [p.metadata.name for p in snapshot.pods] == ["web"]
        # A status write changes resourceVersion only: no new snapshot for the sync loop.
        admin.patch(PODS, "web", {"status": {"phase": "Running"}}, namespace="default",
                    subresource="status")
        source.handle(APIPodList("2", tuple(admin.list(PODS, "default").items)))
        wait_for(lambda: len(inbox.all(APIPods)) == 2, 5, "the writer told twice")
        assert len(inbox.all(SourceSnapshot)) == 1
        assert {p.name for p in inbox.all(APIPods)[-1].pods} == {"web", f"s-{NODE}"}
    finally:
        inbox.ref.stop()


def test_the_api_source_tells_the_status_manager_the_conditions_others_set_emulated_apiserver(
        cluster: Cluster, admin: KubeClient) -> None:
    dispatch = Dispatch()
    inbox = Inbox(dispatch, names.SYNC_LOOP, names.POD_WRITER, names.STATUS)
    gate = {"type": "example.com/gate", "status": "True", "reason": "LoadBalancerReady"}
    try:
        source = APISource(dispatch, FakeClock(), cluster)
        raw = bound_pod(admin, "web")
        cluster.registration.set("node-uid")
        w = writer(cluster)
        w.handle(PodStatusChanged(static_pod("sleep"), running()))  # makes a mirror pod
        # A controller sets the gate's condition, on the pod and on the mirror pod.
        for name in ("web", f"s-{NODE}"):
            admin.patch(PODS, name, {"status": {"conditions": [gate]}}, namespace="default",
                        subresource="status")
        source.handle(APIPodList("1", tuple(admin.list(PODS, "default").items)))
        told = inbox.wait(APIPodConditions)
        (web,) = told.pods  # the mirror pod's are not the static pod's to evaluate
        assert web.uid == raw["metadata"]["uid"]
        ((type_, status, reason),) = [(c.type, c.status, c.reason) for c in web.conditions]
        assert (type_, status, reason) == ("example.com/gate", "True", "LoadBalancerReady")
        # The kubelet's own status write changes no condition of others: nothing to tell.
        w.handle(APIPods(tuple(api_pod(p) for p in admin.list(PODS, "default").items)))
        w.handle(PodStatusChanged(decode_api_pod(raw), running()))
        source.handle(APIPodList("2", tuple(admin.list(PODS, "default").items)))
        wait_for(lambda: len(inbox.all(APIPods)) == 2, 5, "the writer told twice")
        assert len(inbox.all(APIPodConditions)) == 1
        # The controller turns it False: told again.
        admin.patch(PODS, "web", {"status": {"conditions": [{**gate, "status": "False"}]}},
                    namespace="default", subresource="status")
        source.handle(APIPodList("3", tuple(admin.list(PODS, "default").items)))
        wait_for(lambda: len(inbox.all(APIPodConditions)) == 2, 5, "told again")
        assert inbox.all(APIPodConditions)[-1].pods[0].conditions[0].status == "False"
    finally:
        inbox.ref.stop()


def test_the_writer_never_writes_back_an_older_copy_of_a_gate_s_condition_emulated_apiserver(
        cluster: Cluster, admin: KubeClient) -> None:
    raw = bound_pod(admin, "web")
    gate = {"type": "example.com/gate", "status": "True"}
    admin.patch(PODS, "web", {"status": {"conditions": [gate]}}, namespace="default",
                subresource="status")
    w = writer(cluster)
    seen(w, admin)
    # The kubelet computed its status while it still saw the gate False.
    stale = PodStatus(phase="Running", conditions=(
        PodCondition(type="example.com/gate", status="False"),
        PodCondition(type="Ready", status="False", reason="ReadinessGatesNotReady")))
    w.handle(PodStatusChanged(decode_api_pod(raw), stale))
    conditions = admin.get(PODS, "web", "default")["status"]["conditions"]
    assert [(c["type"], c["status"]) for c in conditions] == [
        ("example.com/gate", "True"), ("Ready", "False")]
    assert w.patches == 1


def test_the_api_source_takes_the_newest_set_and_decodes_a_pod_once_per_version(
        cluster: Cluster, admin: KubeClient) -> None:
    dispatch = Dispatch()
    inbox = Inbox(dispatch, names.SYNC_LOOP, names.POD_WRITER)
    told: list[Any] = []
    try:
        source = APISource(dispatch, FakeClock(), cluster)
        source._actor_ref = cast(Any, type("Ref", (), {"tell": staticmethod(told.append)})())
        bound_pod(admin, "web")
        first = tuple(admin.list(PODS, "default").items)
        admin.patch(PODS, "web", {"metadata": {"annotations": {"a": "1"}}},
                    namespace="default", patch_type="merge")
        second = tuple(admin.list(PODS, "default").items)
        # Two sets before the actor gets to the first: it is told once, takes the newest.
        source._on_snapshot(Snapshot("1", first, True))
        source._on_snapshot(Snapshot("2", second, False))
        assert len(told) == 1
        source.handle(told[0])
        wait_for(lambda: inbox.all(SourceSnapshot), 5, "a snapshot")
        (snapshot,) = inbox.all(SourceSnapshot)
        assert snapshot.pods[0].metadata.annotations == {"a": "1"}
        # The same version again: the very same decoded pod, no decoding.
        source.handle(APIPodList("2", second))
        wait_for(lambda: len(inbox.all(APIPods)) == 2, 5, "the writer told twice")
        assert source._decoded[snapshot.pods[0].metadata.uid][2] is snapshot.pods[0]
        assert len(inbox.all(SourceSnapshot)) == 1
    finally:
        inbox.ref.stop()


def test_node_health_from_the_sync_loops_checks() -> None:
    assert node_health({names.HEALTH_RUNTIME: None, names.HEALTH_PLEG: None}
                       ).runtime_errors == ()
    health = node_health({names.HEALTH_RUNTIME: "connection refused",
                          names.HEALTH_PLEG: "relist 200s ago"})
    assert health.runtime_errors == ("container runtime is down: connection refused",
                                     "PLEG is not healthy: relist 200s ago")


def test_the_sync_loop_answers_report_health_with_a_message() -> None:
    clock = FakeClock()
    dispatch = Dispatch()
    inbox = Inbox(dispatch, names.NODE_STATUS)
    try:
        loop = SyncLoop(dispatch, ManualTimers(dispatch, clock), clock, [],
                        lambda uid, n, cancel: inbox.ref)
        loop.handle(ReportHealth(names.NODE_STATUS))
        wait_for(lambda: inbox.all(HealthReport), 5, "a HealthReport")
        (report,) = inbox.all(HealthReport)
        assert dict(report.checks)[names.HEALTH_RUNTIME] is None
    finally:
        inbox.ref.stop()


class _Runtime:
    """The runtime as the node-status actor asks it: its name and version, its
    conditions (Status) and its images; ``down`` makes Status fail."""

    def __init__(self) -> None:
        self.down = False
        self.network_ready = True
        self.images = (Image(id="sha256:p", repo_tags=("pause:3.9",), size=300_000),
                       Image(id="sha256:b", repo_tags=("busybox:1.35",),
                             repo_digests=("busybox@sha256:b",), size=2_000_000))

    def version(self) -> VersionInfo:
        return VersionInfo(version="0.1.0", runtime_name="containerd",
                           runtime_version="1.6.20", runtime_api_version="v1")

    def status(self) -> RuntimeStatus:
        if self.down:
            raise CRIUnavailable("Status", "connection refused")
        reason = "" if self.network_ready else "NetworkPluginNotReady"
        return RuntimeStatus((RuntimeCondition("RuntimeReady", True),
                              RuntimeCondition("NetworkReady", self.network_ready, reason)))

    def list_images(self) -> tuple[Image, ...]:
        return self.images


def node_status_actor(cluster: Cluster, tmp_path: Path,
                      runtime: _Runtime | None = None) -> NodeStatusActor:
    clock = FakeClock()
    dispatch = Dispatch()
    cluster = dataclasses.replace(cluster, settings=ClusterSettings(root_dir=str(tmp_path)))
    return NodeStatusActor(dispatch, ManualTimers(dispatch, clock), clock, cluster,
                           cast(CRIRuntime, runtime or _Runtime()))


HEALTHY = HealthReport(((names.HEALTH_RUNTIME, None), (names.HEALTH_PLEG, None)))


def test_the_node_registers_reports_and_registers_again_when_deleted_emulated_apiserver(
        cluster: Cluster, admin: KubeClient, tmp_path: Path) -> None:
    runtime = _Runtime()
    actor = node_status_actor(cluster, tmp_path, runtime)
    registration = cluster.registration  # shared with the actor (a shallow copy)
    actor.handle(HEALTHY)
    node = admin.get(NODES, NODE)
    assert registration.is_set() and registration.uid == node["metadata"]["uid"]
    ready = {c["type"]: c for c in node["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"] == "containerd://1.6.20"

    runtime.down = True
    actor.handle(HealthReport(((names.HEALTH_RUNTIME, "connection refused"),
                               (names.HEALTH_PLEG, None))))
    ready = {c["type"]: c for c in admin.get(NODES, NODE)["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")
    assert "container runtime is down: connection refused" in ready["message"]

    runtime.down = False
    admin.delete(NODES, NODE)
    actor.handle(HEALTHY)  # the status update finds no Node
    assert not registration.is_set()
    actor.handle(HEALTHY)  # registered again, with a new UID
    again = admin.get(NODES, NODE)
    assert registration.is_set() and registration.uid == again["metadata"]["uid"] != \
        node["metadata"]["uid"]


def _ready(admin: KubeClient) -> dict[str, Any]:
    node = admin.get(NODES, NODE)
    ready: dict[str, Any] = {c["type"]: c for c in node["status"]["conditions"]}["Ready"]
    return ready


def test_images_and_network_readiness_reach_the_node_emulated_apiserver(
        cluster: Cluster, admin: KubeClient, tmp_path: Path) -> None:
    runtime = _Runtime()
    runtime.network_ready = False
    actor = node_status_actor(cluster, tmp_path, runtime)
    actor.handle(HEALTHY)
    node = admin.get(NODES, NODE)
    assert node["status"]["images"] == [
        {"names": ["busybox@sha256:b", "busybox:1.35"], "sizeBytes": 2_000_000},
        {"names": ["pause:3.9"], "sizeBytes": 300_000}]
    ready = _ready(admin)
    assert (ready["status"], ready["message"]) == (
        "False", "container runtime network not ready: NetworkReady=false "
                 "reason:NetworkPluginNotReady message:")


def test_fast_status_updates_post_ready_at_once_then_stop_emulated_apiserver(
        cluster: Cluster, admin: KubeClient, tmp_path: Path) -> None:
    runtime = _Runtime()
    runtime.network_ready = False
    actor = node_status_actor(cluster, tmp_path, runtime)
    actor.on_start()
    actor.handle(HEALTHY)  # registered, not Ready (no network)
    assert _ready(admin)["status"] == "False"
    patches = actor.reporter.patches
    actor.handle(Tick(TICK_FAST_STATUS, 0.1))
    actor.handle(HEALTHY)  # a fast round: unchanged, nothing posted
    assert actor.reporter.patches == patches
    runtime.network_ready = True
    actor.handle(Tick(TICK_FAST_STATUS, 0.2))
    actor.handle(HEALTHY)  # the fast round that finds it Ready posts at once
    assert _ready(admin)["status"] == "True"
    assert actor.reporter.patches == patches + 1
    actor.handle(Tick(TICK_FAST_STATUS, 0.3))  # and the fast updates are over
    actor.handle(HEALTHY)
    assert actor.reporter.patches == patches + 1
    actor.on_stop()


def test_the_lease_waits_for_the_node_then_is_created_and_renewed_emulated_apiserver(
        cluster: Cluster, admin: KubeClient, tmp_path: Path) -> None:
    clock = FakeClock()
    dispatch = Dispatch()
    lease = LeaseActor(dispatch, ManualTimers(dispatch, clock), clock, cluster)
    lease.handle(Tick(names.TICK_LEASE, 0.0))
    assert lease.controller.latest is None  # no Node yet: no lease without its owner
    node_status_actor(cluster, tmp_path).handle(HEALTHY)
    lease.handle(Tick(names.TICK_LEASE, 1.0))
    created = admin.get(LEASES, NODE, "kube-node-lease")
    assert created["metadata"]["ownerReferences"][0]["uid"] == cluster.registration.uid
    assert created["spec"]["leaseDurationSeconds"] == 40
    clock.step(10.0)
    lease.handle(Tick(names.TICK_LEASE, 11.0))
    renewed = admin.get(LEASES, NODE, "kube-node-lease")
    assert renewed["spec"]["renewTime"] != created["spec"]["renewTime"]
    assert lease.controller.renewals == 1


def test_orphaned_mirror_pods_go_once_every_source_spoke_emulated_apiserver(
        cluster: Cluster, admin: KubeClient) -> None:
    """A static pod removed while the kubelet was stopped leaves a mirror pod behind."""
    cluster.registration.set("node-uid")
    gone, kept = static_pod("sleep"), static_pod("echo")
    first = writer(cluster)
    first.handle(PodStatusChanged(gone, running()))
    assert len(admin.list(PODS, "default").items) == 1
    w = writer(cluster)  # a restarted kubelet
    seen(w, admin)
    assert len(admin.list(PODS, "default").items) == 1  # sources not ready: kept
    w.handle(StaticPodsWanted((kept.uid,)))
    assert not admin.list(PODS, "default").items


def test_a_status_write_that_fails_is_made_at_the_next_resync_emulated_apiserver(
        cluster: Cluster, admin: KubeClient, server: EmulatedAPIServer) -> None:
    """No transition is lost: a refused PATCH, then a server gone mid-update, and the
    10 s resync writes the newest status once the server answers."""
    raw = bound_pod(admin, "web")
    w = writer(cluster)
    seen(w, admin)
    pod = decode_api_pod(raw)
    rule = server.faults.inject(verb="patch", resource="pods/status", code=500, times=1)
    w.handle(PodStatusChanged(pod, running("False")))
    assert rule.hits == 1 and w.patches == 0
    server.partition()
    try:
        w.handle(PodStatusChanged(pod, running("True")))  # the server is away
        w.handle(Tick(names.TICK_POD_STATUS_RESYNC, 10.0))
        assert w.patches == 0
    finally:
        server.heal()
    w.handle(Tick(names.TICK_POD_STATUS_RESYNC, 20.0))
    assert w.patches == 1
    status = admin.get(PODS, "web", "default")["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
