"""The main port's TLS flags: the versions and cipher suites they name, and their checks."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from runtime.errors import ConfigError

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
