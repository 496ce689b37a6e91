"""generate_pod_status, pod_phase, container_status and qos_class against upstream's rules
(kubelet_pods.go getPhase / convertToAPIContainerStatuses, status/generate.go)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from runtime.cri.types import ContainerState as CRIState
from runtime.cri.types import PodSandboxMetadata, PodSandboxStatus, SandboxState
from runtime.ids import ContainerID, PodUID, SandboxID
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus, RuntimePodStatus
from runtime.kuberuntime.result import PodSyncResult, StepResult
from runtime.pod.model import (
    Container,
    ExecAction,
    ObjectMeta,
    Pod,
    PodSpec,
    Probe,
    ResourceRequirements,
)
from runtime.prober.results import ProbeResult
from runtime.status.generate import container_status, generate_pod_status, pod_phase, qos_class
from runtime.status.types import (
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    PodStatus,
    rfc3339,
)

T0 = 1_700_000_000.0
PROBE = Probe(exec=ExecAction(command=("true",)))


def make_pod(
    containers: tuple[str, ...] = ("app",),
    inits: tuple[str, ...] = (),
    policy: str = "Always",
    sidecars: tuple[str, ...] = (),
    **container_fields: Any,
) -> Pod:
    return Pod(
        metadata=ObjectMeta(name="web", namespace="default", uid="uid-1"),
        spec=PodSpec(
            restart_policy=policy,
            init_containers=tuple(
                Container(name=n, image="busybox:1.35",
                          restart_policy="Always" if n in sidecars else None)
                for n in inits
            ),
            containers=tuple(
                Container(name=n, image="busybox:1.35", **container_fields) for n in containers
            ),
        ),
    )


def inst(
    name: str,
    state: CRIState,
    exit_code: int = 0,
    created: float = T0,
    cid: str = "",
    restart: int = 0,
    reason: str = "",
) -> ContainerRuntimeStatus:
    return ContainerRuntimeStatus(
        id=ContainerID(cid or f"{name}-{int(created)}"),
        name=name,
        state=state,
        created_at=created,
        started_at=created + 1 if state != CRIState.CREATED else 0.0,
        finished_at=created + 2 if state == CRIState.EXITED else 0.0,
        exit_code=exit_code,
        image="docker.io/library/busybox:1.35",
        image_ref="sha256:abc",
        restart_count=restart,
        reason=reason,
    )


def sandbox(ready: bool = True) -> PodSandboxStatus:
    return PodSandboxStatus(
        id=SandboxID("sb-1"),
        metadata=PodSandboxMetadata(name="web", uid="uid-1", namespace="default"),
        state=SandboxState.READY if ready else SandboxState.NOTREADY,
        created_at=T0 - 10,
        ip="10.88.0.2" if ready else "",
    )


def runtime_status(
    *containers: ContainerRuntimeStatus, ready: bool = True, ips: tuple[str, ...] = ("10.88.0.2",)
) -> RuntimePodStatus:
    return RuntimePodStatus(
        uid=PodUID("uid-1"),
        name="web",
        namespace="default",
        ips=ips if ready else (),
        sandbox_statuses=(sandbox(ready),),
        container_statuses=tuple(sorted(containers, key=lambda c: c.created_at, reverse=True)),
    )


def failed(target: str, reason: str, message: str = "back-off") -> PodSyncResult:
    return PodSyncResult(steps=(
        StepResult("StartContainer", "other"),
        StepResult("StartContainer", target, error=reason, message=message),
    ))


R, E, C = CRIState.RUNNING, CRIState.EXITED, CRIState.CREATED

# --- phase -------------------------------------------------------------------------------

PHASES: list[tuple[str, Pod, tuple[ContainerRuntimeStatus, ...], PodSyncResult | None, str]] = [
    ("nothing created yet", make_pod(), (), None, "Pending"),
    ("created, not started", make_pod(), (inst("app", C),), None, "Pending"),
    ("running", make_pod(), (inst("app", R),), None, "Running"),
    ("one running one waiting", make_pod(("a", "b")), (inst("a", R),), None, "Pending"),
    ("Always, exited 0", make_pod(), (inst("app", E, 0),), None, "Running"),
    ("Always, exited 1", make_pod(), (inst("app", E, 1),), None, "Running"),
    ("Never, all succeeded", make_pod(policy="Never"), (inst("app", E, 0),), None, "Succeeded"),
    ("Never, one failed", make_pod(("a", "b"), policy="Never"),
     (inst("a", E, 0), inst("b", E, 2)), None, "Failed"),
    ("OnFailure, all succeeded", make_pod(policy="OnFailure"), (inst("app", E, 0),), None,
     "Succeeded"),
    ("OnFailure, one failed", make_pod(policy="OnFailure"), (inst("app", E, 1),), None,
     "Running"),
    ("OnFailure, crash-looping", make_pod(policy="OnFailure"), (inst("app", E, 1),),
     failed("app", "CrashLoopBackOff"), "Running"),
    ("Never, one running one failed", make_pod(("a", "b"), policy="Never"),
     (inst("a", R), inst("b", E, 1)), None, "Running"),
    ("init container running", make_pod(inits=("init",)), (inst("init", R),), None, "Pending"),
    ("init container not started", make_pod(inits=("init",)), (), None, "Pending"),
    ("init done, app not started", make_pod(inits=("init",)), (inst("init", E, 0),), None,
     "Pending"),
    ("init done, app running", make_pod(inits=("init",)),
     (inst("init", E, 0), inst("app", R, created=T0 + 5)), None, "Running"),
    ("init failed under Never", make_pod(inits=("init",), policy="Never"),
     (inst("init", E, 1),), None, "Failed"),
    ("init failed under Always", make_pod(inits=("init",)), (inst("init", E, 1),), None,
     "Pending"),
    ("init crash-looping under OnFailure", make_pod(inits=("init",), policy="OnFailure"),
     (inst("init", E, 1),), failed("init", "CrashLoopBackOff"), "Pending"),
    ("second init pending", make_pod(inits=("i1", "i2")), (inst("i1", E, 0),), None, "Pending"),
    ("sidecar started, app running", make_pod(inits=("side",), sidecars=("side",)),
     (inst("side", R), inst("app", R, created=T0 + 5)), None, "Running"),
    ("sidecar running keeps a finished pod Running",
     make_pod(inits=("side",), sidecars=("side",), policy="Never"),
     (inst("side", R), inst("app", E, 0, created=T0 + 5)), None, "Running"),
    ("stopped sidecar does not count",
     make_pod(inits=("side",), sidecars=("side",), policy="Never"),
     (inst("side", E, 137), inst("app", E, 0, created=T0 + 5)), None, "Succeeded"),
]


@pytest.mark.parametrize(("case", "pod", "containers", "sync", "phase"), PHASES,
                         ids=[p[0] for p in PHASES])
def test_phase(case: str, pod: Pod, containers: tuple[ContainerRuntimeStatus, ...],
               sync: PodSyncResult | None, phase: str) -> None:
    status = generate_pod_status(pod, runtime_status(*containers), sync=sync, now=T0)
    assert status.phase == phase, case
    assert pod_phase(pod, status.init_container_statuses, status.container_statuses) == phase


@pytest.mark.parametrize("terminal", ["Succeeded", "Failed"])
def test_terminal_phase_never_goes_back(terminal: str) -> None:
    pod = make_pod(policy="Never")
    previous = PodStatus(phase=terminal)
    status = generate_pod_status(pod, runtime_status(inst("app", R)), now=T0, previous=previous)
    assert status.phase == terminal


def test_non_terminal_previous_phase_is_recomputed() -> None:
    status = generate_pod_status(make_pod(), runtime_status(inst("app", R)), now=T0,
                                 previous=PodStatus(phase="Pending"))
    assert status.phase == "Running"


# --- container states --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "name", "reason"),
    [
        (make_pod(), "app", "ContainerCreating"),
        (make_pod(inits=("init",)), "app", "PodInitializing"),
        (make_pod(inits=("init",)), "init", "PodInitializing"),
    ],
    ids=["no-init", "regular-with-init", "init"],
)
def test_no_instance_waits(pod: Pod, name: str, reason: str) -> None:
    status = generate_pod_status(pod, runtime_status(), now=T0)
    cs = next(s for s in status.init_container_statuses + status.container_statuses
              if s.name == name)
    assert cs.state == ContainerState(waiting=ContainerStateWaiting(reason=reason))
    assert cs.image == "busybox:1.35"
    assert not cs.ready
    assert cs.started is False


def test_sync_failure_without_instance_is_the_waiting_reason() -> None:
    status = generate_pod_status(make_pod(), runtime_status(),
                                 sync=failed("app", "ErrImagePull", "not found"), now=T0)
    waiting = status.container_statuses[0].state.waiting
    assert waiting == ContainerStateWaiting(reason="ErrImagePull", message="not found")


def test_running_state() -> None:
    pod = make_pod()
    cs = generate_pod_status(pod, runtime_status(inst("app", R, cid="c1", restart=2)),
                             now=T0).container_statuses[0]
    assert cs.state == ContainerState(running=ContainerStateRunning(started_at=rfc3339(T0 + 1)))
    assert (cs.ready, cs.started, cs.restart_count) == (True, True, 2)
    assert (cs.container_id, cs.image_id) == ("containerd://c1", "sha256:abc")
    assert cs.last_state == ContainerState()


@pytest.mark.parametrize(
    ("exit_code", "cri_reason", "reason"),
    [(0, "Completed", "Completed"), (1, "Error", "Error"), (137, "OOMKilled", "OOMKilled"),
     (0, "", "Completed"), (3, "", "Error")],
)
def test_exited_is_terminated(exit_code: int, cri_reason: str, reason: str) -> None:
    cs = generate_pod_status(
        make_pod(policy="Never"),
        runtime_status(inst("app", E, exit_code, cid="c1", reason=cri_reason)), now=T0,
    ).container_statuses[0]
    assert cs.state.terminated == ContainerStateTerminated(
        exit_code=exit_code, reason=reason, started_at=rfc3339(T0 + 1),
        finished_at=rfc3339(T0 + 2), container_id="containerd://c1",
    )
    assert not cs.ready
    assert cs.started is False


@pytest.mark.parametrize("reason", ["CrashLoopBackOff", "ErrImagePull", "RunContainerError"])
def test_exited_with_sync_failure_is_waiting_with_last_state(reason: str) -> None:
    cs = generate_pod_status(make_pod(), runtime_status(inst("app", E, 1, cid="c1")),
                             sync=failed("app", reason, "msg"), now=T0).container_statuses[0]
    assert cs.state == ContainerState(waiting=ContainerStateWaiting(reason=reason, message="msg"))
    assert cs.last_state.terminated is not None
    assert cs.last_state.terminated.exit_code == 1
    assert cs.last_state.terminated.container_id == "containerd://c1"


def test_failure_of_another_container_does_not_apply() -> None:
    cs = generate_pod_status(make_pod(), runtime_status(inst("app", E, 1)),
                             sync=failed("sidecar", "CrashLoopBackOff"), now=T0)
    assert cs.container_statuses[0].state.terminated is not None


@pytest.mark.parametrize(
    ("sync", "reason"),
    [(None, "ContainerCreating"), (failed("app", "PostStartHookError"), "PostStartHookError")],
)
def test_created_is_waiting(sync: PodSyncResult | None, reason: str) -> None:
    cs = generate_pod_status(make_pod(), runtime_status(inst("app", C)), sync=sync,
                             now=T0).container_statuses[0]
    assert cs.state.waiting is not None and cs.state.waiting.reason == reason
    assert cs.container_id.startswith("containerd://")


def test_second_older_exited_instance_is_last_state() -> None:
    old = inst("app", E, 2, created=T0, cid="old", reason="Error")
    new = inst("app", R, created=T0 + 20, cid="new", restart=1)
    status = generate_pod_status(make_pod(), runtime_status(old, new), now=T0 + 30)
    cs = status.container_statuses[0]
    assert cs.state.running is not None
    assert cs.container_id == "containerd://new"
    assert cs.restart_count == 1
    assert cs.last_state.terminated is not None
    assert (cs.last_state.terminated.exit_code, cs.last_state.terminated.container_id) == (
        2, "containerd://old")


def test_container_status_direct() -> None:
    c = Container(name="app", image="busybox:1.35")
    cs = container_status(c, (), None, {}, {}, "PodInitializing")
    assert cs.state.waiting == ContainerStateWaiting(reason="PodInitializing")


# --- readiness and started -----------------------------------------------------------------

CID = ContainerID("c1")
READY_CASES = [
    ("no probes", {}, None, None, True, True),
    ("readiness success", {"readiness_probe": PROBE}, ProbeResult.SUCCESS, None, True, True),
    ("readiness failure", {"readiness_probe": PROBE}, ProbeResult.FAILURE, None, False, True),
    ("readiness unknown", {"readiness_probe": PROBE}, None, None, False, True),
    ("startup unknown", {"startup_probe": PROBE}, None, None, False, False),
    ("startup failure", {"startup_probe": PROBE}, None, ProbeResult.FAILURE, False, False),
    ("startup success", {"startup_probe": PROBE}, None, ProbeResult.SUCCESS, True, True),
    ("both, not started", {"startup_probe": PROBE, "readiness_probe": PROBE},
     ProbeResult.SUCCESS, None, False, False),
    ("both, started, not ready", {"startup_probe": PROBE, "readiness_probe": PROBE},
     ProbeResult.FAILURE, ProbeResult.SUCCESS, False, True),
    ("both ok", {"startup_probe": PROBE, "readiness_probe": PROBE},
     ProbeResult.SUCCESS, ProbeResult.SUCCESS, True, True),
]


@pytest.mark.parametrize(("case", "fields", "ready_v", "startup_v", "ready", "started"),
                         READY_CASES, ids=[c[0] for c in READY_CASES])
def test_ready_and_started(case: str, fields: dict[str, Any], ready_v: ProbeResult | None,
                           startup_v: ProbeResult | None, ready: bool, started: bool) -> None:
    pod = make_pod(**fields)
    readiness = {CID: ready_v} if ready_v else {}
    startup = {CID: startup_v} if startup_v else {}
    status = generate_pod_status(pod, runtime_status(inst("app", R, cid="c1")),
                                 readiness=readiness, startup=startup, now=T0)
    cs = status.container_statuses[0]
    assert (cs.ready, cs.started) == (ready, started), case
    ready_cond = status.condition("Ready")
    assert ready_cond is not None and ready_cond.status == ("True" if ready else "False")


def test_verdict_for_another_instance_does_not_count() -> None:
    pod = make_pod(readiness_probe=PROBE)
    status = generate_pod_status(pod, runtime_status(inst("app", R, cid="c2")),
                                 readiness={CID: ProbeResult.SUCCESS}, now=T0)
    assert not status.container_statuses[0].ready


def test_finished_init_container_is_ready() -> None:
    status = generate_pod_status(make_pod(inits=("init",)),
                                 runtime_status(inst("init", E, 0)), now=T0)
    assert status.init_container_statuses[0].ready


# --- conditions ----------------------------------------------------------------------------


def cond(status: PodStatus, type_: str) -> tuple[str, str, str]:
    c = status.condition(type_)
    assert c is not None
    return c.status, c.reason, c.message


COND_CASES: list[tuple[str, Pod, RuntimePodStatus, dict[str, tuple[str, str, str]]]] = [
    ("all running", make_pod(("a", "b")), runtime_status(inst("a", R), inst("b", R)), {
        "PodScheduled": ("True", "", ""),
        "PodReadyToStartContainers": ("True", "", ""),
        "Initialized": ("True", "", ""),
        "ContainersReady": ("True", "", ""),
        "Ready": ("True", "", ""),
    }),
    ("one not running", make_pod(("a", "b")), runtime_status(inst("a", R)), {
        "ContainersReady": ("False", "ContainersNotReady", "containers with unready status: [b]"),
        "Ready": ("False", "ContainersNotReady", "containers with unready status: [b]"),
    }),
    ("sandbox not ready", make_pod(), runtime_status(ready=False), {
        "PodReadyToStartContainers": ("False", "", ""),
        "PodScheduled": ("True", "", ""),
        "ContainersReady": ("False", "ContainersNotReady",
                            "containers with unready status: [app]"),
    }),
    ("init pending", make_pod(inits=("i1", "i2")), runtime_status(inst("i1", E, 0)), {
        "Initialized": ("False", "ContainersNotInitialized",
                        "containers with incomplete status: [i2]"),
    }),
    ("init done", make_pod(inits=("i1",)),
     runtime_status(inst("i1", E, 0), inst("app", R, created=T0 + 5)), {
        "Initialized": ("True", "", ""),
        "Ready": ("True", "", ""),
    }),
    ("succeeded", make_pod(policy="Never"), runtime_status(inst("app", E, 0)), {
        "ContainersReady": ("False", "PodCompleted", ""),
        "Ready": ("False", "PodCompleted", ""),
    }),
    ("failed", make_pod(policy="Never"), runtime_status(inst("app", E, 1)), {
        "ContainersReady": ("False", "PodFailed", ""),
        "Ready": ("False", "PodFailed", ""),
    }),
]


@pytest.mark.parametrize(("case", "pod", "rs", "expected"), COND_CASES,
                         ids=[c[0] for c in COND_CASES])
def test_conditions(case: str, pod: Pod, rs: RuntimePodStatus,
                    expected: dict[str, tuple[str, str, str]]) -> None:
    status = generate_pod_status(pod, rs, now=T0)
    assert [c.type for c in status.conditions] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    for type_, want in expected.items():
        assert cond(status, type_) == want, (case, type_)
    assert all(c.last_transition_time == rfc3339(T0) for c in status.conditions)


def test_last_transition_time_kept_while_unchanged() -> None:
    pod = make_pod()
    first = generate_pod_status(pod, runtime_status(inst("app", C)), now=T0)
    second = generate_pod_status(pod, runtime_status(inst("app", R)), now=T0 + 60,
                                 previous=first)
    scheduled, ready = second.condition("PodScheduled"), second.condition("Ready")
    assert scheduled is not None and scheduled.last_transition_time == rfc3339(T0)
    assert ready is not None and ready.status == "True"
    assert ready.last_transition_time == rfc3339(T0 + 60)
    third = generate_pod_status(pod, runtime_status(inst("app", R)), now=T0 + 120,
                                previous=second)
    ready3 = third.condition("Ready")
    assert ready3 is not None and ready3.last_transition_time == rfc3339(T0 + 60)
    assert third.start_time == first.start_time == rfc3339(T0)


# --- IPs, qos, JSON ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ips", "pod_ip", "pod_ips"),
    [((), "", ()), (("10.88.0.2",), "10.88.0.2", ("10.88.0.2",)),
     (("10.88.0.2", "fd00::2"), "10.88.0.2", ("10.88.0.2", "fd00::2"))],
)
def test_pod_ips(ips: tuple[str, ...], pod_ip: str, pod_ips: tuple[str, ...]) -> None:
    status = generate_pod_status(make_pod(), runtime_status(ips=ips), now=T0, host_ip="192.0.2.1")
    assert status.pod_ip == pod_ip
    assert tuple(p.ip for p in status.pod_ips) == pod_ips
    assert status.host_ip == "192.0.2.1"


def res(limits: dict[str, Any] | None = None,
        requests: dict[str, Any] | None = None) -> ResourceRequirements:
    return ResourceRequirements(limits=limits or {}, requests=requests or {})


QOS = [
    ("none", [None], "BestEffort"),
    ("empty", [res()], "BestEffort"),
    ("limits only", [res({"cpu": "1", "memory": "64Mi"})], "Guaranteed"),
    ("equal", [res({"cpu": "1", "memory": "64Mi"}, {"cpu": "1", "memory": "64Mi"})],
     "Guaranteed"),
    ("requests lower", [res({"cpu": "1", "memory": "64Mi"}, {"cpu": "500m"})], "Burstable"),
    ("requests only", [res(None, {"cpu": "100m"})], "Burstable"),
    ("memory limit only", [res({"memory": "64Mi"})], "Burstable"),
    ("one of two", [res({"cpu": "1", "memory": "1Gi"}), None], "Burstable"),
]


@pytest.mark.parametrize(("case", "resources", "qos"), QOS, ids=[q[0] for q in QOS])
def test_qos_class(case: str, resources: list[ResourceRequirements | None], qos: str) -> None:
    pod = Pod(metadata=ObjectMeta(name="p", uid="u"), spec=PodSpec(containers=tuple(
        Container(name=f"c{i}", image="busybox", resources=r) for i, r in enumerate(resources))))
    assert qos_class(pod) == qos
    assert generate_pod_status(pod, runtime_status(), now=T0).qos_class == qos


def test_json_uses_kubernetes_field_names() -> None:
    old = inst("app", E, 1, created=T0, cid="old")
    new = inst("app", R, created=T0 + 20, cid="new", restart=1)
    status = generate_pod_status(make_pod(), runtime_status(old, new), now=T0 + 30,
                                 host_ip="192.0.2.1")
    doc = msgspec.json.decode(msgspec.json.encode(status))
    assert {"phase", "conditions", "hostIP", "podIP", "podIPs", "startTime", "qosClass",
            "containerStatuses"} <= set(doc)
    cs = doc["containerStatuses"][0]
    assert {"name", "state", "lastState", "ready", "restartCount", "image", "imageID",
            "containerID", "started"} <= set(cs)
    assert cs["containerID"] == "containerd://new"
    assert cs["restartCount"] == 1
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert cs["lastState"]["terminated"]["containerID"] == "containerd://old"
    assert "startedAt" in cs["state"]["running"]
    assert doc["podIPs"] == [{"ip": "10.88.0.2"}]
    assert "lastTransitionTime" in doc["conditions"][0]
    back = msgspec.json.decode(msgspec.json.encode(status), type=PodStatus)
    assert back == status


def test_container_status_json_roundtrip() -> None:
    cs = ContainerStatus(name="x", state=ContainerState(waiting=ContainerStateWaiting(reason="A")),
                         last_state=ContainerState(), ready=False, restart_count=0, image="i",
                         image_id="")
    # The fields the v1 type always carries are encoded even when empty, as Go does.
    assert msgspec.json.decode(msgspec.json.encode(cs)) == {
        "name": "x", "state": {"waiting": {"reason": "A"}}, "lastState": {}, "ready": False,
        "restartCount": 0, "image": "i", "imageID": ""}
