"""Service account tokens for projected volumes: upstream's token manager
(pkg/kubelet/token/token_manager.go).

A token is asked of the API server by a TokenRequest on
``serviceaccounts/<sa>/token`` bound to the pod (boundObjectRef Pod name and UID), with
the projection's audience and expirationSeconds. It is cached per (service account,
namespace, audience, expiration, pod UID) and asked again once ``requires_refresh``:
after 80% of its life (within 20% of the expiry), or 24 h after issue, each less a
jitter of up to 10 s. A refresh that fails keeps the cached token until it expires
("Couldn't update token"); a first fetch that fails is ``failed to fetch token: ...``.
Expired tokens are dropped (upstream's gc, every minute) and a pod's tokens with it.
"""

from __future__ import annotations

import calendar
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

from loguru import logger

from runtime import errors
from runtime.clock import Clock
from runtime.kubeapi.client import KubeClient, Resource

__all__ = ["MAX_JITTER", "MAX_TTL", "CachedToken", "TokenManager", "requires_refresh"]

MAX_TTL = 24 * 3600.0
MAX_JITTER = 10.0
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", True)
_log = logger.bind(pod="", uid="", container="")


@dataclass(frozen=True, slots=True)
class CachedToken:
    token: str
    expiration_timestamp: str  # as the API wrote it (RFC 3339)
    expires: float  # unix seconds
    expiration_seconds: int  # the response's spec.expirationSeconds


def parse_time(value: str) -> float:
    """RFC 3339 UTC (``2026-11-23T20:00:00Z``) to unix seconds."""
    return float(calendar.timegm(time.strptime(value[:19], "%Y-%m-%dT%H:%M:%S")))


def requires_refresh(token: CachedToken, now: float, jitter: float) -> bool:
    """upstream requiresRefresh: past 24 h since issue, or within 20% of the expiry,
    each brought forward by ``jitter`` seconds."""
    issued = token.expires - token.expiration_seconds
    if now > issued + MAX_TTL - jitter:
        return True
    return now > token.expires - (token.expiration_seconds * 20) // 100 - jitter


class TokenManager:
    """Caches TokenRequest answers and refreshes them; thread-safe."""

    def __init__(self, client: KubeClient, clock: Clock,
                 rng: random.Random | None = None) -> None:
        self._client = client
        self._clock = clock
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str, int, str], CachedToken] = {}
        self.requests = 0

    def token(self, namespace: str, service_account: str, pod_name: str, pod_uid: str,
              audience: str, expiration_seconds: int) -> dict[str, Any]:
        key = (service_account, namespace, audience, expiration_seconds, pod_uid)
        now = self._clock.now()
        jitter = float(int(self._rng.random() * MAX_JITTER))  # whole seconds, as upstream
        with self._lock:
            self._gc(now)
            cached = self._cache.get(key)
        if cached is not None and not requires_refresh(cached, now, jitter):
            return _answer(cached)
        try:
            fresh = self._request(namespace, service_account, pod_name, pod_uid, audience,
                                  expiration_seconds)
        except errors.APIError as err:
            if cached is None:
                return {"error": f"failed to fetch token: {err}"}
            if now >= cached.expires:
                return {"error": f"token {service_account}/{namespace} expired and refresh "
                                 f"failed: {err}"}
            _log.bind(error=str(err)).warning("Couldn't update token of {}/{}", namespace,
                                              service_account)
            return _answer(cached)
        with self._lock:
            self._cache[key] = fresh
        _log.bind(pod=pod_name, uid=pod_uid).info(
            "service account token for {}/{} {}: expires {}", namespace, service_account,
            "refreshed" if cached is not None else "fetched", fresh.expiration_timestamp)
        return _answer(fresh)

    def forget_pod(self, pod_uid: str) -> None:
        """upstream DeleteServiceAccountToken: the pod's tokens go with it."""
        with self._lock:
            for key in [k for k in self._cache if k[4] == pod_uid]:
                del self._cache[key]

    def _gc(self, now: float) -> None:
        for key in [k for k, v in self._cache.items() if now >= v.expires]:
            del self._cache[key]

    def _request(self, namespace: str, service_account: str, pod_name: str, pod_uid: str,
                 audience: str, expiration_seconds: int) -> CachedToken:
        self.requests += 1
        spec: dict[str, Any] = {
            "expirationSeconds": expiration_seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod_name,
                               "uid": pod_uid}}
        if audience:
            spec["audiences"] = [audience]
        answer = self._client.create(
            SERVICE_ACCOUNTS, {"apiVersion": "authentication.k8s.io/v1",
                               "kind": "TokenRequest", "spec": spec},
            namespace, subresource="token", name=service_account)
        status = answer.get("status") or {}
        stamp = str(status.get("expirationTimestamp") or "")
        seconds = int((answer.get("spec") or {}).get("expirationSeconds") or expiration_seconds)
        return CachedToken(str(status.get("token") or ""), stamp, parse_time(stamp), seconds)


def _answer(token: CachedToken) -> dict[str, Any]:
    return {"token": token.token, "expirationTimestamp": token.expiration_timestamp}
