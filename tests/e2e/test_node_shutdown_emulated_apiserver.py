"""Graceful node shutdown in cluster mode: the daemon joined to the emulated API server, on
a real containerd, with a private system D-Bus and the logind stand-in (as in
test_node_shutdown.py). On PrepareForShutdown(true) the Node turns NotReady with upstream's
reason and message ("node is shutting down"), the API's pod ends Failed with reason
Terminated, upstream's message and the DisruptionTarget condition, and the lock is
released; kubectl reads all of it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.apiserver import EmulatedAPIServer
from tests.e2e.test_cluster_emulated_apiserver import NODE, Cluster, pod_manifest
from tests.helpers import wait_for
from tests.logind import LogindStandIn, PrivateBus

pytestmark = pytest.mark.e2e

MESSAGE = "Pod was terminated in response to imminent node shutdown."


@pytest.fixture
def shutdown_cluster(containerd: EmbeddedContainerd, cri: CRIClient,
                     monkeypatch: pytest.MonkeyPatch
                     ) -> Iterator[tuple[Cluster, LogindStandIn]]:
    workdir = containerd.base_dir / "cluster" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    logind_dir = workdir / "logind"
    with PrivateBus() as bus, \
            LogindStandIn(bus.address, inhibit_delay_max=30.0,
                          config_directory=str(logind_dir)) as logind, \
            EmulatedAPIServer(bookmark_interval=0.5) as server:
        monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", bus.address)
        cluster = Cluster(server, workdir, containerd.endpoint,
                          "--kubelet-actors-logind-conf-dir", str(logind_dir))
        config = workdir / "config.yaml"
        config.write_text(config.read_text() + "shutdownGracePeriod: 10s\n"
                          "shutdownGracePeriodCriticalPods: 5s\n")
        try:
            yield cluster, logind
        finally:
            cluster.daemon.stop()
            print(cluster.daemon.log_path.read_text(errors="replace"))


def ready_condition(cluster: Cluster) -> dict[str, Any]:
    node = cluster.get("node", NODE)
    (ready,) = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    return dict(ready)


def test_shutdown_turns_the_node_not_ready_and_fails_its_pods_emulated_apiserver(
        shutdown_cluster: tuple[Cluster, LogindStandIn]) -> None:
    cluster, logind = shutdown_cluster
    cluster.daemon.start()
    lock = wait_for(logind.held, 30.0, "the daemon's inhibitor lock")[0]
    assert logind.reloads == 0  # logind already allowed 30 s: no drop-in
    wait_for(lambda: cluster.node_ready() == "True", 30, "the Node Ready",
             ignore=(AssertionError,), interval=0.5)
    path = cluster.workdir / "web.json"
    path.write_text(json.dumps(pod_manifest("web")))
    cluster.kubectl.run("apply", "-f", str(path))
    wait_for(lambda: cluster.running("web"), 60, "web Running in the API", interval=0.5)

    logind.prepare_for_shutdown(True)
    ready = wait_for(lambda: (r := ready_condition(cluster))["status"] == "False" and r,
                     30, "the Node NotReady", interval=0.5)
    assert (ready["reason"], ready["message"]) == ("KubeletNotReady", "node is shutting down")

    def failed() -> Any:
        pod = cluster.pod("web")
        return pod if pod and pod["status"].get("phase") == "Failed" else None

    status = wait_for(failed, 60, "web Failed in the API", interval=0.5)["status"]
    assert (status["reason"], status["message"]) == ("Terminated", MESSAGE), status
    disruption = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    assert [(c["status"], c["reason"], c["message"]) for c in disruption] == [
        ("True", "TerminationByKubelet", MESSAGE)], status["conditions"]
    wait_for(lock.released.is_set, 30.0, "the inhibitor lock released")
    events = cluster.get("events", "-A")["items"]
    assert any(e["reason"] == "NodeShutdown"
               and e["message"] == "Shutdown manager detected shutdown event"
               for e in events), [e["reason"] for e in events]
