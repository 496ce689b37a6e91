"""Who may call the kubelet's main port: authentication and authorization, as upstream's.

Upstream's kubelet guards port 10250 with a filter in front of every handler
(pkg/kubelet/server/auth.go, server.go InstallAuthFilter):

- **authentication**, first that answers: a client certificate verified against
  ``--client-ca-file`` (user = its CommonName, groups = its Organizations; the TLS layer here
  checks the chain, see ``actors.app.http.tls``), then a bearer token checked by a
  TokenReview (authentication.k8s.io/v1) when ``--authentication-token-webhook`` is on, its
  answers (yes and no) cached for ``--authentication-token-webhook-cache-ttl`` (2 min), as
  upstream's delegating authenticator does. A credential that is presented but not valid
  is 401 ``Unauthorized``; a request with none is ``system:anonymous`` in
  ``system:unauthenticated`` when ``--anonymous-auth`` allows it, else 401. Every
  authenticated user also gets ``system:authenticated``.
- **authorization**: ``AlwaysAllow``, or ``Webhook``: SubjectAccessReviews
  (authorization.k8s.io/v1) on resource ``nodes``, name the node, a verb by HTTP method
  (GET get, POST create, PUT update, PATCH patch, DELETE delete; upstream's switch names no
  other method, so HEAD asks with an empty verb) and subresources by path, as upstream's
  GetRequestAttributes with KubeletFineGrainedAuthz (GA, locked on, in 1.36): ``/pods``
  and ``/runningpods/`` ask ``pods``, ``/healthz`` ``healthz``, ``/configz`` ``configz``,
  each then falling back to ``proxy``; ``/stats/`` ``stats``, ``/metrics`` ``metrics``,
  ``/logs/`` ``log``, ``/checkpoint/`` ``checkpoint``, ``/flagz`` ``configz``,
  ``/statusz`` ``statusz``, with no fallback; every other path ``proxy``. The reviews are
  asked in that order until one allows; allowed answers are cached 5 min, denied ones
  30 s. All denied is 403 ``Forbidden (user=..., verb=..., resource=nodes,
  subresource(s)=[pods proxy])``; a review that fails is 500 ``Authorization error
  (user=..., verb=..., resource=nodes, subresource=...)`` naming the one that failed, as
  upstream's InstallAuthFilter writes them.

Reviews go to the API server through :class:`APIReviews`; a review that cannot be made
(the server is away) is never cached.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import falcon
from loguru import logger

from runtime import errors

if TYPE_CHECKING:  # the API client is loaded only in cluster mode (APIReviews)
    from runtime.kubeapi.client import KubeClient

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"

AuthorizationMode = Literal["AlwaysAllow", "Webhook"]
ALWAYS_ALLOW: AuthorizationMode = "AlwaysAllow"
WEBHOOK: AuthorizationMode = "Webhook"

PEER_SUBJECT = "kubelet_actors.peer_subject"
"""WSGI environ key: the verified client certificate's subject (``ssl.getpeercert()``
shape), set by the TLS listener; absent without a certificate."""

_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
          "DELETE": "delete"}
"""Upstream's verb by HTTP method; any other method (HEAD, OPTIONS) asks with verb ""."""

PROXY = "proxy"
"""The subresource of every path without one of its own, and the fine-grained ones'
fallback."""

FINE_GRAINED_SUBRESOURCES = (("/pods", "pods"), ("/healthz", "healthz"),
                             ("/configz", "configz"), ("/runningpods/", "pods"))
"""KubeletFineGrainedAuthz's paths: their own subresource is asked first, then ``proxy``
(upstream's order: /runningpods/ last)."""

SUBRESOURCES = (("/stats/", "stats"), ("/metrics", "metrics"), ("/logs/", "log"),
                ("/checkpoint/", "checkpoint"), ("/flagz", "configz"),
                ("/statusz", "statusz"))
"""The paths whose subresource is asked alone; any other path asks ``proxy``."""


@dataclass(frozen=True)
class AuthSettings:
    """Upstream's KubeletConfiguration ``authentication`` and ``authorization`` blocks."""

    node_name: str
    anonymous: bool = True
    client_ca_file: str = ""
    token_webhook: bool = False
    token_cache_ttl: float = 120.0
    mode: AuthorizationMode = ALWAYS_ALLOW
    authorized_ttl: float = 300.0
    unauthorized_ttl: float = 30.0


@dataclass(frozen=True)
class UserInfo:
    """An authenticated caller (upstream's user.Info)."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Attributes:
    """What a request asks: upstream's authorizer.Attributes for the kubelet's API."""

    user: UserInfo
    verb: str
    subresource: str
    name: str
    path: str
    resource: str = "nodes"


def is_subpath(subpath: str, path: str) -> bool:
    """Upstream's isSubpath: ``subpath`` is ``path`` (one trailing slash ignored) or below."""
    path = path.removesuffix("/")
    return subpath == path or (subpath.startswith(path) and subpath[len(path)] == "/")


