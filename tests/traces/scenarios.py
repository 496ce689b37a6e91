"""Deterministic scenarios recorded as traces: on the fake runtime, in virtual time.

`python -m tests.traces.scenarios [NAME...]` records them (all, or those named) into
tests/traces/NAME/ (the regression traces that tests/unit/kubelet/test_replay.py replays
against the current code), replacing the trace files and keeping each README. Re-record
only when a change of behaviour is intended, and say so in the commit.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pykka

from actors.core.actor import Actor
from actors.core.dispatch import ActorRef, Dispatch
from actors.core.faults import ActorFault, FaultPlan
from actors.core.messages import ChildFailed, Tick
from actors.core.supervision import ChildSpec, StartChild
from actors.core.timers import ManualTimers
from actors.core.trace.names import message
from actors.core.trace.recording import RecordingClock, RecordingInterceptor
from actors.core.trace.writer import DEFAULT_MAX_BYTES, TraceWriter
from actors.kubelet import names, recorded, tree
from actors.kubelet.events import DispatchRecorder
from actors.kubelet.eviction import EvictionSettings
from actors.kubelet.gc_settings import GCSettings
from actors.kubelet.log_rotation import LogRotationParts
from actors.kubelet.messages import SourceSnapshot
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.pod_worker import WorkerTiming
from actors.kubelet.probe_metrics import ProbeMetrics
from actors.kubelet.shutdown import Inhibitor, ShutdownSettings
from actors.kubelet.stats_collector import StatsCache, StatsParts
from actors.kubelet.sync_loop import SyncLoopSettings, kubelet_child
from actors.kubelet.tree import KubeletParts, ReplayConfig
from runtime.clock import FakeClock
from runtime.cm.pod_cgroups import PodCgroupService
from runtime.cri.intercept import intercept
from runtime.cri.service import CRIRuntime
from runtime.cri.types import ContainerState
from runtime.ids import ContainerID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.log_rotation import LogRotatePolicy
from runtime.kuberuntime.log_rotator import ContainerLogRotator
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.volume_mounts import VolumeMounts
from runtime.nodeshutdown_state import ShutdownStateSink
from runtime.pod.model import (
    Container,
    HostPathVolumeSource,
    ObjectMeta,
    Pod,
    PodSpec,
    Volume,
    VolumeMount,
)
from runtime.prober.state import ProbeStateSink, SavedProbe
from runtime.stats.collector import StatsCollector, StatsSettings
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import wait_for

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
HERE = Path(__file__).resolve().parent


def pod(uid: str, name: str, policy: str = "Always") -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=uid,
                            annotations={"kubernetes.io/config.source": "file"}),
        spec=PodSpec(containers=(Container(name="c", image=IMAGE,
                                           image_pull_policy="IfNotPresent"),),
                     restart_policy=policy, termination_grace_period_seconds=1),
    )


class Activity:
    """What the recording node is doing, counted, so a test can wait until it is idle.

    Handlers in flight (begun, not ended), failures not yet reported to a supervisor, pool
    work not yet finished, and a count of every event: a node is settled when none of the
    first three is pending, no mailbox holds anything, and the count stands still.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.events = 0
        self.in_flight = 0
        self.failures = 0  # handler failures with a parent to report them to
        self.reported = 0  # ChildFailed deliveries
        self.pool_work = 0

    def bump(self, flight: int = 0, failures: int = 0, reported: int = 0,
             pool: int = 0) -> None:
        with self.changed:
            self.events += 1
            self.in_flight += flight
            self.failures += failures
            self.reported += reported
            self.pool_work += pool
            self.changed.notify_all()


