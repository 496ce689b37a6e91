"""The pod writer: pod status to the API server, the final DELETE, mirror pods.

Upstream's status manager (pkg/kubelet/status/status_manager.go) and mirror client
(pkg/kubelet/pod/mirror_client.go, with kubelet.go's syncPod), in one I/O actor:

- **status**: for each new status the status manager computes (``PodStatusChanged``) and
  for every pod every 10 s when the API's copy differs (syncBatch), GET the pod, check it
  is still ours (same UID; for a static pod, the mirror pod of that config hash), keep the
  conditions the kubelet does not own as the API holds them (mergePodStatus: a readiness
  gate's condition a controller set is never deleted nor written back older), and PATCH
  pods/<name>/status with the two-way strategic merge patch from the API's status to
  ours, the UID in it as a precondition; nothing is sent when the patch is empty;
- **deletion**: a pod with a deletionTimestamp that the kubelet has killed and cleaned up
  (the sync loop forgot it: canBeDeleted and podResourcesAreReclaimed) is DELETEd with
  grace 0 and a UID precondition;
- **mirror pods**: each static pod gets a pod in the API with the annotation
  ``kubernetes.io/config.mirror`` = its config hash and the Node as controller owner;
  a mirror pod being deleted or of another hash is deleted (grace 0, UID precondition) and
  created again; when the static pod goes, so does its mirror, and once every source has
  spoken (``StaticPodsWanted`` from the sync loop) so do mirrors of no wanted static pod.
  Its status is the static pod's.

Every failure is logged and tried again at the next resync: the API server being away
never stops anything else, static pods keep running.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers
from actors.kubelet import names
from actors.kubelet.cluster.context import Cluster
from actors.kubelet.cluster.messages import APIPod, APIPods, PodStatusChanged, StaticPodsWanted
from actors.kubelet.cluster.pod_source import api_pod
from actors.kubelet.messages import PodForgotten
from actors.kubelet.pod_config import CONFIG_MIRROR
from runtime import errors
from runtime.clock import Clock
from runtime.kubeapi.client import PODS
from runtime.kubeapi.strategicpatch import pod_status_patch
from runtime.pod.model import Pod, pod_to_json
from runtime.pod.static import CONFIG_HASH, CONFIG_SOURCE
from runtime.status.conditions import SHARED_CONDITIONS, owned_by_kubelet
from runtime.status.types import PodStatus
from runtime.status.wire import status_to_api

STATIC_SOURCES = frozenset({"file", "http"})


def is_static(pod: Pod) -> bool:
    return pod.metadata.annotations.get(CONFIG_SOURCE) in STATIC_SOURCES


def config_hash(pod: Pod) -> str:
    return pod.metadata.annotations.get(CONFIG_HASH) or pod.uid


def status_json(status: PodStatus) -> dict[str, Any]:
    return status_to_api(status)


def merge_status(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """mergePodStatus: ours, with the conditions as upstream merges them: first the API's
    that the kubelet does not own, as the API holds them (the kubelet's copy of them may be
    older: a controller's newer word is never written back over), then the kubelet's own;
    a shared one the kubelet set (its DisruptionTarget) replaces the API's in its place,
    or comes after the others."""
    conditions = [c for c in old.get("conditions") or []
                  if isinstance(c, Mapping) and not owned_by_kubelet(c.get("type", ""))]
    for c in new.get("conditions") or []:
        if not isinstance(c, Mapping):
            continue
        type_ = c.get("type", "")
        if owned_by_kubelet(type_):
            conditions.append(c)
        elif type_ in SHARED_CONDITIONS:
            at = next((i for i, k in enumerate(conditions) if k.get("type") == type_), None)
            if at is None:
                conditions.append(c)
            else:
                conditions[at] = c
    merged = dict(new)
    merged.pop("conditions", None)
    if conditions:
        merged["conditions"] = conditions
    return merged


def mirror_pod(pod: Pod, node_name: str, node_uid: str) -> dict[str, Any]:
    """The mirror pod of static ``pod``: as it runs, with the mirror annotation and the
    Node as its controller (upstream's CreateMirrorPod)."""
    body: dict[str, Any] = json.loads(pod_to_json(pod))
    meta = body.setdefault("metadata", {})
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        meta.pop(key, None)
    meta["annotations"] = {**meta.get("annotations", {}), CONFIG_MIRROR: config_hash(pod)}
    meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node_name,
                                "uid": node_uid, "controller": True}]
    body.pop("status", None)
    return body


