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

Each watch event makes a whole new set, so two things keep a busy watch cheap: a set the
actor has not taken yet is replaced by the newer one (the reflector's thread keeps only the
newest; the actor is told once and takes the newest when it gets to it), and a pod is
decoded again only when its resourceVersion moved (the decoded pods are kept by UID).
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
from actors.kubelet.cluster.messages import (
    APIPod,
    APIPodConditions,
    APIPodList,
    APIPods,
    PodConditions,
)
from actors.kubelet.messages import ManifestProblem, SourceSnapshot
from actors.kubelet.pod_config import CONFIG_MIRROR
from runtime.clock import Clock
from runtime.kubeapi.client import PODS
from runtime.kubeapi.reflector import Reflector, Snapshot
from runtime.pod.defaults import apply_defaults
from runtime.pod.model import Pod
from runtime.status.conditions import others_conditions

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
        self._conditions = APIPodConditions(())
        self.sent = 0
        # The newest set the reflector made that the actor has not taken, and whether an
        # APIPodList is on its way to the mailbox for it.
        self._newest: APIPodList | None = None
        self._told = False
        self._slot = threading.Lock()
        # Per UID: (resourceVersion, its summary, its decoded Pod or the decoding error).
        self._decoded: dict[str, tuple[str, APIPod, Pod | str]] = {}

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
        if self._stopping.is_set():
            return
        listed = APIPodList(snapshot.resource_version, snapshot.items)
        with self._slot:
            self._newest = listed
            if self._told:
                return  # the APIPodList on its way takes this newer set
            self._told = True
        self.actor_ref.tell(listed)

    def _take_newest(self, listed: APIPodList) -> APIPodList:
        """The newest set the reflector made (``listed`` when none is waiting)."""
        with self._slot:
            newest, self._newest, self._told = self._newest, None, False
        return newest or listed

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

    def _decode(self, raw: Mapping[str, Any]) -> tuple[str, APIPod, Pod | str]:
        """The pod's summary and decoding (or why it cannot be run), kept while its
        resourceVersion stays."""
        meta = raw.get("metadata") or {}
        uid, version = str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
        kept = self._decoded.get(uid)
        if kept is not None and version and kept[0] == version:
            return kept
        summary = api_pod(raw)
        pod: Pod | str
        if summary.mirror_of:
            pod = ""
        else:
            try:
                pod = decode_api_pod(raw)
            except (msgspec.ValidationError, ValueError, TypeError) as err:
                pod = str(err)
                _log.bind(pod=summary.name, uid=summary.uid).error(
                    "pod from the API server cannot be run: {}", err)
        return version, summary, pod

    def handle(self, message: Any) -> Any:
        if isinstance(message, APIPodList):
            self._listed(self._take_newest(message))
            return None
        return super().handle(message)

    def _listed(self, listed: APIPodList) -> None:
        decoded = [self._decode(raw) for raw in listed.items]
        self._decoded = {d[1].uid: d for d in decoded if d[1].uid}
        seen = tuple(summary for _, summary, _ in decoded)
        self.send(names.POD_WRITER, APIPods(seen))
        pods: list[Pod] = []
        problems: list[ManifestProblem] = []
        for _, summary, pod in decoded:
            if summary.mirror_of:
                continue
            if isinstance(pod, Pod):
                pods.append(pod)
                continue
            problems.append(ManifestProblem(SOURCE, f"{summary.namespace}/{summary.name}", pod))
        self._tell_conditions(decoded)
        snapshot = (tuple(pods), tuple(problems))
        if snapshot == self._last:
            return  # only statuses or mirror pods changed: nothing for the sync loop
        self._last = snapshot
        self.sent += 1
        self.send(names.SYNC_LOOP, SourceSnapshot(SOURCE, tuple(pods), tuple(problems)))

    def _tell_conditions(self, decoded: list[tuple[str, APIPod, Pod | str]]) -> None:
        """The status manager hears the conditions others set on the pods it runs when
        they changed (a controller's readiness gate): before the sync loop hears of a new
        pod, so its first status already has them."""
        found = sorted(
            (PodConditions(summary.uid, others) for _, summary, pod in decoded
             if isinstance(pod, Pod)
             and (others := others_conditions(summary.status.get("conditions") or ()))),
            key=lambda p: p.uid)
        conditions = APIPodConditions(tuple(found))
        if conditions != self._conditions:
            self._conditions = conditions
            self.send(names.STATUS, conditions)