class TrackingWriter(TraceWriter):
    """A TraceWriter that also counts what the node does (see Activity)."""

    def __init__(self, directory: Path, config: dict[str, Any],
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(directory, config=config, max_bytes=max_bytes)
        self.activity = Activity()
        self.dispatch: Dispatch | None = None

    def delivery(self, id: int, sender: str, sender_seq: int, receiver: str,
                 incarnation: int, parent: int | None, message: object, dead: bool) -> None:
        super().delivery(id, sender, sender_seq, receiver, incarnation, parent, message, dead)
        self.activity.bump(reported=int(isinstance(message, ChildFailed)))

    def begin(self, id: int, actor: str, incarnation: int) -> None:
        super().begin(id, actor, incarnation)
        self.activity.bump(flight=1)

    def end(self, id: int, actor: str, incarnation: int, error: BaseException | None) -> None:
        super().end(id, actor, incarnation, error)
        # A failed handler's actor tells its supervisor next (if it still has one): until
        # that ChildFailed is delivered the node is not idle, though nothing is in flight.
        failing = (error is not None and self.dispatch is not None
                   and self.dispatch.parent_of(actor) is not None)
        self.activity.bump(flight=-1, failures=int(failing))

    def call(self, target: str, method: str, args: tuple[Any, ...], duration: float,
             result: object, error: BaseException | None) -> None:
        super().call(target, method, args, duration, result, error)
        self.activity.bump()

    def input(self, name: str, value: object) -> None:
        super().input(name, value)
        self.activity.bump()

    def spawn(self, actor: str, incarnation: int) -> None:
        super().spawn(actor, incarnation)
        self.activity.bump()


class CountingPool(ThreadPoolExecutor):
    """An actor's pool whose unfinished work is counted in the node's Activity."""

    def __init__(self, activity: Activity) -> None:
        super().__init__(2, thread_name_prefix="recorded-pool")
        self._activity = activity

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self._activity.bump(pool=1)
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._activity.bump(pool=-1)
            raise
        future.add_done_callback(lambda _: self._activity.bump(pool=-1))
        return future


@message("ScenarioPublish")
@dataclass(frozen=True, slots=True)
class Publish:
    """Test -> the stand-in file source: the manifests changed, send them."""


class Manifests:
    """The pods the stand-in file source serves (what its directory would hold)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: tuple[Pod, ...] = ()

    def set(self, pods: tuple[Pod, ...]) -> None:
        with self._lock:
            self._pods = pods

    def get(self) -> tuple[Pod, ...]:
        with self._lock:
            return self._pods


class StandInSource(Actor):
    """source/file in the recording node's tree, where the daemon runs its FileSource: it
    serves the pods a test sets instead of reading a directory. It sits where the daemon's
    source sits (last, so rest_for_one restarts it with any sibling) and, like FileSource,
    sends a snapshot when it starts and when told its manifests changed: the tree the
    replay world builds from the trace's config is then the tree that ran."""

    def __init__(self, dispatch: Dispatch, manifests: Manifests, incarnation: int) -> None:
        super().__init__(names.SOURCE_FILE, dispatch, incarnation)
        self._manifests = manifests

    def on_start(self) -> None:
        self._send()

    def handle(self, message: Any) -> Any:
        if isinstance(message, Publish):
            self._send()
        elif not isinstance(message, Tick):  # a relist tick: nothing changed on disk
            return super().handle(message)
        return None

    def _send(self) -> None:
        self.send(names.SYNC_LOOP, SourceSnapshot("file", self._manifests.get()))


@dataclass(frozen=True)
class Gate:
    """Holds a child's start on the sync loop's thread until released."""

    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


class RecordedNode:
    """The kubelet's tree on a fake runtime, recording a trace into ``directory``.

    ``gates`` can hold a child's (re)start: (name, incarnation) -> Gate. ``settle`` waits
    until the node is idle, and ``advance`` moves virtual time one timer firing at a time,
    settling after each, so a generated run does the same thing every time it runs.
    """

    def __init__(self, directory: Path, scratch: Path, faults: FaultPlan | None = None,
                 images: Iterable[str] = (IMAGE,), stats: bool = False,
                 gc: GCSettings | None = None,
                 log_rotation: LogRotatePolicy | None = None,
                 eviction: EvictionSettings | None = None,
                 restart_of: RecordedNode | None = None,
                 probe_state: tuple[SavedProbe, ...] = (),
                 probe_state_file: ProbeStateSink | None = None,
                 trace_max_bytes: int = DEFAULT_MAX_BYTES,
                 metrics: KubeletMetrics | None = None,
                 probe_metrics: ProbeMetrics | None = None,
                 pod_cgroups: PodCgroupService | None = None,
                 volume_mounts: VolumeMounts | None = None,
                 shutdown: ShutdownSettings | None = None,
                 shutdown_inhibitor: Inhibitor | None = None,
                 shutdown_state: ShutdownStateSink | None = None) -> None:
        # restart_of: a kubelet restarted on the same node (its runtime and clock go on).
        # volume_mounts: the mount table memory-backed volumes use (the machine's).
        # pod_cgroups: cgroupsPerQOS on, each pod's cgroup made by this (recorded).
        self.fake_clock: FakeClock = (restart_of.fake_clock if restart_of is not None
                                      else FakeClock())
        self.fake: FakeRuntime = (restart_of.fake if restart_of is not None
                                  else FakeRuntime(self.fake_clock, images=images))
        self.faults = faults
        config = ReplayConfig(
            node=NodeSettings("node", root_dir=str(scratch / "root"),
                              pod_logs_dir=str(scratch / "logs"),
                              # Fixed, so a Burstable pod's oom_score_adj replays anywhere.
                              memory_capacity=4 * 2**30,
                              cgroups_per_qos=pod_cgroups is not None),
            timing=WorkerTiming(60.0),
            supervisor=SyncLoopSettings(expected_sources=frozenset({"file"}),
                                        eviction=eviction is not None),
            stats=stats, eviction=eviction, garbage_collection=gc,
            log_rotation=log_rotation is not None, probe_state=probe_state,
            shutdown=shutdown)
        self.writer = TrackingWriter(directory, config=config.to_header(),
                                     max_bytes=trace_max_bytes)
        self.activity = self.writer.activity
        self.dispatch = d = Dispatch(recorder=self.writer, faults=faults)
        self.writer.dispatch = d
        runtime = intercept(self.fake, CRIRuntime, RecordingInterceptor(self.writer),
                            *((faults,) if faults is not None else ()))
        clock: Any = RecordingClock(self.fake_clock, self.writer)
        self.timers = ManualTimers(d, self.fake_clock)
        # The node's answers recorded, as the daemon's (the node's own services where
        # none is given here).
        services = recorded.live(config, (RecordingInterceptor(self.writer),),
                                 cgroups=pod_cgroups, volume_mounts=volume_mounts)
        manager = KubeRuntimeManager(runtime, config.node, clock, observe=d.observe,
                                     events=DispatchRecorder(d), **services.for_manager())
        # The stats actor measures the fake runtime outside the recording, as the daemon
        # measures the real one (actors.app.stats_setup).
        self.stats = StatsParts(StatsCollector(self.fake, StatsSettings(
            "node", config.node.root_dir, config.node.pod_logs_dir), now=self.fake_clock.now),
            StatsCache()) if stats else None
        # The log rotation actor too (actors.app.log_rotation_setup), on the fake clock.
        self.log_rotation = LogRotationParts(ContainerLogRotator(
            self.fake, log_rotation, config.node.pod_logs_dir, now=self.fake_clock.now)
        ) if log_rotation is not None else None
        parts = KubeletParts(d, self.timers, clock, runtime, manager, config,
                             metrics=metrics, probe_metrics=probe_metrics,
                             executor=self._pool, stats=self.stats,
                             log_rotation=self.log_rotation,
                             probe_state=probe_state_file,
                             shutdown_inhibitor=shutdown_inhibitor,
                             shutdown_state=shutdown_state)
        self.gates: dict[tuple[str, int], Gate] = {}
        self._pools: list[CountingPool] = []
        self.manifests = Manifests()
        specs = [*tree.child_specs(parts), kubelet_child((names.SOURCE_FILE, self._source))]
        self.sync_loop = tree.start(parts, [dataclasses.replace(spec, start=self._gated(spec))
                                            for spec in specs])
        # The sync loop starts its children on its own thread: until the last one runs,
        # what a test tells them would be dead letters.
        wait_for(lambda: self.dispatch.ref(names.SOURCE_FILE) is not None, 10.0,
                 "the tree to start")
        self.settle()

    def _source(self, incarnation: int) -> ActorRef:
        ref: ActorRef = StandInSource.start(self.dispatch, self.manifests, incarnation)
        return ref

    def _pool(self) -> Executor:
        pool = CountingPool(self.activity)
        self._pools.append(pool)
        return pool

    def _gated(self, spec: ChildSpec) -> StartChild:
        def start(incarnation: int) -> ActorRef:
            gate = self.gates.get((spec.name, incarnation))
            if gate is not None:
                gate.entered.set()
                gate.release.wait(10.0)
            return spec.start(incarnation)

        return start

    def snapshot(self, *pods: Pod) -> None:
        """The file source now holds ``pods``: it sends them to the sync loop."""
        self.manifests.set(pods)
        self.dispatch.tell(names.SOURCE_FILE, Publish(), sender="test")

    def running(self, uid: str) -> list[ContainerID]:
        return [c.id for c in self.fake.list_containers()
                if c.labels.get(L.POD_UID) == uid and c.state == ContainerState.RUNNING]

    def until(self, what: str, predicate: Any) -> None:
        def check() -> bool:
            self.timers.advance(1.0)
            return bool(predicate())
        wait_for(check, 20.0, what, interval=0.05)

    def _idle(self) -> bool:
        """Nothing in flight, pending or queued (pykka's registry also holds actors
        already unregistered from the dispatch, e.g. a removed worker finishing its mail)."""
        a = self.activity
        on_start = self.faults.fired_count("on_start") if self.faults is not None else 0
        if a.in_flight or a.pool_work or a.failures + on_start > a.reported:
            return False
        return all(ref.actor_inbox.empty() for ref in pykka.ActorRegistry.get_all())

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until the node is idle: True, or False if it is still busy at ``timeout``
        (a stuck actor is for the caller to report, not a reason to hang)."""
        deadline = time.monotonic() + timeout
        quiet = 0
        with self.activity.changed:
            seen = self.activity.events
        while time.monotonic() < deadline:
            idle = self._idle()
            with self.activity.changed:
                moved = self.activity.events != seen
                seen = self.activity.events
                if idle and not moved:
                    quiet += 1
                    if quiet >= 2:  # idle twice with no event between: nothing is running
                        return True
                else:
                    quiet = 0
                # Wakes on the next event, or soon to look again (threads may be between
                # events: a pykka mailbox filled by an actor not yet recorded).
                self.activity.changed.wait(0.002 if idle else 0.02)
        return False

    def advance(self, seconds: float) -> None:
        """Move virtual time ``seconds`` on, firing the timers due on the way one instant
        at a time and settling after each, as ManualTimers.advance would without the
        settling (which makes the order of firings and handlers the same every run)."""
        target = self.fake_clock.monotonic() + seconds
        while (due := self.timers.next_due()) is not None and due <= target:
            self.fake_clock.step(max(due - self.fake_clock.monotonic(), 0.0))
            self.timers.fire_due(self.fake_clock.monotonic())
            self.settle()
        self.fake_clock.step(max(target - self.fake_clock.monotonic(), 0.0))

    def close(self) -> None:
        self.sync_loop.stop()
        self.writer.close()
        for pool in self._pools:
            pool.shutdown(wait=True, cancel_futures=True)


def recorded_nodes() -> Iterator[list[RecordedNode]]:
    """A list for a test's RecordedNodes, each closed after the test (a fixture's body:
    ``yield from recorded_nodes()``); a test that closes one itself takes it out."""
    made: list[RecordedNode] = []
    yield made
    for node in made:
        node.close()


def restart_and_remove(directory: Path) -> None:
    """A pod runs, its container exits and is restarted, then the pod is removed."""
    scratch = Path(tempfile.mkdtemp(prefix="scenario-"))
    node = RecordedNode(directory, scratch)
    try:
        node.snapshot(pod("u1", "web"))
        node.until("the pod to run", lambda: len(node.running("u1")) == 1)
        (first,) = node.running("u1")
        node.fake.exit_container(first, 1)
        node.until("a restart", lambda: len(node.running("u1")) == 1
                   and node.running("u1") != [first])
        node.snapshot()
        node.until("the pod to be removed", lambda: node.fake.list_pod_sandbox() == ())
    finally:
        node.close()
        shutil.rmtree(scratch, ignore_errors=True)


def completed_under_never(directory: Path) -> None:
    """A pod under restartPolicy Never whose container exits 0: never restarted."""
    scratch = Path(tempfile.mkdtemp(prefix="scenario-"))
    node = RecordedNode(directory, scratch)
    try:
        node.snapshot(pod("u2", "job", policy="Never"))
        node.until("the pod to run", lambda: len(node.running("u2")) == 1)
        (only,) = node.running("u2")
        node.fake.exit_container(only, 0)
        node.until("the sandbox to stop", lambda: node.fake.called("stop_pod_sandbox") >= 1)
        for _ in range(3):
            node.timers.advance(1.0)
    finally:
        node.close()
        shutil.rmtree(scratch, ignore_errors=True)


def restart_pending(node: RecordedNode, name: str) -> bool:
    """The sync loop handled ``name``'s failure: it is down, its RestartChild timer set."""
    now = node.fake_clock.monotonic()
    due = node.timers.next_due()
    return (node.dispatch.ref(name) is None and due is not None and due < now + 0.5
            and node.dispatch.ref(names.SYNC_LOOP) is not None)


