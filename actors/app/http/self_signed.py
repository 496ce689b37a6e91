"""The self-signed serving pair (client-go's GenerateSelfSignedCertKey), and the child
process that makes it beside a daemon's first start.

Its two RSA 2048 keys cost some 100 ms of CPU, and ``cryptography`` holds the GIL while
it makes them (a thread overlaps nothing). A daemon that will need the pair (no
``--tls-cert-file``, none in ``--cert-dir`` yet) therefore starts ``python -m
actors.app.http.self_signed HOST [IP ...]`` as early as it can (``SelfSignedChild``): the
pair is made on the other CPU while the daemon imports its code and reaches its runtime,
and handed back as JSON on the child's stdout. ``actors.app.http.tls.serving_pair`` takes
it, writes the files as it would have written its own, and makes the pair itself when the
child failed or was asked for other names.

This module imports only the standard library at the top: the daemon loads it before it
knows whether it needs ``cryptography``, and the child does not pay for loguru (some 40 ms,
when the pair itself is about 150).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[3])
"""The directory holding the ``actors`` package the child must import (this checkout's,
whatever the daemon's working directory)."""

TAKE_TIMEOUT = 30.0
"""How long the daemon waits for the child's pair before making its own: far above the
child's ~0.2 s, so only a stuck child is given up on."""


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


@dataclass(frozen=True, slots=True)
class PairRequest:
    """What a pair is made for: the certificate's host (the node name) and extra IP SANs."""

    host: str
    ips: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        return [self.host, *self.ips]


class SelfSignedChild:
    """A child process making the self-signed pair for ``request``; ``take`` gives its
    PEMs (None if it failed: logged), ``close`` kills it if it still runs. Used as a
    context manager so that no exit path leaves it behind."""

    def __init__(self, request: PairRequest, module: str = __name__) -> None:
        self.request = request
        self._taken = False
        # -m from ROOT: this checkout's module, not whatever the cwd or an install holds.
        self._proc = subprocess.Popen(
            [sys.executable, "-m", module, *request.argv()], cwd=ROOT,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        """The child's exit status once reaped (negative: the signal that ended it)."""
        return self._proc.returncode

    def take(self, timeout: float = TAKE_TIMEOUT) -> tuple[bytes, bytes] | None:
        """The child's (certificate PEM, key PEM), waiting for it; None (logged) if it
        failed, timed out or was already taken."""
        from loguru import logger  # the daemon's, loaded already; the child needs none

        if self._taken:
            return None
        self._taken = True
        asked = time.monotonic()
        try:
            out, err = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            logger.warning("the serving pair's child {} gave nothing in {} s: making the "
                           "pair here", self._proc.pid, timeout)
            self.close()
            return None
        if self._proc.returncode != 0:
            logger.warning("the serving pair's child {} failed (exit {}): {}: making the "
                           "pair here", self._proc.pid, self._proc.returncode,
                           err.decode(errors="replace").strip()[-500:])
            return None
        # How much of the pair's cost the start still waited for (none: all overlapped).
        logger.debug("the serving pair's child {} answered after {:.0f} ms of waiting",
                     self._proc.pid, (time.monotonic() - asked) * 1000)
        try:
            answer = json.loads(out)
            return answer["cert"].encode(), answer["key"].encode()
        except (ValueError, KeyError, TypeError, AttributeError) as bad:
            logger.warning("the serving pair's child {} answered nonsense ({}): making the "
                           "pair here", self._proc.pid, bad)
            return None

    def close(self) -> None:
        """Kill the child if it still runs, and reap it."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.communicate()

    def __enter__(self) -> SelfSignedChild:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str]) -> int:
    """The child: ``HOST [IP ...]`` in, ``{"cert": PEM, "key": PEM}`` on stdout."""
    if not argv:
        print("usage: python -m actors.app.http.self_signed HOST [IP ...]", file=sys.stderr)
        return 2
    cert, key = self_signed_pair(argv[0], tuple(argv[1:]))
    json.dump({"cert": cert.decode(), "key": key.decode()}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
