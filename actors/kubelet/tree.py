"""The kubelet's tree, wired once: which actors, in which order, made of what.

The daemon starts it, a trace replay builds single actors of it on replay stubs, and the
test scenarios start it on a fake runtime: all three from ``KubeletParts`` and the
recipes below, so the kubelet cannot be wired two ways. ``ReplayConfig`` is the part of
the wiring a trace records (in every file's header) so a replay builds the same actors.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct, field

from actors.core.actor import Actor
from actors.core.dispatch import ActorRef, Dispatch
from actors.core.supervision import ChildSpec
from actors.core.timers import Timers
from actors.kubelet import names
from actors.kubelet.events import DispatchRecorder, EventsActor
from actors.kubelet.eviction import EvictionManager, EvictionSettings
from actors.kubelet.garbage_collector import GarbageCollector
from actors.kubelet.gc_settings import GCSettings
from actors.kubelet.log_rotation import LogRotationActor, LogRotationParts
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.pleg import PLEG
from actors.kubelet.pod_killer import PodKiller
from actors.kubelet.pod_worker import PodWorker, WorkerTiming
from actors.kubelet.probe_manager import ProbeManager
from actors.kubelet.probe_metrics import ProbeMetrics
from actors.kubelet.runtime_monitor import RuntimeMonitor
from actors.kubelet.shutdown import (
    Inhibitor,
    ShutdownManager,
    ShutdownProgress,
    ShutdownSettings,
)
from actors.kubelet.sources.file import FileSource
from actors.kubelet.sources.http import HTTPSource
from actors.kubelet.stats_collector import StatsActor, StatsParts
from actors.kubelet.status_manager import StatusManager
from actors.kubelet.sync_loop import (
    SyncLoop,
    SyncLoopSettings,
    WorkerFactory,
    kubelet_child,
)
from runtime.clock import Clock
from runtime.containerd.events import SubscriptionFactory
from runtime.containerd.managed import ManagedContainerd
from runtime.cri.service import CRIRuntime
from runtime.events.recorder import EventRecorder
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.nodeshutdown_state import ShutdownStateSink
from runtime.prober.state import ProbeStateSink, SavedProbe

if TYPE_CHECKING:  # the cluster actors are imported in children(), in cluster mode only
    from actors.kubelet.cluster.context import Cluster


class ReplayConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The settings the kubelet's actors were built with, as every trace header holds them.

    The field names are what traces have always recorded (``supervisor`` is the sync
    loop's settings), so traces on users' disks keep replaying; a key an older trace holds
    and this code does not know is ignored.
    """

    node: NodeSettings
    timing: WorkerTiming = msgspec.field(default_factory=WorkerTiming)
    supervisor: SyncLoopSettings = msgspec.field(default_factory=SyncLoopSettings)
    host_ip: str = ""
    embedded: bool = False
    cluster: bool = False  # joined to an API server: status also goes to the pod writer
    stats: bool = False  # the stats actor runs (last child; not replayed, see stats_collector)
    # The garbage collector runs with these settings. None: no collector (the daemon always
    # runs one; scenarios that pin a pod's exact runtime calls leave it out).
    garbage_collection: GCSettings | None = None
    log_rotation: bool = False  # the log rotation actor runs (after stats; not replayed)
    eviction: EvictionSettings | None = None  # the eviction manager runs, so configured
    shutdown: ShutdownSettings | None = None  # the node shutdown manager runs, so configured
    # The probe results a previous run reached (runtime.prober.state), for the first
    # incarnation of the status and probe managers: an input, so it is in the header.
    probe_state: tuple[SavedProbe, ...] = ()

    def to_header(self) -> dict[str, Any]:
        header: dict[str, Any] = msgspec.to_builtins(self)
        return header

    @classmethod
    def from_header(cls, config: Mapping[str, Any]) -> ReplayConfig:
        """The config a trace recorded (fields added since take their defaults; an older
        format's config was converted as the trace was read: actors.kubelet.trace_compat)."""
        return msgspec.convert(dict(config), cls)


class Sources(Struct, frozen=True):
    """Where pods come from (upstream's --pod-manifest-path, --manifest-url)."""

    node_name: str
    manifest_path: str = ""
    manifest_url: str = ""
    api: bool = False  # the API server (cluster mode)

    def expected(self) -> frozenset[str]:
        """The sources the sync loop waits to hear from before it removes anything."""
        wanted = {"api"} if self.api else set()
        if self.manifest_path:
            wanted.add("file")
        if self.manifest_url:
            wanted.add("http")
        return frozenset(wanted)


