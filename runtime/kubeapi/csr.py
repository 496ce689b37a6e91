"""CertificateSigningRequests: a key, a CSR for it, the request to the API server and the
wait for its certificate (client-go's util/certificate/csr, the kubelet's bootstrap).

- ``generate_key``: an ECDSA P-256 key, PEM ``EC PRIVATE KEY`` (upstream's rotation key and
  keyutil's default for the bootstrap key).
- ``make_csr``: a PKCS#10 request of a :class:`Template` (subject CN and O, DNS and IP SANs)
  signed by that key (certutil.MakeCSRFromTemplate).
- ``client_usages`` / ``serving_usages``: upstream's DefaultKubeletClientGetUsages and
  DefaultKubeletServingGetUsages: digital signature and client (server) auth, with key
  encipherment only for an RSA key.
- ``digested_name``: the bootstrap CSR's name, ``node-csr-<sha512/256 of key, subject and
  usages>``, so a restarted kubelet finds the request it made with the same key.
- ``request_certificate``: POST the CSR (generateName ``csr-`` without a name); a request of
  that name already there is reused when it is compatible (same subject and signer, signed
  by the same key, no expired certificate), as client-go's RequestCertificate.
- ``wait_for_certificate``: list and watch the one request (fieldSelector metadata.name)
  until it is Approved and has ``status.certificate``; Denied or Failed end the wait with
  upstream's message naming the reason; the deadline with "timed out waiting for the
  condition" (client-go's WaitForCertificate on watchtools.UntilWithSync).

``cryptography`` is imported inside the functions: a kubelet without bootstrap or rotation
does not load it.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loguru import logger

from runtime import errors
from runtime.clock import Clock
from runtime.kubeapi.client import KubeClient, Resource

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

__all__ = [
    "CLIENT_KUBELET_SIGNER",
    "CSRS",
    "KUBELET_SERVING_SIGNER",
    "Template",
    "client_usages",
    "digested_name",
    "generate_key",
    "load_private_key",
    "make_csr",
    "request_certificate",
    "serving_usages",
    "wait_for_certificate",
]

CSRS = Resource("certificates.k8s.io", "v1", "certificatesigningrequests",
                "CertificateSigningRequest", False)
CLIENT_KUBELET_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
"""certificatesv1.KubeAPIServerClientKubeletSignerName."""
KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving"
"""certificatesv1.KubeletServingSignerName."""

USAGE_DIGITAL_SIGNATURE = "digital signature"
USAGE_KEY_ENCIPHERMENT = "key encipherment"
USAGE_CLIENT_AUTH = "client auth"
USAGE_SERVER_AUTH = "server auth"

WAIT_TIMEOUT_MESSAGE = "timed out waiting for the condition"
"""wait.ErrWaitTimeout's text: what upstream reports when no certificate came in time."""
_WATCH_SECONDS = 300
"""The longest a single watch of the request runs before it is opened again."""
_STOPPABLE_WATCH_SECONDS = 30
"""The same when the wait can be stopped: a stopping kubelet is not held longer."""


@dataclass(frozen=True)
class Template:
    """What a CSR asks for (the x509.CertificateRequest template upstream fills)."""

    common_name: str
    organizations: tuple[str, ...] = ()
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()


def node_template(node_name: str, dns_names: Sequence[str] = (),
                  ip_addresses: Sequence[str] = ()) -> Template:
    """A node's subject: CN ``system:node:<name>``, O ``system:nodes``."""
    return Template(f"system:node:{node_name}", ("system:nodes",), tuple(dns_names),
                    tuple(ip_addresses))


