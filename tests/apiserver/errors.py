"""Errors of the emulated API server, as upstream ``metav1.Status`` objects.

Every failure a handler raises is an :class:`APIError`; the HTTP layer turns it into the JSON
body kube-apiserver sends (``kind: Status``, ``reason``, ``code``, ``details``), so clients
(kubectl, the kubelet's own client) see the same shapes and messages they would see upstream.
"""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    """A request failed; carries the upstream Status reason, code and details."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body of this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(resource: str, name: str, group: str = "") -> dict[str, Any]:
    # Upstream puts the plural resource in details.kind and the group only when it is not core.
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return details


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> APIError:
    return APIError(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found',
                    _details(resource, name, group))


def already_exists(resource: str, name: str, group: str = "") -> APIError:
    return APIError(409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists',
                    _details(resource, name, group))


def conflict(resource: str, name: str, why: str, group: str = "") -> APIError:
    return APIError(
        409, "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        _details(resource, name, group))


STALE = ("the object has been modified; please apply your changes to the latest version and "
         "try again")


def precondition_failed(resource: str, name: str, what: str, wanted: str, actual: str,
                        group: str = "") -> APIError:
    """A uid or resourceVersion precondition did not hold (upstream: 409 Conflict)."""
    return conflict(resource, name,
                    f"Precondition failed: {what} in precondition: {wanted}, "
                    f"{what} in object meta: {actual}", group)


def invalid(kind: str, name: str, causes: list[tuple[str, str, str]], group: str = "") -> APIError:
    """422 Invalid; ``causes`` are (field, reason, message) as in field.ErrorList."""
    text = ", ".join(f"{field}: {message}" for field, _, message in causes)
    qualified = f"{kind}.{group}" if group else kind
    details: dict[str, Any] = {
        "name": name, "kind": kind,
        "causes": [{"reason": reason, "message": message, "field": field}
                   for field, reason, message in causes],
    }
    if group:
        details["group"] = group
    subject = f'{qualified} "{name}"' if name else qualified
    return APIError(422, "Invalid", f"{subject} is invalid: {text}", details)


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def gone(message: str) -> APIError:
    """410 Expired, what a reflector sees when its resourceVersion was compacted away."""
    return APIError(410, "Expired", message)


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized")


def forbidden(user: str, verb: str, resource: str, group: str, namespace: str,
              name: str = "") -> APIError:
    what = f'resource "{resource}" in API group "{group}"'
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    subject = f'{resource} "{name}"' if name else resource
    return APIError(403, "Forbidden",
                    f'{subject} is forbidden: User "{user}" cannot {verb} {what}{where}',
                    _details(resource, name, group))


def method_not_allowed(message: str) -> APIError:
    return APIError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> APIError:
    return APIError(415, "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types "
                    f"include: application/json-patch+json, application/merge-patch+json, "
                    f"application/strategic-merge-patch+json (got {content_type})")


def too_many_requests(retry_after: int) -> APIError:
    return APIError(429, "TooManyRequests", "Too many requests, please try again later.",
                    {"retryAfterSeconds": retry_after}, {"Retry-After": str(retry_after)})


def internal(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}",
                    {"causes": [{"message": message}]})


def not_implemented(message: str) -> APIError:
    # Upstream has no reason for this; StatusReasonUnknown is the empty string.
    return APIError(501, "", message)
