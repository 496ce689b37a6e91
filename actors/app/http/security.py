"""The main port's TLS and auth from the flags: what the daemon hands KubeletHTTPServer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from actors.app.flags import KubeletFlags
from actors.app.http.auth import ALWAYS_ALLOW, WEBHOOK, APIReviews, AuthSettings, KubeletAuth
from actors.app.http.tls import (
    ServingTLS,
    context_without_pair,
    pair_in_making,
    server_context,
    serving_pair,
    tls_settings,
    with_serving_pair,
)
from runtime.errors import ConfigError

if TYPE_CHECKING:
    from runtime.kubeapi.client import KubeClient


def main_port_security(
    flags: KubeletFlags, client: KubeClient | None, node_ips: tuple[str, ...] = ()
) -> tuple[ServingTLS | None, KubeletAuth | None]:
    """The SSL context and serving pair, and the authenticator/authorizer, of ``--port``
    (nothing when it is off). Raises ConfigError on unusable files or webhooks without an
    API server."""
    if flags.port == 0:
        return None, None
    return main_port_tls(flags, node_ips), main_port_auth(flags, client)


def main_port_security_begun(
    flags: KubeletFlags, client: KubeClient | None, node_ips: tuple[str, ...] = ()
) -> tuple[ServingTLS | Callable[[], ServingTLS] | None, KubeletAuth | None]:
    """``main_port_security`` for the daemon's start: while a child makes the serving
    pair (a node's first start, actors.app.http.tls.begin_serving_pair), the TLS part is
    what takes it, called by KubeletHTTPServer when it serves the main port, after the
    healthz port: the start does not wait for the RSA keys before /healthz answers.
    There is nothing of the user's to check in that pair; everything else is checked
    now, as ``main_port_security`` does."""
    if flags.port == 0:
        return None, None
    tls = tls_settings(flags, node_ips)
    if not pair_in_making(tls):
        return main_port_security(flags, client, node_ips)
    context = context_without_pair(tls)
    auth = main_port_auth(flags, client)

    def with_the_pair() -> ServingTLS:
        cert, key = serving_pair(tls)
        return with_serving_pair(context, cert, key), cert, key

    return with_the_pair, auth


def main_port_tls(flags: KubeletFlags, node_ips: tuple[str, ...] = ()) -> ServingTLS:
    """The main port's SSL context and serving pair (made now if there is none).
    Raises ConfigError on unusable files."""
    tls = tls_settings(flags, node_ips)
    cert, key = serving_pair(tls)
    return server_context(tls, cert, key), cert, key


def main_port_auth(flags: KubeletFlags, client: KubeClient | None) -> KubeletAuth:
    """The main port's authenticator and authorizer. Raises ConfigError for webhooks
    without an API server."""
    settings = AuthSettings(
        node_name=flags.node_name, anonymous=flags.anonymous_auth,
        client_ca_file=flags.client_ca_file, token_webhook=flags.authentication_token_webhook,
        token_cache_ttl=flags.authentication_token_webhook_cache_ttl,
        mode=WEBHOOK if flags.authorization_mode == WEBHOOK else ALWAYS_ALLOW,
        authorized_ttl=flags.authorization_webhook_cache_authorized_ttl,
        unauthorized_ttl=flags.authorization_webhook_cache_unauthorized_ttl)
    try:
        return KubeletAuth(settings, APIReviews(client) if client is not None else None)
    except ValueError as err:
        raise ConfigError(f"{err}: give --kubeconfig") from err
