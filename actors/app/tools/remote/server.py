"""How a command reaches a running daemon: kubectl's connection flags, one value.

``--server URL`` (default: the local daemon's main port, ``https://127.0.0.1:10250``
from the daemon's own flag defaults) and kubectl's TLS and credential flags:
``--insecure-skip-tls-verify``, ``--certificate-authority``, ``--client-certificate``,
``--client-key``, ``--token``. Against the default server with no CA named, the local
daemon's self-made serving certificate (``<root-dir>/pki/kubelet.crt``) is trusted as
pinned: a standalone daemon answers without flags, as ``curl -k`` would not need.

An ``http://`` URL for a port that speaks HTTPS (the main port is HTTPS; only the
read-only port is plain) fails: the daemon, as upstream's Go server, answers plain HTTP
there with a bare 400 "Client sent an HTTP request to an HTTPS server.". Every command asks
``ServerOptions.https_hint`` when a request failed, which says so and names the https URL.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import ssl
import urllib.parse
from dataclasses import dataclass

from actors.app.config.cert_files import CERT_DIR_NAME, CERT_NAME
from actors.app.config.flags import DEFAULT_ADDRESS, DEFAULT_PORT, DEFAULT_ROOT_DIR
from runtime.errors import ConfigError

DEFAULT_SERVER = f"https://{DEFAULT_ADDRESS}:{DEFAULT_PORT}"
LOCAL_CERT = os.path.join(DEFAULT_ROOT_DIR, CERT_DIR_NAME, CERT_NAME)
_PROBE_TIMEOUT = 5.0


def add_server_flags(parser: argparse.ArgumentParser) -> None:
    """Add the connection flags (kubectl's names) to a command's parser."""
    add = parser.add_argument
    add("--server", "-s", default=DEFAULT_SERVER, metavar="URL",
        help=f"the daemon's URL, https:// for its main port (default: {DEFAULT_SERVER}, the "
             "local daemon's main port)")
    add("--insecure-skip-tls-verify", action="store_true",
        help="do not check the server's certificate (insecure)")
    add("--certificate-authority", default="", metavar="FILE",
        help="CA file to check the server's certificate with (default: the system's CAs; "
             "for the default server, the local daemon's own certificate)")
    add("--client-certificate", default="", metavar="FILE",
        help="client certificate file for TLS (default: none)")
    add("--client-key", default="", metavar="FILE",
        help="client key file for TLS (default: none)")
    add("--token", default="", help="bearer token to authenticate with (default: none)")


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """Where the daemon is and how to authenticate to it."""

    url: str = DEFAULT_SERVER
    insecure_skip_tls_verify: bool = False
    certificate_authority: str = ""
    client_certificate: str = ""
    client_key: str = ""
    token: str = ""

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> ServerOptions:
        """The options from parsed flags; ConfigError when they do not fit together."""
        url = ns.server if "://" in ns.server else f"https://{ns.server}"
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ConfigError(f"--server={ns.server}: not an http(s) URL")
        if bool(ns.client_certificate) != bool(ns.client_key):
            raise ConfigError("--client-certificate and --client-key go together")
        if ns.insecure_skip_tls_verify and ns.certificate_authority:
            # kubectl's words for the same conflict.
            raise ConfigError("specifying a root certificates file with the insecure flag "
                              "is not allowed")
        return cls(url.rstrip("/"), ns.insecure_skip_tls_verify, ns.certificate_authority,
                   ns.client_certificate, ns.client_key, ns.token)

    @property
    def _parsed(self) -> urllib.parse.SplitResult:
        return urllib.parse.urlsplit(self.url)

    def host_port(self) -> tuple[str, int]:
        """The host and port to connect to (the scheme's port when the URL names none)."""
        parsed = self._parsed
        return parsed.hostname or DEFAULT_ADDRESS, parsed.port or (
            443 if parsed.scheme == "https" else 80)

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for an https URL (None for http): the server checked against
        the CA (or the system's, or the local daemon's own certificate as pinned), the
        client certificate presented if given."""
        if self._parsed.scheme != "https":
            return None
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        if self.insecure_skip_tls_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif self.certificate_authority:
            context.load_verify_locations(cafile=self.certificate_authority)
        elif self.url == DEFAULT_SERVER and os.path.exists(LOCAL_CERT):
            # Pinned: the one self-signed certificate this machine's daemon made; its
            # names are the node's, not 127.0.0.1.
            context.load_verify_locations(cafile=LOCAL_CERT)
            context.check_hostname = False
        if self.client_certificate:
            context.load_cert_chain(self.client_certificate, self.client_key)
        return context

    def https_url(self) -> str:
        """The URL with ``https`` for its scheme (the port kept: it is the one that failed)."""
        parsed = self._parsed
        host, port = self.host_port()
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return urllib.parse.urlunsplit(("https", netloc, parsed.path, "", ""))

    def https_hint(self) -> str | None:
        """For an ``http://`` URL whose port completes a TLS handshake: the sentence saying
        it is HTTPS and naming the https URL (else None). Asked after a request failed, so
        it costs a connection only then; the certificate is not checked (only the protocol
        is asked about, nothing is sent)."""
        if self._parsed.scheme != "http":
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            raw = socket.create_connection(self.host_port(), timeout=_PROBE_TIMEOUT)
            with contextlib.closing(raw), context.wrap_socket(raw):
                pass
        except (OSError, ssl.SSLError):
            return None
        return (f"{self.url} is an HTTPS port: the server answers a TLS handshake there. "
                f"Use --server {self.https_url()}")

    def headers(self) -> dict[str, str]:
        """Headers every request carries: the bearer token, if any."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}
