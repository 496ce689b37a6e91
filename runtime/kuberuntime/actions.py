"""compute_pod_actions: what it takes to bring a pod from its runtime state to its spec.

A pure function (upstream's computePodActions, with the sidecar-aware init container
logic that upstream uses by default): given the desired pod, what the runtime holds of it
and the current probe verdicts, it returns a PodActions plan. sync_pod carries plans out;
keeping the decision separate makes it testable with tables and replayable from traces.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from msgspec import Struct, field

from runtime.cri.types import ContainerState, NamespaceMode, SandboxState
from runtime.ids import ContainerID, SandboxID
from runtime.kuberuntime.ephemeral import ephemeral_to_start
from runtime.kuberuntime.labels import hash_container
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus, RuntimePodStatus
from runtime.pod.model import Container, Pod
from runtime.prober.results import ProbeResult


class KillReason(enum.Enum):
    """Why a running container is killed (upstream containerKillReason)."""

    NONE = ""
    UNKNOWN = "Unknown"
    LIVENESS_PROBE = "LivenessProbe"
    STARTUP_PROBE = "StartupProbe"


class ContainerToKill(Struct, frozen=True):
    container_id: ContainerID
    name: str
    message: str
    reason: KillReason = KillReason.NONE


class PodActions(Struct, frozen=True):
    """The plan for one sync of one pod. Indices point into spec.initContainers/containers."""

    kill_pod: bool = False
    create_sandbox: bool = False
    sandbox_id: SandboxID | None = None
    attempt: int = 0
    init_containers_to_start: tuple[int, ...] = ()
    containers_to_start: tuple[int, ...] = ()
    containers_to_kill: tuple[ContainerToKill, ...] = field(default=())
    ephemeral_containers_to_start: tuple[int, ...] = ()  # into spec.ephemeralContainers

    def kills(self) -> dict[ContainerID, ContainerToKill]:
        return {k.container_id: k for k in self.containers_to_kill}

    def changes_anything(self) -> bool:
        """Whether carrying the plan out would change the runtime."""
        return bool(self.kill_pod or self.create_sandbox or self.init_containers_to_start
                    or self.containers_to_start or self.containers_to_kill
                    or self.ephemeral_containers_to_start)


ProbeVerdicts = Mapping[ContainerID, ProbeResult]
_NONE: ProbeVerdicts = {}


def network_mode_for(pod: Pod) -> NamespaceMode:
    return NamespaceMode.NODE if pod.spec.host_network else NamespaceMode.POD


def should_restart_on_failure(pod: Pod) -> bool:
    return pod.spec.restart_policy != "Never"


def sandbox_changed(pod: Pod, status: RuntimePodStatus) -> tuple[bool, int, SandboxID | None]:
    """Whether the pod needs a new sandbox, the attempt number for it, and the current one."""
    if not status.sandbox_statuses:
        return True, 0, None
    newest = status.sandbox_statuses[0]
    next_attempt = newest.metadata.attempt + 1
    ready = sum(1 for s in status.sandbox_statuses if s.state == SandboxState.READY)
    if ready > 1 or newest.state != SandboxState.READY:
        return True, next_attempt, newest.id
    if newest.network_mode != network_mode_for(pod):
        return True, next_attempt, None
    if not pod.spec.host_network and not newest.ip:
        return True, next_attempt, newest.id
    return False, newest.metadata.attempt, newest.id


def container_changed(container: Container, status: ContainerRuntimeStatus) -> bool:
    return status.hash != hash_container(container)


def is_init_container_failed(status: ContainerRuntimeStatus) -> bool:
    if "OOMKilled" in status.reason:
        return True
    if status.state == ContainerState.EXITED and status.exit_code != 0:
        return True
    return status.state == ContainerState.UNKNOWN


def container_succeeded(container: Container, status: RuntimePodStatus) -> bool:
    found = status.find_container(container.name)
    return (
        found is not None and found.state == ContainerState.EXITED and found.exit_code == 0
    )


def should_container_be_restarted(
    container: Container, pod: Pod, status: RuntimePodStatus
) -> bool:
    """Upstream ShouldContainerBeRestarted, for a container that is not running."""
    if pod.metadata.deletion_timestamp is not None:
        return False
    found = status.find_container(container.name)
    if found is None:
        return True
    if found.state == ContainerState.RUNNING:
        return False
    if found.state in (ContainerState.UNKNOWN, ContainerState.CREATED):
        return True
    if pod.spec.restart_policy == "Never":
        return False
    return not (pod.spec.restart_policy == "OnFailure" and found.exit_code == 0)


def _has_any_regular_container_created(pod: Pod, status: RuntimePodStatus) -> bool:
    for container in pod.spec.containers:
        found = status.find_container(container.name)
        if found is not None and found.state in (
            ContainerState.CREATED,
            ContainerState.RUNNING,
            ContainerState.EXITED,
        ):
            return True
    return False


class _Plan:
    """The mutable scratch pad compute_pod_actions fills before freezing it."""

    def __init__(self, create: bool, sandbox_id: SandboxID | None, attempt: int) -> None:
        self.kill_pod = create
        self.create_sandbox = create
        self.sandbox_id = sandbox_id
        self.attempt = attempt
        self.init_to_start: list[int] = []
        self.to_start: list[int] = []
        self.to_kill: dict[ContainerID, ContainerToKill] = {}
        self.ephemeral_to_start: tuple[int, ...] = ()

    def kill(self, status: ContainerRuntimeStatus, message: str, reason: KillReason) -> None:
        self.to_kill[status.id] = ContainerToKill(status.id, status.name, message, reason)

    def freeze(self) -> PodActions:
        return PodActions(
            kill_pod=self.kill_pod,
            create_sandbox=self.create_sandbox,
            sandbox_id=self.sandbox_id,
            attempt=self.attempt,
            init_containers_to_start=tuple(self.init_to_start),
            containers_to_start=tuple(self.to_start),
            containers_to_kill=tuple(self.to_kill.values()),
            # A pod being killed starts nothing, debug containers included.
            ephemeral_containers_to_start=() if self.kill_pod else self.ephemeral_to_start,
        )


def compute_pod_actions(
    pod: Pod,
    status: RuntimePodStatus,
    liveness: ProbeVerdicts = _NONE,
    startup: ProbeVerdicts = _NONE,
) -> PodActions:
    """Plan one sync of ``pod`` given what the runtime holds of it and the probe verdicts."""
    create, attempt, sandbox_id = sandbox_changed(pod, status)
    plan = _Plan(create, sandbox_id, attempt)

    if create:
        if not should_restart_on_failure(pod) and attempt != 0 and status.container_statuses:
            # Everything already ran under restartPolicy Never: kill, never re-create.
            plan.create_sandbox = False
            return plan.freeze()
        to_start = [
            i
            for i, c in enumerate(pod.spec.containers)
            if not (pod.spec.restart_policy == "OnFailure" and container_succeeded(c, status))
        ]
        if not to_start and _has_any_regular_container_created(pod, status):
            plan.create_sandbox = False
            return plan.freeze()
        if pod.spec.init_containers:
            plan.init_to_start = [0]
            return plan.freeze()
        plan.to_start = to_start
        return plan.freeze()

    # Ephemeral containers may start before initialization is done (upstream's order).
    plan.ephemeral_to_start = ephemeral_to_start(pod, status)
    initialized = _compute_init_container_actions(pod, status, plan, liveness, startup)
    if plan.kill_pod or not initialized:
        return plan.freeze()

    keep = 0
    for index, container in enumerate(pod.spec.containers):
        found = status.find_container(container.name)
        if found is None or found.state != ContainerState.RUNNING:
            if should_container_be_restarted(container, pod, status):
                plan.to_start.append(index)
                if found is not None and found.state == ContainerState.UNKNOWN:
                    # It may still run: kill it first so two copies never run at once.
                    plan.kill(
                        found,
                        f'Container is in "{found.state.name.lower()}" state, '
                        "try killing it before restart",
                        KillReason.UNKNOWN,
                    )
            continue
        restart = should_restart_on_failure(pod)
        if container_changed(container, found):
            message = f"Container {container.name} definition changed"
            reason = KillReason.NONE
            restart = True  # a new spec is started whatever the policy
        elif liveness.get(found.id) == ProbeResult.FAILURE:
            message = f"Container {container.name} failed liveness probe"
            reason = KillReason.LIVENESS_PROBE
        elif startup.get(found.id) == ProbeResult.FAILURE:
            message = f"Container {container.name} failed startup probe"
            reason = KillReason.STARTUP_PROBE
        else:
            keep += 1
            continue
        if restart:
            message = f"{message}, will be restarted"
            plan.to_start.append(index)
        plan.kill(found, message, reason)

    if keep == 0 and not plan.to_start:
        plan.kill_pod = True
        plan.init_to_start = []  # sidecars alone must not keep a finished pod alive
    return plan.freeze()


def _compute_init_container_actions(
    pod: Pod,
    status: RuntimePodStatus,
    plan: _Plan,
    liveness: ProbeVerdicts,
    startup: ProbeVerdicts,
) -> bool:
    """Fill the init container part of the plan; True when the pod is initialized."""
    inits = pod.spec.init_containers
    if not inits:
        return True
    initialized = False
    for container in pod.spec.containers:
        found = status.find_container(container.name)
        # Exited regular containers may be left from a previous sandbox: not proof.
        if found is not None and found.state in (ContainerState.CREATED, ContainerState.RUNNING):
            initialized = True
            break
    previously_initialized = initialized
    restart_on_failure = should_restart_on_failure(pod)
    to_start: list[int] = []  # collected last to first, reversed at the end

    for i in range(len(inits) - 1, -1, -1):
        container = inits[i]
        found = status.find_container(container.name)
        sidecar = container.is_restartable_init
        if found is None:
            if previously_initialized and sidecar:
                to_start.append(i)
            continue
        if previously_initialized and not sidecar:
            continue  # after initialization only sidecars are kept running

        if found.state == ContainerState.CREATED:
            to_start.append(i)  # the runtime failed to start it: try again
        elif found.state == ContainerState.RUNNING:
            if sidecar:
                initialized = _running_sidecar(
                    pod, plan, container, found, i, previously_initialized, to_start,
                    liveness, startup, initialized,
                )
        elif found.state == ContainerState.EXITED:
            if sidecar:
                to_start.append(i)
            elif is_init_container_failed(found):
                if not restart_on_failure:
                    plan.kill_pod = True
                    plan.init_to_start = []
                    return False
                to_start.append(i)
            elif i == len(inits) - 1:
                initialized = True
            else:
                to_start.append(i + 1)
        else:  # unknown
            message = f'Init container is in "{found.state.name.lower()}" state, ' \
                "try killing it before restart"
            if not sidecar and not restart_on_failure:
                plan.kill_pod = True
                plan.init_to_start = []
                return False
            plan.kill(found, message, KillReason.UNKNOWN)
            to_start.append(i)
        previously_initialized = True

    if not previously_initialized:
        to_start.append(0)
    plan.init_to_start = list(reversed(to_start))
    return initialized


def _running_sidecar(
    pod: Pod,
    plan: _Plan,
    container: Container,
    found: ContainerRuntimeStatus,
    i: int,
    previously_initialized: bool,
    to_start: list[int],
    liveness: ProbeVerdicts,
    startup: ProbeVerdicts,
    initialized: bool,
) -> bool:
    """A running restartable init container: gate on startup, restart on change/liveness."""
    if container.startup_probe is not None:
        verdict = startup.get(found.id)
        if verdict is None:
            return initialized  # not probed yet: wait
        if verdict != ProbeResult.SUCCESS:
            if verdict == ProbeResult.FAILURE:
                plan.kill(
                    found,
                    f"Init container {container.name} failed startup probe",
                    KillReason.STARTUP_PROBE,
                )
                to_start.append(i)
            return initialized
    if i == len(pod.spec.init_containers) - 1:
        initialized = True
    elif not previously_initialized:
        to_start.append(i + 1)
    if container_changed(container, found):
        plan.kill(found, f"Init container {container.name} definition changed", KillReason.NONE)
        to_start.append(i)
        return initialized
    if container.liveness_probe is not None:
        verdict = liveness.get(found.id)
        if verdict == ProbeResult.FAILURE:
            plan.kill(
                found,
                f"Init container {container.name} failed liveness probe",
                KillReason.LIVENESS_PROBE,
            )
            to_start.append(i)
    return initialized
