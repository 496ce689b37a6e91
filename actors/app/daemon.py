"""The long-running kubelet: wires the runtime, the actors, the timers and the HTTP API.

SIGTERM or SIGINT stops the daemon without touching pods, as upstream: the actors stop,
the embedded containerd stops, the containers keep running, and the next start adopts
them from their labels.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

from loguru import logger

from actors.app.cgroups import (
    NodeAllocatableEnforcement,
    node_allocatable_enforcement,
    start_pod_cgroups,
)
from actors.app.config.configz import configz_body, kubelet_configuration
from actors.app.config.feature_gates import EVENTED_PLEG, enabled
from actors.app.config.flags import KubeletFlags
from actors.app.eviction_setup import wire_eviction
from actors.app.http.security import main_port_security
from actors.app.http.server import KubeletHTTPServer
from actors.app.http.stream_routes import stream_host
from actors.app.http.timeline import LiveTrace
from actors.app.leftover_mounts import unmount_leftovers
from actors.app.log_rotation_setup import log_rotation_parts
from actors.app.node import node_settings, this_node
from actors.app.pod_network import give_pod_cidr_at_start
from actors.app.probe_state import probe_state_file, restore_probe_state
from actors.app.process_memory import TRIM_PERIOD_S, give_back_free_memory
from actors.app.shutdown_setup import logind_watch, shutdown_settings, shutdown_state_file
from actors.app.stats_setup import stats_wiring
from actors.core.dispatch import ActorRef, Dispatch
from actors.core.faults import FaultPlan
from actors.core.supervision import SupervisorSpec
from actors.core.timers import TimerService
from actors.core.trace.recording import RecordingClock, RecordingInterceptor
from actors.core.trace.writer import TraceWriter
from actors.kubelet import names, recorded, tree
from actors.kubelet.events import DispatchRecorder
from actors.kubelet.messages import GetPods, RuntimePod
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.pod_worker import WorkerTiming
from actors.kubelet.sync_loop import GetHealth, GetRunningPods, SyncLoopSettings
from actors.kubelet.tree import KubeletParts, ReplayConfig, Sources
from runtime.clock import Clock, RealClock
from runtime.containerd.event_sources import EventSourceChooser
from runtime.containerd.managed import ManagedContainerd
from runtime.cri.instrumented import Timing
from runtime.cri.intercept import Interceptor, intercept
from runtime.cri.parallel_limit import ParallelLimit
from runtime.cri.service import CRIRuntime
from runtime.cri.types import ContainerStatus
from runtime.errors import CRINotFound
from runtime.ids import ContainerID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.pod.model import Pod
from runtime.status.types import PodStatus

if TYPE_CHECKING:  # cluster mode's modules are imported only with --kubeconfig
    from actors.kubelet.cluster.context import Cluster
    from actors.kubelet.sources.logind import LogindWatch
    from runtime.kubeapi.certificate_manager import CertificateManager
    from runtime.kubeapi.objects import WatchingObjects

ASK_TIMEOUT = 5.0
EXIT_OK, EXIT_SUPERVISOR_GAVE_UP = 0, 1


class DaemonView:
    """The HTTP API's view of the running kubelet: asks, never blocks an actor."""

    def __init__(self, dispatch: Dispatch, metrics: KubeletMetrics,
                 manager: KubeRuntimeManager) -> None:
        self._dispatch = dispatch
        self._metrics = metrics
        self._manager = manager
        self._dead_seen: dict[str, int] = {}
        self._unhandled_seen: dict[str, int] = {}

    def _ask(self, name: str, message: object) -> Any:
        ref = self._dispatch.ref(name)
        if ref is None:
            raise RuntimeError(f"the {name} actor is not running")
        return ref.ask(message, block=True, timeout=ASK_TIMEOUT)

    def pods(self) -> tuple[tuple[Pod, PodStatus], ...]:
        result: tuple[tuple[Pod, PodStatus], ...] = self._ask(names.STATUS, GetPods())
        return result

    def running_pods(self) -> tuple[RuntimePod, ...]:
        result: tuple[RuntimePod, ...] = self._ask(names.SYNC_LOOP, GetRunningPods())
        return result

    def health(self) -> Mapping[str, str | None]:
        try:
            result: Mapping[str, str | None] = self._ask(names.SYNC_LOOP, GetHealth())
            return result
        except Exception as err:  # a stuck or dead sync loop is itself the finding
            return {**dict.fromkeys(names.HEALTH_CHECKS),
                    names.HEALTH_SYNC_LOOP: f"the sync loop did not answer: {err!r}"}

    def metrics(self) -> KubeletMetrics:
        return self._metrics

    def refresh_metrics(self) -> None:
        for actor, depth in self._dispatch.mailbox_depths(names.actor_group).items():
            self._metrics.mailbox_depth.labels(actor).set(depth)
        for counts, seen, metric in (
            (self._dispatch.dead_letters, self._dead_seen, self._metrics.dead_letters),
            (self._dispatch.dead_letters_unhandled, self._unhandled_seen,
             self._metrics.dead_letters_unhandled),
        ):
            for kind, count in list(counts.items()):
                if count > seen.get(kind, 0):
                    metric.labels(kind).inc(count - seen.get(kind, 0))
                    seen[kind] = count

    def container_status(self, container_id: ContainerID) -> ContainerStatus | None:
        try:
            return self._manager.runtime.container_status(container_id)
        except CRINotFound:
            return None


