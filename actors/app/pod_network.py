"""How pods are networked: the embedded containerd's CNI settings and the pod CIDR at start.

- Standalone (and run-once): the embedded containerd's pods get addresses from a fixed
  network, ``--pod-cidr`` or 10.88.0.0/16.
- Cluster mode: the embedded containerd renders its network from a template with the pod
  CIDRs the kubelet gives it through CRI UpdateRuntimeConfig: the Node's
  ``spec.podCIDRs`` (the node-status actor), or ``--pod-cidr`` at start when it is set.
- At start, in both modes, a set ``--pod-cidr`` is given to the runtime, as upstream's
  NewMainKubelet does (updatePodCIDR(kubeCfg.PodCIDR)).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loguru import logger

from actors.app.config.flags import KubeletFlags
from runtime.cri.service import RuntimeService
from runtime.kuberuntime.pod_cidr import RuntimePodCIDR

if TYPE_CHECKING:
    from actors.kubelet.cluster.context import Cluster

__all__ = ["embedded_network", "give_pod_cidr_at_start"]


def embedded_network(flags: KubeletFlags) -> dict[str, Any]:
    """The EmbeddedContainerd keyword arguments of its pod network, from the flags."""
    # Here, not at the top: only a kubelet that embeds containerd pays for its module.
    from runtime.containerd.config import DEFAULT_CNI_BIN_DIR, DEFAULT_SUBNET

    return {
        "bridge_name": flags.cni_bridge_name,
        "subnet": flags.pod_cidr or DEFAULT_SUBNET,
        "cni_bin_dir": flags.cni_bin_dir or DEFAULT_CNI_BIN_DIR,
        "cni_conf_dir": flags.cni_conf_dir or None,
        "pod_cidr_from_kubelet": bool(flags.kubeconfig) and not flags.runonce,
    }


def give_pod_cidr_at_start(flags: KubeletFlags, runtime: RuntimeService,
                           cluster: Cluster | None) -> None:
    """Give the runtime ``--pod-cidr`` when it is set; in cluster mode through the
    cluster's RuntimePodCIDR, so the Node's podCIDRs are sent only when they differ."""
    if not flags.pod_cidr:
        return
    logger.bind(pod="", uid="", container="").info(
        "giving the runtime the pod CIDR {} (--pod-cidr)", flags.pod_cidr)
    holder = cluster.pod_cidr if cluster is not None else RuntimePodCIDR()
    holder.update(runtime, flags.pod_cidr)
