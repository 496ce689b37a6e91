"""Sidecar termination order, ported from upstream's kuberuntime_termination_order_test.go
(TestTerminationOrderingSidecarStopAfterMain, ...SidecarsInReverseOrder, ...ObeysGrace)
without timing: the order in which containers get their turn, and the grace bound with an
injected wait; then through the runtime manager's kill_pod on the fake runtime."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from runtime.clock import FakeClock
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.termination_order import TerminationOrdering, prerequisites
from runtime.pod.model import (
    Container,
    ExecAction,
    Lifecycle,
    LifecycleHandler,
    ObjectMeta,
    Pod,
    PodSpec,
)
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"


def _ctr(name: str, sidecar: bool = False, lifecycle: Lifecycle | None = None) -> Container:
    return Container(name=name, image=IMAGE, image_pull_policy="IfNotPresent",
                     restart_policy="Always" if sidecar else None, lifecycle=lifecycle)


def _pod(inits: tuple[Container, ...], mains: tuple[Container, ...], grace: int = 30) -> Pod:
    return Pod(metadata=ObjectMeta(name="bar", namespace="new", uid="12345678"),
               spec=PodSpec(init_containers=inits, containers=mains,
                            termination_grace_period_seconds=grace))


SIDECARS = _pod((_ctr("sc1", True), _ctr("sc2", True), _ctr("sc3", True)), (_ctr("main"),))


@pytest.mark.parametrize(("pod", "expected"), [
    (_pod((_ctr("init", True),), (_ctr("main"),)), {"init": ("main",)}),
    (SIDECARS, {"sc3": ("main",), "sc2": ("main", "sc3"), "sc1": ("main", "sc2")}),
    # A regular init container is no sidecar: it neither waits nor is waited on.
    (_pod((_ctr("sc1", True), _ctr("setup"), _ctr("sc2", True)), (_ctr("a"), _ctr("b"))),
     {"sc2": ("a", "b"), "sc1": ("a", "b", "sc2")}),
    (_pod((), (_ctr("main"),)), {}),
])
def test_prerequisites(pod: Pod, expected: dict[str, tuple[str, ...]]) -> None:
    assert prerequisites(pod) == expected


def _names(pod: Pod) -> list[str]:
    return [c.name for c in (*pod.spec.init_containers, *pod.spec.containers)]


def test_sidecars_stop_after_main_and_in_reverse_order() -> None:
    ordering = TerminationOrdering(SIDECARS, _names(SIDECARS), FakeClock())
    turns: list[str] = []
    lock = threading.Lock()

    def stop(name: str) -> None:
        ordering.wait_for_turn(name, 30)
        with lock:
            turns.append(name)
        ordering.container_terminated(name)

    threads = [threading.Thread(target=stop, args=(n,)) for n in ("sc1", "sc2", "sc3", "main")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert turns == ["main", "sc3", "sc2", "sc1"]


def test_a_container_that_is_not_running_is_not_waited_for() -> None:
    ordering = TerminationOrdering(SIDECARS, ["sc1"], FakeClock())
    assert ordering.wait_for_turn("sc1", 30) == 0.0  # main, sc2, sc3 are not running


def test_the_wait_obeys_the_grace_period() -> None:
    clock = FakeClock()
    waited: list[float] = []

    def never(event: threading.Event, timeout: float) -> bool:
        waited.append(timeout)
        clock.step(timeout)  # the whole grace passes without the main container stopping
        return False

    ordering = TerminationOrdering(SIDECARS, _names(SIDECARS), clock, never)
    assert ordering.wait_for_turn("sc1", 2) == 2.0
    assert waited == [2.0]  # gave up after the first prerequisite: no time left
    assert ordering.wait_for_turn("main", 2) == 0.0
    assert ordering.wait_for_turn("sc1", 0) == 0.0  # no grace, no wait


def test_kill_pod_stops_sidecars_last_each_after_its_pre_stop(tmp_path: Path) -> None:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=[IMAGE])
    settings = NodeSettings("node", root_dir=str(tmp_path / "root"),
                            pod_logs_dir=str(tmp_path / "logs"))
    manager = KubeRuntimeManager(fake, settings, clock)
    hook = Lifecycle(pre_stop=LifecycleHandler(exec=ExecAction(command=("sh", "-c", "bye"))))
    pod = _pod((_ctr("sc1", True, hook), _ctr("sc2", True, hook)), (_ctr("a"), _ctr("b")),
               grace=10)
    for _ in range(4):  # sidecars one by one, then the regular containers
        manager.sync_pod(pod, manager.get_pod_status(PodUID(pod.uid), "bar", "new"))
    status = manager.get_pod_status(PodUID(pod.uid), "bar", "new")
    assert sorted(c.name for c in status.container_statuses if c.is_running) == [
        "a", "b", "sc1", "sc2"]
    names = {c.id: c.name for c in status.container_statuses}
    result = manager.kill_pod(pod, status, None)
    assert result.ok, str(result)
    stops = [names[c.args[0]] for c in fake.calls_to("stop_container")]
    assert sorted(stops[:2]) == ["a", "b"] and stops[2:] == ["sc2", "sc1"]
    assert [c.args[1] for c in fake.calls_to("stop_container")] == [10, 10, 10, 10]
    assert len(fake.calls_to("exec_sync")) == 2  # each sidecar's preStop ran
