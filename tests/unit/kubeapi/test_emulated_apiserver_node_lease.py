"""Node registration, node status and the node lease against the emulated API server, with
kubectl reading back what the kubelet wrote. Time is a FakeClock and every sleep is
recorded, so the retry and renewal schedules are checked as numbers.

Registration cases are upstream's TestTryRegisterWithApiServer (pkg/kubelet/
kubelet_node_status_test.go), counted in requests the server saw instead of fake-client
actions."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from runtime import errors
from runtime.clock import FakeClock, RealClock
from runtime.kubeapi.client import LEASES, NODES, PODS, KubeClient
from runtime.kubeapi.lease import LEASE_NAMESPACE, LeaseController
from runtime.kubeapi.node import NodeStatusReporter, machine_facts
from runtime.kubeapi.nodestatus import (
    CONTROLLER_MANAGED_ATTACH,
    MachineFacts,
    NodeConfig,
    NodeHealth,
    Taint,
)
from runtime.kubeapi.reflector import Reflector, Snapshot
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.kubectl import Kubectl
from tests.apiserver.resources import by_kind
from tests.helpers import wait_for

CAPACITY = (("cpu", "2"), ("ephemeral-storage", "100Gi"), ("memory", "8Gi"), ("pods", "110"))
FACTS = MachineFacts(capacity=CAPACITY, allocatable=CAPACITY, machine_id="mid",
                     system_uuid="uuid", boot_id="boot", kernel_version="6.1.0",
                     os_image="Debian GNU/Linux 12 (bookworm)",
                     container_runtime_version="containerd://1.6.20",
                     kubelet_version="v1.32.0+kubelet-actors.0.1.0")
CONFIG = NodeConfig(node_name="n1", hostname="n1", node_ip="10.1.2.3", architecture="amd64",
                    node_labels=(("tier", "edge"),),
                    register_with_taints=(Taint("dedicated", "NoSchedule", "gpu"),))


class Sleeps:
    """An injected ``wait``: records each delay, moves the fake clock, never blocks."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.delays: list[float] = []
        self.stop_after: int | None = None

    def __call__(self, seconds: float) -> bool:
        self.delays.append(seconds)
        self.clock.step(seconds)
        return self.stop_after is not None and len(self.delays) >= self.stop_after


class Health:
    def __init__(self) -> None:
        self.now = NodeHealth()

    def __call__(self) -> NodeHealth:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sleeps(clock: FakeClock) -> Sleeps:
    return Sleeps(clock)


@pytest.fixture
def health() -> Health:
    return Health()


@pytest.fixture
def reporter(client: KubeClient, clock: FakeClock, sleeps: Sleeps,
             health: Health) -> NodeStatusReporter:
    return NodeStatusReporter(client, CONFIG, lambda: FACTS, health, clock=clock, wait=sleeps)


def _conditions(node: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in node["status"]["conditions"]}


def test_emulated_apiserver_node_registered_and_read_back_by_kubectl(
        reporter: NodeStatusReporter, kubectl: Kubectl, sleeps: Sleeps) -> None:
    assert reporter.register()
    assert sleeps.delays == [0.1]  # upstream sleeps before the first attempt
    node = kubectl.json("get", "node", "n1")
    assert node["metadata"]["labels"] == {"kubernetes.io/hostname": "n1",
                                          "kubernetes.io/os": "linux",
                                          "kubernetes.io/arch": "amd64", "tier": "edge"}
    assert node["metadata"]["annotations"][CONTROLLER_MANAGED_ATTACH] == "true"
    assert node["spec"]["taints"] == [{"key": "dedicated", "value": "gpu",
                                       "effect": "NoSchedule"}]
    status = node["status"]
    ready = _conditions(node)["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "True", "KubeletReady", "kubelet is posting ready status")
    assert {c: _conditions(node)[c]["status"] for c in
            ("MemoryPressure", "DiskPressure", "PIDPressure")} == {
        "MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False"}
    assert status["addresses"] == [{"type": "InternalIP", "address": "10.1.2.3"},
                                   {"type": "Hostname", "address": "n1"}]
    assert status["nodeInfo"]["containerRuntimeVersion"] == "containerd://1.6.20"
    assert status["nodeInfo"]["bootID"] == "boot"
    assert status["capacity"]["pods"] == "110"
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10250
    wide = kubectl.run("get", "node", "n1", "-o", "wide").stdout
    assert "Ready" in wide and "10.1.2.3" in wide and "containerd://1.6.20" in wide


def test_emulated_apiserver_registration_retries_100ms_doubling_to_7s(
        reporter: NodeStatusReporter, server: EmulatedAPIServer, sleeps: Sleeps) -> None:
    rule = server.faults.inject(verb="create", resource="nodes", code=500, times=8)
    assert reporter.register()
    assert rule.hits == 8
    assert sleeps.delays == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 7.0, 7.0]


