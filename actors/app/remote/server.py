"""Where a remote command finds the daemon, and with which credentials: kubectl's flags.

A minimal version of the interface the ``logs`` command shares (``add_server_flags``,
``ServerOptions``); ``--server`` defaults to the local daemon's main port.
"""

from __future__ import annotations

import argparse
import ssl
import urllib.parse
from dataclasses import dataclass

DEFAULT_SERVER = "https://127.0.0.1:10250"


def add_server_flags(parser: argparse.ArgumentParser) -> None:
    """kubectl's connection flags."""
    parser.add_argument("--server", default=DEFAULT_SERVER,
                        help=f"the daemon's main port URL (default {DEFAULT_SERVER})")
    parser.add_argument("--insecure-skip-tls-verify", action="store_true",
                        help="do not check the server's certificate")
    parser.add_argument("--certificate-authority", default="",
                        help="a CA file to check the server's certificate with")
    parser.add_argument("--client-certificate", default="", help="a client certificate file")
    parser.add_argument("--client-key", default="", help="the client certificate's key file")
    parser.add_argument("--token", default="", help="a bearer token")


@dataclass(frozen=True)
class ServerOptions:
    """The daemon's URL and how to authenticate to it."""

    url: str
    insecure: bool = False
    certificate_authority: str = ""
    client_certificate: str = ""
    client_key: str = ""
    token: str = ""

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> ServerOptions:
        return cls(ns.server.rstrip("/"), ns.insecure_skip_tls_verify,
                   ns.certificate_authority, ns.client_certificate, ns.client_key, ns.token)

    def ssl_context(self) -> ssl.SSLContext | None:
        """None for http://; otherwise the context that checks the server as asked."""
        if urllib.parse.urlsplit(self.url).scheme != "https":
            return None
        context = ssl.create_default_context(cafile=self.certificate_authority or None)
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.client_certificate:
            context.load_cert_chain(self.client_certificate, self.client_key or None)
        return context

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def host_port(self) -> tuple[str, int]:
        parts = urllib.parse.urlsplit(self.url)
        default = 443 if parts.scheme == "https" else 80
        return parts.hostname or "127.0.0.1", parts.port or default
