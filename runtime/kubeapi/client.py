"""The typed verbs of the Kubernetes API over raw JSON: get, list (paged), watch, create,
update, patch (strategic merge, merge, JSON patch), delete (grace, preconditions).

Objects stay the API's JSON (``dict``), decoded with msgspec: what the server sent is what
the kubelet sees and what a trace can record, with no model layer in between. Resources are
named by :class:`Resource` constants (``PODS``, ``NODES``, ``LEASES``...).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from runtime import errors
from runtime.kubeapi.transport import Stream, Transport, error_from_status

__all__ = ["CONFIGMAPS", "EVENTS", "LEASES", "NAMESPACES", "NODES", "PODS", "SECRETS", "SERVICES",
           "KubeClient", "ObjectList", "PatchType", "Resource", "WatchEvent", "WatchStream"]

JSONObject = dict[str, Any]
PatchType = Literal["strategic", "merge", "json"]

_PATCH_CONTENT_TYPES: dict[str, str] = {
    "strategic": "application/strategic-merge-patch+json",
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
}


@dataclass(frozen=True)
class Resource:
    """One REST resource: where it lives and what it holds."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


PODS = Resource("", "v1", "pods", "Pod", True)
NODES = Resource("", "v1", "nodes", "Node", False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
SERVICES = Resource("", "v1", "services", "Service", True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
SECRETS = Resource("", "v1", "secrets", "Secret", True)
EVENTS = Resource("", "v1", "events", "Event", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
RUNTIMECLASSES = Resource("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False)


@dataclass(frozen=True)
class ObjectList:
    """One LIST answer (or all its pages): items, the list's resourceVersion, and the
    ``continue`` token when more pages wait."""

    items: tuple[JSONObject, ...]
    resource_version: str
    continue_token: str = ""
    remaining_item_count: int | None = None


@dataclass(frozen=True)
class WatchEvent:
    """ADDED, MODIFIED, DELETED, BOOKMARK (ERROR is raised, not returned)."""

    type: str
    object: JSONObject

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


class WatchStream:
    """The events of one watch, in order; iterate, and ``close()`` to stop early.

    The iteration ends when the server ends the watch (its timeout); an ERROR event raises
    its Status as an error (410 Expired: :class:`~runtime.errors.APIGone`); a cut connection
    raises :class:`~runtime.errors.APIUnreachable`.
    """

    def __init__(self, stream: Stream, what: str) -> None:
        self._stream = stream
        self._what = what
        self._decoder = msgspec.json.Decoder()

    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            line = self._stream.readline()
            if not line:
                return
            if not line.strip():
                continue
            try:
                event = self._decoder.decode(line)
            except msgspec.DecodeError as err:
                raise errors.APIUnreachable(f"{self._what}: a watch event is not JSON: "
                                            f"{err}") from err
            kind = str(event.get("type", ""))
            obj = event.get("object")
            if kind == "ERROR":
                code = int(obj.get("code") or 500) if isinstance(obj, dict) else 500
                raise error_from_status(code, obj, self._what)
            if not isinstance(obj, dict):
                raise errors.APIUnreachable(f"{self._what}: a {kind} event has no object")
            yield WatchEvent(kind, obj)

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _query(**pairs: str | int | bool | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in pairs.items():
        if value is None or value == "":
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


class KubeClient:
    """The API verbs the kubelet uses, on one :class:`Transport` (thread-safe)."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._decoder = msgspec.json.Decoder()

    def _decode(self, data: bytes, what: str) -> Any:
        try:
            return self._decoder.decode(data) if data else None
        except msgspec.DecodeError as err:
            raise errors.APIError(f"{what}: the answer is not JSON: {err}") from err

    def _object(self, method: str, path: str, *, query: Mapping[str, str] | None = None,
                body: Any = None, content_type: str = "application/json") -> JSONObject:
        data = None if body is None else msgspec.json.encode(body)
        response = self.transport.request(method, path, query=query, body=data,
                                          content_type=content_type)
        obj = self._decode(response.body, f"{method} {path}")
        if not isinstance(obj, dict):
            raise errors.APIError(f"{method} {path}: the answer is not an object")
        return obj

    # --- reads ---------------------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: str = "", *,
            resource_version: str = "") -> JSONObject:
        """GET one object; ``resource_version="0"`` lets the server answer from its cache."""
        return self._object("GET", resource.path(namespace, name),
                            query=_query(resourceVersion=resource_version))

    def list(self, resource: Resource, namespace: str = "", *, label_selector: str = "",
             field_selector: str = "", limit: int | None = None, continue_token: str = "",
             resource_version: str = "", resource_version_match: str = "") -> ObjectList:
        """One LIST page."""
        query = _query(labelSelector=label_selector, fieldSelector=field_selector,
                       limit=limit, resourceVersion=resource_version,
                       resourceVersionMatch=resource_version_match,
                       **{"continue": continue_token})
        body = self._object("GET", resource.path(namespace), query=query)
        meta = body.get("metadata") or {}
        items = body.get("items") or []
        return ObjectList(tuple(items), str(meta.get("resourceVersion") or ""),
                          str(meta.get("continue") or ""), meta.get("remainingItemCount"))

    def list_all(self, resource: Resource, namespace: str = "", *, label_selector: str = "",
                 field_selector: str = "", limit: int = 500,
                 resource_version: str = "") -> ObjectList:
        """Every page of a LIST (client-go's pager): ``continue`` until none is left. The
        result's resourceVersion is the first page's, which every page shares."""
        first = self.list(resource, namespace, label_selector=label_selector,
                          field_selector=field_selector, limit=limit,
                          resource_version=resource_version)
        items = list(first.items)
        token = first.continue_token
        while token:
            page = self.list(resource, namespace, label_selector=label_selector,
                             field_selector=field_selector, limit=limit, continue_token=token)
            items.extend(page.items)
            token = page.continue_token
        return ObjectList(tuple(items), first.resource_version)

    def watch(self, resource: Resource, namespace: str = "", *, resource_version: str = "",
              label_selector: str = "", field_selector: str = "",
              allow_bookmarks: bool = True, timeout_seconds: int | None = None,
              read_timeout: float | None = None) -> WatchStream:
        """Open a WATCH from ``resource_version``; errors before the stream opens raise."""
        query = _query(watch=True, resourceVersion=resource_version,
                       labelSelector=label_selector, fieldSelector=field_selector,
                       allowWatchBookmarks=allow_bookmarks or None,
                       timeoutSeconds=timeout_seconds)
        path = resource.path(namespace)
        stream = self.transport.stream(path, query=query, timeout=read_timeout)
        return WatchStream(stream, f"WATCH {path}")

    # --- writes --------------------------------------------------------------------------

    def create(self, resource: Resource, obj: Mapping[str, Any], namespace: str = "",
               subresource: str = "", name: str = "") -> JSONObject:
        """POST ``obj`` (to ``name``'s ``subresource`` when given, e.g. a TokenRequest)."""
        return self._object("POST", resource.path(namespace, name, subresource),
                            body=_typed(resource, obj) if not subresource else obj)

    def update(self, resource: Resource, obj: Mapping[str, Any], namespace: str = "",
               subresource: str = "") -> JSONObject:
        """PUT ``obj``; its metadata.resourceVersion makes it conditional (409 if stale)."""
        name = str((obj.get("metadata") or {}).get("name") or "")
        if not name:
            raise errors.APIError(f"PUT {resource.plural}: the object has no metadata.name")
        return self._object("PUT", resource.path(namespace, name, subresource),
                            body=_typed(resource, obj))

    def patch(self, resource: Resource, name: str, patch: Any, *, namespace: str = "",
              subresource: str = "", patch_type: PatchType = "strategic") -> JSONObject:
        """PATCH with a strategic merge (default), JSON merge or JSON patch document."""
        return self._object("PATCH", resource.path(namespace, name, subresource), body=patch,
                            content_type=_PATCH_CONTENT_TYPES[patch_type])

    def delete(self, resource: Resource, name: str, namespace: str = "", *,
               grace_period_seconds: int | None = None, uid: str = "",
               resource_version: str = "", propagation_policy: str = "") -> JSONObject:
        """DELETE with DeleteOptions: grace, and uid/resourceVersion preconditions (409 when
        they fail). Returns the object (still there while graceful) or the Status."""
        options: JSONObject = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version))
                         if v}
        if preconditions:
            options["preconditions"] = preconditions
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        return self._object("DELETE", resource.path(namespace, name), body=options)


def _typed(resource: Resource, obj: Mapping[str, Any]) -> JSONObject:
    out = dict(obj)
    out.setdefault("kind", resource.kind)
    out.setdefault("apiVersion", resource.api_version)
    return out
