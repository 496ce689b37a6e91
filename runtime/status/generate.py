"""The v1 PodStatus of a pod from its spec and what the runtime says (upstream
generateAPIPodStatus, convertToAPIContainerStatuses and getPhase), as a pure function.

The conditions are the kubelet's own (runtime.status.conditions) after the ones others set
in the pod's status (a readiness gate's, as the API holds them): those are kept as they
are, and the pod's readiness gates are evaluated against them (upstream's
GeneratePodReadyCondition).
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from runtime.cm.qos import pod_qos
from runtime.cri.types import ContainerState as CRIState
from runtime.ids import ContainerID
from runtime.kuberuntime.ephemeral import ephemeral_containers
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus, RuntimePodStatus
from runtime.kuberuntime.result import PodSyncResult
from runtime.pod.model import Container, Pod
from runtime.prober.results import ProbeResult
from runtime.status.conditions import owned_by_kubelet
from runtime.status.types import (
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    HostIP,
    PodCondition,
    PodIP,
    PodStatus,
    rfc3339,
)

TERMINAL_PHASES = ("Succeeded", "Failed")
READINESS_GATES_NOT_READY = "ReadinessGatesNotReady"
"""Upstream's reason for a pod whose containers are ready and a readiness gate is not."""
Verdicts = Mapping[ContainerID, ProbeResult]


def _terminated(cs: ContainerRuntimeStatus) -> ContainerStateTerminated:
    reason = cs.reason or ("Completed" if cs.exit_code == 0 else "Error")
    return ContainerStateTerminated(
        exit_code=cs.exit_code,
        reason=reason,
        message=cs.message,
        started_at=rfc3339(cs.started_at) if cs.started_at else "",
        finished_at=rfc3339(cs.finished_at) if cs.finished_at else "",
        container_id=f"containerd://{cs.id}",
    )


def container_status(
    container: Container,
    instances: tuple[ContainerRuntimeStatus, ...],
    sync: PodSyncResult | None,
    readiness: Verdicts,
    startup: Verdicts,
    default_waiting: str,
) -> ContainerStatus:
    """One container's v1 status from its runtime instances, newest first."""
    failure = sync.failure_for(container.name) if sync else None
    newest = instances[0] if instances else None
    last = ContainerState()
    if newest is None:
        reason = failure.error if failure else default_waiting
        message = failure.message if failure else ""
        return ContainerStatus(
            name=container.name,
            state=ContainerState(waiting=ContainerStateWaiting(reason=reason, message=message)),
            last_state=last,
            ready=False,
            restart_count=0,
            image=container.image,
            image_id="",
            started=False,
        )
    if len(instances) > 1 and instances[1].state == CRIState.EXITED:
        last = ContainerState(terminated=_terminated(instances[1]))
    ready = False
    started = False
    if newest.state == CRIState.RUNNING:
        state = ContainerState(running=ContainerStateRunning(started_at=rfc3339(newest.started_at)))
        started = container.startup_probe is None or startup.get(newest.id) == ProbeResult.SUCCESS
        ready = started and (
            container.readiness_probe is None or readiness.get(newest.id) == ProbeResult.SUCCESS
        )
    elif newest.state == CRIState.EXITED:
        state = ContainerState(terminated=_terminated(newest))
        if failure is not None:
            # Waiting to be restarted (CrashLoopBackOff, ErrImagePull, ...): the exit is
            # history now, as upstream shows it.
            last = state
            state = ContainerState(
                waiting=ContainerStateWaiting(reason=failure.error, message=failure.message)
            )
    else:  # created or unknown: not running yet
        reason = failure.error if failure else "ContainerCreating"
        state = ContainerState(
            waiting=ContainerStateWaiting(reason=reason, message=failure.message if failure else "")
        )
    return ContainerStatus(
        name=container.name,
        state=state,
        last_state=last,
        ready=ready,
        restart_count=newest.restart_count,
        image=container.image,
        image_id=newest.image_ref,
        container_id=f"containerd://{newest.id}",
        started=started,
    )


