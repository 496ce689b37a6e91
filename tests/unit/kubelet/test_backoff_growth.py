"""The back-off tables forget pods that are gone: 1,000 pods come and go, none stays.

Every pod leaves a crash-loop back-off (its container exited and was restarted) and an
image-pull back-off (a container's image cannot be pulled). Half the pods are removed by
their pod worker, the other half are orphans the pod killer removes: the two ways a pod
leaves the node. The actors are driven by hand, one delivery at a time, on the fake
runtime with a clock that stands still, so only forgetting removed pods can keep the
tables small (nothing is idle long enough for the periodic clean-up to drop it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from pykka import ActorRef

from actors.core.dispatch import Dispatch
from actors.core.envelope import Envelope
from actors.kubelet.messages import (
    KillRuntimePod,
    PodWorkerDone,
    RuntimePodKilled,
    UpdateKind,
    UpdatePod,
    WorkerState,
)
from actors.kubelet.pod_killer import PodKiller
from actors.kubelet.pod_worker import PodWorker
from runtime.clock import FakeClock
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
MISSING = "localhost:5000/kubelet-actors/not-there:1"
CYCLES = 1000

P = ParamSpec("P")
T = TypeVar("T")


class Mailbox:
    """Stands in for an actor ref: keeps what is told, for the test to deliver in order."""

    def as_ref(self) -> ActorRef[Any]:
        # Dispatch uses nothing of a ref but ``tell``, which this has.
        return cast("ActorRef[Any]", self)

    def __init__(self) -> None:
        self.queue: deque[Envelope] = deque()

    def tell(self, envelope: Envelope) -> None:
        self.queue.append(envelope)

    def messages(self) -> list[Any]:
        return [e.message for e in self.queue]


class InlineExecutor(Executor):
    """Runs a submitted job at once, on the caller's thread."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def deliver_all(actor: PodWorker | PodKiller, mailbox: Mailbox) -> None:
    while mailbox.queue:
        actor.on_receive(mailbox.queue.popleft())


def make_pod(uid: str) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=f"web-{uid}", namespace="default", uid=uid),
        spec=PodSpec(containers=(
            Container(name="crashing", image=IMAGE, image_pull_policy="IfNotPresent"),
            Container(name="pull", image=MISSING),
        ), termination_grace_period_seconds=0),
    )


def test_back_off_tables_stay_small_over_a_thousand_pods(tmp_path: Path) -> None:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=[IMAGE])
    settings = NodeSettings("node", root_dir=str(tmp_path / "root"),
                            pod_logs_dir=str(tmp_path / "logs"))
    manager = KubeRuntimeManager(fake, settings, clock)
    dispatch = Dispatch()
    supervisor, killer_box = Mailbox(), Mailbox()
    for name in ("supervisor", "status", "probes"):
        dispatch.register(name, supervisor.as_ref())
    killer = PodKiller(dispatch, manager, executor=InlineExecutor())
    dispatch.register("killer", killer_box.as_ref())

    def entries() -> int:
        return len(manager.containers.crash_backoff) + len(manager.images.backoff)

    peak_while_running = 0
    for n in range(CYCLES):
        uid = PodUID(f"uid-{n}")
        pod = make_pod(uid)
        worker, box = PodWorker(uid, dispatch, manager, clock), Mailbox()
        dispatch.register(f"pod/{uid}", box.as_ref())
        dispatch.tell(f"pod/{uid}", UpdatePod(pod, UpdateKind.CREATE))
        deliver_all(worker, box)
        status = manager.get_pod_status(uid, pod.metadata.name, "default")
        crashing = status.find_container("crashing")
        assert crashing is not None
        fake.exit_container(crashing.id, 1)
        dispatch.tell(f"pod/{uid}", UpdatePod(pod, UpdateKind.SYNC))
        deliver_all(worker, box)  # restarts it at once, which starts its back-off
        peak_while_running = max(peak_while_running, entries())

        if n % 2 == 0:
            dispatch.tell(f"pod/{uid}", UpdatePod(pod, UpdateKind.KILL, remove=True))
            deliver_all(worker, box)
            done = [m for m in supervisor.messages() if isinstance(m, PodWorkerDone)]
            assert done[-1] == PodWorkerDone(uid, WorkerState.TERMINATED, None)
        else:  # the kubelet lost the pod's spec: its sandbox is an orphan for the killer
            dispatch.tell("killer", KillRuntimePod(uid, pod.metadata.name, "default"))
            deliver_all(killer, killer_box)
            killed = [m for m in supervisor.messages() if isinstance(m, RuntimePodKilled)]
            assert killed[-1] == RuntimePodKilled(uid, True)
        dispatch.unregister(f"pod/{uid}")
        supervisor.queue.clear()
        assert fake.list_pod_sandbox() == ()
        assert entries() <= 2, f"cycle {n}: {entries()} back-off entries"

    assert peak_while_running == 2  # each pod had both back-offs while it ran
    assert entries() == 0
