"""The garbage collector actor in the kubelet's tree, on the fake runtime in virtual time:
a crash loop keeps one dead instance and its restart count, an unused image goes while the
sandbox image and a running pod's stay, a reclaim is answered, and the run replays."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.gc_settings import GCSettings
from actors.kubelet.messages import CollectGarbage, GarbageCollected, GetPods
from actors.kubelet.trace import KubeletWorld
from runtime.cri.types import ContainerFilter, ContainerState
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.container_gc import ContainerGCPolicy
from runtime.kuberuntime.image_gc import ImageGCPolicy
from tests.helpers import wait_for
from tests.traces.scenarios import IMAGE, RecordedNode, pod

UNUSED = "localhost:5000/kubelet-actors/unused:1"
PAUSE = "localhost:5000/kubelet-actors/pause:3.9"
SETTINGS = GCSettings(
    containers=ContainerGCPolicy(), images=ImageGCPolicy(high_threshold=1, low_threshold=0,
                                                         min_age=5.0),
    container_gc_period=5.0, image_gc_period=5.0, sandbox_image=PAUSE)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """The recording node's own directories (its pod logs in ``logs``)."""
    made = Path(tempfile.mkdtemp(prefix="gc-"))
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def node(tmp_path: Path, scratch: Path) -> Iterator[RecordedNode]:
    recorded = RecordedNode(tmp_path / "trace", scratch, images=(IMAGE, UNUSED, PAUSE),
                            gc=SETTINGS)
    # The image filesystem is a real one, so its usage is over 1 %.
    recorded.fake.image_fs_mountpoint = str(tmp_path)
    try:
        yield recorded
    finally:
        recorded.close()


def _instances(node: RecordedNode, uid: str, state: ContainerState) -> list[str]:
    found = node.fake.list_containers(ContainerFilter(label_selector={L.POD_UID: uid}))
    return [c.id for c in found if c.state == state]


def _restart_count(node: RecordedNode, uid: str) -> int:
    ref = node.dispatch.ref(names.STATUS)
    assert ref is not None
    pods: Any = ref.ask(GetPods(), block=True, timeout=5.0)
    for p, status in pods:
        if p.uid == uid and status.container_statuses:
            return int(status.container_statuses[0].restart_count)
    return -1


def _crash_loop(node: RecordedNode, uid: str, exits: int) -> None:
    """Run pod ``uid`` and let its container fail ``exits`` times, each restarted."""
    node.snapshot(pod(uid, "web"))
    node.until("the pod to run", lambda: len(node.running(uid)) == 1)
    for n in range(exits):
        (running,) = node.running(uid)
        node.fake.exit_container(running, 1)
        node.until(f"restart {n + 1}", lambda r=running: len(node.running(uid)) == 1
                   and node.running(uid) != [r])


def test_a_crash_loop_keeps_one_dead_instance_and_the_run_replays(
        node: RecordedNode, tmp_path: Path) -> None:
    _crash_loop(node, "u1", 4)
    node.advance(SETTINGS.container_gc_period)
    node.settle()
    assert len(_instances(node, "u1", ContainerState.EXITED)) == 1
    assert _restart_count(node, "u1") == 4
    assert node.fake.called("remove_container") >= 3
    node.close()
    report = replay(read_trace(tmp_path / "trace"), KubeletWorld())
    assert report.ok, format_report(report)
    assert names.GC in report.actors


def test_a_replay_of_the_collectors_rounds_removes_no_file(
        node: RecordedNode, tmp_path: Path, scratch: Path) -> None:
    """The collector's thread removed dead instances and their logs; a replay, whose GC
    gets what that thread did as recorded messages, touches no file: each removed
    instance's log, put back at its recorded path, is still there after the replay."""
    _crash_loop(node, "u3", 3)
    (log_dir,) = (scratch / "logs").glob("*_u3/c")
    node.advance(SETTINGS.container_gc_period)
    node.settle()
    # Four instances ran (N.log for restart N); the collector keeps the newest dead one.
    removed = {f"{n}.log" for n in range(4)} - {p.name for p in log_dir.iterdir()}
    assert removed, "the collector removed no instance's log"
    node.close()
    for name in removed:
        (log_dir / name).write_text("recorded node's log\n")
    report = replay(read_trace(tmp_path / "trace"), KubeletWorld())
    assert report.ok, format_report(report)
    assert names.GC in report.actors
    assert {p.name for p in log_dir.iterdir()} >= removed


def test_an_unused_image_goes_and_the_others_stay(node: RecordedNode, tmp_path: Path) -> None:
    node.snapshot(pod("u2", "web"))
    node.until("the pod to run", lambda: len(node.running("u2")) == 1)
    node.advance(SETTINGS.image_gc_period * 3)
    node.settle()
    assert not node.fake.has_image(UNUSED)
    assert node.fake.has_image(IMAGE) and node.fake.has_image(PAUSE)
    node.close()
    report = replay(read_trace(tmp_path / "trace"), KubeletWorld())
    assert report.ok, format_report(report)


class Inbox(Actor):
    """Stands in for the eviction manager: keeps what it is told in ``got``."""

    def __init__(self, dispatch: Dispatch, got: list[object]) -> None:
        super().__init__("eviction", dispatch, 0)
        self._got = got

    def handle(self, message: Any) -> Any:
        self._got.append(message)
        return None


def test_a_reclaim_takes_the_dead_containers_of_terminated_pods_and_says_so(
        node: RecordedNode) -> None:
    job = pod("u3", "job", policy="Never")
    node.snapshot(job)
    node.until("the pod to run", lambda: len(node.running("u3")) == 1)
    (only,) = node.running("u3")
    node.fake.exit_container(only, 0)
    node.until("the pod to finish", lambda: node.fake.called("stop_pod_sandbox") >= 1)
    node.advance(SETTINGS.container_gc_period * 2)
    node.settle()
    # A periodic round keeps a finished pod's (only) dead container: it is still wanted.
    assert _instances(node, "u3", ContainerState.EXITED) == [only]
    got: list[object] = []
    box = Inbox.start(node.dispatch, got)
    node.dispatch.register("eviction", box)
    try:
        node.dispatch.tell(names.GC, CollectGarbage("disk pressure", "eviction"), sender="test")
        wait_for(lambda: node.settle() and got, 10.0, "the reclaim's answer")
        (answer,) = got
        assert isinstance(answer, GarbageCollected)
        assert answer.reason == "disk pressure" and answer.containers == 1
        # The image the container used was in use when the round read the runtime.
        assert answer.images == 0 and answer.errors == ()
        assert _instances(node, "u3", ContainerState.EXITED) == []
    finally:
        box.stop()