def _existing(server: EmulatedAPIServer, labels: dict[str, str],
              annotations: dict[str, str]) -> None:
    server.registry.create(by_kind("Node"), "", {"metadata": {
        "name": "n1", "labels": labels, "annotations": annotations}})


_OWN_LABELS = {"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux",
               "kubernetes.io/arch": "amd64", "tier": "edge"}


@pytest.mark.parametrize("name, existing, fault, result, requests", [
    ("success case - new node", None, None, True, 1),
    ("success case - existing node - no change in CMAD", "true", None, True, 2),
    ("success case - existing node - CMAD disabled", "", None, True, 3),
    ("create failed", None, ("create", 500), False, 1),
    ("get existing node failed", "true", ("get", 500), False, 2),
    ("update existing node failed", "", ("patch", 500), False, 3),
])
def test_emulated_apiserver_try_register(server: EmulatedAPIServer,
                                         reporter: NodeStatusReporter, name: str,
                                         existing: str | None, fault: tuple[str, int] | None,
                                         result: bool, requests: int) -> None:
    if existing is not None:
        _existing(server, _OWN_LABELS,
                  {CONTROLLER_MANAGED_ATTACH: existing} if existing else {})
    if fault is not None:
        server.faults.inject(verb=fault[0], resource="nodes", code=fault[1])
    before = server.requests
    node = reporter.initial_node()
    assert reporter.try_register(node) is result
    assert server.requests - before == requests
    if result:
        stored = server.store.get("nodes", ("", "n1"))
        assert stored is not None
        assert stored["metadata"]["annotations"][CONTROLLER_MANAGED_ATTACH] == "true"


def test_emulated_apiserver_reregistration_reconciles_default_labels(
        server: EmulatedAPIServer, reporter: NodeStatusReporter, kubectl: Kubectl) -> None:
    _existing(server, {"kubernetes.io/hostname": "old", "kubernetes.io/os": "linux",
                       "mine": "kept"}, {})
    assert reporter.register()
    labels = kubectl.json("get", "node", "n1")["metadata"]["labels"]
    assert labels == {"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux",
                      "kubernetes.io/arch": "amd64", "mine": "kept"}


