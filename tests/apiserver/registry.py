"""The REST semantics of the emulated API server, free of HTTP.

create/get/list/update/patch/delete/watch as kube-apiserver's generic registry and the pod,
node, namespace and service strategies do them: uid, creationTimestamp, generation and
defaults (defaults.py) on create; optimistic concurrency and the main-resource/status split
on update; preconditions, graceful pod deletion and finalizers on delete; the pods/binding
and serviceaccounts/token subresources; what the namespace, root-CA and service-account
controllers do. Consistent paged lists and watches from a resourceVersion are listwatch.py's;
the admission plug-ins the kubelet meets and the kinds' validation are admission.py's.
"""

from __future__ import annotations

import contextlib
import copy
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from tests.apiserver import csr, errors, listwatch, runtimeclass
from tests.apiserver.admission import (
    ROOT_CA,
    admit_pod,
    check_namespace,
    check_pod_update,
    validate,
    validate_name,
)
from tests.apiserver.defaults import DEFAULTS, no_defaults
from tests.apiserver.errors import APIError
from tests.apiserver.listwatch import ListOptions, WatchEvent
from tests.apiserver.objects import (
    GENERATE_ALPHABET,
    by_resource_key,
    check_type,
    decoded,
    resource_key,
    rfc3339,
    with_type,
)
from tests.apiserver.patch import (
    PatchError,
    json_merge,
    json_patch,
    strategic_merge,
)
from tests.apiserver.resources import ResourceType, by_kind
from tests.apiserver.store import Key, Store

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")

STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


@dataclass(frozen=True)
class DeleteOptions:
    grace_period: int | None = None
    uid: str | None = None
    resource_version: str | None = None


