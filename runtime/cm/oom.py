"""A container's oom_score_adj by its pod's QoS (upstream pkg/kubelet/qos/policy.go
GetContainerOOMScoreAdjust).

Guaranteed and node-critical pods are killed last (-997), BestEffort first (1000);
Burstable containers sit in between by the share of the node's memory they request,
in [3, 999], so a Burstable container always outlives BestEffort ones and dies before
Guaranteed ones. A sidecar gets no more than the regular container asking for least.
"""

from __future__ import annotations

from typing import Final

from runtime.cm.aggregate import aggregate_container_requests, requests_of
from runtime.cm.qos import BEST_EFFORT, GUARANTEED, pod_qos
from runtime.cm.resources import value
from runtime.pod.model import Container, Pod
from runtime.pod.quantity import parse_quantity

POD_INFRA_OOM_ADJ: Final = -998
KUBELET_OOM_SCORE_ADJ: Final = -999
GUARANTEED_OOM_SCORE_ADJ: Final = -997
BESTEFFORT_OOM_SCORE_ADJ: Final = 1000
SYSTEM_CRITICAL_PRIORITY: Final = 2_000_000_000
NODE_CRITICAL_CLASS: Final = "system-node-critical"


def is_critical_pod(pod: Pod) -> bool:
    """upstream kubelettypes.IsCriticalPod: static, mirror, or priority >= 2e9."""
    mirror = "kubernetes.io/config.mirror" in pod.metadata.annotations
    priority = pod.spec.priority
    return pod.is_static or mirror or (priority is not None
                                       and priority >= SYSTEM_CRITICAL_PRIORITY)


def is_node_critical_pod(pod: Pod) -> bool:
    return is_critical_pod(pod) and pod.spec.priority_class_name == NODE_CRITICAL_CLASS


def _memory_request(container: Container) -> int:
    amount = requests_of(container).get("memory")
    return value(amount) if amount is not None else 0


def _remaining_per_container(pod: Pod) -> int:
    """The pod-level memory request no container asks for, shared equally among all
    containers (upstream remainingPodMemReqPerContainer)."""
    res = pod.spec.resources
    if res is None or "memory" not in res.requests:
        return 0
    pod_memory = value(parse_quantity(res.requests["memory"]))
    if pod_memory == 0:
        return 0
    containers = aggregate_container_requests(pod).get("memory")
    remaining = pod_memory - (value(containers) if containers is not None else 0)
    count = len(pod.spec.containers) + len(pod.spec.init_containers)
    if not count:
        return 0
    # Go's integer division truncates toward zero.
    return remaining // count if remaining >= 0 else -(-remaining // count)


def _is_sidecar(pod: Pod, container: Container) -> bool:
    return container.is_restartable_init and any(
        c.name == container.name for c in pod.spec.init_containers)


def container_oom_score_adjust(pod: Pod, container: Container, memory_capacity: int) -> int:
    """The oom_score_adj for ``container`` of ``pod`` on a node with that much memory."""
    if is_node_critical_pod(pod):
        return GUARANTEED_OOM_SCORE_ADJ
    qos = pod_qos(pod)
    if qos == GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos == BEST_EFFORT:
        return BESTEFFORT_OOM_SCORE_ADJ
    capacity = max(memory_capacity, 1)
    remaining = _remaining_per_container(pod)
    adjust = 1000 - 1000 * (_memory_request(container) + remaining) // capacity
    if _is_sidecar(pod, container) and pod.spec.containers:
        smallest = min(_memory_request(c) for c in pod.spec.containers) + remaining
        adjust = min(adjust, 1000 - 1000 * smallest // capacity)
    floor = 1000 + GUARANTEED_OOM_SCORE_ADJ
    if adjust < floor:
        return floor
    if adjust == BESTEFFORT_OOM_SCORE_ADJ:
        return adjust - 1
    return adjust