def test_emulated_apiserver_status_patched_on_change_or_every_5_minutes(
        reporter: NodeStatusReporter, clock: FakeClock, health: Health,
        client: KubeClient) -> None:
    reporter.register()
    reporter.sync_node_status()
    assert reporter.patches == 1  # the first report is always sent
    clock.step(10)
    reporter.sync_node_status()
    assert reporter.patches == 1  # only heartbeats changed: nothing sent
    health.now = NodeHealth(runtime_errors=("container runtime is down",))
    clock.step(10)
    reporter.sync_node_status()
    assert reporter.patches == 2
    ready = _conditions(client.get(NODES, "n1"))["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "KubeletNotReady", "container runtime is down")
    transition = ready["lastTransitionTime"]
    clock.step(300)
    reporter.sync_node_status()
    assert reporter.patches == 3  # nodeStatusReportFrequency passed
    ready = _conditions(client.get(NODES, "n1"))["Ready"]
    assert ready["lastTransitionTime"] == transition
    assert ready["lastHeartbeatTime"] > transition


def test_emulated_apiserver_status_update_retries_five_times(
        reporter: NodeStatusReporter, server: EmulatedAPIServer) -> None:
    reporter.register()
    rule = server.faults.inject(verb="patch", resource="nodes", code=500)
    with pytest.raises(errors.APIError, match="exceeds retry count"):
        reporter.update_node_status()
    assert rule.hits == 5
    server.faults.remove(rule)
    server.faults.inject(verb="patch", resource="nodes", code=500, times=2)
    reporter.update_node_status()
    assert reporter.patches == 1


def test_emulated_apiserver_deleted_node_is_registered_again(
        reporter: NodeStatusReporter, client: KubeClient) -> None:
    reporter.register()
    first = client.get(NODES, "n1")["metadata"]["uid"]
    client.delete(NODES, "n1")
    reporter.sync_node_status()  # finds no Node: registration is due again
    reporter.sync_node_status()
    assert client.get(NODES, "n1")["metadata"]["uid"] != first


def test_machine_facts_of_this_machine() -> None:
    facts = machine_facts("/var/tmp", 110, "containerd", "1.6.20")
    capacity = dict(facts.capacity)
    assert {"cpu", "memory", "ephemeral-storage", "pods"} <= set(capacity)
    assert capacity["pods"] == "110"
    assert facts.container_runtime_version == "containerd://1.6.20"
    assert facts.boot_id and facts.kernel_version


# --- the lease ---------------------------------------------------------------------------


@pytest.fixture
def lease(client: KubeClient, clock: FakeClock, sleeps: Sleeps) -> LeaseController:
    return LeaseController(client, "n1", clock=clock, rng=random.Random(5), wait=sleeps)


def test_emulated_apiserver_lease_created_with_owner_and_read_back_by_kubectl(
        reporter: NodeStatusReporter, lease: LeaseController, kubectl: Kubectl,
        client: KubeClient) -> None:
    reporter.register()
    lease.sync()
    got = kubectl.json("get", "lease", "-n", LEASE_NAMESPACE, "n1")
    node_uid = client.get(NODES, "n1")["metadata"]["uid"]
    assert got["spec"]["holderIdentity"] == "n1"
    assert got["spec"]["leaseDurationSeconds"] == 40
    assert got["spec"]["renewTime"].endswith("Z") and "." in got["spec"]["renewTime"]
    assert got["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": node_uid}]
    described = kubectl.run("describe", "node", "n1").stdout
    assert "HolderIdentity:  n1" in described  # kubectl finds the node's lease
    assert "KubeletReady" in described and "containerd://1.6.20" in described


def test_emulated_apiserver_lease_renewed_by_put_without_get(
        reporter: NodeStatusReporter, lease: LeaseController, server: EmulatedAPIServer,
        clock: FakeClock, client: KubeClient) -> None:
    reporter.register()
    lease.sync()
    first = client.get(LEASES, "n1", LEASE_NAMESPACE)["spec"]["renewTime"]
    clock.step(10)
    before = server.requests
    lease.sync()
    assert server.requests - before == 1  # one PUT of the last-known lease
    assert client.get(LEASES, "n1", LEASE_NAMESPACE)["spec"]["renewTime"] > first


def test_emulated_apiserver_lease_conflict_gets_the_newer_lease(
        reporter: NodeStatusReporter, lease: LeaseController, kubectl: Kubectl,
        client: KubeClient, server: EmulatedAPIServer) -> None:
    reporter.register()
    lease.sync()
    kubectl.run("annotate", "lease", "-n", LEASE_NAMESPACE, "n1", "someone=else")
    renewals = lease.renewals
    before = server.requests
    lease.sync()
    assert server.requests - before == 3  # PUT (409 Conflict), GET, PUT
    assert lease.renewals == renewals + 1
    got = client.get(LEASES, "n1", LEASE_NAMESPACE)
    assert got["metadata"]["annotations"]["someone"] == "else"