def subresources(path: str) -> tuple[str, ...]:
    """The subresources a request for ``path`` is authorized as, in the order asked."""
    fine = [name for prefix, name in FINE_GRAINED_SUBRESOURCES if is_subpath(path, prefix)]
    coarse = [name for prefix, name in SUBRESOURCES if is_subpath(path, prefix)]
    return (*fine[:1], *(coarse[:1] or [PROXY]))


def request_attributes(user: UserInfo, method: str, path: str,
                       node_name: str) -> tuple[Attributes, ...]:
    """Upstream's GetRequestAttributes: one Attributes per subresource to ask, in order;
    they differ only in the subresource."""
    verb = _VERBS.get(method, "")
    return tuple(Attributes(user, verb, name, node_name, path) for name in subresources(path))


class Reviews(Protocol):
    """Where TokenReviews and SubjectAccessReviews are sent; each returns the status."""

    def token_review(self, token: str) -> Mapping[str, Any]: ...

    def subject_access_review(self, spec: Mapping[str, Any]) -> Mapping[str, Any]: ...


class APIReviews:
    """Reviews POSTed to the API server with the kubelet's own client."""

    def __init__(self, client: KubeClient) -> None:
        from runtime.kubeapi.client import Resource

        self._client = client
        self._token_reviews = Resource("authentication.k8s.io", "v1", "tokenreviews",
                                       "TokenReview", False)
        self._access_reviews = Resource("authorization.k8s.io", "v1", "subjectaccessreviews",
                                        "SubjectAccessReview", False)

    def token_review(self, token: str) -> Mapping[str, Any]:
        answer = self._client.create(self._token_reviews, {"spec": {"token": token}})
        status: Mapping[str, Any] = answer.get("status") or {}
        return status

    def subject_access_review(self, spec: Mapping[str, Any]) -> Mapping[str, Any]:
        answer = self._client.create(self._access_reviews, {"spec": dict(spec)})
        status: Mapping[str, Any] = answer.get("status") or {}
        return status


