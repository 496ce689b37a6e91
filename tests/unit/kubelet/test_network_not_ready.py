"""The runtime's network not ready (NetworkReady false, as containerd says before it has a
CNI config): pods outside the node's network start nothing, host-network pods start, and
every pod syncs once the network is ready (upstream's SyncPod "network is not ready")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace

from actors.kubelet import names
from runtime.cri.types import NamespaceMode
from tests.unit.kubelet.test_sync_loop import Node, pod


def _network_error(node: Node) -> str:
    """The sync loop's own view, read through its mailbox (after what it was sent)."""
    ref = node.dispatch.ref(names.SYNC_LOOP)
    assert ref is not None
    return str(ref.proxy().network_error.get(timeout=5))


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.stop()


def test_only_host_network_pods_start_until_the_network_is_ready(node: Node) -> None:
    node.fake.set_conditions(network_ready=False)
    node.until("the sync loop to hear the network is not ready",
               lambda: _network_error(node).startswith("container runtime network not ready"))
    web = pod("u1", "web")
    host = pod("u2", "host")
    host = replace(host, spec=replace(host.spec, host_network=True))
    node.snapshot(web, host)
    node.until("the host-network pod to run", lambda: node.running("u2") == ["c"])
    for _ in range(3):
        node.tick(1.0)
    sandboxes = [c.args[0] for c in node.fake.calls_to("run_pod_sandbox")]
    assert [s.network_mode for s in sandboxes] == [NamespaceMode.NODE]
    assert node.running("u1") == []
    node.fake.set_conditions(network_ready=True)
    node.until("the pod to run once the network is ready", lambda: node.running("u1") == ["c"])
