"""Cluster mode's flags: ``--kubeconfig`` (without it the node runs standalone), the
node's registration (``--register-node``, ``--register-with-taints``), its status
(``--node-status-update-frequency``, ``--node-status-report-frequency``,
``--node-status-max-images``) and its certificates from the API server
(``--bootstrap-kubeconfig``, ``--rotate-certificates``,
``--rotate-server-certificates``). Three functions add them: --help lists them
between other flags."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from actors.app.config.pflag import GoBool
from actors.app.config.pflag_values import DURATION, INT32

if TYPE_CHECKING:
    from runtime.kubeapi.nodestatus import Taint


def add_cluster_flags(add: Callable[..., None]) -> None:
    """The flags that join a cluster and register the node, on build_parser's
    ``add``."""
    add("--kubeconfig", default="",
        help="a kubeconfig file to join a cluster with: the node registers, holds a lease "
             "and runs the pods bound to it (without it the kubelet runs standalone)")
    add("--register-node", action=GoBool, default=None,
        help="register the node with the API server (default true with --kubeconfig, false "
             "without)")
    add("--register-with-taints", default="",
        help="the node's taints when it registers, key=value:Effect,...")
    add("--node-status-update-frequency", type=DURATION, default=10.0,
        help="how often the node's status is computed, and posted if it changed")


def add_node_status_flags(add: Callable[..., None]) -> None:
    """The node status flags, on build_parser's ``add``."""
    add("--node-status-report-frequency", type=DURATION, default=300.0,
        help="how often the node's status is posted even if it did not change")
    add("--node-status-max-images", type=INT32, default=50,
        help="the most images listed in the node's status.images (-1: no limit)")


def add_certificate_flags(add: Callable[..., None]) -> None:
    """TLS bootstrap and certificate rotation's flags, on build_parser's ``add``."""
    add("--bootstrap-kubeconfig", default="",
        help="a kubeconfig (a bootstrap token user) to ask for a client certificate with when "
             "--kubeconfig's file is missing or its certificate is invalid or expired: the "
             "certificate goes to --cert-dir and --kubeconfig is written to point at it")
    add("--rotate-certificates", action=GoBool, default=False,
        help="request a new client certificate from the API server as the current one "
             "nears expiry (70-90%% of its lifetime)")
    add("--rotate-server-certificates", dest="server_tls_bootstrap", action=GoBool,
        default=False,
        help="the main port's serving certificate is requested from the API server "
             "(signer kubernetes.io/kubelet-serving) and rotated as it nears expiry")


def register_with_taints(value: str | tuple[Taint, ...] | list[Taint]) -> tuple[Taint, ...]:
    """--register-with-taints (text) or registerWithTaints (parsed by the config file)."""
    if not isinstance(value, str):
        return tuple(value)
    if not value:
        return ()
    from runtime.kubeapi.nodestatus import parse_taints  # the Node's code: cluster mode's

    return parse_taints(value)