@dataclass
class Kubelet:
    """A started daemon: its parts, so a caller (or a test) can stop it in order."""

    dispatch: Dispatch
    timers: TimerService
    sync_loop: ActorRef
    http: KubeletHTTPServer
    metrics: KubeletMetrics
    writer: TraceWriter | None = None
    cluster: Cluster | None = None
    objects: WatchingObjects | None = None  # cluster mode: the watches of API objects
    logind: LogindWatch | None = None  # graceful node shutdown's watch (holds the lock)
    enforcement: NodeAllocatableEnforcement | None = None  # the kubepods limits' retries

    def stop(self) -> None:
        self.http.stop()
        if self.enforcement is not None:
            self.enforcement.stop()
        if self.logind is not None:  # a stopped kubelet delays no shutdown
            self.logind.stop()
        if self.sync_loop.is_alive():
            self.sync_loop.stop(block=True, timeout=60.0)
        self.timers.stop()
        if self.objects is not None:  # its watches use the cluster's transport
            self.objects.stop()
        if self.cluster is not None:
            # Every connection, a certificate round's watch of its CSR included.
            self.cluster.client.transport.close_all()
            self.cluster.heartbeat.transport.close_all()
        if self.writer is not None:
            self.writer.close()


def serving_certificates(cluster: Cluster | None) -> CertificateManager | None:
    """serverTLSBootstrap's manager, if the cluster has one (certs)."""
    return cluster.serving_certificates if cluster is not None else None