def relabelled(p: Pod, value: str) -> Pod:
    return msgspec.structs.replace(p, metadata=msgspec.structs.replace(
        p.metadata, labels={"rev": value}))


def worker_mail_while_down(directory: Path) -> None:
    """A pod worker fails; an update told to it while it waits for its restart is a dead
    letter the sync loop holds, and the restart drops it as redundant (issue 16: replay
    rebuilt the held UpdatePod as a plain dict, which is not redundant, and sent it on)."""
    scratch = Path(tempfile.mkdtemp(prefix="scenario-"))
    plan = FaultPlan(16)
    node = RecordedNode(directory, scratch, plan)
    web = pod("u3", "web")
    worker = names.worker_name("u3")
    try:
        node.snapshot(web)
        node.until("the pod to run", lambda: len(node.running("u3")) == 1)
        plan.add(ActorFault(worker, "UpdatePod"))
        plan.arm()
        node.snapshot(relabelled(web, "1"))  # an UpdatePod the worker fails on
        wait_for(lambda: restart_pending(node, worker), 10.0, "the worker's restart timer")
        node.snapshot(relabelled(web, "2"))  # told to the worker while it is down
        wait_for(lambda: node.dispatch.delivered["DeadLetter"] >= 1, 10.0, "the dead letter")
        node.until("the worker to run again", lambda: node.dispatch.ref(worker) is not None)
        node.until("the pod to run", lambda: len(node.running("u3")) == 1)
    finally:
        node.close()
        shutil.rmtree(scratch, ignore_errors=True)


