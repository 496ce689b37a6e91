"""Reserved resources in cluster mode: the daemon joined to the emulated API server with
--system-reserved and --kube-reserved reports the Node's status.allocatable as upstream's
MachineInfo setter computes it (capacity less both reservations and the hard eviction
thresholds), read with kubectl, and refuses a pod the API server bound to it whose memory
request fits the capacity but not the allocatable (OutOfmemory in the pod's status), while
a small pod runs. The kubepods limits once written, the Node has upstream's
NodeAllocatableEnforced event, read with kubectl. Its cgroup root is its own
(actors.app.testbed.own_cgroup_root).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import Bed, own_cgroup_root
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.eviction.api import float32
from runtime.pod.quantity import parse_quantity
from tests.e2e.test_cluster_emulated_apiserver import NODE, joined, pod_manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

BED = Bed("node-allocatable-cluster-test", "kat-resc-", "katrc0", "10.96.2.0/24")
MI = 1 << 20
GI = 1 << 30


def mem_total() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal in /proc/meminfo")


def with_memory(name: str, request: int) -> dict[str, Any]:
    pod = pod_manifest(name)
    pod["spec"]["containers"][0]["resources"] = {"requests": {"memory": str(request)}}
    return pod


def test_node_allocatable_leaves_the_reservations_out_emulated_apiserver(
        containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    with own_cgroup_root(BED) as root, joined(
            containerd, "--cgroup-root", root,
            "--system-reserved", "cpu=500m,memory=1Gi,ephemeral-storage=1Gi",
            "--kube-reserved", "memory=512Mi",
            "--eviction-hard", "memory.available<200Mi,nodefs.available<10%") as cluster:
        cluster.daemon.start()
        wait_for(lambda: cluster.node_ready() == "True", 30, "the Node Ready",
                 ignore=(AssertionError,), interval=0.5)
        def enforced() -> list[dict[str, Any]]:
            listed = cluster.kubectl.json(
                "get", "events", "--field-selector",
                f"involvedObject.kind=Node,involvedObject.name={NODE},"
                "reason=NodeAllocatableEnforced")
            return list(listed["items"])

        (event,) = wait_for(enforced, 30, "the NodeAllocatableEnforced event", interval=0.5)
        assert (event["type"], event["message"], event["source"]["component"]) == (
            "Normal", "Updated Node Allocatable limit across pods", "kubelet"), event
        status = cluster.get("node", NODE)["status"]
        capacity = {k: parse_quantity(v) for k, v in status["capacity"].items()}
        allocatable = {k: parse_quantity(v) for k, v in status["allocatable"].items()}
        memory = mem_total()
        assert capacity["memory"] == memory
        assert capacity["cpu"] == (os.cpu_count() or 1)
        # Huge pages come off allocatable memory too (none on most machines).
        pages = sum(v for k, v in capacity.items() if k.startswith("hugepages-"))
        assert allocatable["memory"] == memory - GI - 512 * MI - 200 * MI - pages
        assert allocatable["cpu"] * 1000 == (os.cpu_count() or 1) * 1000 - 500
        disk = int(capacity["ephemeral-storage"])
        assert allocatable["ephemeral-storage"] == disk - GI - int(disk * float32(0.1))
        assert allocatable["pods"] == capacity["pods"]

        too_big = int(allocatable["memory"]) + 256 * MI
        assert too_big < memory
        cluster.apply(with_memory("big", too_big))
        cluster.apply(with_memory("small", 16 * MI))
        wait_for(lambda: cluster.running("small"), 90, "small Running", interval=0.5)

        def refused() -> Any:
            pod = cluster.pod("big")
            return pod if pod and pod.get("status", {}).get("phase") == "Failed" else None

        big = wait_for(refused, 60, "big refused", interval=0.5)
        assert big["status"]["reason"] == "OutOfmemory", big["status"]
        assert big["status"]["message"].startswith(
            f"Pod was rejected: Node didn't have enough resource: memory, requested: "
            f"{too_big}, used: "), big["status"]
        assert big["status"]["message"].endswith(
            f"capacity: {int(allocatable['memory'])}"), big["status"]
        cluster.kubectl.run("delete", "pod", "small", "big", "--wait=false")
        wait_for(lambda: cluster.pod("small") is None, 60, "small deleted", interval=0.5)