def start_kubelet(
    flags: KubeletFlags,
    runtime: CRIRuntime,
    node_ip: str,
    containerd: ManagedContainerd | None = None,
    clock: Clock | None = None,
    faults: FaultPlan | None = None,
    runtime_faults: tuple[Interceptor, ...] = (),
    supervision: SupervisorSpec | None = None,
    runtime_endpoint: str = "",
) -> Kubelet:
    """Start the actors and the HTTP API on ``runtime``; returns once they run.

    For drills only: ``faults`` is the plan the actors consult, ``runtime_faults`` stand
    between the actors and the runtime beneath the recording (so an injected failure is
    in the trace), and ``supervision`` replaces the kubelet's restart intensity and
    back-off. ``runtime_endpoint``: the runtime's socket, where the PLEG subscribes to
    its events (empty, or the EventedPLEG gate off: the PLEG relists every second).
    """
    real_clock = clock or RealClock()
    metrics = KubeletMetrics()
    cluster: Cluster | None = None
    if flags.kubeconfig:
        from actors.app.cluster import cluster_from_flags

        cluster = cluster_from_flags(flags, real_clock, node_ip)
    if cluster is not None:
        node_ip = cluster.node.node_ip  # status.hostIP is the Node's InternalIP
    sources = Sources(flags.node_name, flags.pod_manifest_path, flags.manifest_url,
                      api=cluster is not None)
    sync_settings = SyncLoopSettings(
        max_pods=flags.max_pods,
        node=this_node(flags),
        allowed_unsafe_sysctls=flags.allowed_unsafe_sysctls,
        file_check_frequency=flags.file_check_frequency,
        http_check_frequency=flags.http_check_frequency,
        expected_sources=sources.expected(),
    )
    if supervision is not None:
        sync_settings = dataclasses.replace(sync_settings, supervision=supervision)
    stats = stats_wiring(flags, node_settings(flags), runtime, metrics)
    rotation = log_rotation_parts(flags, node_settings(flags).pod_logs_dir, runtime, metrics)
    eviction, stats_parts, sync_settings = wire_eviction(flags, stats.parts, sync_settings,
                                                         cluster is not None)
    root_dir = node_settings(flags).root_dir
    config = ReplayConfig(
        node=node_settings(flags),
        timing=WorkerTiming(resync_interval=flags.sync_frequency),
        supervisor=sync_settings, host_ip=node_ip, embedded=containerd is not None,
        cluster=cluster is not None, stats=stats.parts is not None,
        garbage_collection=flags.garbage_collection,
        log_rotation=rotation is not None,
        eviction=eviction,
        shutdown=shutdown_settings(flags, cluster is not None),
        probe_state=restore_probe_state(root_dir, runtime))
    writer: TraceWriter | None = None
    recording: tuple[Interceptor, ...] = ()  # what the recorded services' calls pass
    # The calls that run processes on the node, a few at a time (runtime.cri.parallel_limit),
    # outside Timing: the metric times the call, not its wait for a slot.
    calls: tuple[Interceptor, ...] = (ParallelLimit(), Timing(metrics.observe_runtime_call),
                                      *runtime_faults)
    clock = real_clock
    if flags.trace_dir:
        writer = TraceWriter(flags.trace_dir, max_bytes=flags.trace_max_bytes,
                             max_files=flags.trace_max_files,
                             argv=tuple(sys.argv), config=config.to_header(),
                             write_every=flags.trace_flush_frequency)
        recording = (RecordingInterceptor(writer),)
        calls = (*recording, *calls)
        clock = RecordingClock(real_clock, writer)
        logger.info("recording a trace in {}", flags.trace_dir)
    instrumented = intercept(runtime, CRIRuntime, *calls)
    dispatch = Dispatch(recorder=writer, faults=faults)
    # Cluster mode: ConfigMaps, Secrets, Services, tokens and RuntimeClasses.
    watching: WatchingObjects | None = None
    if cluster is not None:
        from runtime.kubeapi.objects import WatchingObjects

        watching = WatchingObjects(cluster.client, real_clock)
        watching.start_services()
        watching.start_runtime_classes()
    unmount_leftovers(root_dir, runtime)
    give_pod_cidr_at_start(flags, instrumented, cluster)  # actors.app.pod_network
    # The node's answers and the API server's: inputs, each recorded (actors.kubelet.recorded).
    pod_cgroups = start_pod_cgroups(flags, runtime, embedded=containerd is not None)
    services = recorded.live(config, recording, containerd=containerd, objects=watching,
                             cgroups=pod_cgroups)
    # The back-off tables are shared by every pod worker: their reads are inputs.
    manager = KubeRuntimeManager(instrumented, config.node, clock, node_ip=node_ip,
                                 observe=dispatch.observe, events=DispatchRecorder(dispatch),
                                 **services.for_manager())
    timers = TimerService(dispatch, real_clock)
    events = (EventSourceChooser(runtime_endpoint)
              if runtime_endpoint and enabled(flags.feature_gates, EVENTED_PLEG) else None)
    logind = logind_watch(flags, config.shutdown, dispatch)
    parts = KubeletParts(dispatch, timers, clock, instrumented, manager, config, metrics,
                         services.containerd, sources, cluster=cluster, stats=stats_parts,
                         probe_metrics=stats.probes, runtime_events=events,
                         log_rotation=rotation,
                         probe_state=probe_state_file(root_dir), shutdown_inhibitor=logind,
                         shutdown_state=shutdown_state_file(root_dir, config.shutdown))
    tls, auth = main_port_security(flags, cluster.client if cluster is not None else None,
                                   (node_ip,), serving=serving_certificates(cluster))
    timers.start()
    sync_loop = tree.start(parts)
    if logind is not None:
        logind.start()
    view = DaemonView(dispatch, metrics, manager)
    http = KubeletHTTPServer(
        view, address=flags.address, port=flags.port,
        read_only_port=flags.read_only_port, healthz_port=flags.healthz_port,
        healthz_address=flags.healthz_bind_address, tls=tls, auth=auth,
        stats=stats.endpoints,
        streams=stream_host(view, runtime, metrics.observe_runtime_call),
        trace=LiveTrace(flags.trace_dir, writer.flush) if writer is not None else None,
        configz=configz_body(kubelet_configuration(
            flags, runtime_endpoint=runtime_endpoint,
            tls_files=(tls[1], tls[2]) if tls is not None else ("", ""))),
    )
    # After the events actor started: its Node events are upstream's containerManager.Start's.
    enforcement = node_allocatable_enforcement(flags, pod_cgroups, DispatchRecorder(dispatch))
    try:
        if enforcement is not None:
            enforcement.start()
        http.start()
    except Exception:
        if enforcement is not None:
            enforcement.stop()
        if logind is not None:
            logind.stop()
        sync_loop.stop(block=True, timeout=60.0)
        timers.stop()
        if writer is not None:
            writer.close()
        raise
    logger.info("kubelet-actors running: node {}, sources {}, HTTP {}:{} (read-only {}, "
                "healthz {})", flags.node_name, sorted(sources.expected()), flags.address,
                flags.port, flags.read_only_port, flags.healthz_port)
    return Kubelet(dispatch, timers, sync_loop, http, metrics, writer, cluster, watching, logind,
                   enforcement)