def test_emulated_apiserver_lease_waits_for_its_node_then_recreated_when_deleted(
        reporter: NodeStatusReporter, lease: LeaseController, client: KubeClient) -> None:
    lease.sync()  # no Node yet: no lease without its owner
    with pytest.raises(errors.APINotFound):
        client.get(LEASES, "n1", LEASE_NAMESPACE)
    reporter.register()
    lease.sync()
    client.delete(LEASES, "n1", LEASE_NAMESPACE)
    lease.sync()  # PUT fails 5 times (NotFound), then ensure creates it again
    assert client.get(LEASES, "n1", LEASE_NAMESPACE)["spec"]["holderIdentity"] == "n1"


def test_emulated_apiserver_lease_ensure_backs_off_doubling_to_7s(
        reporter: NodeStatusReporter, lease: LeaseController, server: EmulatedAPIServer,
        sleeps: Sleeps) -> None:
    reporter.register()
    server.faults.inject(verb="get", resource="leases", code=500, times=7)
    lease.sync()
    assert sleeps.delays[1:] == [0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 7.0]


def test_lease_renewed_every_10s_with_4_percent_jitter(lease: LeaseController,
                                                       reporter: NodeStatusReporter,
                                                       sleeps: Sleeps) -> None:
    reporter.register()
    sleeps.delays.clear()
    sleeps.stop_after = 5
    lease.run()
    assert len(sleeps.delays) == 5 and lease.renewals == 4
    assert all(10.0 <= d < 10.4 for d in sleeps.delays), sleeps.delays


def test_emulated_apiserver_repeated_heartbeat_failures_drop_connections(
        client: KubeClient, clock: FakeClock, sleeps: Sleeps, server: EmulatedAPIServer) -> None:
    drops: list[str] = []
    reporter = NodeStatusReporter(client, CONFIG, lambda: FACTS, NodeHealth, clock=clock,
                                  wait=sleeps,
                                  on_repeated_heartbeat_failure=lambda: drops.append("node"))
    lease = LeaseController(client, "n1", clock=clock, wait=sleeps,
                            on_repeated_heartbeat_failure=lambda: drops.append("lease"))
    reporter.register()
    lease.sync()
    server.faults.inject(verb="patch", resource="nodes", code=500, times=3)
    server.faults.inject(verb="update", resource="leases", code=500, times=3)
    reporter.update_node_status()
    lease.sync()
    assert drops == ["node", "node", "lease", "lease"]  # from the second failure on


def test_emulated_apiserver_heartbeats_and_reflector_share_one_transport(
        client: KubeClient, server: EmulatedAPIServer) -> None:
    """Node status, lease and a reflector on their own threads, one Transport, loops
    spinning (each wait a hundredth of a second): every one keeps working, none errs."""
    stop = threading.Event()
    health = Health()
    reporter = NodeStatusReporter(client, CONFIG, lambda: FACTS, health, clock=RealClock(),
                                  wait=lambda _: stop.wait(0.01), report_frequency=0)
    lease = LeaseController(client, "n1", clock=RealClock(), wait=lambda _: stop.wait(0.01))
    snapshots: list[Snapshot] = []
    reflector = Reflector(client, PODS, snapshots.append, field_selector="spec.nodeName=n1",
                          wait=lambda _: stop.wait(0.01))
    threads = [threading.Thread(target=t, daemon=True) for t in (reporter.run, lease.run)]
    for thread in threads:
        thread.start()
    reflector.start()
    for i in range(20):
        client.create(PODS, {"metadata": {"name": f"p{i}", "namespace": "default"},
                             "spec": {"nodeName": "n1",
                                      "containers": [{"name": "c", "image": "busybox"}]}},
                      "default")
    wait_for(lambda: reporter.patches >= 10 and lease.renewals >= 10 and snapshots
             and len(snapshots[-1].items) == 20, 20, "heartbeats and the pods")
    stop.set()
    reflector.stop()
    for thread in threads:
        thread.join(5)
    assert client.transport.retries == 0
