"""sync_pod and kill_pod on the fake runtime: upstream's order, back-offs, hooks, grace."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from runtime.clock import FakeClock
from runtime.cri.types import ContainerState, ExecResult, SandboxState
from runtime.errors import CRIError, CRINotFound
from runtime.events.recorder import HookOutput, ListRecorder
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.podstatus import RuntimePodStatus
from runtime.kuberuntime.result import PodSyncResult, StepResult
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import (
    Container,
    ExecAction,
    Lifecycle,
    LifecycleHandler,
    ObjectMeta,
    Pod,
    PodSpec,
)
from runtime.prober.results import ProbeResult
from runtime.status.generate import generate_pod_status
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"


def make_pod(
    *containers: Container,
    init: tuple[Container, ...] = (),
    policy: str = "Always",
    grace: int | None = 30,
    uid: str = "uid-1",
) -> Pod:
    return Pod(
        metadata=ObjectMeta(name="web", namespace="default", uid=uid, labels={"app": "web"}),
        spec=PodSpec(
            containers=containers,
            init_containers=init,
            restart_policy=policy,
            termination_grace_period_seconds=grace,
        ),
    )


def ctr(name: str, **kw: object) -> Container:
    return Container(name=name, image=IMAGE, image_pull_policy="IfNotPresent", **kw)  # type: ignore[arg-type]


class Node:
    """A manager on a fake runtime with a fake clock, and shorthands for the tests."""

    def __init__(self, tmp_path: Path) -> None:
        self.clock = FakeClock()
        self.fake = FakeRuntime(self.clock, images=[IMAGE])
        self.settings = NodeSettings(
            node_name="node", root_dir=str(tmp_path / "root"), pod_logs_dir=str(tmp_path / "logs")
        )
        self.manager = KubeRuntimeManager(self.fake, self.settings, self.clock)

    def status(self, pod: Pod) -> RuntimePodStatus:
        return self.manager.get_pod_status(PodUID(pod.uid), pod.metadata.name, "default")

    def sync(
        self, pod: Pod, liveness: dict[ContainerID, ProbeResult] | None = None
    ) -> PodSyncResult:
        return self.manager.sync_pod(pod, self.status(pod), liveness)

    def container(self, pod: Pod, name: str) -> ContainerID:
        found = self.status(pod).find_container(name)
        assert found is not None, f"no container {name}"
        return found.id

    def states(self, pod: Pod) -> list[tuple[str, ContainerState]]:
        return sorted((c.name, c.state) for c in self.status(pod).container_statuses)


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def test_new_pod_runs_sandbox_then_containers_in_order(node: Node) -> None:
    pod = make_pod(ctr("a"), ctr("b"))
    result = node.sync(pod)
    assert result.ok, str(result)
    methods = [c.method for c in node.fake.calls if c.method in (
        "run_pod_sandbox", "create_container", "start_container", "pull_image")]
    assert methods == ["run_pod_sandbox", "create_container", "start_container",
                       "create_container", "start_container"]
    assert node.states(pod) == [("a", ContainerState.RUNNING), ("b", ContainerState.RUNNING)]
    sandbox_id = node.status(pod).sandbox_statuses[0].id
    config = node.fake.sandbox_config(sandbox_id)
    assert config.labels[L.POD_UID] == "uid-1"
    assert config.labels["app"] == "web"
    assert config.log_directory.endswith("logs/default_web_uid-1")
    cc = node.fake.container_config(node.container(pod, "a"))
    assert cc.labels[L.CONTAINER_NAME] == "a"
    assert cc.annotations[L.CONTAINER_HASH] == L.hash_container(pod.spec.containers[0])
    assert cc.annotations[L.RESTART_COUNT] == "0"
    assert cc.log_path == "a/0.log"


def test_second_sync_changes_nothing(node: Node) -> None:
    pod = make_pod(ctr("a"))
    node.sync(pod)
    node.fake.clear_calls()
    result = node.sync(pod)
    assert result.ok and result.steps == ()
    mutating = {"run_pod_sandbox", "create_container", "start_container", "stop_container",
                "stop_pod_sandbox", "remove_container"}
    assert not [c for c in node.fake.calls if c.method in mutating]


def test_init_containers_run_one_at_a_time_to_completion(node: Node) -> None:
    pod = make_pod(ctr("app"), init=(ctr("i1"), ctr("i2")))
    node.sync(pod)
    assert node.states(pod) == [("i1", ContainerState.RUNNING)]
    assert node.sync(pod).steps == ()  # i1 still running: wait
    node.fake.exit_container(node.container(pod, "i1"), 0)
    node.sync(pod)
    assert ("i2", ContainerState.RUNNING) in node.states(pod)
    assert not any(name == "app" for name, _ in node.states(pod))
    node.fake.exit_container(node.container(pod, "i2"), 0)
    node.sync(pod)
    assert ("app", ContainerState.RUNNING) in node.states(pod)
    status = generate_pod_status(pod, node.status(pod))
    assert status.phase == "Running"
    assert status.condition("Initialized").status == "True"  # type: ignore[union-attr]


def test_failed_init_container_under_never_kills_the_pod(node: Node) -> None:
    pod = make_pod(ctr("app"), init=(ctr("i1"),), policy="Never")
    node.sync(pod)
    node.fake.exit_container(node.container(pod, "i1"), 3)
    result = node.sync(pod)
    assert result.ok
    assert node.fake.called("stop_pod_sandbox") == 1
    assert node.status(pod).sandbox_statuses[0].state == SandboxState.NOTREADY
    node.fake.clear_calls()
    node.sync(pod)  # upstream repeats the kill until the pod worker sees the terminal phase
    assert node.fake.called("run_pod_sandbox") == 0
    assert node.fake.called("create_container") == 0
    assert generate_pod_status(pod, node.status(pod)).phase == "Failed"


def test_failed_init_container_is_retried_under_always(node: Node) -> None:
    pod = make_pod(ctr("app"), init=(ctr("i1"),))
    node.sync(pod)
    node.fake.exit_container(node.container(pod, "i1"), 1)
    result = node.sync(pod)
    assert [s.action for s in result.steps] == ["StartContainer"]
    assert node.status(pod).find_container("i1").restart_count == 1  # type: ignore[union-attr]


def test_crash_loop_back_off_doubles_from_10s(node: Node) -> None:
    pod = make_pod(ctr("a"))
    node.sync(pod)
    node.fake.exit_container(node.container(pod, "a"), 1)
    assert node.sync(pod).ok  # first restart is immediate
    assert node.status(pod).find_container("a").restart_count == 1  # type: ignore[union-attr]
    node.fake.exit_container(node.container(pod, "a"), 1)
    result = node.sync(pod)
    (failure,) = result.failures
    assert failure.error == "CrashLoopBackOff"
    assert "back-off 10s" in failure.message
    assert failure.backoff_seconds == 10.0  # the delay as a number, for the trace tools
    status = generate_pod_status(pod, node.status(pod), result)
    (cs,) = status.container_statuses
    assert cs.state.waiting is not None and cs.state.waiting.reason == "CrashLoopBackOff"
    assert cs.last_state.terminated is not None and cs.last_state.terminated.exit_code == 1
    node.clock.step(9)
    assert node.sync(pod).failures[0].error == "CrashLoopBackOff"
    node.clock.step(1.5)
    assert node.sync(pod).ok
    node.fake.exit_container(node.container(pod, "a"), 1)
    node.clock.step(15)
    (failure,) = node.sync(pod).failures
    assert "back-off 20s" in failure.message and failure.backoff_seconds == 20.0
    node.clock.step(6)
    assert node.sync(pod).ok
    assert node.status(pod).find_container("a").restart_count == 3  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("policy", "exit_code", "restarted"),
    [
        ("Always", 0, True),
        ("Always", 1, True),
        ("OnFailure", 0, False),
        ("OnFailure", 2, True),
        ("Never", 0, False),
        ("Never", 2, False),
    ],
)
def test_restart_policy(node: Node, policy: str, exit_code: int, restarted: bool) -> None:
    pod = make_pod(ctr("a"), policy=policy)
    node.sync(pod)
    node.fake.exit_container(node.container(pod, "a"), exit_code)
    node.fake.clear_calls()
    node.sync(pod)
    assert (node.fake.called("create_container") == 1) is restarted
    if not restarted:
        # Nothing left to run: the sandbox is stopped, as upstream's KillPod does.
        assert node.fake.called("stop_pod_sandbox") == 1
        expected = "Succeeded" if exit_code == 0 else "Failed"
        if policy == "OnFailure" and exit_code == 0:
            expected = "Succeeded"
        assert generate_pod_status(pod, node.status(pod)).phase == expected


def test_changed_spec_restarts_the_container(node: Node) -> None:
    pod = make_pod(ctr("a"))
    node.sync(pod)
    old = node.container(pod, "a")
    changed = make_pod(ctr("a", args=("sleep", "1")))
    result = node.sync(changed)
    assert [s.action for s in result.steps] == ["KillContainer", "StartContainer"]
    assert node.fake.calls_to("stop_container")[0].args[0] == old
    assert node.container(changed, "a") != old


def test_liveness_failure_restarts_the_container(node: Node) -> None:
    pod = make_pod(ctr("a"))
    node.sync(pod)
    cid = node.container(pod, "a")
    result = node.sync(pod, liveness={cid: ProbeResult.FAILURE})
    assert [s.action for s in result.steps] == ["KillContainer", "StartContainer"]
    assert node.status(pod).find_container("a").restart_count == 1  # type: ignore[union-attr]


def test_kill_pod_runs_pre_stop_then_stops_with_grace_then_the_sandbox(node: Node) -> None:
    hook = Lifecycle(pre_stop=LifecycleHandler(exec=ExecAction(command=("sh", "-c", "bye"))))
    pod = make_pod(ctr("a", lifecycle=hook), grace=20)
    node.sync(pod)
    result = node.manager.kill_pod(pod, node.status(pod), None)
    assert result.ok
    order = [c.method for c in node.fake.calls if c.method in
             ("exec_sync", "stop_container", "stop_pod_sandbox")]
    assert order == ["exec_sync", "stop_container", "stop_pod_sandbox"]
    assert node.fake.calls_to("exec_sync")[0].args[1] == ("sh", "-c", "bye")
    assert node.fake.calls_to("stop_container")[0].args[1] == 20


@pytest.mark.parametrize(("grace", "deletion", "override", "expected"), [
    (30, None, None, 30),
    (1, None, None, 2),  # at least 2 s
    (30, 5, None, 5),  # deletion grace wins over the spec's
    (30, None, 5, 5),  # a kill option overrides the pod's grace
    (30, None, 0, 2),  # ... and the runtime still gets 2 s, as upstream's killContainer
])
def test_grace_period_resolution(
    node: Node, grace: int, deletion: int | None, override: int | None, expected: int
) -> None:
    pod = make_pod(ctr("a"), grace=grace)
    node.sync(pod)
    if deletion is not None:
        meta = ObjectMeta(name="web", namespace="default", uid="uid-1",
                          deletion_timestamp="2026-01-01T00:00:00Z",
                          deletion_grace_period_seconds=deletion)
        pod = Pod(metadata=meta, spec=pod.spec)
    node.manager.kill_pod(pod, node.status(pod), override)
    assert node.fake.calls_to("stop_container")[0].args[1] == expected


@pytest.mark.parametrize("hook", ["pre_stop", "post_start"])
def test_a_failed_hook_s_event_keeps_its_output_beside_it(node: Node, hook: str) -> None:
    """Upstream's event says only "PreStopHook failed" (or PostStartHook), lest secrets
    leak through events; the output and exit code go beside it, for the node's record."""
    recorder = ListRecorder()
    node.manager.events = node.manager.images.events = node.manager.containers.events = recorder
    handler = LifecycleHandler(exec=ExecAction(command=("drain",)))
    lifecycle = (Lifecycle(pre_stop=handler) if hook == "pre_stop"
                 else Lifecycle(post_start=handler))
    pod = make_pod(ctr("a", lifecycle=lifecycle))
    if hook == "post_start":
        node.fake.set_exec_result(None, ("drain",), ExecResult(b"cache ", b"not found", 3))
    node.sync(pod)
    node.fake.set_exec_result(None, ("drain",), ExecResult(b"cache ", b"not found", 3))
    node.manager.kill_pod(pod, node.status(pod), None)
    reason = "FailedPreStopHook" if hook == "pre_stop" else "FailedPostStartHook"
    (event,) = recorder.find(reason)
    assert event.message == ("PreStopHook failed" if hook == "pre_stop"
                             else "PostStartHook failed")
    assert event.hook == HookOutput("cache not found", 3)