class StopSignals:
    """SIGTERM and SIGINT noted, from when it is made until ``restore``.

    The daemon makes it before it starts the kubelet: /healthz answers before the start
    is over (the other ports are served after it), and a signal sent once it answers
    must stop the daemon in order, not kill it.
    """

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.received: list[int] = []
        self._previous = {s: signal.signal(s, self._on_signal)
                          for s in (signal.SIGTERM, signal.SIGINT)}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Only note it: logging here could re-enter the logger when a second signal comes
        # while the first is being logged (Ctrl-C to a process group, then SIGTERM), which
        # loguru refuses with a RuntimeError.
        self.received.append(signum)
        self.stop.set()

    def restore(self) -> None:
        """Put back the handlers there were before."""
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def run_until_signalled(kubelet: Kubelet, upkeep: Callable[[], object] = give_back_free_memory,
                        upkeep_period: float = TRIM_PERIOD_S,
                        signals: StopSignals | None = None) -> int:
    """Block until SIGTERM/SIGINT (noted by ``signals``, else from now on) or until the
    sync loop gives up; then stop in order and put the signal handlers back.

    Meanwhile ``upkeep`` runs every ``upkeep_period`` seconds on this (otherwise idle)
    thread: the process's own housekeeping, which no actor owns (actors.app.process_memory).
    """
    signals = signals or StopSignals()
    stop, received = signals.stop, signals.received
    next_upkeep = time.monotonic() + upkeep_period
    try:
        while not stop.wait(0.5):
            if time.monotonic() >= next_upkeep:
                upkeep()
                next_upkeep = time.monotonic() + upkeep_period
            if not kubelet.sync_loop.is_alive():
                logger.error("the sync loop stopped: the kubelet cannot go on")
                kubelet.stop()
                return EXIT_SUPERVISOR_GAVE_UP
        logger.info("received {}: stopping (pods keep running)",
                    " and ".join(dict.fromkeys(signal.Signals(s).name for s in received)))
        kubelet.stop()
        return EXIT_OK
    finally:
        signals.restore()
