"""kube-controller-manager's csrapproving and csrsigning controllers, for the emulated server.

:class:`CSRControllers` watches the store for CertificateSigningRequests and, on a thread of
its own, handles each as upstream's CertificateController does, each step a write of its own
(so a watch sees ADDED, then MODIFIED with Approved, then MODIFIED with the certificate):

- the approver (pkg/controller/certificates/approver): a ``kube-apiserver-client-kubelet``
  request that passes ValidateKubeletClientCSR is approved (reason ``AutoApproved``) when its
  requester may ``create certificatesigningrequests/selfnodeclient`` (a renewal: requester ==
  the request's CN) or ``.../nodeclient``, asked of the cluster's RBAC (bootstrap.py, as
  kubeadm installs it). Serving requests are never auto-approved. ``auto_approve`` off: none.
- the signer (pkg/controller/certificates/signer): an Approved, not Failed request for
  ``kube-apiserver-client-kubelet``, ``kube-apiserver-client`` or ``kubelet-serving`` that
  passes that signer's checks gets a certificate from the cluster CA; one that does not gets a
  ``Failed`` condition (reason ``SignerValidationFailure``, the check's message). Validity as
  upstream's PermissiveSigningPolicy: ``min(spec.expirationSeconds (at least 10 minutes),
  signing_duration)``, notBefore backdated 5 minutes, notAfter = now + ttl for ttl < 8 h (now
  + ttl - 5 min otherwise), cut at the CA's notAfter.
"""

from __future__ import annotations

import base64
import datetime
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests.apiserver import csr, errors
from tests.apiserver.auth import Attributes, Policy, User
from tests.apiserver.certs import CertificateAuthority
from tests.apiserver.errors import APIError
from tests.apiserver.listwatch import ListOptions
from tests.apiserver.registry import Registry
from tests.apiserver.resources import by_kind
from tests.apiserver.store import Event

DEFAULT_SIGNING_DURATION = 365 * 24 * 3600.0  # --cluster-signing-duration's 8760h
BACKDATE = 5 * 60.0
SHORT = 8 * 3600.0
MIN_REQUESTED = 10 * 60.0

SELF_MESSAGE = "Auto approving self kubelet client certificate after SubjectAccessReview."
NODE_MESSAGE = "Auto approving kubelet client certificate after SubjectAccessReview."

_KEY_USAGES = {"signing": "digital_signature", "digital signature": "digital_signature",
               "content commitment": "content_commitment",
               "key encipherment": "key_encipherment", "key agreement": "key_agreement",
               "data encipherment": "data_encipherment", "cert sign": "key_cert_sign",
               "crl sign": "crl_sign", "encipher only": "encipher_only",
               "decipher only": "decipher_only"}
_EXT_USAGES = {"any": ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
               "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
               "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
               "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
               "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
               "s/mime": ExtendedKeyUsageOID.EMAIL_PROTECTION,
               "ipsec end system": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.5"),
               "ipsec tunnel": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.6"),
               "ipsec user": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.7"),
               "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
               "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING,
               "microsoft sgc": x509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.3"),
               "netscape sgc": x509.ObjectIdentifier("2.16.840.1.113730.4.1")}


def ttl(expiration_seconds: int | None, signing_duration: float) -> float:
    """signer.duration: the requested lifetime, at most the configured one, at least 10 min."""
    if expiration_seconds is None:
        return signing_duration
    requested = float(expiration_seconds)
    if requested > signing_duration:
        return signing_duration
    return max(requested, MIN_REQUESTED)


def sign(ca: CertificateAuthority, req: x509.CertificateSigningRequest, usages: list[str],
         lifetime: float, now: float) -> bytes:
    """A PEM certificate for ``req`` from ``ca`` (authority.Sign with the permissive policy)."""
    at = datetime.datetime.fromtimestamp(now, datetime.UTC)
    ca_not_after = ca.cert.not_valid_after_utc
    not_before = at - datetime.timedelta(seconds=BACKDATE)
    if lifetime < SHORT:
        not_after = at + datetime.timedelta(seconds=lifetime)
    else:
        not_after = at + datetime.timedelta(seconds=lifetime - BACKDATE)
    not_after = min(not_after, ca_not_after)
    if not not_before < ca_not_after:
        raise ValueError(f"the signer has expired: NotAfter={ca_not_after}")
    if not at < ca_not_after:
        raise ValueError("refusing to sign a certificate that expired in the past: "
                         f"NotAfter={ca_not_after}")
    builder = (x509.CertificateBuilder()
               .subject_name(req.subject).issuer_name(ca.cert.subject)
               .public_key(req.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(not_before).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                              critical=True))
    flags = {v: False for v in _KEY_USAGES.values()}
    for usage in usages:
        if usage in _KEY_USAGES:
            flags[_KEY_USAGES[usage]] = True
    if any(flags.values()):
        builder = builder.add_extension(x509.KeyUsage(**flags), critical=True)
    ekus = sorted({_EXT_USAGES[u] for u in usages if u in _EXT_USAGES},
                  key=lambda oid: oid.dotted_string)
    if ekus:
        builder = builder.add_extension(x509.ExtendedKeyUsage(ekus), critical=False)
    try:
        sans = req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        builder = builder.add_extension(sans, critical=False)
    except x509.ExtensionNotFound:
        pass
    cert = builder.sign(ca.key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM)


