"""Fault injection for drills against the emulated API server.

Rules match requests by verb (get, list, watch, create, update, patch, delete,
deletecollection) and resource ("pods", "pods/status", "leases"...; "pods" also matches its
subresources) and then answer with an error Status (500, 429 with Retry-After, any code),
or only add latency before serving. Watch drops, forced 410s and partitions act on open
connections and live on the server (EmulatedAPIServer.drop_watches/expire_watches/partition).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from tests.apiserver import errors
from tests.apiserver.errors import APIError


@dataclass
class Fault:
    """One rule; ``times`` None means until removed."""

    verb: str | None = None
    resource: str | None = None
    code: int | None = None
    retry_after: int | None = None
    latency: float = 0.0
    times: int | None = None
    hits: int = 0

    def matches(self, verb: str, resource: str) -> bool:
        if self.verb is not None and self.verb != verb:
            return False
        if self.resource is None:
            return True
        return resource == self.resource or resource.startswith(self.resource + "/")

    def error(self) -> APIError | None:
        if self.code is None:
            return None
        if self.code == 429:
            return errors.too_many_requests(self.retry_after or 1)
        if self.code == 500:
            return errors.internal("injected fault")
        err = APIError(self.code, "InternalError" if self.code >= 500 else "BadRequest",
                       f"injected fault ({self.code})")
        if self.retry_after is not None:
            err.headers["Retry-After"] = str(self.retry_after)
        return err


class Faults:
    """The server's fault rules, checked on every API request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[Fault] = []

    def inject(self, *, verb: str | None = None, resource: str | None = None,
               code: int | None = None, retry_after: int | None = None,
               latency: float = 0.0, times: int | None = None) -> Fault:
        rule = Fault(verb, resource, code, retry_after, latency, times)
        with self._lock:
            self._rules.append(rule)
        return rule

    def remove(self, rule: Fault) -> None:
        with self._lock:
            if rule in self._rules:
                self._rules.remove(rule)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def take(self, verb: str, resource: str) -> Fault | None:
        """The first rule matching this request, counting it as used."""
        with self._lock:
            for rule in self._rules:
                if rule.matches(verb, resource):
                    rule.hits += 1
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times <= 0:
                            self._rules.remove(rule)
                    return rule
        return None
