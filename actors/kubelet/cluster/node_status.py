"""The node-status actor: registers this kubelet's Node, then keeps its status current.

Upstream (pkg/kubelet/kubelet_node_status.go, kubelet.go): registerWithAPIServer, retried
after 100 ms doubling to 7 s, then syncNodeStatus every nodeStatusUpdateFrequency (10 s),
posting the status when it changed or nodeStatusReportFrequency (5 min) passed. The Ready
condition is computed from the runtime's state and the PLEG's health: each round this actor
asks the sync loop for its health checks (a ReportHealth tell answered by a HealthReport,
both recorded in a trace) and runs the round when the answer comes. The API calls are
runtime.kubeapi.node's, made in this actor's handlers.

What the runtime says comes through its recorded CRI calls here: Status each round
(NetworkReady and RuntimeReady, as updateRuntimeUp reads them) and ListImages at most
every 30 s (the image cache behind the Node's ``status.images``), and UpdateRuntimeConfig
when the Node's ``spec.podCIDRs`` differ from what the runtime was last given (upstream's
updatePodCIDR, through the cluster's RuntimePodCIDR, which outlives this actor). Until the
Node is Ready, a round every 100 ms (for at most 2 minutes) posts the status the moment it
turns Ready, as upstream's fastStatusUpdateOnce does, so a new node is Ready without
waiting 10 s.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers
from actors.kubelet import names
from actors.kubelet.cluster.context import Cluster
from actors.kubelet.cluster.messages import HealthReport, ReportHealth
from actors.kubelet.eviction import NodePressure
from actors.kubelet.shutdown import NodeShuttingDown
from runtime import errors
from runtime.clock import Clock
from runtime.cri.service import CRIRuntime
from runtime.events import reasons
from runtime.events.node import condition_events, node_event_message
from runtime.events.recorder import NULL_RECORDER, EventRecorder, node_ref
from runtime.eviction.api import DISK_PRESSURE, MEMORY_PRESSURE, PID_PRESSURE
from runtime.kubeapi.client import NODES
from runtime.kubeapi.node import (
    REGISTER_FIRST_STEP,
    REGISTER_MAX_STEP,
    NodeStatusReporter,
    machine_facts,
)
from runtime.kubeapi.nodestatus import MachineFacts, NodeHealth, NodeImage
from runtime.kubeapi.runtimestate import (
    FAST_STATUS_PERIOD,
    IMAGE_CACHE_PERIOD,
    NODE_READY_GRACE_PERIOD,
    FastStep,
    condition_errors,
    node_images,
    ready_status,
)
from runtime.nodeshutdown import NODE_SHUTTING_DOWN

TICK_REGISTER = "node-register"
TICK_FAST_STATUS = "node-status-fast"


@dataclasses.dataclass(frozen=True)
class RuntimeConditions:
    """The last CRI Status answer's verdicts (updateRuntimeUp): ``answered`` is False
    until a Status call succeeds."""

    answered: bool = False
    runtime_error: str | None = None
    network_error: str | None = None


def node_health(checks: dict[str, str | None],
                conditions: RuntimeConditions = RuntimeConditions()) -> NodeHealth:
    """The Ready condition's inputs (upstream's runtimeState errors): the runtime down
    (the sync loop's check, unless this round's Status call answered: that is newer), the
    PLEG not healthy, RuntimeReady false; NetworkReady false as the network error."""
    runtime: list[str] = []
    if not conditions.answered and (reason := checks.get(names.HEALTH_RUNTIME)):
        runtime.append(f"container runtime is down: {reason}")
    if reason := checks.get(names.HEALTH_PLEG):
        runtime.append(f"PLEG is not healthy: {reason}")
    if conditions.runtime_error:
        runtime.append(conditions.runtime_error)
    network = (conditions.network_error,) if conditions.network_error else ()
    return NodeHealth(runtime_errors=tuple(runtime), network_errors=network)


class NodeStatusActor(Actor):
    """Registration and the status loop of this kubelet's Node."""

    def __init__(self, dispatch: Dispatch, timers: Timers, clock: Clock, cluster: Cluster,
                 runtime: CRIRuntime, incarnation: int = 0,
                 events: EventRecorder = NULL_RECORDER) -> None:
        super().__init__(names.NODE_STATUS, dispatch, incarnation)
        self._events = events
        self._timers = timers
        self._clock = clock
        self._cluster = cluster
        self._runtime = runtime
        self._health = NodeHealth()
        self._pressure: tuple[str, ...] = ()  # the eviction manager's node conditions
        self._shutting_down = False  # the node shutdown manager's ShutdownStatus
        self._facts: MachineFacts | None = None
        self._conditions = RuntimeConditions()
        self._images: tuple[NodeImage, ...] = ()
        self._images_at: float | None = None
        self._started = clock.monotonic()
        self._fast: Cancellable | None = None
        self._asked_sync = self._asked_fast = False
        self._step = REGISTER_FIRST_STEP
        self._retry: Cancellable | None = None
        self._handles: list[Cancellable] = []
        settings = cluster.settings
        transport = cluster.heartbeat.transport
        self.reporter = NodeStatusReporter(
            cluster.heartbeat, cluster.node, self._machine_facts, lambda: self._health,
            clock=clock, wait=lambda _seconds: True,
            update_frequency=settings.node_status_update_frequency,
            report_frequency=settings.node_status_report_frequency,
            on_repeated_heartbeat_failure=transport.close,
            pod_cidr=lambda cidr: cluster.pod_cidr.update(self._runtime, cidr))
        self._log = logger.bind(pod="", uid="", container="", node=cluster.node.node_name)
        self.reporter.on_conditions = self._condition_events

    def _condition_events(self, old: list[Any], new: list[Any]) -> None:
        """NodeReady, NodeNotReady, NodeHasSufficientMemory...: upstream's setters record
        a condition whose status changes."""
        name = self._cluster.node.node_name
        for reason in condition_events(old, new):
            self._events.event(node_ref(name), reasons.NORMAL, reason,
                               node_event_message(name, reason))

    def on_start(self) -> None:
        period = self._cluster.settings.node_status_update_frequency
        self._handles.append(self._timers.every(names.TICK_NODE_STATUS, self.name, period,
                                                first=0.0))
        self._fast = self._timers.every(TICK_FAST_STATUS, self.name, FAST_STATUS_PERIOD,
                                        first=FAST_STATUS_PERIOD)

    def on_stop(self) -> None:
        for handle in self._handles:
            handle.cancel()
        self._stop_fast()
        if self._retry is not None:
            self._retry.cancel()

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind in (names.TICK_NODE_STATUS,
                                                          TICK_REGISTER):
            self._asked_sync = True
            self.send(names.SYNC_LOOP, ReportHealth(self.name))
        elif isinstance(message, Tick) and message.kind == TICK_FAST_STATUS:
            late = self._clock.monotonic() - self._started >= NODE_READY_GRACE_PERIOD
            if ready_status(self.reporter.last_node) == "True" or late:
                if late:
                    self._log.error("node not becoming ready in time after startup")
                self._stop_fast()  # Ready already, or too late to hurry
            elif self.reporter.registered and self._fast is not None \
                    and not self._asked_fast:  # no Node yet: nothing to post
                self._asked_fast = True
                self.send(names.SYNC_LOOP, ReportHealth(self.name))
        elif isinstance(message, HealthReport):
            self._conditions = self._runtime_conditions()
            self._health = dataclasses.replace(
                node_health(dict(message.checks), self._conditions),
                memory_pressure=MEMORY_PRESSURE in self._pressure,
                disk_pressure=DISK_PRESSURE in self._pressure,
                pid_pressure=PID_PRESSURE in self._pressure,
                shutdown_errors=(NODE_SHUTTING_DOWN,) if self._shutting_down else ())
            # One answer per ask; an answer nobody asked for (tests) is a regular round.
            if self._asked_fast and not self._asked_sync:
                self._asked_fast = False
                self._fast_round()
            else:
                self._asked_sync = False
                self._round()
        elif isinstance(message, NodePressure):
            self._pressure = message.conditions  # posted with the next round
        elif isinstance(message, NodeShuttingDown):
            # Upstream's shutdown manager syncs the node status at once (NotReady).
            self._shutting_down = message.shutting_down
            self._asked_sync = True
            self.send(names.SYNC_LOOP, ReportHealth(self.name))
        else:
            return super().handle(message)
        return None

    def _runtime_conditions(self) -> RuntimeConditions:
        """updateRuntimeUp: the runtime's conditions now; when Status fails ("Container
        runtime sanity check failed") what was known stays, marked unanswered."""
        try:
            runtime_error, network_error = condition_errors(self._runtime.status())
        except errors.KubeletError as err:
            self._log.error("container runtime sanity check failed: {}", err)
            return dataclasses.replace(self._conditions, answered=False)
        if network_error and not self._conditions.network_error:
            self._log.error("{}", network_error)
        return RuntimeConditions(True, runtime_error, network_error)

    def _node_images(self) -> tuple[NodeImage, ...]:
        """The image cache: ListImages again when 30 s old; kept when it fails."""
        now = self._clock.monotonic()
        if self._images_at is None or now - self._images_at >= IMAGE_CACHE_PERIOD:
            try:
                self._images = node_images(self._runtime.list_images())
                self._images_at = now
            except errors.KubeletError as err:
                self._log.warning("failed to update image list: {}", err)
        return self._images

    def _machine_facts(self) -> MachineFacts:
        """This machine's facts, read once (the runtime's version when it answers)."""
        if self._facts is None or self._facts.container_runtime_version.endswith("Unknown"):
            name = version = ""
            try:
                info = self._runtime.version()
                name, version = info.runtime_name, info.runtime_version
            except errors.KubeletError as err:
                self._log.warning("runtime version unknown for the Node: {}", err)
            settings = self._cluster.settings
            self._facts = machine_facts(settings.root_dir, settings.max_pods, name, version,
                                        settings.allocatable)
        return dataclasses.replace(self._facts, images=self._node_images())

    def _stop_fast(self) -> None:
        if self._fast is not None:
            self._fast.cancel()
            self._fast = None

    def _fast_round(self) -> None:
        """fastNodeStatusUpdate: nothing before the Node is registered (upstream's lister
        has no Node yet); done once it is Ready or after nodeReadyGracePeriod."""
        if self._fast is None or not self.reporter.registered:
            return
        timed_out = self._clock.monotonic() - self._started >= NODE_READY_GRACE_PERIOD
        try:
            step = self.reporter.fast_update_node_status(timed_out)
        except errors.APIError as err:
            self._log.error("unable to update node status: {}", err)
            step = FastStep.DONE
        if step is not FastStep.AGAIN:
            self._stop_fast()

    # --- one round ------------------------------------------------------------------------

    def _round(self) -> None:
        reporter = self.reporter
        if not reporter.registered and not self._register():
            return
        try:
            reporter.update_node_status()
        except errors.APINotFound:
            self._cluster.registration.clear()  # deleted under us: registered again next
            self._retry_soon()
        except errors.APIError as err:
            self._log.error("unable to update node status: {}", err)

    def _register(self) -> bool:
        reporter = self.reporter
        name = self._cluster.node.node_name
        if self._cluster.settings.register_node:
            try:
                node = reporter.initial_node()
            except errors.KubeletError as err:
                self._log.error("unable to construct v1.Node object for kubelet: {}", err)
                self._retry_soon()
                return False
            self._log.info("attempting to register node")
            if not reporter.try_register(node):
                self._retry_soon()
                return False
            self._log.info("successfully registered node")
            # Upstream's initialNode runs the status setters: the first condition events.
            self._condition_events([], list((node.get("status") or {}).get("conditions")
                                            or []))
        try:
            uid = str(self._cluster.heartbeat.get(NODES, name)["metadata"]["uid"])
        except (errors.APIError, KeyError, TypeError) as err:
            self._log.error("unable to read the registered node: {}", err)
            self._retry_soon()
            return False
        reporter.registered = True
        self._step = REGISTER_FIRST_STEP
        self._cluster.registration.set(uid)
        return True

    def _retry_soon(self) -> None:
        """Upstream's registration back-off: 100 ms doubling to 7 s."""
        if self._retry is not None:
            self._retry.cancel()
        self._retry = self._timers.once(self._step, self.name,
                                        Tick(TICK_REGISTER, self._clock.monotonic()))
        self._step = min(self._step * 2, REGISTER_MAX_STEP)
