"""Base pods and runtime statuses for the compute_pod_actions tables.

These rebuild the shapes of upstream's kuberuntime_manager_test.go helpers
(makeBasePodAndStatus and its WithInitContainers / WithRestartableInitContainers /
WithInitAndEphemeralContainers variants) with this project's values:

* the pod is ``foo`` in ``foo-ns`` (uid ``12345678``) with regular containers foo1..foo3
  on image ``busybox``;
* the runtime holds one READY sandbox ``sandboxID`` (attempt 0, IP 10.0.0.1, pod network
  namespace);
* every container status carries ``hash_container`` of the spec it was made from, so nothing
  reads as changed unless a case changes the spec (or the hash) on purpose.

Upstream leaves ``Spec.RestartPolicy`` empty in its base pod; the kubelet treats that exactly
like ``Always`` (only ``Never`` and ``OnFailure`` are tested for), which is this model's
default. Upstream's base pod also carries a v1.PodStatus; computePodActions only reads it for
in-place resize, which is not modelled, so it is left out.

A Scenario is the mutable scratch pad a case edits before the frozen inputs are built from
it: the pod (msgspec Structs are frozen, so edits replace it), the sandbox and container
statuses (newest first, as the runtime reports them), and the liveness and startup verdicts
that stand in for upstream's liveness and startup managers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from runtime.cri.types import (
    ContainerState,
    NamespaceMode,
    PodSandboxMetadata,
    PodSandboxStatus,
    SandboxState,
)
from runtime.ids import ContainerID, PodUID, SandboxID
from runtime.kuberuntime.labels import hash_container
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus, RuntimePodStatus
from runtime.pod.model import Container, EphemeralContainer, ObjectMeta, Pod, PodSpec, Probe
from runtime.prober.results import ProbeResult

POD_UID = "12345678"
POD_NAME = "foo"
POD_NAMESPACE = "foo-ns"
SANDBOX_ID = SandboxID("sandboxID")
SANDBOX_IP = "10.0.0.1"


@dataclass
class Scenario:
    """The inputs of one compute_pod_actions case, edited in place by the case's mutators."""

    pod: Pod
    sandboxes: list[PodSandboxStatus]
    containers: list[ContainerRuntimeStatus]
    liveness: dict[ContainerID, ProbeResult] = field(default_factory=dict)
    startup: dict[ContainerID, ProbeResult] = field(default_factory=dict)

    def status(self) -> RuntimePodStatus:
        return RuntimePodStatus(
            uid=PodUID(self.pod.metadata.uid),
            name=self.pod.metadata.name,
            namespace=self.pod.metadata.namespace,
            ips=(SANDBOX_IP,),
            sandbox_statuses=tuple(self.sandboxes),
            container_statuses=tuple(self.containers),
        )

    # --- sandbox edits ------------------------------------------------------------------

    def set_sandbox(self, index: int = 0, **changes: Any) -> Scenario:
        self.sandboxes[index] = msgspec.structs.replace(self.sandboxes[index], **changes)
        return self

    def set_sandbox_attempt(self, attempt: int, index: int = 0) -> Scenario:
        sandbox = self.sandboxes[index]
        metadata = msgspec.structs.replace(sandbox.metadata, attempt=attempt)
        self.sandboxes[index] = msgspec.structs.replace(sandbox, metadata=metadata)
        return self

    def clear_sandboxes(self) -> Scenario:
        self.sandboxes = []
        return self

    def sandbox_not_ready(self) -> Scenario:
        return self.set_sandbox(state=SandboxState.NOTREADY)

    # --- container status edits ---------------------------------------------------------

    def set_container(self, index: int, **changes: Any) -> Scenario:
        self.containers[index] = msgspec.structs.replace(self.containers[index], **changes)
        return self

    def set_containers(self, indexes: Iterable[int], **changes: Any) -> Scenario:
        for index in indexes:
            self.set_container(index, **changes)
        return self

    def set_all_containers(self, **changes: Any) -> Scenario:
        return self.set_containers(range(len(self.containers)), **changes)

    def keep_containers(self, start: int | None = None, stop: int | None = None) -> Scenario:
        """Keep only ``containers[start:stop]`` (upstream's ``status.ContainerStatuses[a:b]``)."""
        self.containers = self.containers[start:stop]
        return self

    def clear_containers(self) -> Scenario:
        self.containers = []
        return self

    def add_regular_statuses(self, state: ContainerState, exit_code: int = 0) -> Scenario:
        """Append a status for each regular container (ids id1.., hashed from the spec)."""
        for i, container in enumerate(self.pod.spec.containers, start=1):
            self.containers.append(status_for(container, f"id{i}", state, exit_code=exit_code))
        return self

    # --- probe verdicts -----------------------------------------------------------------

    def set_liveness(self, index: int, result: ProbeResult) -> Scenario:
        self.liveness[self.containers[index].id] = result
        return self

    def forget_liveness(self, index: int) -> Scenario:
        self.liveness.pop(self.containers[index].id, None)
        return self

    def set_startup(self, index: int, result: ProbeResult) -> Scenario:
        self.startup[self.containers[index].id] = result
        return self

    def forget_startup(self, index: int) -> Scenario:
        self.startup.pop(self.containers[index].id, None)
        return self