def test_orphan_is_killed_with_grace_and_pre_stop_from_its_annotations(node: Node) -> None:
    hook = Lifecycle(pre_stop=LifecycleHandler(exec=ExecAction(command=("echo", "x"))))
    pod = make_pod(ctr("a", lifecycle=hook), grace=12)
    node.sync(pod)
    # A restarted kubelet that no longer has the spec: only the runtime's labels remain.
    result = node.manager.kill_pod(None, node.status(pod), None)
    assert result.ok
    assert node.fake.calls_to("exec_sync")[0].args[1] == ("echo", "x")
    assert node.fake.calls_to("stop_container")[0].args[1] == 12


def test_remove_pod_sandboxes_takes_the_containers_and_skips_sandboxes_already_gone(
    node: Node,
) -> None:
    pod = make_pod(ctr("a"))
    node.sync(pod)
    status = node.status(pod)
    assert node.manager.kill_pod(pod, status, None).ok
    node.fake.fail("remove_pod_sandbox", CRINotFound("RemovePodSandbox", "gone", "NOT_FOUND"))
    node.manager.remove_pod_sandboxes(status)  # the runtime forgot it first: not an error
    node.manager.remove_pod_sandboxes(status)
    assert node.status(pod).sandbox_statuses == ()
    assert node.status(pod).container_statuses == ()
    node.fake.fail("remove_pod_sandbox", CRIError("RemovePodSandbox", "busy"))
    with pytest.raises(CRIError):
        node.manager.remove_pod_sandboxes(status)