def _init_done(status: ContainerStatus, container: Container) -> bool:
    if container.is_restartable_init:
        return bool(status.started)
    t = status.state.terminated
    return t is not None and t.exit_code == 0


def _init_readiness(status: ContainerStatus, container: Container) -> ContainerStatus:
    """Upstream: a regular init container is ready once it exited 0."""
    if container.is_restartable_init:
        return status
    t = status.state.terminated
    return msgspec.structs.replace(status, ready=t is not None and t.exit_code == 0)


def _has_started(status: ContainerStatus) -> bool:
    """Upstream HasAnyRegularContainerStarted: the container runs or has run."""
    return status.state.running is not None or status.state.terminated is not None or (
        status.last_state.terminated is not None
    )


def pod_phase(pod: Pod, inits: tuple[ContainerStatus, ...],
              regular: tuple[ContainerStatus, ...]) -> str:
    """Upstream getPhase."""
    pending_init = failed_init = pending_sidecars = 0
    running = waiting = stopped = succeeded = 0
    for spec, st in zip(pod.spec.init_containers, inits, strict=True):
        t = st.state.terminated
        last = st.last_state.terminated
        if spec.is_restartable_init:
            # A sidecar counts like a regular container while it runs; once it stopped
            # it does not count at all.
            if st.state.running is not None:
                running += 1
                pending_sidecars += not st.started
            elif t is None and last is None:
                pending_sidecars += 1
                waiting += 1
        elif st.state.running is not None:
            pending_init += 1
        elif t is not None:
            failed_init += t.exit_code != 0
        elif st.state.waiting is not None and last is not None:
            failed_init += last.exit_code != 0
        else:
            pending_init += 1
    for st in regular:
        if st.state.running is not None:
            running += 1
        elif st.state.terminated is not None:
            stopped += 1
            succeeded += st.state.terminated.exit_code == 0
        elif st.state.waiting is not None and st.last_state.terminated is not None:
            stopped += 1
        else:
            waiting += 1
    if failed_init and pod.spec.restart_policy == "Never":
        return "Failed"
    initialized = any(_has_started(st) for st in regular)
    if pending_init or (pending_sidecars and not initialized) or waiting:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        policy = pod.spec.restart_policy
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"
    return "Pending"


def _condition(type_: str, ok: bool, reason: str, message: str, now: str) -> PodCondition:
    return PodCondition(
        type=type_,
        status="True" if ok else "False",
        reason="" if ok else reason,
        message="" if ok else message,
        last_transition_time=now,
    )


def _keep_transition(new: PodCondition, previous: PodStatus | None) -> PodCondition:
    old = previous.condition(new.type) if previous else None
    if old is not None and old.status == new.status:
        return PodCondition(
            type=new.type, status=new.status, reason=new.reason, message=new.message,
            last_transition_time=old.last_transition_time,
        )
    return new


def unready_gates(pod: Pod, conditions: tuple[PodCondition, ...]) -> str:
    """Why the pod's readiness gates keep it not ready, in upstream's words, one clause
    per gate whose condition is missing or not True ("" when every gate is True)."""
    by_type: dict[str, PodCondition] = {}
    for c in conditions:
        by_type.setdefault(c.type, c)  # upstream's GetPodConditionFromList: the first
    clauses: list[str] = []
    for gate in pod.spec.readiness_gates:
        found = by_type.get(gate.condition_type)
        if found is None:
            clauses.append(f"corresponding condition of pod readiness gate "
                           f"{_go_quote(gate.condition_type)} does not exist.")
        elif found.status != "True":
            clauses.append(f"the status of pod readiness gate {_go_quote(gate.condition_type)}"
                           f' is not "True", but {found.status}')
    return ", ".join(clauses)


