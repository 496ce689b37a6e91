"""Which runtime object a stream goes to: upstream's findContainer and sandbox lookup.

Upstream's kubelet asks the runtime afresh for each exec, attach or port-forward
(kubelet_pods.go findContainer: GetPods(all=false), so only running containers, matched by
the pod's full name and the container's name; kuberuntime GetPortForward: the pod's
sandboxes by UID label, newest first). These functions do the same over CRI lists.
"""

from __future__ import annotations

from runtime.cri.service import RuntimeService
from runtime.cri.types import ContainerFilter, ContainerState, SandboxFilter
from runtime.ids import ContainerID, SandboxID
from runtime.kuberuntime import labels


def running_container(runtime: RuntimeService, namespace: str, pod: str,
                      container: str) -> ContainerID | None:
    """The running container ``container`` of pod ``namespace/pod``, or None."""
    found = runtime.list_containers(ContainerFilter(
        state=ContainerState.RUNNING,
        label_selector={labels.POD_NAMESPACE: namespace, labels.POD_NAME: pod,
                        labels.CONTAINER_NAME: container}))
    if not found:
        return None
    return max(found, key=lambda c: c.created_at).id


def newest_sandbox(runtime: RuntimeService, uid: str) -> SandboxID | None:
    """The newest sandbox of the pod with ``uid`` (in any state), or None."""
    found = runtime.list_pod_sandbox(SandboxFilter(label_selector={labels.POD_UID: uid}))
    if not found:
        return None
    return max(found, key=lambda s: s.created_at).id
