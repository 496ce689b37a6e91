"""TLS for the kubelet's main port: the serving certificate and the server's SSL context.

As upstream's kubelet (cmd/kubelet/app/server.go InitializeTLS): ``--tls-cert-file`` and
``--tls-private-key-file`` name the serving pair; without them a self-signed pair is made
once and kept in ``--cert-dir`` (default ``<root-dir>/pki``) as ``kubelet.crt`` and
``kubelet.key``, and reused on later starts. Like client-go's GenerateSelfSignedCertKey it
is a throw-away CA (CN ``<host>-ca@<unix time>``) that signs a serving certificate (CN
``<host>@<unix time>``, RSA 2048, one year, an hour of slack before now), the file holding
the certificate then the CA; its SANs are the node name and, ours, the node's IPs.

``--client-ca-file`` makes the server ask for a client certificate and check it against
that CA. Python's ``ssl`` checks the chain in the handshake: a certificate from another CA
ends the connection there (upstream's Go server asks without checking and answers 401);
either way such a client gets nothing. ``--tls-min-version`` (VersionTLS12 by default, as
Go's servers) and ``--tls-cipher-suites`` (Go's names, TLS 1.2 suites; Python cannot
narrow TLS 1.3's) set what the handshake accepts.

Plain HTTP sent to the main port is answered as Go's net/http server answers it (its
conn.serve, on a handshake whose first record header is one of tlsRecordHeaderLooksLikeHTTP's
five request starts): ``PLAIN_HTTP_ANSWER``, then the connection is closed. Other non-TLS
bytes fail the handshake, as there. ``looks_like_plain_http`` is that test; the listener
(actors.app.http.server) peeks at the first bytes to apply it.

``cryptography`` is imported only to make a pair (about 25 ms and 8 MiB): a kubelet
restarted with its pair on disk does not load it. A daemon's first start has the pair made
in a child process beside it (``begin_serving_pair``, actors.app.http.self_signed), which
``serving_pair`` takes.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from loguru import logger

from actors.app.config.cert_files import CERT_NAME, KEY_NAME
from actors.app.config.tls import CIPHER_SUITES, TLS_VERSIONS, check_settings
from actors.app.config.tls import TLSSettings as TLSSettings
from actors.app.http.self_signed import PairRequest, SelfSignedChild, self_signed_pair
from runtime.errors import ConfigError

if TYPE_CHECKING:
    from actors.app.config.flags import KubeletFlags
    from runtime.kubeapi.certificate_manager import CertificateManager

PLAIN_HTTP_ANSWER = (b"HTTP/1.0 400 Bad Request\r\n\r\n"
                     b"Client sent an HTTP request to an HTTPS server.\n")
"""Go's answer to plain HTTP on an HTTPS port, byte for byte (no headers: it is written on
the raw connection, the body ending at its close)."""

RECORD_HEADER_LEN = 5
"""A TLS record header's length: the bytes Go's check looks at."""

_PLAIN_HTTP_STARTS = frozenset({b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO"})


def looks_like_plain_http(head: bytes) -> bool:
    """Whether a connection's first ``RECORD_HEADER_LEN`` bytes are one of the plain HTTP
    request starts Go's server answers (other methods, e.g. DELETE, just fail the
    handshake there)."""
    return head[:RECORD_HEADER_LEN] in _PLAIN_HTTP_STARTS


def tls_settings(flags: KubeletFlags, node_ips: tuple[str, ...] = ()) -> TLSSettings:
    """The main port's TLS settings from the flags; ``node_ips`` go in a self-signed
    certificate's SANs."""
    return TLSSettings(
        cert_dir=flags.cert_dir, node_name=flags.node_name, cert_file=flags.tls_cert_file,
        key_file=flags.tls_private_key_file, min_version=flags.tls_min_version,
        cipher_suites=flags.tls_cipher_suites, client_ca_file=flags.client_ca_file,
        node_ips=tuple(ip for ip in node_ips if ip))


def serving_pair(settings: TLSSettings) -> tuple[str, str]:
    """The serving certificate and key files: the flags', else the self-signed pair in
    ``cert_dir`` (made now if it is not there or cannot be read)."""
    check_settings(settings)
    if settings.cert_file:
        for path in (settings.cert_file, settings.key_file):
            if not os.access(path, os.R_OK):
                raise ConfigError(f"--tls-cert-file/--tls-private-key-file: cannot read {path}")
        return settings.cert_file, settings.key_file
    cert = os.path.join(settings.cert_dir, CERT_NAME)
    key = os.path.join(settings.cert_dir, KEY_NAME)
    if _loadable(cert, key):
        return cert, key
    cert_pem, key_pem = _begun_pair(settings) or self_signed_pair(settings.node_name,
                                                                  settings.node_ips)
    directory = Path(settings.cert_dir)
    directory.mkdir(parents=True, exist_ok=True)
    _write(Path(key), key_pem, 0o600)
    _write(Path(cert), cert_pem, 0o644)
    logger.info("made a self-signed serving certificate for {} in {}", settings.node_name,
                cert)
    return cert, key


def needs_self_signed_pair(settings: TLSSettings) -> bool:
    """Whether ``serving_pair`` would make a pair: no --tls-cert-file and no pair (both
    files) in ``cert_dir`` yet."""
    if settings.cert_file:
        return False
    return not all(os.path.exists(os.path.join(settings.cert_dir, name))
                   for name in (CERT_NAME, KEY_NAME))