class _TTLCache:
    """Answers kept until their deadline (thread-safe); expired ones are dropped on read."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._entries: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= self._now():
                del self._entries[key]
                return None
            return entry[1]

    def put(self, key: Any, value: Any, ttl: float) -> None:
        if ttl <= 0:
            return
        with self._lock:
            if len(self._entries) > 4096:  # a flood of distinct tokens: start afresh
                self._entries.clear()
            self._entries[key] = (self._now() + ttl, value)


class Unauthenticated(Exception):
    """A credential was presented and is not valid, or none was and anonymous is off."""


class Authenticator:
    """Client certificate, then bearer token (TokenReview), then anonymous."""

    def __init__(self, settings: AuthSettings, reviews: Reviews | None,
                 now: Callable[[], float] = time.monotonic) -> None:
        if settings.token_webhook and reviews is None:
            # Upstream: "no client provided, cannot use webhook authentication".
            raise ValueError("the token webhook needs an API server to send TokenReviews to")
        self._settings = settings
        self._reviews = reviews
        self._cache = _TTLCache(now)

    def authenticate(self, peer_subject: Any, authorization: str | None) -> UserInfo:
        """The caller, or Unauthenticated."""
        if peer_subject and self._settings.client_ca_file:
            user = _certificate_user(peer_subject)
            if user is not None:
                return user
            raise Unauthenticated("the client certificate has no CommonName")
        token = _bearer(authorization)
        if token is not None:
            if not self._settings.token_webhook or self._reviews is None:
                raise Unauthenticated("bearer tokens are not accepted (no token webhook)")
            return self._token_user(token)
        if self._settings.anonymous:
            return UserInfo(ANONYMOUS, (UNAUTHENTICATED,))
        raise Unauthenticated("no credentials and anonymous requests are off")

    def _token_user(self, token: str) -> UserInfo:
        cached = self._cache.get(token)
        if cached is None:
            assert self._reviews is not None
            try:
                status = self._reviews.token_review(token)
            except errors.APIError as err:
                # Not cached: the next request asks again.
                logger.warning("TokenReview failed: {}", err)
                raise Unauthenticated(f"TokenReview failed: {err}") from err
            cached = _review_user(status) or False
            self._cache.put(token, cached, self._settings.token_cache_ttl)
        if cached is False:
            raise Unauthenticated("the API server did not authenticate the token")
        user: UserInfo = cached
        return user


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _with_authenticated(groups: tuple[str, ...]) -> tuple[str, ...]:
    return groups if AUTHENTICATED in groups else (*groups, AUTHENTICATED)


def _certificate_user(subject: Any) -> UserInfo | None:
    """CN is the user, each O a group (upstream's CommonNameUserConversion)."""
    name = ""
    groups: list[str] = []
    for rdn in subject:
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    if not name:
        return None
    return UserInfo(name, _with_authenticated(tuple(groups)))


def _review_user(status: Mapping[str, Any]) -> UserInfo | None:
    if not status.get("authenticated"):
        return None
    user = status.get("user") or {}
    name = str(user.get("username") or "")
    if not name:
        return None
    extra = {str(k): tuple(str(x) for x in v or ())
             for k, v in (user.get("extra") or {}).items()}
    return UserInfo(name, _with_authenticated(tuple(str(g) for g in user.get("groups") or ())),
                    str(user.get("uid") or ""), extra)


class AuthorizationFailed(Exception):
    """The SubjectAccessReview could not be made (500, as upstream)."""


class Authorizer:
    """AlwaysAllow, or Webhook (SubjectAccessReview) with upstream's cache TTLs."""

    def __init__(self, settings: AuthSettings, reviews: Reviews | None,
                 now: Callable[[], float] = time.monotonic) -> None:
        if settings.mode == WEBHOOK and reviews is None:
            raise ValueError("authorization mode Webhook needs an API server to send "
                             "SubjectAccessReviews to")
        self._settings = settings
        self._reviews = reviews
        self._cache = _TTLCache(now)

    def authorize(self, attrs: Attributes) -> bool:
        if self._settings.mode == ALWAYS_ALLOW:
            return True
        assert self._reviews is not None
        spec = subject_access_review_spec(attrs)
        key = _freeze(spec)
        cached = self._cache.get(key)
        if cached is not None:
            allowed: bool = cached
            return allowed
        try:
            status = self._reviews.subject_access_review(spec)
        except errors.APIError as err:
            logger.warning("SubjectAccessReview failed: {}", err)
            raise AuthorizationFailed(str(err)) from err
        allowed = bool(status.get("allowed")) and not status.get("denied")
        self._cache.put(key, allowed, self._settings.authorized_ttl if allowed
                        else self._settings.unauthorized_ttl)
        return allowed


def subject_access_review_spec(attrs: Attributes) -> dict[str, Any]:
    """The spec of upstream's webhook authorizer's review for ``attrs``."""
    user = attrs.user
    spec: dict[str, Any] = {
        "resourceAttributes": {"verb": attrs.verb, "group": "", "version": "v1",
                               "resource": attrs.resource, "subresource": attrs.subresource,
                               "name": attrs.name},
        "user": user.name, "groups": list(user.groups),
    }
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra.items()}
    return spec


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


class KubeletAuth:
    """The authenticator and authorizer of one kubelet, from its settings."""

    def __init__(self, settings: AuthSettings, reviews: Reviews | None = None,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.authenticator = Authenticator(settings, reviews, now)
        self.authorizer = Authorizer(settings, reviews, now)

    def middleware(self) -> AuthMiddleware:
        return AuthMiddleware(self)


def _plain(status: str, body: str) -> falcon.HTTPError:
    err = falcon.HTTPError(status)
    err.kubelet_text = body  # type: ignore[attr-defined]
    return err


class AuthMiddleware:
    """Falcon middleware: authenticate and authorize before routing (unknown paths too, as
    upstream's filter runs before its mux). Failures answer in upstream's plain text."""

    def __init__(self, auth: KubeletAuth) -> None:
        self._auth = auth

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        try:
            user = self._auth.authenticator.authenticate(
                req.env.get(PEER_SUBJECT), req.get_header("Authorization"))
        except Unauthenticated as err:
            logger.debug("HTTP {} {}: unauthenticated: {}", req.method, req.path, err)
            raise _plain(falcon.HTTP_401, "Unauthorized") from None
        attrs = request_attributes(user, req.method, req.path,
                                   self._auth.settings.node_name)
        for attr in attrs:
            try:
                if self._auth.authorizer.authorize(attr):
                    req.context.user = user
                    return
            except AuthorizationFailed:
                # Upstream answers at the first review that fails, the fallback unasked.
                raise _plain(falcon.HTTP_500, (
                    f"Authorization error (user={user.name}, verb={attr.verb}, "
                    f"resource={attr.resource}, subresource={attr.subresource})")) from None
        # Go's %v of the subresources' []string: "[pods proxy]"; and a newline, as upstream.
        what = (f"user={user.name}, verb={attrs[0].verb}, resource={attrs[0].resource}, "
                f"subresource(s)=[{' '.join(a.subresource for a in attrs)}]")
        logger.debug("HTTP {} {}: forbidden ({})", req.method, req.path, what)
        raise _plain(falcon.HTTP_403, f"Forbidden ({what})\n")
