"""The sync loop admits each new pod against its node (runtime.pod.admission.admit), as
upstream's HandlePodAdditions: a refused pod is Failed with upstream's reason and message
and never reaches a pod worker; the others run; terminated pods do not count."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from actors.kubelet.sync_loop import SyncLoopSettings
from actors.kubelet.tree import ReplayConfig
from runtime.cri.types import SandboxState
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.admission import Node as AdmissionNode
from runtime.pod.admission import node_labels
from runtime.pod.model import Pod, PodSecurityContext, ResourceRequirements, Sysctl
from runtime.status.types import PodStatus
from tests.helpers import wait_for
from tests.unit.kubelet.test_sync_loop import Node, pod

NODE = AdmissionNode(
    name="node", labels=node_labels("node", "linux", "amd64", {"disk": "ssd"}),
    allocatable={"cpu": "2", "memory": "4Gi", "ephemeral-storage": "10Gi"})
SETTINGS = SyncLoopSettings(node=NODE, allowed_unsafe_sysctls=("kernel.msg*",))


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path, admission=SETTINGS)
    yield n
    n.stop()


def rejected(node: Node, uid: str) -> PodStatus:
    def failed() -> PodStatus | None:
        status = node.statuses().get(uid)
        return status if status is not None and status.phase == "Failed" else None

    status = wait_for(failed, 5.0, f"{uid} to be rejected")
    assert status is not None and node.running(uid) == []
    return status


def test_a_pod_whose_node_selector_does_not_match_is_failed_and_the_others_run(
        node: Node) -> None:
    other = pod("u1", "other")
    wrong = pod("u2", "wrong")
    wrong = replace(wrong, spec=replace(wrong.spec, node_selector={"disk": "hdd"}))
    right = pod("u3", "right")
    right = replace(right, spec=replace(right.spec, node_selector={
        "disk": "ssd", "kubernetes.io/os": "linux", "kubernetes.io/hostname": "node"}))
    node.snapshot(other, wrong, right)
    node.until("the matching pods to run",
               lambda: node.running("u1") == ["c"] and node.running("u3") == ["c"])
    status = rejected(node, "u2")
    assert (status.reason, status.message) == ("NodeAffinity", (
        "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node "
        "affinity/selector"))
    assert status.qos_class == "BestEffort" and status.start_time


def test_unsafe_sysctls_need_the_allowlist(node: Node) -> None:
    def with_sysctl(uid: str, name: str) -> Pod:
        p = pod(uid, uid)
        return replace(p, spec=replace(p.spec, security_context=PodSecurityContext(
            sysctls=(Sysctl(name=name, value="1"),))))

    node.snapshot(with_sysctl("safe", "net.ipv4.tcp_syncookies"),
                  with_sysctl("allowed", "kernel.msgmax"),
                  with_sysctl("unsafe", "net.core.somaxconn"))
    node.until("the allowed ones to run",
               lambda: node.running("safe") == ["c"] and node.running("allowed") == ["c"])
    status = rejected(node, "unsafe")
    assert (status.reason, status.message) == (
        "SysctlForbidden", 'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not '
        "allowlisted")


def test_requests_beyond_allocatable_are_out_of_cpu(node: Node) -> None:
    big = pod("big", "big")
    container = replace(big.spec.containers[0], resources=ResourceRequirements(
        requests={"cpu": "1500m"}))
    big = replace(big, spec=replace(big.spec, containers=(container,)))
    second = replace(big, metadata=replace(big.metadata, uid="second", name="second"))
    node.snapshot(big, second)
    node.until("the first to run", lambda: node.running("big") == ["c"])
    status = rejected(node, "second")
    assert (status.reason, status.message) == ("OutOfcpu", (
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 1500, used: "
        "1500, capacity: 2000"))


def test_a_terminated_pod_no_longer_counts_towards_max_pods(tmp_path: Path) -> None:
    node = Node(tmp_path, max_pods=1, admission=SETTINGS)
    try:
        done = pod("done", "done")
        done = replace(done, spec=replace(done.spec, restart_policy="Never"))
        node.snapshot(done)
        node.until("the first pod to run", lambda: node.running("done") == ["c"])
        (container,) = node.fake.list_containers()
        node.fake.exit_container(container.id, 0)
        node.until("the first pod to succeed",
                   lambda: node.statuses()["done"].phase == "Succeeded")
        node.until("its worker to terminate (sandbox stopped)",
                   lambda: all(s.state == SandboxState.NOTREADY
                               for s in node.fake.list_pod_sandbox()))
        node.snapshot(done, pod("next", "next"))
        node.until("the next pod to run", lambda: node.running("next") == ["c"])
    finally:
        node.stop()


def test_a_rejected_pod_removed_from_its_source_leaves_pods(node: Node) -> None:
    wrong = pod("u2", "wrong")
    wrong = replace(wrong, spec=replace(wrong.spec, node_selector={"disk": "hdd"}))
    node.snapshot(wrong)
    rejected(node, "u2")
    node.snapshot()
    node.until("its status to go", lambda: "u2" not in node.statuses())


def test_a_trace_header_from_before_admission_names_its_node() -> None:
    """Old headers have no supervisor.node: read (converted from their format,
    actors.kubelet.trace_compat), the sync loop admits against a node named as the
    kubelet's, with no labels, so static pods (spec.nodeName set) still run."""
    from actors.core.trace.compat import CONVERTERS
    from actors.kubelet import trace_compat  # noqa: F401 - registers its converters

    header = ReplayConfig(node=NodeSettings("node-a"), supervisor=SETTINGS).to_header()
    del header["supervisor"]["node"], header["supervisor"]["allowed_unsafe_sysctls"]
    file_header: dict[str, Any] = {"k": "header", "v": 3, "config": header}
    CONVERTERS.upgrade(file_header, [])
    config = ReplayConfig.from_header(file_header["config"])
    assert config.supervisor.node == AdmissionNode(name="node-a")
    assert config.supervisor.allowed_unsafe_sysctls == ()
    assert config.supervisor.admission_node().allocatable == {"pods": "110"}
    assert ReplayConfig.from_header(
        ReplayConfig(node=NodeSettings("n"), supervisor=SETTINGS).to_header()
    ).supervisor == SETTINGS
