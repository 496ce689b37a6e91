"""The API objects a pod's containers and volumes are made from, as the kubelet reads
them: ConfigMaps, Secrets, Services, service account tokens, RuntimeClasses.

``WatchingObjects`` implements runtime.kuberuntime.object_source.ObjectSource. It is
upstream's watch-based manager (pkg/kubelet/util/manager/watch_based_manager.go):
``register_pod`` starts a reflector per ConfigMap and Secret a pod references (list and
watch of that one object, ``fieldSelector metadata.name=<name>`` in its namespace),
counted per referencing pod; ``unregister_pod`` drops the pod's references and stops
each reflector no pod references any more. A read waits up to a second for its
reflector's first list (``failed to sync configmap cache`` otherwise) and answers from
the reflector's store; an object marked ``immutable`` stops being watched (its value
cannot change). Services come from one informer over every namespace (upstream's
serviceLister); tokens from ``runtime.kubeapi.tokens``; RuntimeClasses from one informer
over the cluster-scoped node.k8s.io/v1 resource (upstream's runtimeclass.Manager, started
with the kubelet). Upstream's lookup reads its lister even before the informer's first
list (a NotFound then); here a lookup waits up to the same second as the object reads.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from loguru import logger

from runtime.clock import Clock, RealClock
from runtime.kubeapi.client import (
    CONFIGMAPS,
    RUNTIMECLASSES,
    SECRETS,
    SERVICES,
    KubeClient,
    Resource,
)
from runtime.kubeapi.reflector import Reflector, Snapshot
from runtime.kubeapi.tokens import TokenManager
from runtime.kuberuntime.object_source import Answer, found, not_found

__all__ = ["WatchingObjects"]

SYNC_TIMEOUT = 1.0
"""upstream's Get: wait.PollImmediate(10ms, time.Second, item.hasSynced)."""

_KINDS: dict[str, Resource] = {"configmap": CONFIGMAPS, "secret": SECRETS}
_log = logger.bind(pod="", uid="", container="")


class _Watched:
    """One watched object: its reflector, the pods referencing it, what it last saw."""

    def __init__(self, reflector: Reflector) -> None:
        self.reflector = reflector
        self.pods: set[str] = set()
        self.synced = threading.Event()
        self.obj: Mapping[str, Any] | None = None


