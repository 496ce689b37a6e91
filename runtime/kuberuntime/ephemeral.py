"""Ephemeral containers: debug containers added to a running pod.

Upstream (pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions and SyncPod):
an ephemeral container of the spec that has no status in the runtime is started in the
pod's current sandbox, before the init containers (it may run while initialization is not
done); it is never restarted and never killed on its own, and it stops with the pod. It is
started as a container made of its EphemeralContainerCommon fields. With
``targetContainerName`` it joins the PID namespace of that running container (CRI
NamespaceMode TARGET with target_id); a target that never ran is a
CreateContainerConfigError, "unable to find target container <name>".
Validation forbids ports, probes, lifecycle and resources on ephemeral containers; they are
left out here too, so nothing of the kind runs for one.
"""

from __future__ import annotations

from runtime.errors import SyncError
from runtime.ids import ContainerID
from runtime.kuberuntime.podstatus import RuntimePodStatus
from runtime.pod.model import Container, EphemeralContainer, Pod


def as_container(ephemeral: EphemeralContainer) -> Container:
    """The Container an ephemeral container runs as (upstream's EphemeralContainerCommon)."""
    return Container(
        name=ephemeral.name,
        image=ephemeral.image,
        command=ephemeral.command,
        args=ephemeral.args,
        working_dir=ephemeral.working_dir,
        env=ephemeral.env,
        env_from=ephemeral.env_from,
        volume_mounts=ephemeral.volume_mounts,
        volume_devices=ephemeral.volume_devices,
        termination_message_path=ephemeral.termination_message_path,
        termination_message_policy=ephemeral.termination_message_policy,
        image_pull_policy=ephemeral.image_pull_policy,
        security_context=ephemeral.security_context,
        stdin=ephemeral.stdin,
        stdin_once=ephemeral.stdin_once,
        tty=ephemeral.tty,
    )


def ephemeral_containers(pod: Pod) -> tuple[Container, ...]:
    return tuple(as_container(e) for e in pod.spec.ephemeral_containers)


def ephemeral_to_start(pod: Pod, status: RuntimePodStatus) -> tuple[int, ...]:
    """Indices of the ephemeral containers that never ran: only those start (never again)."""
    return tuple(i for i, e in enumerate(pod.spec.ephemeral_containers)
                 if status.find_container(e.name) is None)


def target_id(pod: Pod, name: str, status: RuntimePodStatus) -> ContainerID | None:
    """The newest instance of the container whose PID namespace the ephemeral container
    ``name`` joins, None when it names no target (upstream getTargetID)."""
    ephemeral = next((e for e in pod.spec.ephemeral_containers if e.name == name), None)
    if ephemeral is None or not ephemeral.target_container_name:
        return None
    # Upstream asks only that the target has a status; the runtime refuses one that is
    # not running when the debug container is created.
    target = status.find_container(ephemeral.target_container_name)
    if target is None:
        raise SyncError("CreateContainerConfigError",
                        f"unable to find target container {ephemeral.target_container_name}")
    return target.id