def _go_quote(text: str) -> str:
    """Go's %q of a condition type: the API admits qualified names only, in which no
    character but these two would need escaping."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def generate_pod_status(
    pod: Pod,
    runtime_status: RuntimePodStatus,
    sync: PodSyncResult | None = None,
    readiness: Verdicts | None = None,
    startup: Verdicts | None = None,
    now: float = 0.0,
    previous: PodStatus | None = None,
    host_ip: str = "",
    others: tuple[PodCondition, ...] = (),
) -> PodStatus:
    """The pod's v1 status. A terminal phase in ``previous`` never goes back. ``others``
    are the conditions the pod's status holds that the kubelet does not own (the API's,
    in cluster mode): kept first, in their order, as upstream keeps them."""
    readiness = readiness or {}
    startup = startup or {}
    # Upstream: every container without an instance waits as PodInitializing when the pod
    # has init containers, else as ContainerCreating.
    default_waiting = "PodInitializing" if pod.spec.init_containers else "ContainerCreating"
    inits = tuple(
        _init_readiness(
            container_status(c, runtime_status.instances(c.name), sync, readiness, startup,
                             default_waiting), c)
        for c in pod.spec.init_containers
    )
    regular = tuple(
        container_status(c, runtime_status.instances(c.name), sync, readiness, startup,
                         default_waiting)
        for c in pod.spec.containers
    )
    # Ephemeral containers: reported, never ready, no part of the phase or conditions.
    ephemeral = tuple(
        msgspec.structs.replace(
            container_status(c, runtime_status.instances(c.name), sync, {}, {},
                             default_waiting), ready=False)
        for c in ephemeral_containers(pod)
    )
    phase = pod_phase(pod, inits, regular)
    if previous is not None and previous.phase in TERMINAL_PHASES:
        phase = previous.phase
    stamp = rfc3339(now)
    not_ready = [s.name for s, c in zip(inits, pod.spec.init_containers, strict=True)
                 if c.is_restartable_init and not s.ready]
    not_ready += [s.name for s in regular if not s.ready]
    not_init = [s.name for s, c in zip(inits, pod.spec.init_containers, strict=True)
                if not _init_done(s, c)]
    if phase in TERMINAL_PHASES:
        # Upstream: a finished pod's containers are not ready, for that reason.
        reason = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        ready_cond = (False, reason, "")
    else:
        ready_cond = (not not_ready, "ContainersNotReady",
                      f"containers with unready status: [{' '.join(not_ready)}]")
    initialized = (not not_init or phase == "Succeeded"
                   or any(_has_started(s) for s in regular))
    others = tuple(c for c in others if not owned_by_kubelet(c.type))
    before_ready = (
        _condition("PodReadyToStartContainers", runtime_status.ready_sandbox is not None, "", "",
                   stamp),
        _condition("Initialized", initialized, "ContainersNotInitialized",
                   f"containers with incomplete status: [{' '.join(not_init)}]", stamp),
    )
    pod_ready = ready_cond
    if ready_cond[0]:
        # Ready takes ContainersReady's reason while that is not True; only then do the
        # readiness gates count, against the conditions the status holds so far.
        gates = unready_gates(pod, others + before_ready)
        if gates:
            pod_ready = (False, READINESS_GATES_NOT_READY, gates)
    conditions = (
        *before_ready,
        _condition("Ready", *pod_ready, stamp),
        _condition("ContainersReady", *ready_cond, stamp),
        _condition("PodScheduled", True, "", "", stamp),
    )
    ips = runtime_status.ips
    if pod.spec.host_network and not ips and host_ip:
        ips = (host_ip,)  # upstream: a host-network pod's IPs are the node's
    start_time = previous.start_time if previous and previous.start_time else stamp
    return PodStatus(
        phase=phase,
        conditions=others + tuple(_keep_transition(c, previous) for c in conditions),
        host_ip=host_ip,
        host_ips=(HostIP(ip=host_ip),) if host_ip else (),
        pod_ip=ips[0] if ips else "",
        pod_ips=tuple(PodIP(ip=ip) for ip in ips),
        start_time=start_time,
        init_container_statuses=inits,
        container_statuses=regular,
        ephemeral_container_statuses=ephemeral,
        qos_class=qos_class(pod),
    )


def qos_class(pod: Pod) -> str:
    """Guaranteed, Burstable or BestEffort (upstream GetPodQOS, runtime.cm.qos)."""
    return pod_qos(pod)