def crash_and_fail_a_pull(node: Node, pod: Pod) -> None:
    """Leave one crash-loop and one image-pull back-off entry for ``pod``."""
    node.sync(pod)
    node.fake.exit_container(node.container(pod, "a"), 1)
    node.sync(pod)


def backoff_entries(node: Node) -> tuple[int, int]:
    return len(node.manager.containers.crash_backoff), len(node.manager.images.backoff)


def test_removing_a_pod_forgets_its_back_offs_but_not_other_pods(node: Node) -> None:
    missing = Container(name="pull", image="localhost:5000/not/there:1")
    pods = [make_pod(ctr("a"), missing, uid=uid) for uid in ("uid-1", "uid-2")]
    for pod in pods:
        crash_and_fail_a_pull(node, pod)
    assert backoff_entries(node) == (2, 2)
    status = node.status(pods[0])
    assert node.manager.kill_pod(pods[0], status, None).ok
    node.manager.remove_pod_sandboxes(status)
    assert backoff_entries(node) == (1, 1)
    node.clock.step(601)  # the other pod's entries idle for longer than twice the maximum
    node.manager.forget_pod(PodUID("uid-gone"))
    assert backoff_entries(node) == (0, 0)


def test_post_start_failure_kills_the_container(node: Node) -> None:
    hook = Lifecycle(post_start=LifecycleHandler(exec=ExecAction(command=("false",))))
    pod = make_pod(ctr("a", lifecycle=hook))
    node.fake.set_exec_result(None, ("false",), ExecResult(b"", b"nope", 1))
    result = node.sync(pod)
    (failure,) = result.failures
    assert failure.error == "PostStartHookError"
    assert "exited with 1" in failure.message
    assert node.fake.called("stop_container") == 1