class KubeletParts(Struct, frozen=True):
    """Everything the kubelet's actors are made of."""

    dispatch: Dispatch
    timers: Timers
    clock: Clock
    runtime: CRIRuntime
    manager: KubeRuntimeManager
    config: ReplayConfig
    metrics: KubeletMetrics | None = None
    containerd: ManagedContainerd | None = None
    sources: Sources | None = None  # None: actors that read files and URLs are not made
    # Makes the pool an actor's work runs on (probes, orphan kills), one per incarnation;
    # None: each actor makes its own ThreadPoolExecutor. A replay passes one that runs
    # nothing: what pools did comes back as recorded mail.
    executor: Callable[[], Executor] | None = None
    # The API server this kubelet joined; None: standalone (no cluster actors).
    cluster: Cluster | None = None
    # The stats collector and its cache (config.stats); None in a replay.
    stats: StatsParts | None = None
    # /metrics/probes, filled by the probe manager; None: not counted (a replay).
    probe_metrics: ProbeMetrics | None = None
    # Opens the runtime's event stream for the PLEG; None: relist only (a replay, tests).
    runtime_events: SubscriptionFactory | None = None
    # The container log rotation actor's rotator (config.log_rotation); None in a replay.
    log_rotation: LogRotationParts | None = None
    # Where the probe manager saves its results for the next start; None: not saved.
    probe_state: ProbeStateSink | None = None
    # The logind inhibitor lock the shutdown manager releases; None: none (a replay, tests).
    shutdown_inhibitor: Inhibitor | None = None
    # Where the shutdown manager stores graceful_node_shutdown_state; None: not stored.
    shutdown_state: ShutdownStateSink | None = None


class Construct(Struct, frozen=True):
    """How to make one actor: started (the daemon) or only built (a replay)."""

    cls: type[Actor]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def start(self) -> ActorRef:
        ref: ActorRef = self.cls.start(*self.args, **self.kwargs)
        return ref

    def build(self) -> Actor:
        return self.cls(*self.args, **self.kwargs)


Recipe = Callable[[int], Construct]
"""incarnation -> how to make that incarnation of an actor."""


def recorder(parts: KubeletParts) -> EventRecorder:
    """What the actors (and the runtime manager) record events through."""
    return DispatchRecorder(parts.dispatch)


