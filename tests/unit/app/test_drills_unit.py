"""The drills' parts that need no containerd: the fault plan, its hooks, the invariants,
and the runtime manager's fix for a container created but never started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.app.drills import invariants as inv
from actors.app.drills.catalog import DRILLS
from actors.app.drills.cli import main as drill_main
from actors.core.faults import DrillFault
from runtime.clock import FakeClock
from runtime.cri.types import ContainerState
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"


# --- the invariants ----------------------------------------------------------------------


def c(id: str, pod: str, state: str = inv.RUNNING, name: str = "main") -> inv.SeenContainer:
    return inv.SeenContainer(id, pod, name, state)


def test_orphans_duplicates_leftovers() -> None:
    seen = [c("1", "a"), c("2", "b"), c("3", "a", inv.EXITED), c("4", "a"), c("5", "a", "CREATED")]
    assert inv.orphans(seen, ["a"]) == ["orphan container 2 (b/main, RUNNING)"]
    assert inv.orphans([c("9", "x", inv.EXITED)], []) == []  # exited: nothing runs
    assert inv.duplicates(seen) == ["2 running instances of a/main"]
    assert inv.leftovers(seen) == ["container 5 of a/main left CREATED"]


def test_lost_kills_and_convergence() -> None:
    view = [inv.SeenPod("a", "Running", 1, 1), inv.SeenPod("b", "Pending", 0, 1)]
    assert inv.lost_kills([c("1", "b")], view, ["b"]) == [
        "removed pod b: container 1 (main) still RUNNING",
        "removed pod b still in the kubelet's view (Pending)"]
    assert inv.not_converged(view, ["a", "b", "z"]) == [
        "pod b is Pending with 0/1 containers running", "pod z is not in the kubelet's view"]
    assert inv.runtime_converged([c("1", "a")], ["a", "b"]) == ["no running container of pod b"]
    assert inv.all_problems([c("1", "a")], view[:1], ["a"]) == []


def test_restart_intensity() -> None:
    assert inv.restart_intensity([0, 1, 2], 3, 10, escalated=False) == []
    assert inv.restart_intensity([0, 1, 2, 3], 3, 10, escalated=False) == [
        "4 restarts within 10 s (MaxR 3) and no escalation"]
    assert inv.restart_intensity([0, 1, 2, 3], 3, 10, escalated=True) == []
    assert inv.restart_intensity([0, 20, 40, 60], 3, 10, escalated=False) == []  # spread out
    assert inv.restart_intensity([0, 1], 3, 10, escalated=True) == [
        "escalated after only 2 restarts within 10 s (MaxR 3)"]


def test_unhandled_dead_letters() -> None:
    assert inv.unhandled_dead_letters({"Tick": 0}) == []
    assert inv.unhandled_dead_letters({"UpdatePod": 2}) == [
        "2 unhandled dead letter(s) of UpdatePod"]


# --- the catalog and the command ---------------------------------------------------------


def test_every_drill_the_issue_names_is_there() -> None:
    kills = {f"kill-{a}" for a in ("status", "probes", "killer", "pleg", "runtime-monitor",
                                   "source-file", "pod")}
    assert kills | {"raise-in-on-start", "raise-in-on-start-escalate",
                    "crash-between-create-and-start", "kill-containerd", "sigkill-daemon",
                    "flood-mailbox", "corrupt-manifest", "kill-probes-ready"} | {
        f"api-{f}" for f in ("500s", "429s", "dropped-watches", "410-gone", "partition",
                             "slow-writes", "kubelet-restart")} == set(DRILLS)


def test_cli_list_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert drill_main(["--list"]) == 0
    assert "kill-pleg" in capsys.readouterr().out
    assert drill_main([]) == 2
    assert drill_main(["no-such-drill"]) == 2
    assert "unknown drill" in capsys.readouterr().err


# --- the runtime manager: a container created but never started --------------------------


def test_a_never_started_container_is_replaced_not_kept(tmp_path: Path) -> None:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=[IMAGE])
    settings = NodeSettings(node_name="node", root_dir=str(tmp_path / "root"),
                            pod_logs_dir=str(tmp_path / "logs"))
    manager = KubeRuntimeManager(fake, settings, clock)
    pod = Pod(metadata=ObjectMeta(name="web", namespace="default", uid="uid-1"),
              spec=PodSpec(containers=(Container(name="main", image=IMAGE,
                                                 image_pull_policy="IfNotPresent"),)))

    def status() -> Any:
        return manager.get_pod_status(PodUID(pod.uid), "web", "default")

    fake.fail("start_container", DrillFault("the worker died before StartContainer"))
    with pytest.raises(DrillFault):
        manager.sync_pod(pod, status())
    (created,) = status().container_statuses
    assert created.state == ContainerState.CREATED

    result = manager.sync_pod(pod, status())
    assert result.ok, result
    (running,) = status().container_statuses  # the CREATED one is gone, one runs
    assert running.state == ContainerState.RUNNING and running.id != created.id
    assert running.restart_count == created.restart_count  # it never ran: not a restart
