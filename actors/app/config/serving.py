"""The kubelet's HTTP ports and its main port's security: ``--enable-server``,
``--address``, ``--port``,
``--read-only-port``, ``--healthz-port``, ``--healthz-bind-address``; the main
port's TLS (``--tls-*``, ``--cert-dir``), authentication (``--client-ca-file``,
``--anonymous-auth``, ``--authentication-token-webhook*``) and authorization
(``--authorization-*``) flags, their defaults standalone and in cluster mode, and
their checks (``tls`` knows the TLS versions and cipher suites)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from actors.app.config.pflag import GoBool
from actors.app.config.pflag_values import DURATION, INT32, IP, STRINGS
from actors.app.config.tls import TLSSettings, check_settings
from runtime.errors import ConfigError

DEFAULT_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 10250
"""The main (HTTPS) port's defaults, as upstream's: where local clients find the daemon."""


def add_port_flags(add: Callable[..., None]) -> None:
    """The ports' flags, on build_parser's ``add``."""
    add("--enable-server", action=GoBool, default=True,
        help="serve the main port (--enable-server=false turns it off)")
    add("--address", type=IP, default=DEFAULT_ADDRESS,
        help="the address of the main (HTTPS) and read-only (HTTP) ports")
    add("--port", type=INT32, default=DEFAULT_PORT,
        help="the main port, served over HTTPS (from 1 to 65535; --enable-server=false "
             "turns it off)")
    add("--read-only-port", type=INT32, default=None,
        help="the read-only HTTP port, without authentication (0 turns it off; default "
             "10255 standalone, 0 with --kubeconfig)")
    add("--healthz-port", type=INT32, default=10248,
        help="the /healthz HTTP port (0 turns it off)")
    add("--healthz-bind-address", type=IP, default="127.0.0.1",
        help="the address of the healthz port")


def add_security_flags(add: Callable[..., None]) -> None:
    """The main port's TLS, authentication and authorization flags, on
    build_parser's ``add``."""
    add("--tls-cert-file", default="",
        help="the main port's serving certificate (default: a self-signed one in --cert-dir)")
    add("--tls-private-key-file", default="", help="the key of --tls-cert-file")
    add("--cert-dir", default="",
        help="where the TLS certificates are kept: the self-signed serving pair, and the "
             "client and serving certificates from the API server (default <root-dir>/pki)")
    add("--tls-min-version", default="",
        help="the main port's lowest TLS version: VersionTLS10, VersionTLS11, VersionTLS12 "
             "(the default) or VersionTLS13")
    add("--tls-cipher-suites", type=STRINGS, default="",
        help="the main port's TLS 1.2 cipher suites, Go's names, comma-separated")
    add("--client-ca-file", default="",
        help="accept client certificates signed by this CA (user = CN, groups = O)")
    add("--anonymous-auth", action=GoBool, default=None,
        help="let requests without credentials in as system:anonymous (default true "
             "standalone, false with --kubeconfig)")
    add("--authentication-token-webhook", action=GoBool, default=None,
        help="check bearer tokens with a TokenReview (default false standalone, true with "
             "--kubeconfig)")
    add("--authentication-token-webhook-cache-ttl", type=DURATION, default=120.0,
        help="how long TokenReview answers are kept")
    add("--authorization-mode", choices=("AlwaysAllow", "Webhook"), default=None,
        help="AlwaysAllow, or Webhook: a SubjectAccessReview per request (default "
             "AlwaysAllow standalone, Webhook with --kubeconfig)")
    add("--authorization-webhook-cache-authorized-ttl", type=DURATION, default=300.0,
        help="how long allowed SubjectAccessReview answers are kept")
    add("--authorization-webhook-cache-unauthorized-ttl", type=DURATION, default=30.0,
        help="how long denied SubjectAccessReview answers are kept")


def check_tls(ns: argparse.Namespace) -> None:
    """The main port's TLS settings, checked now: before anything starts."""
    check_settings(TLSSettings(cert_dir="", node_name="", cert_file=ns.tls_cert_file,
                               key_file=ns.tls_private_key_file,
                               min_version=ns.tls_min_version,
                               cipher_suites=split_names(ns.tls_cipher_suites)))


def split_names(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated flag's names (or the file's list), blanks left out."""
    items = value.split(",") if isinstance(value, str) else value
    return tuple(s.strip() for s in items if s.strip())


# The main port's security when neither a flag nor --config says: standalone, upstream's
# flag defaults (its applyLegacyDefaults: anonymous on, no token webhook, AlwaysAllow,
# read-only port 10255); with --kubeconfig, upstream's KubeletConfiguration v1beta1
# defaults, which every cluster's kubelet runs with (anonymous off, token webhook on,
# Webhook, read-only port off). Upstream picks by --config instead; there a standalone
# kubelet with a config file refuses to start (no client for the webhooks).
STANDALONE_SECURITY = {"anonymous_auth": True, "authentication_token_webhook": False,
                       "authorization_mode": "AlwaysAllow", "read_only_port": 10255}
CLUSTER_SECURITY = {"anonymous_auth": False, "authentication_token_webhook": True,
                    "authorization_mode": "Webhook", "read_only_port": 0}


def security_defaults(ns: argparse.Namespace) -> None:
    """Fill in the security settings neither a flag nor --config set, for the node's mode;
    the webhooks without --kubeconfig are refused."""
    defaults = CLUSTER_SECURITY if ns.kubeconfig else STANDALONE_SECURITY
    for dest, value in defaults.items():
        if getattr(ns, dest, None) is None:
            setattr(ns, dest, value)
    if not ns.kubeconfig and (ns.authentication_token_webhook
                              or ns.authorization_mode == "Webhook"):
        field = ("authentication.webhook.enabled" if ns.authentication_token_webhook
                 else "authorization.mode")
        raise ConfigError("--authentication-token-webhook and --authorization-mode=Webhook "
                          "need --kubeconfig: the reviews go to the API server", field=field,
                          rule="token webhook authentication and Webhook authorization need "
                               "--kubeconfig: the reviews go to the API server")
