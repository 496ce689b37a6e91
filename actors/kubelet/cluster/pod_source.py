"""The API server as a pod source: the pods bound to this node, merged with the others.

Upstream (pkg/kubelet/config/apiserver.go, NewSourceApiserver): a reflector lists and
watches pods with ``fieldSelector=spec.nodeName=<node>`` and, on every change, sends the
whole set as a SET update of source ``api`` (kubetypes.ApiserverSource) to PodConfig; it
starts once the kubelet's Node is known. runtime.kubeapi.reflector does the list and watch
(bookmarks, 410 relists, back-off) on a thread of its own and tells this actor each new set
(``APIPodList``); this actor decodes the pods and tells the sync loop a
``SourceSnapshot("api", pods)``, the input a trace records. Mirror pods are the kubelet's
own reflection of its static pods, never pods to run (upstream's podManager keeps them
apart): they go, with every API pod's status, to the pod writer only.

A pod the kubelet cannot decode is reported as a problem of the source and left out.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import msgspec
from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.kubelet import names
from actors.kubelet.cluster.context import Cluster
from actors.kubelet.cluster.messages import APIPod, APIPodList, APIPods
from actors.kubelet.messages import ManifestProblem, SourceSnapshot
from actors.kubelet.pod_config import CONFIG_MIRROR
from runtime.clock import Clock
from runtime.kubeapi.client import PODS
from runtime.kubeapi.reflector import Reflector, Snapshot
from runtime.pod.defaults import apply_defaults
from runtime.pod.model import Pod

SOURCE = "api"
"""Upstream's kubetypes.ApiserverSource."""

_log = logger.bind(pod="", uid="", container="")


def decode_api_pod(raw: Mapping[str, Any]) -> Pod:
    """An API pod as the kubelet's Pod. Its status is the kubelet's to write, not read;
    resourceVersion and managedFields change with every write (the kubelet's status
    PATCHes too) and mean nothing to running it: left out, so that such a write is no
    change of the source."""
    body = {k: v for k, v in raw.items() if k not in ("status", "kind", "apiVersion")}
    meta = {k: v for k, v in (raw.get("metadata") or {}).items()
            if k not in ("resourceVersion", "managedFields")}
    return apply_defaults(msgspec.convert({**body, "metadata": meta}, Pod))


def api_pod(raw: Mapping[str, Any]) -> APIPod:
    meta = raw.get("metadata") or {}
    return APIPod(
        namespace=str(meta.get("namespace") or ""), name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        mirror_of=str((meta.get("annotations") or {}).get(CONFIG_MIRROR) or ""),
        deleting=meta.get("deletionTimestamp") is not None,
        status=raw.get("status") or {})


class APISource(Actor):
    """Tells the sync loop the pods the API server binds to this node."""

    def __init__(self, dispatch: Dispatch, clock: Clock, cluster: Cluster,
                 incarnation: int = 0) -> None:
        super().__init__(names.SOURCE_API, dispatch, incarnation)
        self._clock = clock
        self._cluster = cluster
        self._stopping = threading.Event()
        self._reflector: Reflector | None = None
        self._thread: threading.Thread | None = None
        self._last: tuple[tuple[Pod, ...], tuple[ManifestProblem, ...]] | None = None
        self.sent = 0

    # --- lifecycle ------------------------------------------------------------------------

    def on_start(self) -> None:
        if self.dispatch.ref(self.name) is not self.actor_ref:
            self.dispatch.register(self.name, self.actor_ref, self.incarnation)
        node = self._cluster.node.node_name
        self._reflector = Reflector(
            self._cluster.client, PODS, self._on_snapshot,
            field_selector=f"spec.nodeName={node}", clock=self._clock,
            name=f"pods of node {node}")
        self._thread = threading.Thread(target=self._run, name="api pod source", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        """Wait for the Node, then list and watch until stopped."""
        while not self._stopping.is_set():
            if self._cluster.registration.wait(0.5):
                break
        if self._stopping.is_set() or self._reflector is None:
            return
        _log.info("node {} registered: watching its pods", self._cluster.node.node_name)
        self._reflector.run()

    def _on_snapshot(self, snapshot: Snapshot) -> None:
        # Straight to this incarnation's mailbox, not through the dispatch: the raw list
        # (managedFields and all, on every watch event) is not worth a trace's space.
        # What it becomes, the SourceSnapshot and APIPods this actor sends, is recorded.
        if not self._stopping.is_set():
            self.actor_ref.tell(APIPodList(snapshot.resource_version, snapshot.items))

    def on_stop(self) -> None:
        self._shutdown()

    def on_failure(self, exception_type: type[BaseException] | None,
                   exception_value: BaseException | None,
                   traceback: TracebackType | None) -> None:
        self._shutdown()
        super().on_failure(exception_type, exception_value, traceback)

    def _shutdown(self) -> None:
        self._stopping.set()
        if self._reflector is not None:
            self._reflector.stop(timeout=2.0)

    # --- messages -------------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        if isinstance(message, APIPodList):
            self._listed(message)
            return None
        return super().handle(message)

    def _listed(self, listed: APIPodList) -> None:
        seen = tuple(api_pod(raw) for raw in listed.items)
        self.send(names.POD_WRITER, APIPods(seen))
        pods: list[Pod] = []
        problems: list[ManifestProblem] = []
        for summary, raw in zip(seen, listed.items, strict=True):
            if summary.mirror_of:
                continue
            try:
                pods.append(decode_api_pod(raw))
            except (msgspec.ValidationError, ValueError, TypeError) as err:
                where = f"{summary.namespace}/{summary.name}"
                problems.append(ManifestProblem(SOURCE, where, str(err)))
                _log.bind(pod=summary.name, uid=summary.uid).error(
                    "pod from the API server cannot be run: {}", err)
        snapshot = (tuple(pods), tuple(problems))
        if snapshot == self._last:
            return  # only statuses or mirror pods changed: nothing for the sync loop
        self._last = snapshot
        self.sent += 1
        self.send(names.SYNC_LOOP, SourceSnapshot(SOURCE, tuple(pods), tuple(problems)))
