"""Node registration and node status updates, as upstream's kubelet does them.

pkg/kubelet/kubelet_node_status.go: registerWithAPIServer (POST the initial Node, retried
after 100 ms doubling to 7 s, the sleep first; on AlreadyExists GET it, reconcile the
default labels and the attach-detach annotation, PATCH the status subresource if they
changed) and updateNodeStatus (up to 5 tries: GET, from the server's cache on the first,
recompute with the setters, PATCH when the status changed or nodeStatusReportFrequency
passed since the last report). When a status update finds no Node the registration is
done again (the issue asks for it; a Node can be deleted under a running kubelet).
Each update first gives the runtime the Node's ``spec.podCIDRs`` (comma-joined) through
``pod_cidr`` (upstream's updateNode -> updatePodCIDR); a changed pod CIDR posts the status
even when nothing else changed.

The inputs (machine facts, health) come from callables, time from an injected clock and
every sleep from ``wait``, so tests decide them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from loguru import logger

from runtime import errors
from runtime.clock import Clock
from runtime.cm.node_allocatable import AllocatableConfig, plan
from runtime.kubeapi import nodestatus
from runtime.kubeapi.client import NODES, KubeClient
from runtime.kubeapi.nodestatus import MachineFacts, NodeConfig, NodeHealth
from runtime.kubeapi.runtimestate import FastStep, fast_status_step
from runtime.kubeapi.strategicpatch import node_status_patch
from runtime.machine import machine_capacity, machine_identity

__all__ = ["KUBELET_VERSION", "NODE_STATUS_REPORT_FREQUENCY", "NODE_STATUS_UPDATE_FREQUENCY",
           "NODE_STATUS_UPDATE_RETRY", "NodeStatusReporter", "machine_facts"]

KUBELET_VERSION = "v1.32.0+kubelet-actors.0.1.0"
"""nodeInfo.kubeletVersion: the upstream release whose behaviour this kubelet follows, and
ours as semver build metadata (version-skew checks read the first part)."""

NODE_STATUS_UPDATE_FREQUENCY = 10.0
NODE_STATUS_REPORT_FREQUENCY = 300.0
NODE_STATUS_UPDATE_RETRY = 5
REGISTER_FIRST_STEP = 0.1
REGISTER_MAX_STEP = 7.0


def machine_facts(root_dir: str, max_pods: int, runtime_name: str = "",
                  runtime_version: str = "",
                  allocatable_config: AllocatableConfig | None = None) -> MachineFacts:
    """This machine's facts for the Node; the runtime's name and version from CRI Version
    ("<name>://Unknown" when it did not answer, as VersionInfo writes it); allocatable is
    capacity less ``allocatable_config``'s reservations (runtime.cm.node_allocatable)."""
    node = plan(machine_capacity(root_dir, max_pods), allocatable_config or AllocatableConfig())
    capacity, allocatable = node.capacity, node.allocatable
    ident = machine_identity()
    return MachineFacts(
        capacity=capacity, allocatable=allocatable,
        machine_id=ident.machine_id, system_uuid=ident.system_uuid, boot_id=ident.boot_id,
        kernel_version=ident.kernel_version, os_image=ident.os_image,
        container_runtime_version=f"{runtime_name or 'containerd'}://"
                                  f"{runtime_version or 'Unknown'}",
        kubelet_version=KUBELET_VERSION)


