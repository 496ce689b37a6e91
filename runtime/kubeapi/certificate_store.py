"""Certificate/key pairs on disk, as client-go's certificate FileStore keeps them.

In ``--cert-dir``, per pair prefix (``kubelet-client``, ``kubelet-server``):
- ``<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem``: each pair ever stored, the certificate chain then
  the key, mode 0600;
- ``<prefix>-current.pem``: a symlink to the pair in use (absolute target), replaced by way
  of ``<prefix>-updated.pem`` (made, then renamed over it), so a crash leaves one or the
  other; ``recover`` on load finishes a rename that was cut short.

The current pair is read from ``<prefix>-current.pem``, else the ``cert_file``/``key_file``
given (``--tls-cert-file`` for the server pair), else ``<prefix>.crt``/``<prefix>.key``;
none of them is :class:`NoCertKeyError`.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import time
from dataclasses import dataclass, field

from loguru import logger

from runtime import errors
from runtime.clock import Clock, RealClock

__all__ = ["FileStore", "NoCertKeyError", "Pair", "parse_pair"]


class NoCertKeyError(errors.CertificateError):
    """No cert/key pair is in the store."""


@dataclass(frozen=True)
class Pair:
    """A certificate (chain, PEM) and its key (PEM), with what the leaf says."""

    cert_pem: bytes = field(repr=False)
    key_pem: bytes = field(repr=False)
    not_before: float
    not_after: float
    serial: int
    common_name: str
    organizations: tuple[str, ...] = ()
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    path: str = ""

    def expired(self, now: float) -> bool:
        return now > self.not_after


def parse_pair(cert_pem: bytes, key_pem: bytes, where: str) -> Pair:
    """Both PEMs checked (a certificate first, a key that matches it), as Go's
    tls.X509KeyPair; CertificateError naming ``where``."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    from cryptography.x509.oid import NameOID

    from runtime.kubeapi.csr import load_private_key

    try:
        certs = x509.load_pem_x509_certificates(cert_pem)
    except ValueError as err:
        raise errors.CertificateError(f"could not convert data from {where} into cert/key "
                                      f"pair: tls: failed to find any PEM data in certificate "
                                      f"input ({err})") from err
    leaf = certs[0]
    key = load_private_key(key_pem, where)
    spki = (Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    if leaf.public_key().public_bytes(*spki) != key.public_key().public_bytes(*spki):
        raise errors.CertificateError(f"could not convert data from {where} into cert/key "
                                      "pair: tls: private key does not match public key")
    dns: tuple[str, ...] = ()
    ips: tuple[str, ...] = ()
    try:
        san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns = tuple(san.get_values_for_type(x509.DNSName))
        ips = tuple(str(ip) for ip in san.get_values_for_type(x509.IPAddress))
    except x509.ExtensionNotFound:
        pass  # a certificate without SANs: no names, no addresses
    cn = leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    orgs = leaf.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return Pair(cert_pem=cert_pem, key_pem=key_pem,
                not_before=leaf.not_valid_before_utc.timestamp(),
                not_after=leaf.not_valid_after_utc.timestamp(), serial=leaf.serial_number,
                common_name=str(cn[0].value) if cn else "",
                organizations=tuple(str(o.value) for o in orgs), dns_names=dns,
                ip_addresses=ips, path=where)


def _pem_blocks(data: bytes, kinds: tuple[bytes, ...]) -> list[bytes]:
    out: list[bytes] = []
    lines = data.splitlines(keepends=True)
    block: list[bytes] = []
    inside = False
    for line in lines:
        if line.startswith(b"-----BEGIN "):
            inside = any(k in line for k in kinds)
            block = [line] if inside else []
        elif line.startswith(b"-----END ") and inside:
            block.append(line if line.endswith(b"\n") else line + b"\n")
            out.append(b"".join(block))
            inside = False
        elif inside:
            block.append(line)
    return out


def load_pair_file(cert_path: str, key_path: str) -> Pair:
    """The pair in two files (or one file holding both, as the store writes them)."""
    try:
        with open(cert_path, "rb") as f:
            cert_data = f.read()
        if key_path == cert_path:
            key_data = cert_data
        else:
            with open(key_path, "rb") as f:
                key_data = f.read()
    except OSError as err:
        raise errors.CertificateError(f"could not read {cert_path}: {err.strerror or err}"
                                      ) from err
    certs = b"".join(_pem_blocks(cert_data, (b"CERTIFICATE-----",)))
    keys = _pem_blocks(key_data, (b"PRIVATE KEY-----",))
    where = cert_path if key_path == cert_path else f"{cert_path}, {key_path}"
    if not certs:
        raise errors.CertificateError(f"could not convert data from {where} into cert/key "
                                      "pair: tls: failed to find any PEM data in certificate "
                                      "input")
    if not keys:
        raise errors.CertificateError(f"could not convert data from {where} into cert/key "
                                      "pair: tls: failed to find any PEM data in key input")
    return parse_pair(certs, keys[0], where)


class FileStore:
    """client-go's fileStore for one pair prefix in ``cert_dir``."""

    def __init__(self, prefix: str, cert_dir: str, key_dir: str = "", cert_file: str = "",
                 key_file: str = "", clock: Clock | None = None) -> None:
        self.prefix = prefix
        self.cert_dir = cert_dir
        self.key_dir = key_dir or cert_dir
        self.cert_file = cert_file
        self.key_file = key_file
        self._clock = clock or RealClock()
        self._recover()

    def filename(self, qualifier: str) -> str:
        return f"{self.prefix}-{qualifier}.pem"

    def current_path(self) -> str:
        """``<cert_dir>/<prefix>-current.pem``."""
        return os.path.join(self.cert_dir, self.filename("current"))

    def _recover(self) -> None:
        current = self.current_path()
        if os.path.exists(current):
            return
        updated = os.path.join(self.cert_dir, self.filename("updated"))
        if not os.path.lexists(updated):
            return
        if not os.path.islink(updated):
            raise errors.CertificateError(f'expected "{updated}" to be a symlink but it is a '
                                          "file")
        try:
            os.replace(updated, current)
        except OSError as err:
            raise errors.CertificateError(f'unable to rename "{updated}" to "{current}": '
                                          f"{err.strerror or err}") from err

    def current(self) -> Pair:
        """The pair in use; NoCertKeyError when there is none, CertificateError when one
        is there but cannot be used."""
        pair_file = self.current_path()
        if os.path.exists(pair_file):
            logger.info('Loading cert/key pair from "{}".', pair_file)
            return load_pair_file(pair_file, pair_file)
        if self.cert_file and self.key_file and os.path.exists(self.cert_file) and \
                os.path.exists(self.key_file):
            logger.info('Loading cert/key pair from ("{}", "{}").', self.cert_file,
                        self.key_file)
            return load_pair_file(self.cert_file, self.key_file)
        crt = os.path.join(self.cert_dir, self.prefix + ".crt")
        key = os.path.join(self.key_dir, self.prefix + ".key")
        if os.path.exists(crt) and os.path.exists(key):
            logger.info('Loading cert/key pair from ("{}", "{}").', crt, key)
            return load_pair_file(crt, key)
        raise NoCertKeyError(f'no cert/key files read at "{pair_file}", ("{self.cert_file}", '
                             f'"{self.key_file}") or ("{self.cert_dir}", "{self.key_dir}")')

    def update(self, cert_pem: bytes, key_pem: bytes) -> Pair:
        """Write a new ``<prefix>-<timestamp>.pem`` (chain then key) and point
        ``<prefix>-current.pem`` at it; the stored pair."""
        stamp = time.strftime("%Y-%m-%d-%H-%M-%S", time.localtime(self._clock.now()))
        try:
            os.makedirs(self.cert_dir, mode=0o755, exist_ok=True)
        except OSError as err:
            raise errors.CertificateError(f'could not create directory "{self.cert_dir}" to '
                                          f"store certificates: {err.strerror or err}"
                                          ) from err
        path = os.path.join(self.cert_dir, self.filename(stamp))
        certs = _pem_blocks(cert_pem, (b"CERTIFICATE-----",))
        if not certs:
            raise errors.CertificateError("invalid certificate data: data does not contain "
                                          "any valid RSA or ECDSA certificates")
        keys = _pem_blocks(key_pem, (b"PRIVATE KEY-----",))
        if not keys:
            raise errors.CertificateError("invalid key data")
        try:
            fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(b"".join(certs) + keys[0])
        except OSError as err:
            raise errors.CertificateError(f'could not open "{path}": {err.strerror or err}'
                                          ) from err
        pair = load_pair_file(path, path)
        self._update_symlink(path)
        return pair

    def _update_symlink(self, target: str) -> None:
        current = self.current_path()
        updated = os.path.join(self.cert_dir, self.filename("updated"))
        if os.path.lexists(current) and not os.path.islink(current):
            raise errors.CertificateError(f'expected "{current}" to be a symlink but it is a '
                                          "file")
        if os.path.lexists(updated):
            if not os.path.islink(updated):
                raise errors.CertificateError(f'expected "{updated}" to be a symlink but it '
                                              "is a file")
            os.remove(updated)
        if not os.path.exists(target):
            raise errors.CertificateError(f'file "{target}" does not exist so it can not be '
                                          "used as the currently selected cert/key")
        try:
            os.symlink(os.path.abspath(target), updated)
            os.replace(updated, current)
        except OSError as err:
            raise errors.CertificateError(f'unable to rename "{updated}" to "{current}": '
                                          f"{err.strerror or err}") from err


def utc(seconds: float) -> str:
    """A time as Go prints a certificate's NotAfter in messages (UTC)."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime(
        "%Y-%m-%d %H:%M:%S +0000 UTC")


def ip_or_none(text: str) -> str | None:
    """``text`` as a normalized IP address, or None when it is not one (ParseIPSloppy)."""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None