# --- pod edits (frozen Structs: each returns a new Pod) -----------------------------------


def with_spec(pod: Pod, **changes: Any) -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, **changes))


def restart_policy(policy: str) -> Callable[[Pod], Pod]:
    """A pod mutator setting spec.restartPolicy (upstream's most common mutatePodFn)."""

    def mutate(pod: Pod) -> Pod:
        return with_spec(pod, restart_policy=policy)

    return mutate


def with_init_container(pod: Pod, index: int, **changes: Any) -> Pod:
    inits = list(pod.spec.init_containers)
    inits[index] = msgspec.structs.replace(inits[index], **changes)
    return with_spec(pod, init_containers=tuple(inits))


# --- builders -----------------------------------------------------------------------------


def status_for(
    container: Container,
    container_id: str,
    state: ContainerState,
    *,
    exit_code: int = 0,
) -> ContainerRuntimeStatus:
    """A runtime status made from ``container``'s current spec."""
    return ContainerRuntimeStatus(
        id=ContainerID(container_id),
        name=container.name,
        state=state,
        created_at=0.0,
        exit_code=exit_code,
        image=container.image,
        hash=hash_container(container),
    )


def _base_sandbox() -> PodSandboxStatus:
    return PodSandboxStatus(
        id=SANDBOX_ID,
        metadata=PodSandboxMetadata(
            name=POD_NAME, uid="sandboxuid", namespace=POD_NAMESPACE, attempt=0
        ),
        state=SandboxState.READY,
        created_at=0.0,
        ip=SANDBOX_IP,
        network_mode=NamespaceMode.POD,
    )


def make_base_pod_and_status() -> Scenario:
    """Three running regular containers in a ready sandbox (upstream makeBasePodAndStatus)."""
    pod = Pod(
        metadata=ObjectMeta(uid=POD_UID, name=POD_NAME, namespace=POD_NAMESPACE),
        spec=PodSpec(
            containers=(
                Container(name="foo1", image="busybox"),
                Container(name="foo2", image="busybox"),
                Container(name="foo3", image="busybox"),
            ),
        ),
    )
    containers = [
        status_for(c, f"id{i}", ContainerState.RUNNING)
        for i, c in enumerate(pod.spec.containers, start=1)
    ]
    return Scenario(pod=pod, sandboxes=[_base_sandbox()], containers=containers)


def make_base_pod_and_status_with_init_containers() -> Scenario:
    """Three exited (succeeded) init containers and no regular container status yet."""
    base = make_base_pod_and_status()
    inits = tuple(Container(name=f"init{i}", image="bar-image") for i in (1, 2, 3))
    base.pod = with_spec(base.pod, init_containers=inits)
    base.containers = [
        status_for(c, f"initid{i}", ContainerState.EXITED) for i, c in enumerate(inits, start=1)
    ]
    return base


def make_base_pod_and_status_with_restartable_init_containers() -> Scenario:
    """Three running sidecars; the last two have (empty) liveness and startup probes.

    As upstream's table does before every case, the liveness and startup verdicts of the
    second and third sidecars are set to Success.
    """
    base = make_base_pod_and_status()
    inits = (
        Container(name="restartable-init-1", image="bar-image", restart_policy="Always"),
        Container(
            name="restartable-init-2",
            image="bar-image",
            restart_policy="Always",
            liveness_probe=Probe(),
            startup_probe=Probe(),
        ),
        Container(
            name="restartable-init-3",
            image="bar-image",
            restart_policy="Always",
            liveness_probe=Probe(),
            startup_probe=Probe(),
        ),
    )
    base.pod = with_spec(base.pod, init_containers=inits)
    base.containers = [
        status_for(c, f"initid{i}", ContainerState.RUNNING) for i, c in enumerate(inits, start=1)
    ]
    for index in (1, 2):
        base.set_liveness(index, ProbeResult.SUCCESS)
        base.set_startup(index, ProbeResult.SUCCESS)
    return base


def make_base_pod_and_status_with_init_and_ephemeral_containers() -> Scenario:
    """Running regular containers, one exited init container and a running "debug"
    ephemeral container (id ``debug1``)."""
    base = make_base_pod_and_status()
    init = Container(name="init1", image="bar-image")
    base.pod = with_spec(base.pod, init_containers=(init,), ephemeral_containers=(
        EphemeralContainer(name="debug", image="busybox"),))
    debug = Container(name="debug", image="busybox")
    base.containers.append(status_for(init, "initid1", ContainerState.EXITED))
    base.containers.append(status_for(debug, "debug1", ContainerState.RUNNING))
    return base
