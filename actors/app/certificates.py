"""The kubelet's certificates from the flags: the TLS bootstrap before anything starts, and
the managers of the rotated client and serving certificates (cmd/kubelet/app/server.go's
buildKubeletClientConfig and buildClientCertificateManager, pkg/kubelet/certificate's
NewKubeletClientCertificateManager and NewKubeletServerCertificateManager).

- ``--bootstrap-kubeconfig``: runtime.kubeapi.bootstrap.load_client_cert runs first and
  blocks until ``--kubeconfig`` has a valid client certificate (upstream does so without
  --rotate-certificates; with it, upstream starts at once and bootstraps in the
  background: here the daemon waits in both cases, so nothing starts without an identity).
- ``--rotate-certificates``: a manager of ``kubelet-client-*.pem`` in ``--cert-dir``, whose
  pair both API clients use; a kubeconfig with its own certificate and none in the store
  yet (kubeadm's first start) has that pair stored and rotated at once. Its CSRs go out on
  the kubelet's client while its certificate is valid, else on the bootstrap kubeconfig's.
- ``serverTLSBootstrap``: a manager of ``kubelet-server-*.pem`` for the main port, its
  template the node's addresses (runtime.kubeapi.csr.serving_template).
"""

from __future__ import annotations

import os
import sys

from loguru import logger

from actors.app.config.flags import KubeletFlags
from runtime.clock import Clock
from runtime.kubeapi.bootstrap import CLIENT_PREFIX, load_client_cert
from runtime.kubeapi.certificate_manager import CertificateManager
from runtime.kubeapi.certificate_store import FileStore, Pair
from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.csr import (
    CLIENT_KUBELET_SIGNER,
    KUBELET_SERVING_SIGNER,
    client_usages,
    node_template,
    serving_template,
    serving_usages,
)
from runtime.kubeapi.kubeconfig import RestConfig, load_kubeconfig
from runtime.kubeapi.nodestatus import NodeConfig
from runtime.kubeapi.transport import Transport

SERVER_PREFIX = "kubelet-server"
EXIT_CODE = 255
"""klog.Fatalf's exit code: how upstream's kubelet ends without a valid client cert."""


def bootstrap_and_load(flags: KubeletFlags, clock: Clock) -> RestConfig:
    """--kubeconfig's server and user, after the TLS bootstrap when it is asked for."""
    if flags.bootstrap_kubeconfig:
        load_client_cert(flags.kubeconfig, flags.bootstrap_kubeconfig, flags.cert_dir,
                         flags.node_name, clock)
    return load_kubeconfig(flags.kubeconfig)


def client_manager(flags: KubeletFlags, rest: RestConfig, clock: Clock
                   ) -> CertificateManager | None:
    """The client certificate's manager with --rotate-certificates, else None; its
    ``client_for`` is set by ``attach_client``."""
    if not flags.rotate_certificates:
        return None
    store = FileStore(CLIENT_PREFIX, flags.cert_dir, flags.cert_dir, clock=clock)
    bootstrap = (rest.cert_data, rest.key_data) if rest.cert_data and rest.key_data else None
    template = node_template(flags.node_name)
    return CertificateManager(
        store=store, signer_name=CLIENT_KUBELET_SIGNER, get_template=lambda: template,
        get_usages=client_usages, client_for=_no_client, clock=clock,
        name=CLIENT_KUBELET_SIGNER, bootstrap=bootstrap)


def _no_client(_pair: Pair | None) -> KubeClient:
    raise AssertionError("attach_client was not called")


def attach_client(manager: CertificateManager, flags: KubeletFlags, client: KubeClient,
                  heartbeat: KubeClient, clock: Clock) -> None:
    """The manager's CSRs go out on ``client`` while its pair is valid, else on the
    bootstrap kubeconfig's user; each new pair closes both clients' connections."""
    bootstrap: list[KubeClient] = []

    def client_for(current: Pair | None) -> KubeClient:
        if current is not None or not flags.bootstrap_kubeconfig:
            return client
        if not bootstrap:
            bootstrap.append(KubeClient(Transport(load_kubeconfig(flags.bootstrap_kubeconfig),
                                                  clock=clock)))
        return bootstrap[0]

    manager.client_for = client_for
    manager.subscribe(client.transport.certificate_rotated)
    manager.subscribe(heartbeat.transport.certificate_rotated)


def serving_manager(flags: KubeletFlags, node: NodeConfig, client: KubeClient, clock: Clock
                    ) -> CertificateManager | None:
    """The serving certificate's manager with serverTLSBootstrap (cluster mode), else
    None."""
    if not flags.server_tls_bootstrap or flags.port == 0:
        return None
    store = FileStore(SERVER_PREFIX, flags.cert_dir, flags.cert_dir, flags.tls_cert_file,
                      flags.tls_private_key_file, clock=clock)
    addresses = (("InternalIP", node.node_ip), ("Hostname", node.hostname))
    return CertificateManager(
        store=store, signer_name=KUBELET_SERVING_SIGNER,
        get_template=lambda: serving_template(node.node_name, addresses),
        get_usages=serving_usages, client_for=lambda _pair: client, clock=clock,
        name=KUBELET_SERVING_SIGNER)


def exit_for_new_credentials() -> None:
    """What upstream's transport does when no valid client certificate is left and the
    API server answers: end the process, so its supervisor starts it again and the
    bootstrap kubeconfig gets a new one."""
    logger.complete()
    sys.stderr.flush()
    os._exit(EXIT_CODE)