def dead_letter_during_group_restart(directory: Path) -> None:
    """The status manager fails; rest_for_one restarts it with the probe manager, killer,
    pleg and the runtime monitor. Ticks the timers send to pleg while the sync loop is still
    starting the group are dead letters queued behind that RestartChild: when the sync loop
    takes them, pleg runs again and gets them (issue 16: whether it runs was asked of the
    live actor, which the trace did not hold, and replay's stand-in answered no)."""
    scratch = Path(tempfile.mkdtemp(prefix="scenario-"))
    plan = FaultPlan(16)
    node = RecordedNode(directory, scratch, plan)
    web = pod("u4", "web")
    try:
        node.snapshot(web)
        node.until("the pod to run", lambda: len(node.running("u4")) == 1)
        gate = node.gates[(names.KILLER, 1)] = Gate()
        plan.add(ActorFault(names.STATUS, "DesiredPods"))
        plan.arm()
        node.snapshot(web)  # the sync loop tells status DesiredPods: status fails
        wait_for(lambda: restart_pending(node, names.STATUS), 10.0, "status's restart timer")
        node.timers.advance(0.5)  # RestartChild: status starts, killer's start is held
        wait_for(gate.entered.is_set, 10.0, "the group restart to reach the killer")
        node.timers.advance(0.5)  # the relist tick (1 s): a dead letter
        wait_for(lambda: node.dispatch.delivered["DeadLetter"] >= 1, 10.0, "dead letters")
        gate.release.set()
        node.until("the group to run",
                   lambda: node.dispatch.ref(names.RUNTIME_MONITOR) is not None)
        node.until("the pod to run", lambda: len(node.running("u4")) == 1)
    finally:
        node.close()
        shutil.rmtree(scratch, ignore_errors=True)