class NodeStatusReporter:
    """Registers this node and keeps its status current."""

    def __init__(self, client: KubeClient, config: NodeConfig,
                 facts: Callable[[], MachineFacts], health: Callable[[], NodeHealth], *,
                 clock: Clock, wait: Callable[[float], bool] | None = None,
                 update_frequency: float = NODE_STATUS_UPDATE_FREQUENCY,
                 report_frequency: float = NODE_STATUS_REPORT_FREQUENCY,
                 on_repeated_heartbeat_failure: Callable[[], None] | None = None,
                 pod_cidr: Callable[[str], bool] | None = None) -> None:
        self._client = client
        # Gives the runtime the Node's pod CIDRs; True when they changed (RuntimePodCIDR).
        self._pod_cidr = pod_cidr
        self.config = config
        self._facts = facts
        self._health = health
        self._clock = clock
        self._stopped = threading.Event()
        self._wait = wait or self._stopped.wait
        self.update_frequency = update_frequency
        # Upstream closes the heartbeat client's connections here, so a connection to a
        # server that went away is not reused (kl.onRepeatedHeartbeatFailure).
        self.on_repeated_heartbeat_failure = on_repeated_heartbeat_failure
        self.report_frequency = report_frequency
        self.registered = False
        self.last_report: float | None = None
        # The Node as last read or written: upstream's node lister, which the fast
        # status updates at startup read instead of the API server.
        self.last_node: dict[str, Any] | None = None
        self.patches = 0
        # Told (old conditions, new conditions) each time a status is computed: the
        # node-status actor records the Node's events from them.
        self.on_conditions: Callable[[list[Any], list[Any]], None] | None = None
        self._log = logger.bind(node=config.node_name)

    def stop(self) -> None:
        self._stopped.set()

    def initial_node(self) -> dict[str, Any]:
        """The Node to register (upstream's initialNode), from the facts read now."""
        return nodestatus.initial_node(self.config, self._facts(), self._health(),
                                       self._clock.now())

    # --- registration --------------------------------------------------------------------

    def register(self) -> bool:
        """registerWithAPIServer: until registered (True) or stopped (False)."""
        step = REGISTER_FIRST_STEP
        while not self.registered:
            if self._wait(step):
                return False
            step = min(step * 2, REGISTER_MAX_STEP)
            try:
                node = self.initial_node()
            except errors.KubeletError as err:
                self._log.error("unable to construct v1.Node object for kubelet: {}", err)
                continue
            self._log.info("attempting to register node")
            if self.try_register(node):
                self._log.info("successfully registered node")
                self.registered = True
        return True

    def try_register(self, node: dict[str, Any]) -> bool:
        """tryRegisterWithAPIServer: one attempt."""
        try:
            self.last_node = self._client.create(NODES, node)
            return True
        except errors.APIAlreadyExists:
            pass
        except errors.APIError as err:
            self._log.bind(error=type(err).__name__).error(
                "unable to register node with API server: {}", err)
            return False
        try:
            existing = self._client.get(NODES, self.config.node_name)
        except errors.APIError as err:
            self._log.error("unable to register node with API server: error getting existing "
                            "node: {}", err)
            return False
        self._log.info("node was previously registered")
        reconciled, requires_update = nodestatus.reconcile_existing_node(node, existing)
        self.last_node = existing
        if requires_update:
            try:
                self.last_node = self._client.patch(NODES, self.config.node_name,
                                                    node_status_patch(existing, reconciled),
                                                    subresource="status")
            except errors.APIError as err:
                self._log.error("unable to reconcile node with API server: error updating "
                                "node: {}", err)
                return False
        return True

    # --- status --------------------------------------------------------------------------

    def _update_pod_cidr(self, node: dict[str, Any]) -> bool:
        """updateNode's first step: the Node's podCIDRs (podCIDR may be unset when they
        are set) to the runtime; whether they changed."""
        cidrs = (node.get("spec") or {}).get("podCIDRs") or []
        if not cidrs or self._pod_cidr is None:
            return False
        return self._pod_cidr(",".join(str(c) for c in cidrs))

    def update_node_status(self) -> None:
        """updateNodeStatus: up to 5 tries; raises the last error when all fail."""
        last: errors.APIError | None = None
        for attempt in range(NODE_STATUS_UPDATE_RETRY):
            try:
                self.try_update_node_status(attempt)
                return
            except errors.APINotFound as err:
                # The Node is gone: register it again on the next round.
                self._log.warning("node not found while updating its status: {}", err)
                self.registered = False
                raise
            except errors.APIError as err:
                if attempt > 0 and self.on_repeated_heartbeat_failure is not None:
                    self.on_repeated_heartbeat_failure()
                self._log.bind(attempt=attempt).error(
                    "error updating node status, will retry: {}", err)
                last = err
        raise errors.APIError(f"update node status exceeds retry count: {last}",
                              code=last.code if last else 0) from last

    def try_update_node_status(self, attempt: int) -> bool:
        """tryUpdateNodeStatus; True when a PATCH was sent."""
        # The first try reads from the server's cache (resourceVersion "0"), as upstream.
        node = self._client.get(NODES, self.config.node_name,
                                resource_version="0" if attempt == 0 else "")
        self.last_node = node
        cidr_changed = self._update_pod_cidr(node)
        now = self._clock.now()
        updated = nodestatus.set_node_status(node, self.config, self._facts(), self._health(),
                                             now)
        if self.on_conditions is not None:
            self.on_conditions(list((node.get("status") or {}).get("conditions") or []),
                               list((updated.get("status") or {}).get("conditions") or []))
        due = self.last_report is None or \
            self._clock.monotonic() >= self.last_report + self.report_frequency
        if not due and not cidr_changed and not nodestatus.node_status_has_changed(
                node.get("status"), updated.get("status")):
            return False
        self.last_node = self._client.patch(NODES, self.config.node_name,
                                            node_status_patch(node, updated),
                                            subresource="status")
        self.last_report = self._clock.monotonic()
        self.patches += 1
        return True

    def fast_update_node_status(self, timed_out: bool) -> FastStep:
        """fastNodeStatusUpdate: the status recomputed from the Node last seen (no API
        read), posted only when it turns the Node Ready; a failed post is made again by
        the regular path (updateNodeStatus, which reads the Node afresh)."""
        seen = self.last_node
        updated = changed = None
        if seen is not None and not timed_out:
            cidr_changed = self._update_pod_cidr(seen)
            updated = nodestatus.set_node_status(seen, self.config, self._facts(),
                                                 self._health(), self._clock.now())
            changed = cidr_changed or nodestatus.node_status_has_changed(
                seen.get("status"), updated.get("status"))
        step = fast_status_step(seen, updated, bool(changed), timed_out)
        if timed_out:
            self._log.error("node not becoming ready in time after startup")
        if step is not FastStep.PATCH or seen is None or updated is None:
            return step
        self._log.info("fast updating node status as it just became ready")
        try:
            self.last_node = self._client.patch(NODES, self.config.node_name,
                                                node_status_patch(seen, updated),
                                                subresource="status")
            self.last_report = self._clock.monotonic()
            self.patches += 1
        except errors.APIError as err:
            self._log.error("error updating node status, will retry with syncNodeStatus: {}",
                            err)
            self.update_node_status()
        return step

    def sync_node_status(self) -> None:
        """syncNodeStatus: register if needed, then update the status."""
        if not self.registered and not self.register():
            return
        try:
            self.update_node_status()
        except errors.APIError as err:
            self._log.error("unable to update node status: {}", err)

    def run(self) -> None:
        """Every ``update_frequency`` until stopped (upstream: wait.Until, no jitter)."""
        while not self._stopped.is_set():
            self.sync_node_status()
            if self._wait(self.update_frequency):
                return
