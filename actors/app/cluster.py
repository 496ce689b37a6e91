"""Cluster mode from the flags: the API clients and the Node's settings (--kubeconfig),
after the TLS bootstrap, with the certificate managers (actors.app.certificates)."""

from __future__ import annotations

from loguru import logger

from actors.app import certificates
from actors.app.config.flags import KubeletFlags
from actors.app.node import allocatable_config
from actors.kubelet.cluster.context import Cluster, ClusterSettings
from runtime.clock import Clock
from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.nodestatus import NodeConfig
from runtime.kubeapi.transport import Transport
from runtime.machine import machine_arch


def cluster_from_flags(flags: KubeletFlags, clock: Clock, node_ip: str) -> Cluster | None:
    """The API server to join, or None without --kubeconfig (standalone); ``node_ip`` is
    the Node's InternalIP, the address the kubelet gives its pods as status.hostIP.

    Raises ConfigError (KubeconfigError) when the kubeconfig is unusable or the node IP
    cannot be chosen: as upstream, a kubelet that cannot reach its cluster's config does
    not start.
    """
    if not flags.kubeconfig:
        return None
    rest = certificates.bootstrap_and_load(flags, clock)  # blocks while bootstrapping
    client_certs = certificates.client_manager(flags, rest, clock)
    node = NodeConfig(
        node_name=flags.node_name, hostname=flags.node_name, node_ip=node_ip,
        architecture=machine_arch(), node_labels=flags.node_labels,
        register_with_taints=flags.register_with_taints, kubelet_port=flags.port,
        max_images=flags.node_status_max_images)
    settings = ClusterSettings(
        register_node=flags.register_node,
        node_status_update_frequency=flags.node_status_update_frequency,
        node_status_report_frequency=flags.node_status_report_frequency,
        node_lease_duration_seconds=flags.node_lease_duration_seconds,
        root_dir=flags.root_dir, max_pods=flags.max_pods,
        allocatable=allocatable_config(flags))
    client = KubeClient(Transport(rest, clock=clock, certificates=client_certs))
    # Upstream's heartbeat client: its own connections, a timeout of the update period.
    heartbeat = KubeClient(Transport(rest, clock=clock,
                                     timeout=flags.node_status_update_frequency,
                                     certificates=client_certs))
    if client_certs is not None:
        certificates.attach_client(client_certs, flags, client, heartbeat, clock)
    serving = certificates.serving_manager(flags, node, client, clock)
    logger.info("joining the cluster at {} as node {} ({})", rest.server, flags.node_name,
                node_ip)
    return Cluster(client, heartbeat, node, settings, client_certificates=client_certs,
                   serving_certificates=serving,
                   on_certificate_expired=certificates.exit_for_new_credentials)