class WatchingObjects:
    """ObjectSource over an API server; thread-safe (pod workers read side by side)."""

    def __init__(self, client: KubeClient, clock: Clock | None = None,
                 tokens: TokenManager | None = None, sync_timeout: float = SYNC_TIMEOUT
                 ) -> None:
        self._client = client
        self._clock = clock or RealClock()
        self._tokens = tokens or TokenManager(client, self._clock)
        self._sync_timeout = sync_timeout
        self._lock = threading.Lock()
        self._watched: dict[tuple[str, str, str], _Watched] = {}
        self._by_pod: dict[str, frozenset[tuple[str, str, str]]] = {}
        self._services: tuple[Mapping[str, Any], ...] | None = None
        self._service_reflector: Reflector | None = None
        self._runtime_classes: Mapping[str, Mapping[str, Any]] = {}
        self._runtime_classes_synced = threading.Event()
        self._runtime_class_reflector: Reflector | None = None

    # --- references ------------------------------------------------------------------

    def register_pod(self, uid: str, namespace: str, config_maps: tuple[str, ...],
                     secrets: tuple[str, ...]) -> None:
        keys = frozenset({("configmap", namespace, n) for n in config_maps}
                         | {("secret", namespace, n) for n in secrets})
        with self._lock:
            old = self._by_pod.get(uid, frozenset())
            if keys == old:
                return
            self._by_pod[uid] = keys
            for key in keys - old:
                self._add_reference(key, uid)
            for key in old - keys:
                self._drop_reference(key, uid)

    def unregister_pod(self, uid: str) -> None:
        with self._lock:
            for key in self._by_pod.pop(uid, frozenset()):
                self._drop_reference(key, uid)
        self._tokens.forget_pod(uid)  # upstream: DeleteServiceAccountToken

    def watched(self) -> tuple[tuple[str, str, str], ...]:
        """The objects watched now (kind, namespace, name): for tests and metrics."""
        with self._lock:
            return tuple(sorted(self._watched))

    def _add_reference(self, key: tuple[str, str, str], uid: str) -> None:
        item = self._watched.get(key)
        if item is None:
            kind, namespace, name = key
            holder: list[_Watched] = []
            reflector = Reflector(
                self._client, _KINDS[kind], lambda s: self._changed(holder[0], s),
                namespace=namespace, field_selector=f"metadata.name={name}",
                clock=self._clock, name=f"{kind} {namespace}/{name}")
            item = _Watched(reflector)
            holder.append(item)
            self._watched[key] = item
            reflector.start()
            _log.debug("watching {} {}/{}", kind, namespace, name)
        item.pods.add(uid)

    def _drop_reference(self, key: tuple[str, str, str], uid: str) -> None:
        item = self._watched.get(key)
        if item is None:
            return
        item.pods.discard(uid)
        if not item.pods:
            del self._watched[key]
            item.reflector.stop(timeout=0)
            _log.debug("no pod references {} {}/{}: watch stopped", *key)

    @staticmethod
    def _changed(item: _Watched, snapshot: Snapshot) -> None:
        item.obj = snapshot.items[0] if snapshot.items else None
        item.synced.set()
        if item.obj is not None and item.obj.get("immutable") is True:
            # upstream: an immutable object cannot change, so its watch is stopped.
            threading.Thread(target=item.reflector.stop, kwargs={"timeout": 0},
                             daemon=True).start()

    # --- reads -----------------------------------------------------------------------

    def get(self, kind: str, namespace: str, name: str) -> Answer:
        with self._lock:
            item = self._watched.get((kind, namespace, name))
        if item is None:
            return {"error": f'object "{namespace}"/"{name}" not registered'}
        if not item.synced.wait(self._sync_timeout):
            return {"error": f"failed to sync {kind} cache: timed out waiting for the "
                             "condition"}
        obj = item.obj
        return not_found() if obj is None else found(obj)

    def services(self) -> Answer:
        with self._lock:
            if self._service_reflector is None:
                self._service_reflector = Reflector(
                    self._client, SERVICES, self._services_changed, clock=self._clock,
                    name="services")
                self._service_reflector.start()
            listed = self._services
        if listed is None:
            return {"error": "services have not yet been read at least once, cannot "
                             "construct envvars"}
        return {"items": [dict(s) for s in listed]}

    def _services_changed(self, snapshot: Snapshot) -> None:
        with self._lock:
            self._services = snapshot.items

    def token(self, namespace: str, service_account: str, pod_name: str, pod_uid: str,
              audience: str, expiration_seconds: int) -> Answer:
        return self._tokens.token(namespace, service_account, pod_name, pod_uid, audience,
                                  expiration_seconds)

    def runtime_class(self, name: str) -> Answer:
        self.start_runtime_classes()
        if not self._runtime_classes_synced.wait(self._sync_timeout):
            return {"error": "failed to sync runtimeclass cache: timed out waiting for the "
                             "condition"}
        with self._lock:
            obj = self._runtime_classes.get(name)
        return not_found() if obj is None else found(obj)

    def _runtime_classes_changed(self, snapshot: Snapshot) -> None:
        by_name = {str(o["metadata"]["name"]): o for o in snapshot.items}
        with self._lock:
            self._runtime_classes = by_name
        self._runtime_classes_synced.set()

    # --- lifecycle -------------------------------------------------------------------

    def start_runtime_classes(self) -> None:
        """Start the RuntimeClass informer (once; upstream starts it with the kubelet)."""
        with self._lock:
            if self._runtime_class_reflector is not None:
                return
            self._runtime_class_reflector = Reflector(
                self._client, RUNTIMECLASSES, self._runtime_classes_changed,
                clock=self._clock, name="runtimeclasses")
            self._runtime_class_reflector.start()

    def start_services(self) -> None:
        """Start the Service informer now (upstream starts it with the kubelet)."""
        self.services()

    def stop(self) -> None:
        with self._lock:
            items = list(self._watched.values())
            self._watched.clear()
            self._by_pod.clear()
            informers = (self._service_reflector, self._runtime_class_reflector)
        for item in items:
            item.reflector.stop(timeout=1.0)
        for informer in informers:
            if informer is not None:
                informer.stop(timeout=1.0)
