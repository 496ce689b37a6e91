"""The resource types the emulated API server serves, and their discovery documents.

One :class:`ResourceType` per REST resource: group/version/kind, scope, verbs, short names,
subresources, the field labels a fieldSelector may use, and the patch schema. Discovery
(``/api``, ``/api/v1``, ``/apis``, ``/apis/<g>/<v>``) is generated from this table, so kubectl
resolves ``po``, ``no``, ``cm``, ``lease`` the way it would against a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.apiserver.patchmeta import Schema, for_kind

CRUD = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CREATE_ONLY = ("create",)

FieldGetter = Callable[[dict[str, Any]], dict[str, str]]


def _dig(obj: dict[str, Any], path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def _fields(*paths: str) -> tuple[frozenset[str], FieldGetter]:
    all_paths = ("metadata.name", "metadata.namespace", *paths)
    return frozenset(all_paths), lambda obj: {p: _dig(obj, p) for p in all_paths}


@dataclass(frozen=True)
class ResourceType:
    """One REST resource, e.g. pods in core/v1 or leases in coordination.k8s.io/v1."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = CRUD
    short_names: tuple[str, ...] = ()
    # subresource name -> (kind of its body, verbs)
    subresources: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    field_labels: frozenset[str] = frozenset({"metadata.name", "metadata.namespace"})
    get_fields: FieldGetter = field(default=_fields()[1])
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def patch_schema(self) -> Schema:
        return for_kind(self.kind)


_POD_FIELDS = _fields("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                      "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                      "status.podIP", "status.nominatedNodeName")
_NODE_FIELDS = _fields("spec.unschedulable")
_EVENT_FIELDS = _fields("involvedObject.kind", "involvedObject.namespace",
                        "involvedObject.name", "involvedObject.uid",
                        "involvedObject.apiVersion", "involvedObject.resourceVersion",
                        "involvedObject.fieldPath", "reason", "reportingComponent", "source",
                        "type")


def _event_fields(obj: dict[str, Any]) -> dict[str, str]:
    """Upstream's event field set: ``source`` is source.component (not the whole object)."""
    fields = _EVENT_FIELDS[1](obj)
    fields["source"] = _dig(obj, "source.component")
    return fields


_SECRET_FIELDS = _fields("type")
_CSR_FIELDS = _fields("spec.signerName")
_NAMESPACE_FIELDS = _fields("status.phase")

_RW = ("get", "patch", "update")

RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "pods", "pod", "Pod", True, short_names=("po",),
                 subresources={"status": ("Pod", _RW), "log": ("Pod", ("get",)),
                               "exec": ("PodExecOptions", ("create", "get")),
                               "attach": ("PodAttachOptions", ("create", "get")),
                               "portforward": ("PodPortForwardOptions", ("create", "get")),
                               "binding": ("Binding", ("create",))},
                 field_labels=_POD_FIELDS[0], get_fields=_POD_FIELDS[1], categories=("all",)),
    ResourceType("", "v1", "nodes", "node", "Node", False, short_names=("no",),
                 subresources={"status": ("Node", _RW)},
                 field_labels=_NODE_FIELDS[0], get_fields=_NODE_FIELDS[1]),
    ResourceType("", "v1", "events", "event", "Event", True, short_names=("ev",),
                 field_labels=_EVENT_FIELDS[0], get_fields=_event_fields),
    ResourceType("", "v1", "configmaps", "configmap", "ConfigMap", True, short_names=("cm",)),
    ResourceType("", "v1", "secrets", "secret", "Secret", True,
                 field_labels=_SECRET_FIELDS[0], get_fields=_SECRET_FIELDS[1]),
    ResourceType("", "v1", "services", "service", "Service", True, short_names=("svc",),
                 subresources={"status": ("Service", _RW)}, categories=("all",)),
    ResourceType("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", True,
                 short_names=("sa",), subresources={"token": ("TokenRequest", CREATE_ONLY)}),
    ResourceType("", "v1", "namespaces", "namespace", "Namespace", False, short_names=("ns",),
                 verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
                 subresources={"status": ("Namespace", _RW)},
                 field_labels=_NAMESPACE_FIELDS[0], get_fields=_NAMESPACE_FIELDS[1]),
    ResourceType("coordination.k8s.io", "v1", "leases", "lease", "Lease", True),
    ResourceType("node.k8s.io", "v1", "runtimeclasses", "runtimeclass", "RuntimeClass", False),
    ResourceType("certificates.k8s.io", "v1", "certificatesigningrequests",
                 "certificatesigningrequest", "CertificateSigningRequest", False,
                 short_names=("csr",),
                 subresources={"approval": ("CertificateSigningRequest", _RW),
                               "status": ("CertificateSigningRequest", _RW)},
                 field_labels=_CSR_FIELDS[0], get_fields=_CSR_FIELDS[1]),
    ResourceType("authentication.k8s.io", "v1", "tokenreviews", "tokenreview", "TokenReview",
                 False, verbs=CREATE_ONLY),
    ResourceType("authorization.k8s.io", "v1", "subjectaccessreviews", "subjectaccessreview",
                 "SubjectAccessReview", False, verbs=CREATE_ONLY),
)