def addresses_to_hostnames_and_ips(addresses: Sequence[tuple[str, str]]
                                   ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """pkg/kubelet/certificate's addressesToHostnamesAndIPs over (type, address) pairs of
    a Node's status: Hostname (an IP when it parses as one), InternalIP/ExternalIP,
    InternalDNS/ExternalDNS; each once, sorted (IPs by their text)."""
    dns: set[str] = set()
    ips: set[str] = set()
    for kind, address in addresses:
        if not address:
            continue
        ip = _ip(address)
        if kind == "Hostname":
            if ip is not None:
                ips.add(ip)
            else:
                dns.add(address)
        elif kind in ("InternalIP", "ExternalIP"):
            if ip is not None:
                ips.add(ip)
        elif kind in ("InternalDNS", "ExternalDNS"):
            dns.add(address)
    return tuple(sorted(dns)), tuple(sorted(ips))


def _ip(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def serving_template(node_name: str, addresses: Sequence[tuple[str, str]]) -> Template | None:
    """newGetTemplateFn: the serving certificate's subject and SANs from the node's
    addresses; None (no request yet) while it has no IP address."""
    dns, ips = addresses_to_hostnames_and_ips(addresses)
    if not ips:
        return None
    return node_template(node_name, dns, ips)


def generate_key() -> tuple[Any, bytes]:
    """A new ECDSA P-256 key and its PEM (``EC PRIVATE KEY``, x509.MarshalECPrivateKey)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM,
                            serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption())
    return key, pem


def load_private_key(pem: bytes, where: str) -> PrivateKeyTypes:
    """The key in ``pem`` (EC, RSA or PKCS#8); CertificateError naming ``where``."""
    from cryptography.hazmat.primitives import serialization

    try:
        return serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as err:
        raise errors.CertificateError(f"invalid private key in {where}: {err}") from err


def _is_rsa(key: Any) -> bool:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return isinstance(key, rsa.RSAPrivateKey)


def client_usages(key: Any) -> tuple[str, ...]:
    """DefaultKubeletClientGetUsages: key encipherment only for RSA keys."""
    if _is_rsa(key):
        return (USAGE_DIGITAL_SIGNATURE, USAGE_KEY_ENCIPHERMENT, USAGE_CLIENT_AUTH)
    return (USAGE_DIGITAL_SIGNATURE, USAGE_CLIENT_AUTH)


def serving_usages(key: Any) -> tuple[str, ...]:
    """DefaultKubeletServingGetUsages: key encipherment only for RSA keys."""
    if _is_rsa(key):
        return (USAGE_DIGITAL_SIGNATURE, USAGE_KEY_ENCIPHERMENT, USAGE_SERVER_AUTH)
    return (USAGE_DIGITAL_SIGNATURE, USAGE_SERVER_AUTH)


def make_csr(key: Any, template: Template) -> bytes:
    """The PEM ``CERTIFICATE REQUEST`` of ``template`` signed by ``key`` (SHA-256)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    # Go's pkix.Name puts O before CN in the encoded subject.
    names = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in template.organizations]
    names.append(x509.NameAttribute(NameOID.COMMON_NAME, template.common_name))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names))
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in template.dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in template.ip_addresses]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    from cryptography.hazmat.primitives.serialization import Encoding

    return builder.sign(key, hashes.SHA256()).public_bytes(Encoding.PEM)


def digested_name(public_key: Any, template: Template, usages: Sequence[str]) -> str:
    """bootstrap.go's digestedName: ``node-csr-`` and the unpadded URL-safe base64 of a
    SHA-512/256 over the public key (PKIX DER), CN, each O and each usage, every part
    base64-encoded and ended by ``|``."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    digest = hashlib.new("sha512_256")

    def write(data: bytes) -> None:
        digest.update(_b64url(data).encode())
        digest.update(b"|")

    write(public_key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo))
    write(template.common_name.encode())
    for org in template.organizations:
        write(org.encode())
    for usage in usages:
        write(usage.encode())
    return f"node-csr-{_b64url(digest.digest())}"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _with_message(err: errors.APIError, text: str) -> errors.APIError:
    """client-go's formatError: the same kind of API error with its message reworded."""
    return type(err)(text, code=err.code, reason=err.reason, details=err.details,
                     retry_after=err.retry_after)


def request_certificate(client: KubeClient, csr_pem: bytes, name: str, signer_name: str,
                        expiration_seconds: int | None, usages: Sequence[str], key: Any,
                        now: float | None = None) -> tuple[str, str]:
    """Create the CertificateSigningRequest (or reuse a compatible one of ``name``); its
    name and UID."""
    meta: dict[str, Any] = {"name": name} if name else {"generateName": "csr-"}
    spec: dict[str, Any] = {"request": base64.b64encode(csr_pem).decode(),
                            "usages": list(usages), "signerName": signer_name}
    if expiration_seconds is not None:
        spec["expirationSeconds"] = expiration_seconds
    body = {"metadata": meta, "spec": spec}
    try:
        created = client.create(CSRS, body)
    except errors.APIAlreadyExists as err:
        if not name:
            raise _with_message(err, f"cannot create certificate signing request: {err}"
                                ) from err
        logger.bind(csr=name).info("csr for this node already exists, reusing")
        try:
            found = client.get(CSRS, name)
        except errors.APIError as get_err:
            raise _with_message(get_err, "cannot retrieve certificate signing request: "
                                f"{get_err}") from get_err
        try:
            ensure_compatible(found, body, key, now)
        except errors.CertificateError as why:
            raise errors.CertificateError(f"retrieved csr is not compatible: {why}") from why
        logger.bind(csr=name).info("csr for this node is still valid")
        created = found
    except errors.APIError as err:
        raise _with_message(err, f"cannot create certificate signing request: {err}") from err
    got = created.get("metadata") or {}
    return str(got.get("name") or name), str(got.get("uid") or "")


def _parse_request(obj: Mapping[str, Any]) -> Any:
    from cryptography import x509

    raw = (obj.get("spec") or {}).get("request") or ""
    try:
        pem = base64.b64decode(raw) if isinstance(raw, str) else bytes(raw)
        return x509.load_pem_x509_csr(pem)
    except ValueError as err:
        raise errors.CertificateError("PEM block type must be CERTIFICATE REQUEST") from err


def ensure_compatible(new: Mapping[str, Any], orig: Mapping[str, Any], key: Any,
                      now: float | None = None) -> None:
    """client-go's ensureCompatible: same subject and signer, the request signed by ``key``,
    and no certificate issued for it expired at ``now`` (default: the system's time)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    new_csr = _parse_request(new)
    orig_csr = _parse_request(orig)
    if new_csr.subject != orig_csr.subject:
        raise errors.CertificateError(
            f"csr subjects differ: new: {new_csr.subject.rfc4514_string()}, orig: "
            f"{orig_csr.subject.rfc4514_string()}")
    new_signer = (new.get("spec") or {}).get("signerName")
    orig_signer = (orig.get("spec") or {}).get("signerName")
    if new_signer and orig_signer and new_signer != orig_signer:
        raise errors.CertificateError(f'csr signerNames differ: new "{new_signer}", orig: '
                                      f'"{orig_signer}"')
    ours = key.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    theirs = new_csr.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    if ours != theirs or not new_csr.is_signature_valid:
        raise errors.CertificateError("error validating signature new CSR against old key")
    issued = (new.get("status") or {}).get("certificate")
    if issued:
        import time

        certs = x509.load_pem_x509_certificates(base64.b64decode(issued))
        at = time.time() if now is None else now
        for cert in certs:
            if at > cert.not_valid_after_utc.timestamp():
                raise errors.CertificateError("one of the certificates for the CSR has "
                                              f"expired: {cert.not_valid_after_utc}")


def _verdict(obj: Mapping[str, Any], name: str, uid: str) -> bytes | None:
    """The issued certificate (PEM), None while it is pending; CertificateError when the
    request was denied or failed or is another object."""
    got_uid = str((obj.get("metadata") or {}).get("uid") or "")
    if uid and got_uid and got_uid != uid:
        raise errors.CertificateError(f'csr "{name}" changed UIDs')
    status = obj.get("status") or {}
    approved = False
    for cond in status.get("conditions") or []:
        kind = cond.get("type")
        if kind == "Denied":
            raise errors.CertificateError(
                f"certificate signing request is denied, reason: {cond.get('reason', '')}, "
                f"message: {cond.get('message', '')}")
        if kind == "Failed":
            raise errors.CertificateError(
                f"certificate signing request failed, reason: {cond.get('reason', '')}, "
                f"message: {cond.get('message', '')}")
        if kind == "Approved":
            approved = True
    if approved:
        cert = status.get("certificate")
        if cert:
            logger.bind(csr=name).info("certificate signing request {} is issued", name)
            return base64.b64decode(cert)
        logger.bind(csr=name).info("certificate signing request {} is approved, waiting to "
                                   "be issued", name)
    return None


def wait_for_certificate(client: KubeClient, name: str, uid: str, timeout: float,
                         clock: Clock, stop: threading.Event | None = None) -> bytes:
    """The certificate issued for the request ``name`` (PEM), waiting up to ``timeout``
    seconds (list, then watch from the list's version, re-opened until the deadline).

    Raises CertificateError: denied, failed, deleted, another UID, or the deadline passed
    (``stop`` set ends the wait the same way)."""
    deadline = clock.monotonic() + timeout
    selector = f"metadata.name={name}"
    version = ""
    while True:
        if stop is not None and stop.is_set():
            raise errors.CertificateError(f"waiting for csr {name}: stopped")
        left = deadline - clock.monotonic()
        if left <= 0:
            raise errors.CertificateError(WAIT_TIMEOUT_MESSAGE)
        try:
            if not version:
                listed = client.list(CSRS, field_selector=selector)
                for item in listed.items:
                    cert = _verdict(item, name, uid)
                    if cert is not None:
                        return cert
                version = listed.resource_version
            longest = _WATCH_SECONDS if stop is None else _STOPPABLE_WATCH_SECONDS
            seconds = max(1, min(longest, int(left)))
            with client.watch(CSRS, field_selector=selector, resource_version=version,
                              timeout_seconds=seconds, read_timeout=seconds + 10.0
                              ) as stream:
                for event in stream:
                    if event.resource_version:
                        version = event.resource_version
                    if event.type == "DELETED":
                        raise errors.CertificateError(f'csr "{name}" was deleted')
                    if event.type not in ("ADDED", "MODIFIED"):
                        continue
                    cert = _verdict(event.object, name, uid)
                    if cert is not None:
                        return cert
                    if stop is not None and stop.is_set():
                        break
        except errors.APIGone:
            version = ""  # relist
        except (errors.APIUnreachable, errors.APIServerError,
                errors.APITooManyRequests) as err:
            logger.bind(csr=name).info("watching certificate signing request {}: {}", name,
                                       err)
            version = ""
            clock.sleep(min(1.0, max(0.0, deadline - clock.monotonic())))
        except errors.APIError as err:
            raise errors.CertificateError(
                f"cannot watch on the certificate signing request: {err}") from err