class PodWriter(Actor):
    """Writes what the kubelet knows of its pods to the API server."""

    def __init__(self, dispatch: Dispatch, timers: Timers, clock: Clock, cluster: Cluster,
                 incarnation: int = 0) -> None:
        super().__init__(names.POD_WRITER, dispatch, incarnation)
        self._timers = timers
        self._clock = clock
        self._cluster = cluster
        self._client = cluster.client
        self._ours: dict[str, PodStatusChanged] = {}
        self._api: dict[str, APIPod] = {}
        self._mirrors: dict[tuple[str, str], APIPod] = {}
        self._forgotten: dict[str, Pod | None] = {}
        self._static: frozenset[str] | None = None  # None until every source has spoken
        self._handle: Cancellable | None = None
        self.patches = 0
        self.deletions = 0
        self.mirrors_created = 0

    def on_start(self) -> None:
        self._handle = self._timers.every(names.TICK_POD_STATUS_RESYNC, self.name,
                                          self._cluster.settings.status_resync)

    def on_stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()

    def handle(self, message: Any) -> Any:
        if isinstance(message, PodStatusChanged):
            self._ours[message.pod.uid] = message
            if is_static(message.pod):
                self._ensure_mirror(message.pod)
            self._sync_status(message.pod.uid)
        elif isinstance(message, PodForgotten):
            self._forget(str(message.uid))
        elif isinstance(message, APIPods):
            self._seen(message)
        elif isinstance(message, StaticPodsWanted):
            self._static = frozenset(message.hashes)
            self._delete_orphaned_mirrors()
        elif isinstance(message, Tick) and message.kind == names.TICK_POD_STATUS_RESYNC:
            self._resync()
        else:
            return super().handle(message)
        return None

    # --- what the API holds ---------------------------------------------------------------

    def _seen(self, message: APIPods) -> None:
        self._api = {p.uid: p for p in message.pods if not p.mirror_of}
        self._mirrors = {(p.namespace, p.name): p for p in message.pods if p.mirror_of}
        for uid in list(self._forgotten):
            if uid not in self._api:
                del self._forgotten[uid]  # gone from the API: nothing left to do
            else:
                self._delete_if_done(uid)
        for changed in list(self._ours.values()):
            if is_static(changed.pod):
                self._ensure_mirror(changed.pod)
        self._delete_orphaned_mirrors()

    def _resync(self) -> None:
        """syncBatch: every pod whose API status differs from ours, mirrors, deletions."""
        for uid, changed in list(self._ours.items()):
            if is_static(changed.pod):
                self._ensure_mirror(changed.pod)
            target = self._target(changed.pod)
            if target is None:
                continue
            wanted = merge_status(target.status, status_json(changed.status))
            if pod_status_patch(target.uid, target.status, wanted) is not None:
                self._sync_status(uid)
        for uid in list(self._forgotten):
            self._delete_if_done(uid)

    def _target(self, pod: Pod) -> APIPod | None:
        """The API pod carrying this pod's status: itself, or its mirror pod."""
        if is_static(pod):
            mirror = self._mirrors.get((pod.metadata.namespace, pod.metadata.name))
            return mirror if mirror is not None and mirror.mirror_of == config_hash(pod) \
                else None
        return self._api.get(pod.uid)

    # --- status ---------------------------------------------------------------------------

    def _sync_status(self, uid: str) -> None:
        """upstream's syncPod of the status manager, for one pod."""
        changed = self._ours.get(uid)
        if changed is None:
            return
        pod = changed.pod
        log = logger.bind(pod=pod.metadata.name, uid=uid, container="")
        static = is_static(pod)
        if not static and uid not in self._api:
            return  # not (or no longer) in the API: nothing to write to
        try:
            current = self._client.get(PODS, pod.metadata.name, pod.metadata.namespace)
        except errors.APINotFound:
            return
        except errors.APIError as err:
            log.warning("cannot read the pod to update its status: {}", err)
            return
        meta = current.get("metadata") or {}
        if static:
            if (meta.get("annotations") or {}).get(CONFIG_MIRROR) != config_hash(pod):
                return  # no mirror pod of this version yet
        elif meta.get("uid") != uid:
            log.info("pod was deleted and then recreated, skipping status update")
            return
        old = current.get("status") or {}
        new = merge_status(old, status_json(changed.status))
        patch = pod_status_patch(str(meta.get("uid")), old, new)
        if patch is None:
            return
        try:
            self._client.patch(PODS, pod.metadata.name, patch,
                               namespace=pod.metadata.namespace, subresource="status")
        except (errors.APINotFound, errors.APIConflict) as err:
            log.info("status not written, the pod changed: {}", err)
            return
        except errors.APIError as err:
            log.warning("failed to update status for pod: {}", err)
            return
        self.patches += 1
        log.debug("status patched: phase {}", changed.status.phase)

    # --- deletion -------------------------------------------------------------------------

    def _forget(self, uid: str) -> None:
        changed = self._ours.pop(uid, None)
        if changed is not None and is_static(changed.pod):
            self._delete_mirror_of(changed.pod)
            return
        self._forgotten[uid] = changed.pod if changed is not None else None
        self._delete_if_done(uid)

    def _delete_if_done(self, uid: str) -> None:
        """A pod being deleted that the kubelet has stopped and cleaned up: DELETE it with
        grace 0 and its UID as a precondition (upstream's canBeDeleted)."""
        api = self._api.get(uid)
        if api is None or not api.deleting:
            return
        log = logger.bind(pod=api.name, uid=uid, container="")
        try:
            self._client.delete(PODS, api.name, api.namespace, grace_period_seconds=0,
                                uid=uid)
        except (errors.APINotFound, errors.APIConflict):
            pass
        except errors.APIError as err:
            log.warning("failed to delete the terminated pod, will retry: {}", err)
            return
        self.deletions += 1
        self._forgotten.pop(uid, None)
        log.info("pod fully terminated and removed from the API server")

    # --- mirror pods ----------------------------------------------------------------------

    def _ensure_mirror(self, pod: Pod) -> None:
        """kubelet.go syncPod: a static pod's mirror pod exists and is of its version."""
        registration = self._cluster.registration
        if not registration.is_set() or pod.metadata.deletion_timestamp is not None:
            return
        key = (pod.metadata.namespace, pod.metadata.name)
        mirror = self._mirrors.get(key)
        log = logger.bind(pod=pod.metadata.name, uid=pod.uid, container="")
        if mirror is not None and (mirror.deleting or mirror.mirror_of != config_hash(pod)):
            log.info("deleting the mirror pod: it is outdated or being deleted")
            if not self._delete_mirror(mirror):
                return
            mirror = None
        if mirror is not None:
            return
        body = mirror_pod(pod, self._cluster.node.node_name, registration.uid)
        try:
            created = self._client.create(PODS, body, pod.metadata.namespace)
        except errors.APIAlreadyExists:
            return  # the watch has not shown it yet
        except errors.APIError as err:
            log.warning("failed creating a mirror pod: {}", err)
            return
        self._mirrors[key] = api_pod(created)
        self.mirrors_created += 1
        log.info("created the mirror pod")

    def _delete_orphaned_mirrors(self) -> None:
        """HandlePodCleanups: mirror pods of no static pod the node wants (one removed while
        the kubelet was stopped), once every source has spoken."""
        if self._static is None:
            return
        wanted = self._static | {config_hash(c.pod) for c in self._ours.values()
                                 if is_static(c.pod)}
        for mirror in list(self._mirrors.values()):
            if mirror.mirror_of not in wanted:
                logger.bind(pod=mirror.name, uid=mirror.uid, container="").info(
                    "deleting the orphaned mirror pod")
                self._delete_mirror(mirror)

    def _delete_mirror_of(self, pod: Pod) -> None:
        mirror = self._mirrors.get((pod.metadata.namespace, pod.metadata.name))
        if mirror is not None and mirror.mirror_of == config_hash(pod):
            self._delete_mirror(mirror)

    def _delete_mirror(self, mirror: APIPod) -> bool:
        """DeleteMirrorPod: grace 0, the mirror's UID as a precondition; NotFound and
        Conflict mean it is gone or replaced already."""
        try:
            self._client.delete(PODS, mirror.name, mirror.namespace, grace_period_seconds=0,
                                uid=mirror.uid)
        except (errors.APINotFound, errors.APIConflict):
            pass
        except errors.APIError as err:
            logger.bind(pod=mirror.name, uid=mirror.uid, container="").warning(
                "failed deleting a mirror pod: {}", err)
            return False
        self._mirrors.pop((mirror.namespace, mirror.name), None)
        return True