@pytest.mark.parametrize(("method", "reason"), [
    ("create_container", "CreateContainerError"),
    ("start_container", "RunContainerError"),
])
def test_container_start_errors_carry_upstream_reasons(
    node: Node, method: str, reason: str
) -> None:
    node.fake.fail(method, CRIError(method, "boom"))
    result = node.sync(make_pod(ctr("a")))
    assert result.failures[0].error == reason
    assert "boom" in result.failures[0].message


def test_sandbox_failure_starts_no_container(node: Node) -> None:
    node.fake.fail("run_pod_sandbox", CRIError("RunPodSandbox", "no network"))
    result = node.sync(make_pod(ctr("a")))
    assert [(s.action, s.error) for s in result.steps] == [
        ("CreatePodSandbox", "CreatePodSandboxError")]
    assert node.fake.called("create_container") == 0


def test_missing_image_fails_that_pod_only(node: Node) -> None:
    missing = Container(name="a", image="localhost:5000/nope:1", image_pull_policy="IfNotPresent")
    bad = make_pod(missing, uid="uid-bad")
    good = make_pod(ctr("a"), uid="uid-good")
    pull_failed = node.sync(bad).failures[0]
    assert pull_failed.error == "ErrImagePull" and pull_failed.backoff_seconds is None
    assert node.sync(good).ok
    backing_off = node.sync(bad).failures[0]
    assert backing_off.error == "ImagePullBackOff" and backing_off.backoff_seconds == 10.0


