"""The node-status actor: registers this kubelet's Node, then keeps its status current.

Upstream (pkg/kubelet/kubelet_node_status.go, kubelet.go): registerWithAPIServer, retried
after 100 ms doubling to 7 s, then syncNodeStatus every nodeStatusUpdateFrequency (10 s),
posting the status when it changed or nodeStatusReportFrequency (5 min) passed. The Ready
condition is computed from the runtime's state and the PLEG's health: each round this actor
asks the sync loop for its health checks (a ReportHealth tell answered by a HealthReport,
both recorded in a trace) and runs the round when the answer comes. The API calls are
runtime.kubeapi.node's, made in this actor's handlers.
"""

from __future__ import annotations

from typing import Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers
from actors.kubelet import names
from actors.kubelet.cluster.context import Cluster
from actors.kubelet.cluster.messages import HealthReport, ReportHealth
from runtime import errors
from runtime.clock import Clock
from runtime.cri.service import RuntimeService
from runtime.events import reasons
from runtime.events.node import condition_events, node_event_message
from runtime.events.recorder import NULL_RECORDER, EventRecorder, node_ref
from runtime.kubeapi.client import NODES
from runtime.kubeapi.node import (
    REGISTER_FIRST_STEP,
    REGISTER_MAX_STEP,
    NodeStatusReporter,
    machine_facts,
)
from runtime.kubeapi.nodestatus import MachineFacts, NodeHealth

TICK_REGISTER = "node-register"


def node_health(checks: dict[str, str | None]) -> NodeHealth:
    """The sync loop's checks as the Ready condition's inputs (upstream's runtimeState
    errors: the runtime down, the PLEG not healthy)."""
    runtime: list[str] = []
    if reason := checks.get(names.HEALTH_RUNTIME):
        runtime.append(f"container runtime is down: {reason}")
    if reason := checks.get(names.HEALTH_PLEG):
        runtime.append(f"PLEG is not healthy: {reason}")
    return NodeHealth(runtime_errors=tuple(runtime))


class NodeStatusActor(Actor):
    """Registration and the status loop of this kubelet's Node."""

    def __init__(self, dispatch: Dispatch, timers: Timers, clock: Clock, cluster: Cluster,
                 runtime: RuntimeService, incarnation: int = 0,
                 events: EventRecorder = NULL_RECORDER) -> None:
        super().__init__(names.NODE_STATUS, dispatch, incarnation)
        self._events = events
        self._timers = timers
        self._clock = clock
        self._cluster = cluster
        self._runtime = runtime
        self._health = NodeHealth()
        self._facts: MachineFacts | None = None
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
            on_repeated_heartbeat_failure=transport.close)
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

    def on_stop(self) -> None:
        for handle in self._handles:
            handle.cancel()
        if self._retry is not None:
            self._retry.cancel()

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind in (names.TICK_NODE_STATUS,
                                                          TICK_REGISTER):
            self.send(names.SYNC_LOOP, ReportHealth(self.name))
        elif isinstance(message, HealthReport):
            self._health = node_health(dict(message.checks))
            self._round()
        else:
            return super().handle(message)
        return None

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
            self._facts = machine_facts(settings.root_dir, settings.max_pods, name, version)
        return self._facts

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
