"""The checks a write to the emulated API server passes before it is stored.

The admission plug-ins a kubelet's pods meet (NamespaceLifecycle: nothing new in a
terminating namespace; ServiceAccount: the pod's service account, its token volume and
mounts) and the kinds' validation (names as RFC 1123 subdomains, a pod's containers, the
fields a pod update may change, RuntimeClass's rules in runtimeclass.py).
"""

from __future__ import annotations

import copy
import re
import secrets
from typing import Any

from tests.apiserver import csr, errors, runtimeclass
from tests.apiserver.errors import APIError
from tests.apiserver.objects import GENERATE_ALPHABET
from tests.apiserver.resources import ResourceType
from tests.apiserver.store import Store

ROOT_CA = "kube-root-ca.crt"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def validate_name(rt: ResourceType, name: str) -> None:
    if not name:
        raise errors.invalid(rt.kind, "", [("metadata.name", "FieldValueRequired",
                                            "Required value: name or generateName is "
                                            "required")], rt.group)
    if rt.kind == csr.KIND:
        return  # "We don't care what you call your certificate requests."
    if len(name) > 253 or not _NAME.match(name):
        raise errors.invalid(rt.kind, name, [(
            "metadata.name", "FieldValueInvalid",
            f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower '
            "case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character")], rt.group)


def validate(rt: ResourceType, obj: dict[str, Any],
             old: dict[str, Any] | None = None) -> None:
    """The kind's validation (``old``: the object an update replaces)."""
    if rt.kind == "RuntimeClass":
        runtimeclass.validate(obj, old)
    if rt.kind != "Pod":
        return
    name = obj["metadata"]["name"]
    containers = obj.get("spec", {}).get("containers") or []
    causes: list[tuple[str, str, str]] = []
    if not containers:
        causes.append(("spec.containers", "FieldValueRequired", "Required value"))
    for i, c in enumerate(containers):
        if not c.get("name"):
            causes.append((f"spec.containers[{i}].name", "FieldValueRequired",
                           "Required value"))
        if not c.get("image"):
            causes.append((f"spec.containers[{i}].image", "FieldValueRequired",
                           "Required value"))
    if causes:
        raise errors.invalid("Pod", name, causes)


def check_namespace(store: Store, rt: ResourceType, ns: str, obj: dict[str, Any]) -> None:
    if not rt.namespaced:
        return
    namespace = store.get("namespaces", ("", ns))
    if namespace is None:
        raise errors.not_found("namespaces", ns)
    if namespace["metadata"].get("deletionTimestamp"):
        raise APIError(403, "Forbidden",
                       f'{rt.plural} "{obj["metadata"]["name"]}" is forbidden: unable to '
                       f"create new content in namespace {ns} because it is being "
                       "terminated",
                       {"name": obj["metadata"]["name"], "kind": rt.plural,
                        "causes": [{"reason": "NamespaceTerminating",
                                    "message": f"namespace {ns} is being terminated",
                                    "field": "metadata.namespace"}]})


def admit_pod(store: Store, ns: str, pod: dict[str, Any]) -> None:
    """The ServiceAccount admission plug-in, as a kubelet's pods arrive from a cluster."""
    spec = pod["spec"]
    meta = pod["metadata"]
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return  # mirror pods skip service-account admission upstream
    sa_name = spec.setdefault("serviceAccountName", "default")
    spec["serviceAccount"] = sa_name
    sa = store.get("serviceaccounts", (ns, sa_name))
    if sa is None:
        raise APIError(403, "Forbidden",
                       f'pods "{meta["name"]}" is forbidden: error looking up service '
                       f"account {ns}/{sa_name}: serviceaccount \"{sa_name}\" not found",
                       {"name": meta["name"], "kind": "pods"})
    automount = spec.get("automountServiceAccountToken",
                         sa.get("automountServiceAccountToken", True))
    if not automount:
        return
    volume = "kube-api-access-" + "".join(
        secrets.choice(GENERATE_ALPHABET) for _ in range(5))
    spec.setdefault("volumes", []).append({"name": volume, "projected": {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": ROOT_CA, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ]}})
    for c in [*spec.get("initContainers", []), *spec["containers"]]:
        c.setdefault("volumeMounts", []).append({
            "name": volume, "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})


def check_pod_update(old: dict[str, Any], new: dict[str, Any]) -> None:
    def mutable_masked(spec: dict[str, Any]) -> dict[str, Any]:
        spec = copy.deepcopy(spec)
        for c in [*spec.get("containers", []), *spec.get("initContainers", [])]:
            c.pop("image", None)
        for field_ in ("activeDeadlineSeconds", "tolerations", "schedulingGates",
                       "terminationGracePeriodSeconds"):
            spec.pop(field_, None)
        return spec

    if mutable_masked(old.get("spec", {})) != mutable_masked(new.get("spec", {})):
        raise errors.invalid("Pod", old["metadata"]["name"], [(
            "spec", "FieldValueForbidden",
            "Forbidden: pod updates may not change fields other than "
            "`spec.containers[*].image`,`spec.initContainers[*].image`,"
            "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
            "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if "
            "it was previously negative)")])
