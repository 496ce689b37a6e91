"""The pod's cap on termination messages, as upstream's status manager applies it.

Upstream's normalizeStatus (pkg/kubelet/status/status_manager.go) gives every container of
the pod (regular, init and ephemeral) an even share of 12 KiB and cuts each terminated
state's message, current and last, to its first that many bytes, on every status update.
"""

from __future__ import annotations

import msgspec

from runtime.kuberuntime.termination_message import cut, per_container_share
from runtime.pod.model import Pod
from runtime.status.types import ContainerState, ContainerStatus, PodStatus


def _cut_state(state: ContainerState, limit: int) -> ContainerState:
    t = state.terminated
    if t is None or len(t.message.encode("utf-8")) <= limit:
        return state
    return msgspec.structs.replace(
        state, terminated=msgspec.structs.replace(t, message=cut(t.message, limit)))


def _cut(status: ContainerStatus, limit: int) -> ContainerStatus:
    state = _cut_state(status.state, limit)
    last = _cut_state(status.last_state, limit)
    if state is status.state and last is status.last_state:
        return status
    return msgspec.structs.replace(status, state=state, last_state=last)


def cap_termination_messages(pod: Pod, status: PodStatus) -> PodStatus:
    """``status`` with each container's termination messages cut to its share."""
    spec = pod.spec
    limit = per_container_share(
        len(spec.containers) + len(spec.init_containers) + len(spec.ephemeral_containers))
    return msgspec.structs.replace(
        status,
        init_container_statuses=tuple(_cut(s, limit) for s in status.init_container_statuses),
        container_statuses=tuple(_cut(s, limit) for s in status.container_statuses),
        ephemeral_container_statuses=tuple(
            _cut(s, limit) for s in status.ephemeral_container_statuses),
    )
