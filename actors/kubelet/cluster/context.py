"""What the cluster actors share: the API clients, the Node's settings, the registration."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runtime.cm.node_allocatable import AllocatableConfig
from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.lease import LEASE_DURATION_SECONDS
from runtime.kubeapi.node import NODE_STATUS_REPORT_FREQUENCY, NODE_STATUS_UPDATE_FREQUENCY
from runtime.kubeapi.nodestatus import NodeConfig
from runtime.kuberuntime.pod_cidr import RuntimePodCIDR

if TYPE_CHECKING:
    from runtime.kubeapi.certificate_manager import CertificateManager

STATUS_RESYNC = 10.0
"""Upstream's status manager syncs every pod's status this often (syncPeriod)."""


class Registration:
    """Set once this kubelet's Node exists in the API server, with its UID.

    The node-status actor sets it; the pod source waits on it before it lists pods (as
    upstream waits for its Node before the API source starts) and the mirror pods take the
    UID for their owner reference. It outlives actor restarts: a replaced actor sees the
    Node that is already there.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._uid = ""

    def set(self, uid: str) -> None:
        with self._lock:
            self._uid = uid
        self._event.set()

    def clear(self) -> None:
        """The Node is gone (deleted under the kubelet): registration starts again."""
        self._event.clear()

    @property
    def uid(self) -> str:
        with self._lock:
            return self._uid

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)


@dataclass(frozen=True)
class ClusterSettings:
    """The flags and KubeletConfiguration fields of cluster mode."""

    register_node: bool = True
    node_status_update_frequency: float = NODE_STATUS_UPDATE_FREQUENCY
    node_status_report_frequency: float = NODE_STATUS_REPORT_FREQUENCY
    node_lease_duration_seconds: int = LEASE_DURATION_SECONDS
    status_resync: float = STATUS_RESYNC
    root_dir: str = ""
    max_pods: int = 110
    # what the Node's allocatable leaves out of its capacity (runtime.cm.node_allocatable)
    allocatable: AllocatableConfig = field(default_factory=AllocatableConfig)


@dataclass(frozen=True)
class Cluster:
    """The API server a kubelet joined: ``client`` for pods, ``heartbeat`` (its own
    connections and a timeout of nodeStatusUpdateFrequency, as upstream's heartbeat
    client) for the Node and the Lease."""

    client: KubeClient
    heartbeat: KubeClient
    node: NodeConfig
    settings: ClusterSettings = field(default_factory=ClusterSettings)
    registration: Registration = field(default_factory=Registration)
    client_certificates: CertificateManager | None = None
    """--rotate-certificates: the client certificate's manager (both clients use its pair)."""
    serving_certificates: CertificateManager | None = None
    """serverTLSBootstrap: the main port's serving certificate's manager."""
    on_certificate_expired: Callable[[], None] | None = None
    """Called when no valid client certificate was had for five minutes (upstream exits)."""
    pod_cidr: RuntimePodCIDR = field(default_factory=RuntimePodCIDR)
    """The pod CIDR the runtime was given (at start, then from the Node's spec.podCIDRs)."""
