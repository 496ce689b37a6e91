"""The status manager: the source of truth for each pod's v1 status.

It hears what pod workers observe (runtime state and sync results) and what the probe
manager decides (readiness, startup), and computes the status by upstream's rules. The
HTTP API asks it for a snapshot; it never asks anyone anything itself.

After a kubelet restart (this project's own, see runtime.prober.state) it starts with the
readiness and startup results the previous run reached, by container id, so the first
status it computes for a pod whose containers still run shows them as they were (the
probe manager continues the same results). Until that first status such a pod is not
served at all: the placeholder of a pod not yet synced (Pending, not ready) would tell a
reader that a pod which never stopped running went not ready.

In cluster mode the API pod source tells it the conditions others set on each pod
(``APIPodConditions``): they are kept in the pod's status, and its readiness gates are
evaluated against them, so a controller setting a gate's condition True turns the pod
Ready (upstream's HandlePodReconcile re-syncs such a pod for the same reason).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

import msgspec
from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.kubelet import names
from actors.kubelet.cluster.messages import APIPodConditions, PodStatusChanged
from actors.kubelet.messages import (
    DesiredPods,
    GetPods,
    PodForgotten,
    PodObserved,
    PodRejected,
    ProbeKind,
    ProbeVerdict,
)
from actors.kubelet.metrics import KubeletMetrics
from runtime.clock import Clock
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime.podstatus import RuntimePodStatus
from runtime.kuberuntime.result import PodSyncResult
from runtime.pod.model import Pod
from runtime.pod.static import CONFIG_SEEN
from runtime.prober.results import ProbeResult
from runtime.prober.state import SavedProbe
from runtime.status.failed import failed_status, keeps_succeeded
from runtime.status.generate import generate_pod_status, qos_class
from runtime.status.messages import cap_termination_messages
from runtime.status.types import PodCondition, PodStatus, rfc3339


@dataclass(slots=True)
class _Entry:
    pod: Pod
    status: PodStatus
    runtime: RuntimePodStatus | None = None
    sync: PodSyncResult | None = None
    readiness: dict[ContainerID, ProbeResult] = field(default_factory=dict)
    startup: dict[ContainerID, ProbeResult] = field(default_factory=dict)
    started_recorded: bool = False
    rejected: bool = False
    first_seen: float = 0.0
    # a worker's pod-level verdict: reason, message, and whether it disrupts the pod
    failed: tuple[str, str, bool] | None = None
    held: bool = False  # ran before a restart: not served until its first real status
    # What the status was last computed from: pod, runtime status, sync result, verdict.
    basis: tuple[Pod, RuntimePodStatus, PodSyncResult | None,
                 tuple[str, str, bool] | None] | None = None


def _forget_removed_containers(entry: _Entry, runtime: RuntimePodStatus) -> None:
    """Drop the probe results of containers the runtime no longer holds: a crash-looping
    pod would otherwise keep one per container it ever ran (upstream's prober removes a
    container's results when its worker moves on to the next container)."""
    held = {c.id for c in runtime.container_statuses}
    for table in (entry.readiness, entry.startup):
        for gone in [cid for cid in table if cid not in held]:
            del table[gone]


def pending_status(pod: Pod, now: float, others: tuple[PodCondition, ...] = ()) -> PodStatus:
    """What a pod looks like before its first sync: what the runtime holding nothing of it
    means by upstream's rules (Pending, containers creating or waiting on init)."""
    nothing = RuntimePodStatus(PodUID(pod.uid), pod.metadata.name, pod.metadata.namespace)
    return generate_pod_status(pod, nothing, now=now, others=others)


def _unchanged(entry: _Entry, message: PodObserved) -> bool:
    """Whether ``message`` tells nothing the entry's status was not computed from: the
    pod, runtime status, sync result and verdict of its last computation (the same inputs
    make the same status: generate_pod_status keeps transition times when nothing
    changed). Probe verdicts recompute on their own."""
    basis = entry.basis
    return (basis is not None and not entry.rejected
            and basis[0] == message.pod and basis[1] == message.runtime
            and (message.sync is None or message.sync == basis[2])
            and (not message.failed_reason or basis[3] is not None))


def _seen_time(pod: Pod) -> float | None:
    raw = pod.metadata.annotations.get(CONFIG_SEEN)
    if not raw:
        return None
    try:
        return datetime.datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class StatusManager(Actor):
    """Holds and computes the v1 status of every pod the kubelet knows."""

    def __init__(
        self,
        dispatch: Dispatch,
        clock: Clock,
        metrics: KubeletMetrics | None = None,
        host_ip: str = "",
        incarnation: int = 0,
        api: bool = False,
        restored: tuple[SavedProbe, ...] = (),
    ) -> None:
        super().__init__(names.STATUS, dispatch, incarnation)
        # Cluster mode: every new status also goes to the pod writer (PodStatusChanged),
        # and so does every pod the node is done with (PodForgotten).
        self._api = api
        self._published: dict[PodUID, PodStatus] = {}
        self._clock = clock
        self._metrics = metrics
        self._host_ip = host_ip
        self._pods: dict[PodUID, _Entry] = {}
        self._restored = _restored_verdicts(restored)
        # Cluster mode: the conditions others set on each pod in the API, by pod.
        self._others: dict[PodUID, tuple[PodCondition, ...]] = {}

    def _new_entry(self, pod: Pod, status: PodStatus, first_seen: float) -> _Entry:
        entry = _Entry(pod, status, first_seen=first_seen)
        readiness, startup = self._restored.pop(PodUID(pod.uid), ({}, {}))
        entry.readiness.update(readiness)
        entry.startup.update(startup)
        entry.held = bool(readiness or startup)
        return entry

    def handle(self, message: Any) -> Any:
        if isinstance(message, GetPods):
            return tuple((e.pod, e.status) for _, e in sorted(
                self._pods.items(), key=lambda kv: (kv[1].pod.metadata.namespace,
                                                    kv[1].pod.metadata.name))
                if not (e.held and e.runtime is None))
        if isinstance(message, PodObserved):
            self._observed(message)
        elif isinstance(message, ProbeVerdict):
            self._verdict(message)
        elif isinstance(message, DesiredPods):
            self._desired(message)
        elif isinstance(message, PodRejected):
            self._rejected(message)
        elif isinstance(message, APIPodConditions):
            self._api_conditions(message)
        elif isinstance(message, PodForgotten):
            self._pods.pop(message.uid, None)
            self._restored.pop(message.uid, None)
            if self._api:
                self._published.pop(message.uid, None)
                self.send(names.POD_WRITER, message)
        else:
            return super().handle(message)
        return None

    def _desired(self, message: DesiredPods) -> None:
        now = self._clock.now()
        for pod in message.pods:
            uid = PodUID(pod.uid)
            entry = self._pods.get(uid)
            if entry is None:
                # Not published: upstream's status manager hears of a pod only once a
                # sync has read the runtime, so a restarted kubelet never reports a running
                # pod as Pending.
                self._pods[uid] = self._new_entry(
                    pod, pending_status(pod, now, self._others.get(uid, ())), now)
            else:
                entry.pod = pod

    def _api_conditions(self, message: APIPodConditions) -> None:
        """New conditions from others: every pod whose set changed is computed again."""
        before = self._others
        self._others = {PodUID(p.uid): p.conditions for p in message.pods}
        for uid in before.keys() | self._others.keys():
            if before.get(uid, ()) == self._others.get(uid, ()):
                continue
            entry = self._pods.get(uid)
            if entry is None or entry.rejected:
                continue
            if entry.runtime is None:  # not synced yet: its placeholder shows them
                entry.status = pending_status(entry.pod, self._clock.now(),
                                              self._others.get(uid, ()))
            else:
                self._recompute(uid, entry)

    def _rejected(self, message: PodRejected) -> None:
        """Upstream's rejectPod: Failed, the admission reason, "Pod was rejected: " and
        its message, the QoS class, and (as its status manager adds) a start time."""
        pod = message.pod
        status = PodStatus(phase="Failed", reason=message.reason,
                           message=message.status_message,
                           start_time=rfc3339(self._clock.now()), qos_class=qos_class(pod))
        self._pods[PodUID(pod.uid)] = entry = _Entry(pod, status, rejected=True)
        self._publish(PodUID(pod.uid), entry)

    def _observed(self, message: PodObserved) -> None:
        uid = PodUID(message.pod.uid)
        entry = self._pods.get(uid)
        if entry is not None and _unchanged(entry, message):
            return  # the same inputs make the same status (a resync, a relist's sync)
        if entry is None:
            now = self._clock.now()
            entry = self._pods[uid] = self._new_entry(
                message.pod, pending_status(message.pod, now, self._others.get(uid, ())),
                _seen_time(message.pod) or now)
        entry.pod = message.pod
        entry.runtime = message.runtime
        _forget_removed_containers(entry, message.runtime)
        if message.failed_reason and entry.failed is None:
            entry.failed = (message.failed_reason, message.failed_message,
                            message.failed_disruption)
        if message.sync is not None:
            entry.sync = message.sync
        self._recompute(uid, entry)

    def _verdict(self, message: ProbeVerdict) -> None:
        entry = self._pods.get(message.uid)
        if entry is None:
            return
        if message.kind == ProbeKind.READINESS:
            entry.readiness[message.container_id] = message.result
        elif message.kind == ProbeKind.STARTUP:
            entry.startup[message.container_id] = message.result
        else:
            return
        if entry.runtime is not None:
            self._recompute(message.uid, entry)

    def _recompute(self, uid: PodUID, entry: _Entry) -> None:
        if entry.runtime is None or entry.rejected:
            return
        previous = entry.status if entry.status.start_time else None
        failed_as = previous
        if entry.failed is not None and previous is not None \
                and not keeps_succeeded(previous, entry.failed[0]):
            # A pod the worker failed (DeadlineExceeded) stays Failed, as terminal phases do
            # (a Succeeded one a node shutdown stopped stays Succeeded).
            failed_as = msgspec.structs.replace(previous, phase="Failed")
        status = generate_pod_status(
            entry.pod, entry.runtime, entry.sync, entry.readiness, entry.startup,
            now=self._clock.now(), previous=failed_as, host_ip=self._host_ip,
            others=self._others.get(uid, ()),
        )
        if entry.failed is not None:
            reason, text, disruption = entry.failed
            status = failed_status(status, reason, text, rfc3339(self._clock.now()), previous,
                                   disruption=disruption)
        entry.status = cap_termination_messages(entry.pod, status)
        entry.basis = (entry.pod, entry.runtime, entry.sync, entry.failed)
        if previous is None or previous.phase != entry.status.phase:
            logger.bind(pod=entry.pod.metadata.name, uid=uid, container="").info(
                "phase {}", entry.status.phase
            )
        self._record_start(entry)
        self._publish(uid, entry)

    def _publish(self, uid: PodUID, entry: _Entry) -> None:
        """Cluster mode: tell the pod writer a status it has not been told yet."""
        if self._api and self._published.get(uid) != entry.status:
            self._published[uid] = entry.status
            self.send(names.POD_WRITER, PodStatusChanged(entry.pod, entry.status))

    def _record_start(self, entry: _Entry) -> None:
        """kubelet_pod_start_duration_seconds: first seen until every container runs."""
        if entry.started_recorded or self._metrics is None:
            return
        statuses = entry.status.container_statuses
        if not statuses or not all(s.state.running is not None for s in statuses):
            return
        entry.started_recorded = True
        self._metrics.pod_start_duration.observe(max(self._clock.now() - entry.first_seen, 0.0))


Verdicts = dict[ContainerID, ProbeResult]


def _restored_verdicts(saved: tuple[SavedProbe, ...]) -> dict[PodUID, tuple[Verdicts, Verdicts]]:
    """The previous run's readiness and startup results, by pod and container id."""
    out: dict[PodUID, tuple[Verdicts, Verdicts]] = {}
    for probe in saved:
        if probe.kind not in (ProbeKind.READINESS.value, ProbeKind.STARTUP.value):
            continue
        try:
            result = ProbeResult(probe.result)
        except ValueError:
            continue
        readiness, startup = out.setdefault(probe.uid, ({}, {}))
        target = readiness if probe.kind == ProbeKind.READINESS.value else startup
        target[probe.container_id] = result
    return out