def with_host_paths(p: Pod, *volumes: tuple[str, str, str]) -> Pod:
    """``p`` with a hostPath volume (name, path, type) mounted in its container per entry."""
    mounts = tuple(VolumeMount(name=name, mount_path=f"/{name}") for name, _, _ in volumes)
    container = msgspec.structs.replace(p.spec.containers[0], volume_mounts=mounts)
    return msgspec.structs.replace(p, spec=msgspec.structs.replace(
        p.spec, containers=(container,), volumes=tuple(
            Volume(name=name, host_path=HostPathVolumeSource(path=path, type=kind))
            for name, path, kind in volumes)))


def host_path_volumes(directory: Path) -> None:
    """A pod with a hostPath DirectoryOrCreate it makes and a hostPath File it finds runs;
    both paths are gone when the run ends (issue 16: a replay made the directory on the
    machine it replayed on, and the File's type check failed there: FailedMount, no
    sandbox, a divergence)."""
    scratch = Path(tempfile.mkdtemp(prefix="scenario-"))
    host = Path(tempfile.mkdtemp(prefix="scenario-host-"))
    (host / "config.txt").write_text("recorded\n")
    node = RecordedNode(directory, scratch)
    try:
        node.snapshot(with_host_paths(pod("u5", "hosted"),
                                      ("made", str(host / "made"), "DirectoryOrCreate"),
                                      ("found", str(host / "config.txt"), "File")))
        node.until("the pod to run", lambda: len(node.running("u5")) == 1)
    finally:
        node.close()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(host, ignore_errors=True)


SCENARIOS = {"restart-and-remove": restart_and_remove,
             "completed-under-never": completed_under_never,
             "worker-mail-while-down": worker_mail_while_down,
             "dead-letter-during-group-restart": dead_letter_during_group_restart,
             "host-path-volumes": host_path_volumes}


def record(names: Iterable[str] = SCENARIOS, target: Path = HERE) -> None:
    """Record the scenarios ``names`` into ``target``/NAME, each replacing its trace files
    (a README there is kept)."""
    for name in names:
        directory = target / name
        for old in directory.glob("trace-*.jsonl"):
            old.unlink()
        SCENARIOS[name](directory)
        print(f"recorded {directory}")


if __name__ == "__main__":
    chosen = sys.argv[1:] or list(SCENARIOS)
    unknown = sorted(set(chosen) - set(SCENARIOS))
    if unknown:
        sys.exit(f"no such scenario: {', '.join(unknown)} (there are: {', '.join(SCENARIOS)})")
    record(chosen)
