"""The pod CIDR the container runtime was given, and the one way to change it.

Upstream (pkg/kubelet/kubelet_network.go updatePodCIDR, kuberuntime_manager.go
UpdatePodCIDR): the kubelet keeps the pod CIDR it last gave the runtime (runtimeState's
podCIDR). At start it gives ``--pod-cidr`` (podCIDR) when one is set; in cluster mode each
node status update gives the Node's ``spec.podCIDRs``, comma-joined. Only a CIDR that
differs from the kept one is sent, as CRI UpdateRuntimeConfig
(``runtime_config.network_config.pod_cidr``); the kept one changes only when the call
succeeds, so a failure is sent again on the next status update.
"""

from __future__ import annotations

import threading

from loguru import logger

from runtime.cri.service import RuntimeService
from runtime.errors import KubeletError

__all__ = ["RuntimePodCIDR"]


class RuntimePodCIDR:
    """What the runtime was last told of the node's pod CIDRs ("" until it is told).

    Shared by whoever updates it (the daemon's start, the node-status actor) and outlives
    an actor's restart, as upstream's runtimeState does. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cidr = ""

    @property
    def current(self) -> str:
        with self._lock:
            return self._cidr

    def update(self, runtime: RuntimeService, cidr: str) -> bool:
        """Give ``runtime`` the pod CIDR ``cidr`` (comma-joined CIDRs) unless it has it.

        Returns whether the pod CIDR changed: False when it is the one the runtime has;
        True when it was sent, and also when sending it failed (as upstream: the CIDR may
        have changed, so the Node's status is posted). A failure is logged, not raised:
        the next call sends it again.
        """
        with self._lock:
            old = self._cidr
            if cidr == old:
                return False
            try:
                runtime.update_runtime_config(cidr)
            except KubeletError as err:
                logger.bind(pod="", uid="", container="").error(
                    "Error updating pod CIDR: failed to update pod CIDR: {}", err)
                return True
            logger.bind(pod="", uid="", container="").info(
                "Updating Pod CIDR: originalPodCIDR={!r} newPodCIDR={!r}", old, cidr)
            self._cidr = cidr
            return True
