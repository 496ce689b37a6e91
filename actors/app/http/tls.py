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

``cryptography`` is imported only to make a pair (about 25 ms and 8 MiB): a kubelet
restarted with its pair on disk does not load it.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import time
from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from runtime.errors import ConfigError

CERT_NAME, KEY_NAME = "kubelet.crt", "kubelet.key"

TLS_VERSIONS = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}

# Go's cipher suite names (crypto/tls) and OpenSSL's for the TLS 1.2 ones.
CIPHER_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
}
TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                          "TLS_CHACHA20_POLY1305_SHA256"})


@dataclass(frozen=True)
class TLSSettings:
    """The main port's TLS flags (KubeletConfiguration tls* and x509.clientCAFile)."""

    cert_dir: str
    node_name: str
    cert_file: str = ""
    key_file: str = ""
    min_version: str = ""
    cipher_suites: tuple[str, ...] = ()
    client_ca_file: str = ""
    node_ips: tuple[str, ...] = ()


def check_settings(settings: TLSSettings) -> None:
    """ConfigError for what upstream's flag validation refuses."""
    if bool(settings.cert_file) != bool(settings.key_file):
        given = "tlsCertFile" if settings.cert_file else "tlsPrivateKeyFile"
        raise ConfigError("--tls-cert-file and --tls-private-key-file go together: give both "
                          "or neither", field=given,
                          rule="a serving certificate and its private key go together: give "
                               "both or neither")
    if settings.min_version and settings.min_version not in TLS_VERSIONS:
        # upstream's words (cliflag.TLSVersion), then the names it takes
        rule = (f'unknown tls version "{settings.min_version}" (one of '
                f'{", ".join(TLS_VERSIONS)})')
        raise ConfigError(f"--tls-min-version: {rule}", field="tlsMinVersion", rule=rule)
    unknown = [s for s in settings.cipher_suites
               if s not in CIPHER_SUITES and s not in TLS13_SUITES]
    if unknown:
        rule = f"Cipher suite {unknown[0]} not supported or doesn't exist"  # cliflag's
        raise ConfigError(f"--tls-cipher-suites: {rule}", field="tlsCipherSuites", rule=rule)


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
    cert_pem, key_pem = self_signed_pair(settings.node_name, settings.node_ips)
    directory = Path(settings.cert_dir)
    directory.mkdir(parents=True, exist_ok=True)
    _write(Path(key), key_pem, 0o600)
    _write(Path(cert), cert_pem, 0o644)
    logger.info("made a self-signed serving certificate for {} in {}", settings.node_name,
                cert)
    return cert, key


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


def self_signed_pair(host: str, ips: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
    """client-go's GenerateSelfSignedCertKey: (certificate then CA, PEM; key, PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = int(time.time())
    valid_from = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    valid_to = valid_from + datetime.timedelta(days=365)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}-ca@{now}")])

    def usage(cert_sign: bool) -> x509.KeyUsage:
        return x509.KeyUsage(
            digital_signature=True, key_encipherment=True, key_cert_sign=cert_sign,
            content_commitment=False, data_encipherment=False, key_agreement=False,
            crl_sign=False, encipher_only=False, decipher_only=False)

    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(1)
          .not_valid_before(valid_from).not_valid_after(valid_to)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(usage(True), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    names: list[x509.GeneralName] = []
    try:
        names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        names.append(x509.DNSName(host))
    for ip in ips:
        address = x509.IPAddress(ipaddress.ip_address(ip))
        if address not in names:
            names.append(address)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{now}")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
            .not_valid_before(valid_from).not_valid_after(valid_to)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(usage(False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return cert.public_bytes(pem) + ca.public_bytes(pem), key_pem


def server_context(settings: TLSSettings, cert: str, key: str) -> ssl.SSLContext:
    """The main port's SSL context: the serving pair, the TLS floor and suites, and the
    client CA (a client certificate asked for, checked when given)."""
    check_settings(settings)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = TLS_VERSIONS.get(settings.min_version or "VersionTLS12",
                                           ssl.TLSVersion.TLSv1_2)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as err:
        raise ConfigError(f"the serving certificate {cert} / {key} is unusable: {err}") from err
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