@dataclass
class Registry:
    """All verbs on all resources; thread-safe through the store's condition."""

    store: Store
    ca_pem: str
    schedule_to: str | None = None
    bookmark_interval: float = 1.0
    default_watch_timeout: float = 300.0
    clock: Callable[[], float] = time.time
    # The API server's --service-account-max-token-expiration (seconds; None: no cap): a
    # TokenRequest asking for longer gets this, its answer's spec says so. Tests set it
    # low to see tokens rotate.
    max_token_expiration: int | None = None
    # Called on TokenRequest: (namespace, serviceaccount, spec) -> (token, expiry seconds)
    issue_token: Callable[[str, str, dict[str, Any]], tuple[str, int]] | None = None
    _cluster_ips: int = 1
    _watchers_lock: threading.Lock = field(default_factory=threading.Lock)

    # --- bootstrap --------------------------------------------------------------------

    def bootstrap(self) -> None:
        """What a fresh cluster has: the system namespaces, their CA ConfigMap and default
        ServiceAccount, and the ``kubernetes`` Service."""
        for ns in SYSTEM_NAMESPACES:
            self.create(by_kind("Namespace"), "", {"metadata": {"name": ns}})
        self.create(by_kind("Service"), "default", {
            "metadata": {"name": "kubernetes", "labels": {
                "component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": "10.96.0.1", "ports": [
                {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}})

    # --- reads ------------------------------------------------------------------------

    def get(self, rt: ResourceType, ns: str, name: str) -> dict[str, Any]:
        with self.store.cond:
            obj = self.store.get(resource_key(rt), (ns, name))
        if obj is None:
            raise errors.not_found(rt.plural, name, rt.group)
        return with_type(rt, obj)

    def list(self, rt: ResourceType, ns: str, opts: ListOptions) -> dict[str, Any]:
        return listwatch.list_objects(self.store, rt, ns, opts)

    # --- create -----------------------------------------------------------------------

    def create(self, rt: ResourceType, ns: str, body: dict[str, Any],
               *, dry_run: bool = False,
               requester: dict[str, Any] | None = None) -> dict[str, Any]:
        """POST; ``requester`` (user.Info as JSON: username, uid, groups, extra) is who asks,
        which a CertificateSigningRequest records in its spec."""
        obj = self._prepare_create(rt, ns, body, requester)
        with self.store.cond:
            check_namespace(self.store, rt, ns, obj)
            if rt.kind == "Pod":
                admit_pod(self.store, ns, obj)
                class_name = obj["spec"].get("runtimeClassName")
                runtimeclass.admit(obj, self.store.get(runtimeclass.KEY, ("", class_name))
                                   if class_name else None)
            key = (ns if rt.namespaced else "", obj["metadata"]["name"])
            if self.store.get(resource_key(rt), key) is not None:
                raise errors.already_exists(rt.plural, key[1], rt.group)
            if dry_run:
                return with_type(rt, obj)
            stored = self.store.write(resource_key(rt), key, obj)
            if rt.kind == "Namespace":
                self._populate_namespace(key[1])
            if rt.kind == "Pod" and self.schedule_to and not stored["spec"].get("nodeName"):
                # A one-node scheduler: the binding is a second write, as upstream's is.
                self._bind(stored, self.schedule_to)
        return with_type(rt, stored)

    def _prepare_create(self, rt: ResourceType, ns: str, body: dict[str, Any],
                        requester: dict[str, Any] | None = None) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        check_type(rt, body)
        obj: dict[str, Any] = decoded(rt, copy.deepcopy(body))
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                secrets.choice(GENERATE_ALPHABET) for _ in range(5))
        name = meta.get("name", "")
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise errors.bad_request("the namespace of the provided object does not match "
                                         "the namespace sent on the request")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        validate_name(rt, name)
        for dropped in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                        "selfLink"):
            meta.pop(dropped, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = rfc3339(self.clock())
        meta["generation"] = 1
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version
        DEFAULTS.get(rt.kind, no_defaults)(self, obj)
        if rt.kind == csr.KIND:
            csr.prepare_create(obj, requester)
            csr.validate(obj)
            csr.admit(obj)
        validate(rt, obj)
        return obj

    def _populate_namespace(self, ns: str) -> None:
        # What the root-CA publisher and the service-account controller add to a namespace.
        for rt, obj in (
            (by_kind("ConfigMap"), {"metadata": {"name": ROOT_CA},
                                    "data": {"ca.crt": self.ca_pem}}),
            (by_kind("ServiceAccount"), {"metadata": {"name": "default"}}),
        ):
            prepared = self._prepare_create(rt, ns, obj)
            self.store.write(resource_key(rt), (ns, prepared["metadata"]["name"]), prepared)

    def _bind(self, pod: dict[str, Any], node: str) -> dict[str, Any]:
        new = copy.deepcopy(pod)
        new["spec"]["nodeName"] = node
        conditions = new.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": rfc3339(self.clock())})
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        return self.store.write("pods", key, new)

    def bind(self, ns: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """pods/binding: what a scheduler posts."""
        target = (body.get("target") or {}).get("name", "")
        with self.store.cond:
            pod = self.store.get("pods", (ns, name))
            if pod is None:
                raise errors.not_found("pods", name)
            if pod["spec"].get("nodeName"):
                raise errors.conflict("pods/binding", name,
                                      f'pod {name} is already assigned to node '
                                      f'"{pod["spec"]["nodeName"]}"')
            self._bind(pod, target)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "code": 201}

    def token_request(self, ns: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """serviceaccounts/token: a TokenRequest answered with a signed token."""
        with self.store.cond:
            if self.store.get("serviceaccounts", (ns, name)) is None:
                raise errors.not_found("serviceaccounts", name)
        if self.issue_token is None:
            raise errors.internal("no token issuer configured")
        spec = dict(body.get("spec") or {})
        spec.setdefault("expirationSeconds", 3600)
        if self.max_token_expiration is not None:
            spec["expirationSeconds"] = min(int(spec["expirationSeconds"]),
                                            self.max_token_expiration)
        spec.setdefault("audiences", ["https://kubernetes.default.svc.cluster.local"])
        token, expires = self.issue_token(ns, name, spec)
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": name, "namespace": ns,
                             "creationTimestamp": rfc3339(self.clock())},
                "spec": spec,
                "status": {"token": token, "expirationTimestamp": rfc3339(expires)}}

    # --- update and patch -------------------------------------------------------------

    def update(self, rt: ResourceType, ns: str, name: str, body: dict[str, Any],
               subresource: str = "") -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        check_type(rt, body)
        meta = body.get("metadata") or {}
        if meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the "
                f"URL ({name})")
        if rt.namespaced and meta.get("namespace", ns) != ns:
            raise errors.bad_request("the namespace of the provided object does not match the "
                                     "namespace sent on the request")
        with self.store.cond:
            current = self._current(rt, ns, name)
            wanted_rv = meta.get("resourceVersion")
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise errors.conflict(rt.plural, name, errors.STALE, rt.group)
            return self._commit(rt, current, decoded(rt, copy.deepcopy(body)), subresource)

    def patch(self, rt: ResourceType, ns: str, name: str, content_type: str, body: Any,
              subresource: str = "") -> dict[str, Any]:
        with self.store.cond:
            current = self._current(rt, ns, name)
            try:
                if content_type == STRATEGIC:
                    patched = strategic_merge(current, body, rt.patch_schema)
                elif content_type == MERGE:
                    patched = json_merge(current, body)
                elif content_type == JSON_PATCH:
                    patched = json_patch(current, body)
                else:
                    raise errors.unsupported_media_type(content_type)
            except PatchError as err:
                raise errors.APIError(422 if content_type == JSON_PATCH else 400,
                                      "Invalid" if content_type == JSON_PATCH else "BadRequest",
                                      str(err)) from None
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch did not produce an object")
            patched = decoded(rt, patched)
            meta = patched.setdefault("metadata", {})
            # A uid or resourceVersion written by the patch is a precondition (upstream's
            # patcher checks them against the live object).
            live = current["metadata"]
            if meta.get("uid") != live["uid"]:
                raise errors.precondition_failed(rt.plural, name, "UID", str(meta.get("uid")),
                                                  live["uid"], rt.group)
            if meta.get("resourceVersion") != live["resourceVersion"]:
                raise errors.conflict(rt.plural, name, errors.STALE, rt.group)
            if meta.get("name") != name:
                raise errors.bad_request("metadata.name: the name may not be changed by a patch")
            return self._commit(rt, current, patched, subresource)

    def _current(self, rt: ResourceType, ns: str, name: str) -> dict[str, Any]:
        obj = self.store.get(resource_key(rt), (ns if rt.namespaced else "", name))
        if obj is None:
            raise errors.not_found(rt.plural, name, rt.group)
        return with_type(rt, obj)

    def _commit(self, rt: ResourceType, current: dict[str, Any], new: dict[str, Any],
                subresource: str) -> dict[str, Any]:
        """The update strategy, then the write (skipped when nothing changed, as upstream)."""
        meta = new.setdefault("metadata", {})
        old_meta = current["metadata"]
        name = old_meta["name"]
        if meta.get("uid") not in (None, old_meta["uid"]):
            raise errors.precondition_failed(rt.plural, name, "UID", meta["uid"],
                                              old_meta["uid"], rt.group)
        for kept in ("uid", "creationTimestamp", "deletionTimestamp",
                     "deletionGracePeriodSeconds", "generation", "namespace"):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
            else:
                meta.pop(kept, None)
        meta["name"] = name
        new["kind"] = rt.kind
        new["apiVersion"] = rt.api_version
        if rt.kind == csr.KIND:
            csr.prepare_update(current, new, subresource, rfc3339(self.clock()))
            csr.validate(new, current, subresource)
        elif subresource == "status":
            # Status writes change status (and metadata, save ownerReferences), never spec.
            for part in ("spec",):
                if part in current:
                    new[part] = copy.deepcopy(current[part])
                else:
                    new.pop(part, None)
            if rt.kind == "Pod":
                if "ownerReferences" in old_meta:
                    meta["ownerReferences"] = old_meta["ownerReferences"]
                else:
                    meta.pop("ownerReferences", None)
        elif rt.has_status:
            # Writes to the main resource never change status.
            if "status" in current:
                new["status"] = copy.deepcopy(current["status"])
            else:
                new.pop("status", None)
        if rt.kind == "Pod" and subresource != "status":
            check_pod_update(current, new)
        validate(rt, new, current)
        if new.get("spec") != current.get("spec"):
            meta["generation"] = old_meta.get("generation", 1) + 1
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if new == current:
            return current
        key = (old_meta.get("namespace", "") if rt.namespaced else "", name)
        if old_meta.get("deletionTimestamp") and not meta.get("finalizers") and \
                not old_meta.get("deletionGracePeriodSeconds"):
            # The last finalizer went: the deletion that was waiting for it happens now.
            gone = self.store.write(resource_key(rt), key, None)
            self._after_delete(rt, key)
            return with_type(rt, gone)
        return with_type(rt, self.store.write(resource_key(rt), key, new))

    # --- delete -----------------------------------------------------------------------

    def delete(self, rt: ResourceType, ns: str, name: str,
               opts: DeleteOptions) -> dict[str, Any]:
        """DELETE; returns the object still pending, the deleted pod, or a Success Status."""
        with self.store.cond:
            current = self._current(rt, ns, name)
            meta = current["metadata"]
            if opts.uid is not None and opts.uid != meta["uid"]:
                raise errors.precondition_failed(rt.plural, name, "UID", opts.uid, meta["uid"],
                                                  rt.group)
            if opts.resource_version is not None and \
                    opts.resource_version != meta["resourceVersion"]:
                raise errors.precondition_failed(rt.plural, name, "ResourceVersion",
                                                  opts.resource_version,
                                                  meta["resourceVersion"], rt.group)
            if rt.kind == "Namespace":
                if name in UNDELETABLE_NAMESPACES:
                    raise APIError(403, "Forbidden",
                                   f'namespaces "{name}" is forbidden: this namespace may not '
                                   "be deleted", {"name": name, "kind": "namespaces"})
                return self._delete_namespace(current)
            grace = self._grace(rt, current, opts)
            key = (ns if rt.namespaced else "", name)
            pending = meta.get("deletionTimestamp")
            if pending is not None and grace is not None and grace >= int(
                    meta.get("deletionGracePeriodSeconds") or 0) and grace != 0:
                return current  # a longer grace never extends a pending deletion
            if grace or meta.get("finalizers"):
                grace = grace or 0
                new = copy.deepcopy(current)
                new_meta = new["metadata"]
                if grace or not pending:
                    new_meta["deletionTimestamp"] = rfc3339(self.clock() + grace)
                new_meta["deletionGracePeriodSeconds"] = grace
                if new != current:
                    return with_type(rt, self.store.write(resource_key(rt), key, new))
                return current
            gone = self.store.write(resource_key(rt), key, None)
            self._after_delete(rt, key)
        if rt.kind == "Pod":
            return with_type(rt, gone)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": name, "group": rt.group, "kind": rt.plural,
                            "uid": meta["uid"]}}

    def _grace(self, rt: ResourceType, pod: dict[str, Any], opts: DeleteOptions) -> int:
        if rt.kind != "Pod":
            return 0
        spec = pod.get("spec", {})
        if not spec.get("nodeName"):
            return 0  # never scheduled: no kubelet will ever confirm, so it goes at once
        if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        grace = opts.grace_period
        if grace is None:
            grace = int(spec.get("terminationGracePeriodSeconds", 30))
        return 1 if grace < 0 else grace

    def _delete_namespace(self, ns_obj: dict[str, Any]) -> dict[str, Any]:
        name = ns_obj["metadata"]["name"]
        new = copy.deepcopy(ns_obj)
        new["metadata"].setdefault("deletionTimestamp", rfc3339(self.clock()))
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        new.setdefault("status", {})["phase"] = "Terminating"
        stored = self.store.write("namespaces", ("", name), new) if new != ns_obj else ns_obj
        # The namespace controller: delete everything inside, then the namespace.
        for resource, table in list(self.store.objects.items()):
            for key in [k for k in table if k[0] == name]:
                rt = by_resource_key(resource)
                with contextlib.suppress(APIError):
                    self.delete(rt, name, key[1], DeleteOptions())
        self._maybe_finalize_namespace(name)
        return with_type(by_kind("Namespace"), self.store.get("namespaces", ("", name))
                          or stored)

    def _after_delete(self, rt: ResourceType, key: Key) -> None:
        if rt.namespaced:
            self._maybe_finalize_namespace(key[0])

    def _maybe_finalize_namespace(self, name: str) -> None:
        ns_obj = self.store.get("namespaces", ("", name))
        if ns_obj is None or not ns_obj["metadata"].get("deletionTimestamp"):
            return
        if any(k[0] == name for table in self.store.objects.values() for k in table):
            return
        self.store.write("namespaces", ("", name), None)

    # --- watch ------------------------------------------------------------------------

    def watch(self, rt: ResourceType, ns: str, opts: ListOptions,
              stopping: Callable[[], bool]) -> Generator[WatchEvent | None]:
        """Events for a watch; None now and then so the caller can notice a gone client."""
        return listwatch.watch(self.store, rt, ns, opts, stopping,
                               default_watch_timeout=self.default_watch_timeout,
                               bookmark_interval=self.bookmark_interval)