_BEGUN: dict[str, SelfSignedChild] = {}
"""The children making a pair, by cert dir, while ``begin_serving_pair`` holds them (a
lock: tests may start daemons on several threads)."""
_BEGUN_LOCK = threading.Lock()


@contextlib.contextmanager
def begin_serving_pair(settings: TLSSettings) -> Iterator[SelfSignedChild | None]:
    """Within it, ``serving_pair`` with the same cert dir, node name and IPs takes the pair
    from a child process begun here when one will be needed (``needs_self_signed_pair``);
    the child is killed and reaped on the way out, however that goes."""
    if not needs_self_signed_pair(settings):
        yield None
        return
    try:
        child = SelfSignedChild(PairRequest(settings.node_name, settings.node_ips))
    except OSError as err:
        logger.warning("cannot start the serving pair's child ({}): it will be made here", err)
        yield None
        return
    with _BEGUN_LOCK:
        _BEGUN[settings.cert_dir] = child
    try:
        with child:
            yield child
    finally:
        with _BEGUN_LOCK:
            if _BEGUN.get(settings.cert_dir) is child:
                del _BEGUN[settings.cert_dir]


def _begun_pair(settings: TLSSettings) -> tuple[bytes, bytes] | None:
    """The begun child's pair for ``settings``, if one was begun for the same names."""
    with _BEGUN_LOCK:
        child = _BEGUN.pop(settings.cert_dir, None)
    if child is None:
        return None
    if child.request != PairRequest(settings.node_name, settings.node_ips):
        # Cluster mode: the Node's InternalIP, known only now, is not the one guessed.
        logger.info("the serving pair's child made it for {}, not {} {}: making it here",
                    child.request, settings.node_name, settings.node_ips)
        child.close()
        return None
    return child.take()


def _loadable(cert: str, key: str) -> bool:
    if not (os.path.exists(cert) and os.path.exists(key)):
        return False
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as err:
        logger.warning("the serving pair {} / {} is unusable ({}): making a new one", cert,
                       key, err)
        return False
    return True


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def server_context(settings: TLSSettings, cert: str, key: str) -> ssl.SSLContext:
    """The main port's SSL context: the serving pair, the TLS floor and suites, and the
    client CA (a client certificate asked for, checked when given)."""
    ctx = _base_context(settings)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as err:
        raise ConfigError(f"the serving certificate {cert} / {key} is unusable: {err}") from err
    return ctx


def _base_context(settings: TLSSettings) -> ssl.SSLContext:
    """The main port's SSL context without its certificate."""
    check_settings(settings)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = TLS_VERSIONS.get(settings.min_version or "VersionTLS12",
                                           ssl.TLSVersion.TLSv1_2)
    tls12 = [CIPHER_SUITES[s] for s in settings.cipher_suites if s in CIPHER_SUITES]
    if tls12:
        try:
            ctx.set_ciphers(":".join(dict.fromkeys(tls12)))
        except ssl.SSLError as err:
            raise ConfigError(f"--tls-cipher-suites: {err}") from err
    if settings.client_ca_file:
        try:
            ctx.load_verify_locations(cafile=settings.client_ca_file)
        except (OSError, ssl.SSLError) as err:
            raise ConfigError(
                f"--client-ca-file {settings.client_ca_file}: cannot load: {err}") from err
        ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


NO_SERVING_CERTIFICATE = "no serving certificate available for the kubelet"
"""Upstream's GetCertificate error while serverTLSBootstrap has no certificate yet."""


class ServingCertificates:
    """serverTLSBootstrap: the main port's certificate is the manager's current pair,
    chosen at each handshake (upstream's tls.Config.GetCertificate).

    ``listening_context`` has no certificate of its own; its SNI callback (which OpenSSL
    calls on every ClientHello, with or without a server name) hands the handshake a
    context holding the pair in use (made once per pair), so a rotation reaches the next
    connection while open ones (exec, logs -f, port-forward) keep theirs. Without a valid
    pair the handshake ends with an internal_error alert and upstream's message is logged.
    """

    def __init__(self, settings: TLSSettings, manager: CertificateManager) -> None:
        self._settings = settings
        self._manager = manager
        self._lock = threading.Lock()
        self._cached: tuple[int, ssl.SSLContext] | None = None
        self.refused = 0
        self.listening_context = _base_context(settings)
        self.listening_context.sni_callback = self._pick

    def current_context(self) -> ssl.SSLContext | None:
        pair = self._manager.current()
        if pair is None:
            return None
        generation = self._manager.generation
        with self._lock:
            if self._cached is not None and self._cached[0] == generation:
                return self._cached[1]
        ctx = server_context(self._settings, pair.path, pair.path)
        with self._lock:
            self._cached = (generation, ctx)
        return ctx

    def _pick(self, sslobj: ssl.SSLObject, server_name: str | None,
              _ctx: ssl.SSLContext) -> int | None:
        try:
            ctx = self.current_context()
        except ConfigError as err:
            logger.error("the serving certificate cannot be used: {}", err)
            ctx = None
        if ctx is None:
            self.refused += 1
            logger.warning("http: TLS handshake error: {}", NO_SERVING_CERTIFICATE)
            return ssl.ALERT_DESCRIPTION_INTERNAL_ERROR
        sslobj.context = ctx
        return None
