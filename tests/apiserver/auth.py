"""Who is calling, and may they: the emulated server's authenticators and authorizers.

Authentication as kube-apiserver does it with ``--anonymous-auth=false``: a bearer token
(static tokens the test adds, service-account tokens the server signed for a TokenRequest, or
bootstrap tokens from kube-system Secrets, bootstrap.py) or a client certificate signed by the
cluster CA (CN = user name, O = groups) and valid now (checked on every request, as
upstream's x509 authenticator: an expired one is 401 even on an open connection); anything
else is 401. Service-account tokens are real ES256 JWTs with upstream's claims. TokenReview and
SubjectAccessReview answer from the same authenticator and from a test-given policy.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass(frozen=True)
class User:
    """An authenticated user, as upstream's user.Info."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            out["uid"] = self.uid
        if self.extra:
            out["extra"] = self.extra
        return out


@dataclass(frozen=True)
class Attributes:
    """What a request (or a SubjectAccessReview) asks to do; upstream's authorizer.Attributes."""

    user: User
    verb: str
    resource: str = ""
    subresource: str = ""
    group: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""  # for non-resource requests


Policy = Callable[[Attributes], bool]


def allow_all(attrs: Attributes) -> bool:
    return True


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Authenticator:
    """Static tokens, signed service-account tokens and CA-signed client certificates."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._tokens: dict[str, User] = {}
        self._lock = threading.Lock()
        self._signing_key = ec.generate_private_key(ec.SECP256R1())
        self._key_id = uuid.uuid4().hex[:16]
        # More token authenticators, asked in order after the static and service-account
        # tokens (the server adds the bootstrap token authenticator, bootstrap.py).
        self.token_authenticators: list[Callable[[str], User | None]] = []

    def add_token(self, token: str, user: User) -> None:
        with self._lock:
            self._tokens[token] = user

    def remove_token(self, token: str) -> None:
        with self._lock:
            self._tokens.pop(token, None)

    def issue_service_account_token(self, namespace: str, name: str, sa_uid: str,
                                    spec: dict[str, Any]) -> tuple[str, int]:
        """Sign a bound service-account JWT; returns it and its expiry (unix seconds)."""
        now = int(self.clock())
        expires = now + int(spec.get("expirationSeconds") or 3600)
        claims: dict[str, Any] = {
            "aud": list(spec.get("audiences") or [ISSUER]), "exp": expires, "iat": now,
            "nbf": now, "iss": ISSUER, "jti": str(uuid.uuid4()),
            "sub": f"system:serviceaccount:{namespace}:{name}",
            "kubernetes.io": {"namespace": namespace,
                              "serviceaccount": {"name": name, "uid": sa_uid}},
        }
        bound = spec.get("boundObjectRef")
        if bound:
            claims["kubernetes.io"][str(bound.get("kind", "")).lower()] = {
                "name": bound.get("name", ""), "uid": bound.get("uid", "")}
        header = {"alg": "ES256", "kid": self._key_id}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        der = self._signing_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return f"{signing_input}.{_b64(signature)}", expires

    def _verify_jwt(self, token: str, audiences: list[str] | None) -> User | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        try:
            signature = _unb64(parts[2])
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"),
                                       int.from_bytes(signature[32:], "big"))
            self._signing_key.public_key().verify(
                der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
            claims = json.loads(_unb64(parts[1]))
        except (InvalidSignature, ValueError):
            return None
        if claims.get("exp", 0) < self.clock():
            return None
        if audiences and not set(audiences) & set(claims.get("aud") or []):
            return None
        k8s = claims.get("kubernetes.io") or {}
        ns = k8s.get("namespace", "")
        sa = k8s.get("serviceaccount") or {}
        extra: dict[str, list[str]] = {}
        if "pod" in k8s:
            extra["authentication.kubernetes.io/pod-name"] = [k8s["pod"]["name"]]
            extra["authentication.kubernetes.io/pod-uid"] = [k8s["pod"]["uid"]]
        return User(f"system:serviceaccount:{ns}:{sa.get('name', '')}", sa.get("uid", ""),
                    ("system:serviceaccounts", f"system:serviceaccounts:{ns}",
                     "system:authenticated"), extra)

    def by_token(self, token: str, audiences: list[str] | None = None) -> User | None:
        with self._lock:
            user = self._tokens.get(token)
        if user is not None:
            return user
        user = self._verify_jwt(token, audiences)
        if user is not None:
            return user
        for authenticate in self.token_authenticators:
            user = authenticate(token)
            if user is not None:
                return user
        return None

    @staticmethod
    def by_certificate(subject: tuple[tuple[tuple[str, str], ...], ...] | None) -> User | None:
        """A user from a verified peer certificate's subject (ssl.getpeercert() shape)."""
        if not subject:
            return None
        cn = ""
        orgs: list[str] = []
        for rdn in subject:
            for attr, value in rdn:
                if attr == "commonName":
                    cn = value
                elif attr == "organizationName":
                    orgs.append(value)
        if not cn:
            return None
        return User(cn, groups=(*orgs, "system:authenticated"))

    def token_review(self, body: dict[str, Any]) -> dict[str, Any]:
        spec = body.get("spec") or {}
        audiences = spec.get("audiences") or None
        user = self.by_token(str(spec.get("token", "")), audiences)
        status: dict[str, Any]
        if user is None:
            status = {"authenticated": False, "user": {},
                      "error": "[invalid bearer token, token lookup failed]"}
        else:
            status = {"authenticated": True, "user": user.json(),
                      "audiences": audiences or [ISSUER]}
        return {"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}


def subject_access_review(body: dict[str, Any], policy: Policy) -> dict[str, Any]:
    """Answer a SubjectAccessReview from ``policy`` (what a kubelet asks for its port 10250)."""
    spec = body.get("spec") or {}
    user = User(spec.get("user", ""), spec.get("uid", ""), tuple(spec.get("groups") or ()),
                spec.get("extra") or {})
    ra = spec.get("resourceAttributes")
    nra = spec.get("nonResourceAttributes")
    if ra:
        attrs = Attributes(user, ra.get("verb", ""), ra.get("resource", ""),
                           ra.get("subresource", ""), ra.get("group", ""),
                           ra.get("namespace", ""), ra.get("name", ""))
    elif nra:
        attrs = Attributes(user, nra.get("verb", ""), path=nra.get("path", ""))
    else:
        attrs = Attributes(user, "")
    allowed = bool(policy(attrs))
    status: dict[str, Any] = {"allowed": allowed}
    if allowed:
        status["reason"] = "allowed by the emulated server's policy"
    return {"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}


@dataclass
class Rules:
    """An RBAC-like SubjectAccessReview policy for tests: allowed when a rule matches the
    user (or one of its groups), the verb, the resource, the subresource and the name
    (``"*"`` matches any). Rules can be added while the server runs."""

    rules: list[tuple[frozenset[str], frozenset[str], str, frozenset[str], str]] = field(
        default_factory=list)

    def allow(self, subject: str, verbs: tuple[str, ...] = ("*",), resource: str = "nodes",
              subresources: tuple[str, ...] = ("*",), name: str = "*") -> Rules:
        """Allow ``subject`` (a user name or a group name)."""
        self.rules.append((frozenset({subject}), frozenset(verbs), resource,
                           frozenset(subresources), name))
        return self

    def __call__(self, attrs: Attributes) -> bool:
        who = {attrs.user.name, *attrs.user.groups}
        for subjects, verbs, resource, subresources, name in self.rules:
            if (subjects & who and ("*" in verbs or attrs.verb in verbs)
                    and resource in ("*", attrs.resource)
                    and ("*" in subresources or attrs.subresource in subresources)
                    and name in ("*", attrs.name)):
                return True
        return False