def test_only_a_back_off_step_carries_its_delay_in_json() -> None:
    """Steps that are not back-off waits encode as before the field existed (old traces
    replay against them unchanged); a back-off step's delay decodes back as a number."""
    worked = StepResult("StartContainer", "a")
    assert msgspec.json.decode(msgspec.json.encode(worked)) == {
        "action": "StartContainer", "target": "a", "error": "", "message": ""}
    assert msgspec.convert({"action": "StartContainer", "target": "a"}, StepResult) == worked
    waiting = StepResult("StartContainer", "a", "CrashLoopBackOff", "back-off 40s ...", 40.0)
    encoded = msgspec.json.encode(PodSyncResult((worked, waiting)))
    decoded = msgspec.json.decode(encoded, type=PodSyncResult)
    assert decoded.steps[1].backoff_seconds == 40.0 and decoded.steps[0].backoff_seconds is None
    assert decoded == PodSyncResult((worked, waiting))


def test_restart_count_continues_from_the_log_dir(node: Node) -> None:
    pod = make_pod(ctr("a"))
    log_dir = Path(node.settings.pod_log_dir("default", "web", "uid-1")) / "a"
    log_dir.mkdir(parents=True)
    (log_dir / "3.log").write_text("old\n")
    node.sync(pod)
    assert node.status(pod).find_container("a").restart_count == 4  # type: ignore[union-attr]


def test_dead_sandbox_is_recreated_with_the_next_attempt(node: Node) -> None:
    pod = make_pod(ctr("app"), init=(ctr("i1"),))
    node.sync(pod)
    node.fake.exit_container(node.container(pod, "i1"), 0)
    node.sync(pod)
    old = node.status(pod).sandbox_statuses[0]
    node.fake.stop_pod_sandbox(old.id)
    node.sync(pod)
    newest = node.status(pod).sandbox_statuses[0]
    assert newest.id != old.id and newest.metadata.attempt == 1
    # initialization starts over in the new sandbox: the old init container is purged
    assert [n for n, _ in node.states(pod)].count("i1") == 1
    assert ("i1", ContainerState.RUNNING) in node.states(pod)


def test_repeated_syncs_never_duplicate_a_container(node: Node) -> None:
    pod = make_pod(ctr("a"), ctr("b"))
    for _ in range(5):
        node.sync(pod)
    running = [n for n, s in node.states(pod) if s == ContainerState.RUNNING]
    assert sorted(running) == ["a", "b"]
    assert node.fake.called("run_pod_sandbox") == 1


def test_a_pruned_init_container_instance_goes_with_its_logs(node: Node) -> None:
    """Upstream's removeContainer: the instance the prune removes takes its log and the
    files its rotations left with it; the instance kept keeps its log."""
    pod = make_pod(ctr("app"), init=(ctr("i1"),))
    node.sync(pod)
    first = node.container(pod, "i1")
    node.fake.exit_container(first, 1)
    node.sync(pod)  # the first restart is immediate
    second = node.container(pod, "i1")
    first_log = Path(node.fake.container_status(first).log_path)
    rotated = first_log.with_name(first_log.name + ".20261126-101010")
    rotated.write_text("rotated\n")
    assert first_log.exists()
    node.fake.exit_container(second, 1)
    node.sync(pod)  # two exited instances: the older one is pruned
    assert first not in {c.id for c in node.status(pod).container_statuses}
    assert not first_log.exists() and not rotated.exists()
    assert Path(node.fake.container_status(second).log_path).exists()