def children(parts: KubeletParts) -> list[tuple[str, Recipe]]:
    """The sync loop's static children, in start order (see KUBELET_SUPERVISION)."""
    p = parts
    events = recorder(p)

    def pool() -> dict[str, Any]:
        # One pool per incarnation: a stopping actor shuts its pool down, which must not
        # leave its successor (or a sibling) with a pool that refuses work.
        return {} if p.executor is None else {"executor": p.executor()}

    def restored(n: int) -> dict[str, Any]:
        # Only the status manager's first incarnation continues the previous run's probe
        # results; a restarted one hears them again from the probe manager, which
        # continues its predecessor's (successors(), from its hand-over).
        return {"restored": p.config.probe_state} if n == 0 and p.config.probe_state else {}

    tree: list[tuple[str, Recipe]] = [
        (names.STATUS, lambda n: Construct(
            StatusManager, (p.dispatch, p.clock, p.metrics, p.config.host_ip, n),
            {**({"api": p.config.cluster} if p.config.cluster else {}), **restored(n)})),
        (names.PROBES, lambda n: probe_manager(p, n, p.config.probe_state if n == 0 else ())),
        (names.KILLER, lambda n: Construct(
            PodKiller, (p.dispatch, p.manager), {"incarnation": n, **pool()})),
        (names.PLEG, lambda n: Construct(PLEG, (p.dispatch, p.runtime, p.clock, n),
                                         {"timers": p.timers, "runtime_events": p.runtime_events,
                                          "metrics": p.metrics})),
        (names.RUNTIME_MONITOR, lambda n: Construct(
            RuntimeMonitor, (p.dispatch, p.timers, p.runtime, p.clock, p.containerd,
                             p.metrics, n))),
    ]
    tree.append((names.EVENTS, lambda n: Construct(
        EventsActor, (p.dispatch, p.clock, p.config.node.node_name, n),
        {"cluster": p.cluster is not None})))
    gc = p.config.garbage_collection
    if gc is not None:
        # Before the cluster writers and sources: a replay (which has neither) builds the
        # same order from the config alone.
        tree.append((names.GC, lambda n: Construct(
            GarbageCollector, (p.dispatch, p.timers, p.runtime, p.clock, gc,
                               p.config.node.pod_logs_dir, p.config.node.node_name, p.metrics,
                               n), {**pool(), "events": events})))
    eviction = p.config.eviction
    if eviction is not None:
        tree.append((names.EVICTION, lambda n: Construct(
            EvictionManager, (p.dispatch, p.timers, p.clock, eviction,
                              p.config.node.node_name, n),
            {"metrics": p.metrics, "events": events})))
    if p.config.shutdown is not None:
        tree.append((names.SHUTDOWN, lambda n: shutdown_manager(p, n)))
    cluster = p.cluster
    if cluster is not None:
        from actors.kubelet.cluster.event_writer import EventWriter
        from actors.kubelet.cluster.lease import LeaseActor
        from actors.kubelet.cluster.node_status import NodeStatusActor
        from actors.kubelet.cluster.pod_writer import PodWriter

        # Writers before the pod source: a new writer is told every API pod again by
        # the source that rest_for_one restarts after it.
        tree += [
            (names.POD_WRITER, lambda n: Construct(
                PodWriter, (p.dispatch, p.timers, p.clock, cluster, n))),
            (names.NODE_STATUS, lambda n: Construct(
                NodeStatusActor, (p.dispatch, p.timers, p.clock, cluster, p.runtime, n),
                {"events": events})),
            (names.NODE_LEASE, lambda n: Construct(
                LeaseActor, (p.dispatch, p.timers, p.clock, cluster, n))),
            (names.EVENT_WRITER, lambda n: Construct(
                EventWriter, (p.dispatch, p.timers, p.clock, cluster, n))),
        ]
        tree += certificate_children(p, cluster)
    sources = p.sources
    if sources is not None and sources.manifest_path:
        tree.append((names.SOURCE_FILE, lambda n: Construct(
            FileSource, (p.dispatch, sources.manifest_path, sources.node_name, p.clock, n))))
    if sources is not None and sources.manifest_url:
        tree.append((names.SOURCE_HTTP, lambda n: Construct(
            HTTPSource, (p.dispatch, sources.manifest_url, sources.node_name, p.clock, n))))
    if cluster is not None and sources is not None and sources.api:
        from actors.kubelet.cluster.pod_source import APISource

        tree.append((names.SOURCE_API, lambda n: Construct(
            APISource, (p.dispatch, p.clock, cluster, n))))
    if p.config.stats and p.stats is not None:
        # Last: under rest_for_one a failed collection restarts nothing else. (A replay
        # has no StatsParts: actors.kubelet.trace adds the stub of this child itself.)
        tree.append((names.STATS, lambda n: Construct(
            StatsActor, (p.dispatch, p.timers, p.stats, n), pool())))
    if p.config.log_rotation and p.log_rotation is not None:
        # After the stats actor, for the same reason (trace.py adds its stub in a replay).
        rotation = p.log_rotation
        tree.append((names.LOG_ROTATION, lambda n: Construct(
            LogRotationActor, (p.dispatch, p.timers, rotation, n), pool())))
    return tree


def certificate_children(p: KubeletParts, cluster: Cluster) -> list[tuple[str, Recipe]]:
    """The certificate actors of cluster mode (--rotate-certificates, serverTLSBootstrap)."""
    from actors.kubelet.cluster.certificates import CertificateActor

    out: list[tuple[str, Recipe]] = []
    client, serving = cluster.client_certificates, cluster.serving_certificates
    if client is not None:
        out.append((names.CLIENT_CERTIFICATE, lambda n: Construct(
            CertificateActor, (names.CLIENT_CERTIFICATE, p.dispatch, p.timers, p.clock,
                               client, n), {"on_expired": cluster.on_certificate_expired})))
    if serving is not None:
        out.append((names.SERVING_CERTIFICATE, lambda n: Construct(
            CertificateActor, (names.SERVING_CERTIFICATE, p.dispatch, p.timers, p.clock,
                               serving, n))))
    return out