class CSRControllers:
    """The approver and the signer, fed by the store's write events."""

    def __init__(self, registry: Registry, ca: CertificateAuthority, rbac: Policy, *,
                 auto_approve: bool = True,
                 signing_duration: float = DEFAULT_SIGNING_DURATION,
                 clock: Callable[[], float] = time.time) -> None:
        self.registry = registry
        self.ca = ca
        self.rbac = rbac
        self.auto_approve = auto_approve
        self.signing_duration = signing_duration
        self.clock = clock
        self.rt = by_kind(csr.KIND)
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.failures: list[str] = []  # what a handler could not do (upstream logs and retries)
        with registry.store.cond:
            registry.store.observers.append(self._observe)

    def _observe(self, event: Event) -> None:
        if event.resource == csr.RESOURCE and event.type != "DELETED":
            self._queue.put(event.key[1])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="emulated-csr-controllers",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def resync(self) -> None:
        """Look at every request again (after a switch changed, as an informer resync)."""
        listed = self.registry.list(self.rt, "", ListOptions())
        for item in listed["items"]:
            self._queue.put(item["metadata"]["name"])

    def _run(self) -> None:
        while True:
            name = self._queue.get()
            if name is None:
                return
            try:
                self.handle(name)
            except APIError as err:
                if err.code == 409:
                    self._queue.put(name)  # a write raced ours: look again
                elif err.code != 404:
                    self.failures.append(f"{name}: {err.message}")
            except Exception as err:  # the loop must survive one bad request, as upstream's
                self.failures.append(f"{name}: {type(err).__name__}: {err}")

    def handle(self, name: str) -> None:
        obj = self.registry.get(self.rt, "", name)
        if self.auto_approve and self._approve(obj):
            return  # the approval's own event brings the request back to the signer
        self._sign(obj)

    # --- csrapproving -------------------------------------------------------------------

    def _approve(self, obj: dict[str, Any]) -> bool:
        if csr.certificate(obj) or csr.has_condition(obj, csr.APPROVED) or \
                csr.has_condition(obj, csr.DENIED):
            return False
        spec = obj.get("spec") or {}
        if spec.get("signerName") != csr.KUBE_APISERVER_CLIENT_KUBELET:
            return False
        try:
            req = csr.parse_csr(csr.request_bytes(obj))
        except csr.CSRError:
            return False
        usages = list(spec.get("usages") or [])
        if csr.kubelet_client_error(req, usages) is not None:
            return False
        cn = req.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
        requester = User(spec.get("username", ""), spec.get("uid", ""),
                         tuple(spec.get("groups") or ()), spec.get("extra") or {})
        recognizers = []
        if cn and cn[0].value == requester.name:
            recognizers.append(("selfnodeclient", SELF_MESSAGE))
        recognizers.append(("nodeclient", NODE_MESSAGE))
        for subresource, message in recognizers:
            if self.rbac(Attributes(requester, "create", "certificatesigningrequests",
                                    subresource, csr.GROUP)):
                self.set_condition(obj["metadata"]["name"], csr.APPROVED, "AutoApproved",
                                   message, obj)
                return True
        return False

    def set_condition(self, name: str, kind: str, reason: str, message: str,
                      obj: dict[str, Any] | None = None) -> dict[str, Any]:
        """Add an Approved or Denied condition through /approval (what the approver, kubectl
        certificate approve|deny and the test controls do). As kubectl: a request that has the
        condition already is left as it is, and a conflicting write is retried (10 times)."""
        for attempt in range(10):
            current = obj if obj is not None and attempt == 0 else \
                self.registry.get(self.rt, "", name)
            if csr.has_condition(current, kind):
                return current
            new = dict(current)
            status = dict(new.get("status") or {})
            status["conditions"] = [*(status.get("conditions") or []),
                                    {"type": kind, "status": "True", "reason": reason,
                                     "message": message}]
            new["status"] = status
            try:
                return self.registry.update(self.rt, "", name, new, "approval")
            except APIError as err:
                if err.code != 409 or obj is not None:
                    raise
        raise errors.conflict(self.rt.plural, name, errors.STALE, csr.GROUP)

    # --- csrsigning ---------------------------------------------------------------------

    def _sign(self, obj: dict[str, Any]) -> None:
        if not csr.has_condition(obj, csr.APPROVED) or csr.has_condition(obj, csr.FAILED) or \
                csr.certificate(obj):
            return
        spec = obj.get("spec") or {}
        signer = spec.get("signerName")
        usages = list(spec.get("usages") or [])
        req = csr.parse_csr(csr.request_bytes(obj))
        if signer == csr.KUBELET_SERVING:
            problem = csr.kubelet_serving_error(req, usages)
        elif signer == csr.KUBE_APISERVER_CLIENT_KUBELET:
            problem = csr.kubelet_client_error(req, usages)
        elif signer == csr.KUBE_APISERVER_CLIENT:
            problem = csr.apiserver_client_error(usages)
        else:
            return  # not a signer kube-controller-manager runs: someone else's to issue
        new = dict(obj)
        status = dict(new.get("status") or {})
        if problem is not None:
            status["conditions"] = [*(status.get("conditions") or []), {
                "type": csr.FAILED, "status": "True", "reason": "SignerValidationFailure",
                "message": problem}]
        else:
            seconds = spec.get("expirationSeconds")
            pem = sign(self.ca, req, usages,
                       ttl(int(seconds) if seconds is not None else None,
                           self.signing_duration), self.clock())
            status["certificate"] = base64.b64encode(pem).decode("ascii")
        new["status"] = status
        self.registry.update(self.rt, "", obj["metadata"]["name"], new, "status")
