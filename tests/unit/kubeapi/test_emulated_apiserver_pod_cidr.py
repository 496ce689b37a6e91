"""The Node's spec.podCIDRs to the runtime (upstream's updatePodCIDR in updateNode): CRI
UpdateRuntimeConfig only when they change, comma-joined; a failure is retried on the next
status update and posts the status; the fast status updates at startup send it too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.clock import FakeClock
from runtime.errors import CRIUnavailable
from runtime.kubeapi.client import NODES, KubeClient
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.node import NodeStatusReporter
from runtime.kubeapi.nodestatus import NodeHealth
from runtime.kubeapi.transport import Transport
from runtime.kuberuntime.pod_cidr import RuntimePodCIDR
from runtime.testing.fake_calls import Call
from runtime.testing.fake_runtime import FakeRuntime
from tests.apiserver import EmulatedAPIServer
from tests.unit.kubeapi.test_emulated_apiserver_node_lease import CONFIG, FACTS, Sleeps


def _reporter(client: KubeClient, runtime: FakeRuntime, held: RuntimePodCIDR,
              clock: FakeClock) -> NodeStatusReporter:
    return NodeStatusReporter(client, CONFIG, lambda: FACTS, NodeHealth, clock=clock,
                              wait=Sleeps(clock),
                              pod_cidr=lambda cidr: held.update(runtime, cidr))


def _sent(runtime: FakeRuntime) -> list[Call]:
    return runtime.calls_to("update_runtime_config")


@pytest.fixture
def admin(server: EmulatedAPIServer, tmp_path: Path) -> Iterator[KubeClient]:
    """The node-ipam controller's client (an admin here)."""
    transport = Transport(load_kubeconfig(server.write_kubeconfig(tmp_path / "admin")))
    yield KubeClient(transport)
    transport.close()


def _set_pod_cidrs(admin: KubeClient, *cidrs: str) -> None:
    """As the node-ipam controller patches them: podCIDR and podCIDRs."""
    admin.patch(NODES, CONFIG.node_name, {"spec": {"podCIDR": cidrs[0],
                                                   "podCIDRs": list(cidrs)}})


def test_the_nodes_pod_cidrs_reach_the_runtime_once_per_change(client: KubeClient,
                                                               admin: KubeClient) -> None:
    clock, runtime, held = FakeClock(), FakeRuntime(), RuntimePodCIDR()
    reporter = _reporter(client, runtime, held, clock)
    reporter.sync_node_status()
    assert _sent(runtime) == []  # no podCIDRs yet: nothing to give
    patches = reporter.patches
    _set_pod_cidrs(admin, "10.85.1.0/24", "fd00:85:1::/64")
    reporter.sync_node_status()
    assert _sent(runtime) == [Call("update_runtime_config", ("10.85.1.0/24,fd00:85:1::/64",))]
    assert (held.current, runtime.pod_cidr) == ("10.85.1.0/24,fd00:85:1::/64",) * 2
    assert reporter.patches == patches + 1  # a changed pod CIDR posts the status
    for _ in range(3):
        clock.step(10)
        reporter.sync_node_status()
    assert len(_sent(runtime)) == 1
    # A Node's podCIDRs never change once set (the API server refuses it): a new range
    # comes with a new Node, made again under the running kubelet.
    admin.delete(NODES, CONFIG.node_name)
    admin.create(NODES, {"metadata": {"name": CONFIG.node_name},
                         "spec": {"podCIDR": "10.85.2.0/24", "podCIDRs": ["10.85.2.0/24"]}})
    reporter.sync_node_status()
    assert _sent(runtime)[-1] == Call("update_runtime_config", ("10.85.2.0/24",))


def test_a_failed_update_is_sent_again_on_the_next_status_update(
        client: KubeClient, admin: KubeClient) -> None:
    clock, runtime, held = FakeClock(), FakeRuntime(), RuntimePodCIDR()
    reporter = _reporter(client, runtime, held, clock)
    reporter.sync_node_status()
    _set_pod_cidrs(admin, "10.85.3.0/24")
    runtime.fail("update_runtime_config", CRIUnavailable("UpdateRuntimeConfig", "down"))
    patches = reporter.patches
    reporter.sync_node_status()
    assert (held.current, runtime.pod_cidr) == ("", "")
    assert reporter.patches == patches + 1  # upstream: "changed", to be on the safe side
    clock.step(10)
    reporter.sync_node_status()
    assert [c.args for c in _sent(runtime)] == [("10.85.3.0/24",)] * 2
    assert held.current == runtime.pod_cidr == "10.85.3.0/24"


def test_the_fast_status_updates_give_the_pod_cidr_of_the_node_last_seen(
        client: KubeClient, admin: KubeClient) -> None:
    clock, runtime, held = FakeClock(), FakeRuntime(), RuntimePodCIDR()
    reporter = _reporter(client, runtime, held, clock)
    admin.create(NODES, {"metadata": {"name": CONFIG.node_name},
                          "spec": {"podCIDR": "10.85.4.0/24", "podCIDRs": ["10.85.4.0/24"]}})
    assert reporter.register()  # the Node made beforehand: read back, with its range
    reporter.fast_update_node_status(timed_out=False)
    assert [c.args for c in _sent(runtime)] == [("10.85.4.0/24",)]


def test_the_pod_cidr_given_at_start_is_not_sent_again() -> None:
    runtime, held = FakeRuntime(), RuntimePodCIDR()
    assert held.update(runtime, "10.85.5.0/24") is True
    assert held.update(runtime, "10.85.5.0/24") is False
    assert [c.args for c in _sent(runtime)] == [("10.85.5.0/24",)]
