"""The main port's TLS and auth from the flags: what the daemon hands KubeletHTTPServer."""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

from actors.app.config.flags import KubeletFlags
from actors.app.http.auth import ALWAYS_ALLOW, WEBHOOK, APIReviews, AuthSettings, KubeletAuth
from actors.app.http.tls import ServingCertificates, server_context, serving_pair, tls_settings
from runtime.errors import ConfigError

if TYPE_CHECKING:
    from runtime.kubeapi.certificate_manager import CertificateManager
    from runtime.kubeapi.client import KubeClient


def main_port_security(
    flags: KubeletFlags, client: KubeClient | None, node_ips: tuple[str, ...] = (),
    serving: CertificateManager | None = None,
) -> tuple[tuple[ssl.SSLContext, str, str] | None, KubeletAuth | None]:
    """The SSL context and serving pair, and the authenticator/authorizer, of ``--port``
    (nothing when it is off); with ``serving`` (serverTLSBootstrap) the certificate is
    that manager's, picked per handshake. Raises ConfigError on unusable files or webhooks
    without an API server."""
    if flags.port == 0:
        return None, None
    tls = tls_settings(flags, node_ips)
    if serving is not None:
        context = ServingCertificates(tls, serving).listening_context
        cert = key = serving.store.current_path()
    else:
        cert, key = serving_pair(tls)
        context = server_context(tls, cert, key)
    settings = AuthSettings(
        node_name=flags.node_name, anonymous=flags.anonymous_auth,
        client_ca_file=flags.client_ca_file, token_webhook=flags.authentication_token_webhook,
        token_cache_ttl=flags.authentication_token_webhook_cache_ttl,
        mode=WEBHOOK if flags.authorization_mode == WEBHOOK else ALWAYS_ALLOW,
        authorized_ttl=flags.authorization_webhook_cache_authorized_ttl,
        unauthorized_ttl=flags.authorization_webhook_cache_unauthorized_ttl)
    try:
        auth = KubeletAuth(settings, APIReviews(client) if client is not None else None)
    except ValueError as err:
        raise ConfigError(f"{err}: give --kubeconfig") from err
    return (context, cert, key), auth
