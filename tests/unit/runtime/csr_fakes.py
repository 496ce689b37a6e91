"""A CertificateSigningRequest API in memory for the certificate tests: create, get, list
and watch of certificates.k8s.io/v1, with an approver and a signer the test drives."""

from __future__ import annotations

import base64
import datetime
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

from runtime import errors
from runtime.kubeapi.client import ObjectList, Resource, WatchEvent
from tests.apiserver.certs import CertificateAuthority

Decision = Callable[[dict[str, Any]], tuple[str, str, str] | None]
"""What the approver does with a new CSR: (condition type, reason, message) or None."""


def approve(_csr: dict[str, Any]) -> tuple[str, str, str]:
    return ("Approved", "AutoApproved", "approved by the test")


def deny(_csr: dict[str, Any]) -> tuple[str, str, str]:
    return ("Denied", "NotAllowed", "the test says no")


class FakeWatch:
    def __init__(self, events: list[WatchEvent]) -> None:
        self._events = events

    def __iter__(self) -> Iterator[WatchEvent]:
        return iter(self._events)

    def close(self) -> None:
        pass

    def __enter__(self) -> FakeWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class FakeCSRAPI:
    """KubeClient's verbs for CSRs: a created CSR is decided at once by ``decide`` and, if
    approved, signed by ``ca`` for ``lifetime`` seconds from ``now()``."""

    def __init__(self, now: Callable[[], float], lifetime: float = 3600.0,
                 decide: Decision = approve, ca: CertificateAuthority | None = None) -> None:
        self.now = now
        self.lifetime = lifetime
        self.decide = decide
        self.ca = ca or CertificateAuthority()
        self.csrs: dict[str, dict[str, Any]] = {}
        self.created: list[dict[str, Any]] = []
        self._uid = itertools.count(1)
        self._rv = itertools.count(100)
        self._lock = threading.Lock()
        self.fail_create: errors.APIError | None = None

    def sign(self, csr_pem: bytes) -> bytes:
        req = x509.load_pem_x509_csr(csr_pem)
        start = datetime.datetime.fromtimestamp(self.now(), datetime.UTC)
        builder = (x509.CertificateBuilder().subject_name(req.subject)
                   .issuer_name(self.ca.name).public_key(req.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(start)
                   .not_valid_after(start + datetime.timedelta(seconds=self.lifetime)))
        try:
            san = req.extensions.get_extension_for_class(x509.SubjectAlternativeName)
            builder = builder.add_extension(san.value, critical=False)
        except x509.ExtensionNotFound:
            pass
        cert = builder.sign(self.ca.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM)

    def create(self, resource: Resource, obj: dict[str, Any], namespace: str = "") -> Any:
        if self.fail_create is not None:
            raise self.fail_create
        with self._lock:
            meta = dict(obj["metadata"])
            name = meta.get("name") or f"{meta['generateName']}{next(self._uid):05d}"
            if name in self.csrs:
                raise errors.APIAlreadyExists(f'certificatesigningrequests "{name}" already '
                                              "exists", code=409, reason="AlreadyExists")
            csr = {"metadata": {"name": name, "uid": f"uid-{next(self._uid)}",
                                "resourceVersion": str(next(self._rv))},
                   "spec": dict(obj["spec"]), "status": {}}
            self.created.append(csr)
            decision = self.decide(csr)
            if decision is not None:
                kind, reason, message = decision
                csr["status"]["conditions"] = [{"type": kind, "status": "True",
                                                "reason": reason, "message": message}]
                if kind == "Approved":
                    pem = base64.b64decode(csr["spec"]["request"])
                    csr["status"]["certificate"] = base64.b64encode(self.sign(pem)).decode()
            self.csrs[name] = csr
            return csr

    def get(self, resource: Resource, name: str, namespace: str = "") -> Any:
        if name not in self.csrs:
            raise errors.APINotFound(f"{name} not found", code=404, reason="NotFound")
        return self.csrs[name]

    def list(self, resource: Resource, namespace: str = "", *, field_selector: str = "",
             **_: Any) -> ObjectList:
        name = field_selector.removeprefix("metadata.name=")
        items = tuple(c for n, c in self.csrs.items() if n == name)
        return ObjectList(items, str(next(self._rv)))

    def watch(self, resource: Resource, namespace: str = "", **_: Any) -> FakeWatch:
        return FakeWatch([])