def probe_manager(parts: KubeletParts, incarnation: int,
                  restored: tuple[SavedProbe, ...]) -> Construct:
    """How to make incarnation ``incarnation`` of the probe manager, continuing ``restored``
    (the previous run's results for the first, its predecessor's hand-over for a later)."""
    p = parts
    extra: dict[str, Any] = {} if p.executor is None else {"executor": p.executor()}
    extra["events"] = recorder(p)
    if p.probe_metrics:
        extra["probe_metrics"] = p.probe_metrics
    if restored:
        extra["restored"] = restored
    if p.probe_state:
        extra["state"] = p.probe_state
    return Construct(ProbeManager, (p.dispatch, p.timers, p.runtime, p.clock, incarnation),
                     extra)


def shutdown_manager(parts: KubeletParts, incarnation: int,
                     resumed: ShutdownProgress | None = None) -> Construct:
    """How to make incarnation ``incarnation`` of the node shutdown manager, carrying on
    from ``resumed`` (its predecessor's hand-over) when given."""
    p = parts
    settings = p.config.shutdown
    if settings is None:
        raise ValueError("the node shutdown manager is made only when shutdown is configured")
    return Construct(
        ShutdownManager, (p.dispatch, p.timers, settings, p.config.node.node_name,
                          incarnation),
        {"inhibitor": p.shutdown_inhibitor, "events": recorder(p), "clock": p.clock,
         "metrics": p.metrics, "state": p.shutdown_state, "resumed": resumed})


Successor = Callable[[int, object], Construct]
"""(incarnation > 0, the state its predecessor handed over) -> how to make it."""


def successors(parts: KubeletParts) -> dict[str, Successor]:
    """The children that continue from what their predecessor handed over
    (actors.core.messages.HandOver), by name. Each decodes the state with msgspec, so the
    live value and a replay's recorded JSON make the same successor."""
    return {names.PROBES: lambda n, state: probe_manager(
        parts, n, msgspec.convert(state, tuple[SavedProbe, ...])),
            names.SHUTDOWN: lambda n, state: shutdown_manager(
        parts, n, msgspec.convert(state, ShutdownProgress))}


def worker(parts: KubeletParts, uid: PodUID, incarnation: int,
           cancel: threading.Event) -> Construct:
    """How to make incarnation ``incarnation`` of the pod worker for ``uid``."""
    p = parts
    extra: dict[str, Any] = {"events": recorder(p)}
    return Construct(PodWorker, (uid, p.dispatch, p.manager, p.clock, p.metrics,
                                 p.config.timing, cancel),
                     {"incarnation": incarnation, **extra})


def sync_loop(parts: KubeletParts, child_specs: list[ChildSpec],
              workers: WorkerFactory) -> Construct:
    p = parts
    extra: dict[str, Any] = {"events": recorder(p)}
    return Construct(SyncLoop, (p.dispatch, p.timers, p.clock, child_specs, workers,
                                p.config.supervisor, p.metrics),
                     extra)


def _starter(recipe: Recipe) -> Callable[[int], ActorRef]:
    return lambda incarnation: recipe(incarnation).start()


def _resumer(successor: Successor) -> Callable[[int, object], ActorRef]:
    return lambda incarnation, state: successor(incarnation, state).start()


def child_specs(parts: KubeletParts) -> list[ChildSpec]:
    """The sync loop's static children as it supervises them, started for real."""
    later = successors(parts)
    specs = [kubelet_child((name, _starter(recipe))) for name, recipe in children(parts)]
    return [dataclasses.replace(spec, resume=_resumer(later[spec.name]))
            if spec.name in later else spec for spec in specs]


def start_worker(parts: KubeletParts) -> WorkerFactory:
    """How the sync loop starts a pod worker."""

    def start(uid: PodUID, incarnation: int, cancel: threading.Event) -> ActorRef:
        return worker(parts, uid, incarnation, cancel).start()

    return start


def start(parts: KubeletParts, specs: list[ChildSpec] | None = None) -> ActorRef:
    """Start the sync loop, which starts every other actor: the kubelet runs.

    ``specs`` replaces ``child_specs(parts)`` (a test that holds a child's start).
    """
    chosen = child_specs(parts) if specs is None else specs
    return sync_loop(parts, chosen, start_worker(parts)).start()