BY_PATH: dict[tuple[str, str, str], ResourceType] = {
    (r.group, r.version, r.plural): r for r in RESOURCES}

GROUPS: dict[str, str] = {}  # group -> its only version
for _r in RESOURCES:
    if _r.group:
        GROUPS[_r.group] = _r.version


def lookup(group: str, version: str, plural: str) -> ResourceType | None:
    return BY_PATH.get((group, version, plural))


def by_kind(kind: str) -> ResourceType:
    for r in RESOURCES:
        if r.kind == kind:
            return r
    raise KeyError(kind)


def _resource_list(group: str, version: str) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        entry: dict[str, Any] = {
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        if r.verbs != CREATE_ONLY:
            entry["storageVersionHash"] = f"emulated-{r.plural}"
        entries.append(entry)
        for sub, (kind, verbs) in r.subresources.items():
            entries.append({"name": f"{r.plural}/{sub}", "singularName": "",
                            "namespaced": r.namespaced, "kind": kind, "verbs": list(verbs)})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": entries}


def discovery(path: str, server_address: str) -> dict[str, Any] | None:
    """The discovery document at ``path``, or None when there is none."""
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}
    if path == "/api/v1":
        return _resource_list("", "v1")
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
             "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}}
            for g, v in GROUPS.items()]}
    parts = path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "apis" and parts[1] in GROUPS:
        g = parts[1]
        v = GROUPS[g]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": g,
                "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
                "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}}
    if len(parts) == 3 and parts[0] == "apis" and GROUPS.get(parts[1]) == parts[2]:
        return _resource_list(parts[1], parts[2])
    return None


def _openapi_path(r: ResourceType) -> str:
    prefix = f"/apis/{r.group}/{r.version}" if r.group else "/api/v1"
    scope = "/namespaces/{namespace}" if r.namespaced else ""
    return f"{prefix}{scope}/{r.plural}/{{name}}"


def openapi_v3(path: str) -> dict[str, Any] | None:
    """Just enough OpenAPI v3 for kubectl: the index, and per group-version the PATCH
    operations with their ``fieldValidation`` parameter. Seeing it, kubectl leaves validation
    to the server (``fieldValidation=Strict``) instead of downloading schemas; the emulator
    checks no schemas, so unknown fields are kept rather than refused."""
    gvs = sorted({(r.group, r.version) for r in RESOURCES})

    def key(group: str, version: str) -> str:
        return f"apis/{group}/{version}" if group else "api/v1"

    if path == "/openapi/v3":
        return {"paths": {key(g, v): {"serverRelativeURL": f"/openapi/v3/{key(g, v)}?hash=E"}
                          for g, v in gvs}}
    for g, v in gvs:
        if path != f"/openapi/v3/{key(g, v)}":
            continue
        paths: dict[str, Any] = {}
        for r in RESOURCES:
            if (r.group, r.version) != (g, v) or "patch" not in r.verbs:
                continue
            paths[_openapi_path(r)] = {"patch": {
                "parameters": [{"name": "fieldValidation", "in": "query",
                                "schema": {"type": "string"}}],
                "x-kubernetes-group-version-kind": {"group": g, "version": v, "kind": r.kind},
                "responses": {"200": {"description": "OK"}},
            }}
        return {"openapi": "3.0.0", "info": {"title": "Kubernetes (emulated)",
                                              "version": "v1.32.0"},
                "paths": paths, "components": {"schemas": {}}}
    return None
