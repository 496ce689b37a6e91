"""The eviction manager: node pressure, its conditions, and evictions (upstream's
pkg/kubelet/eviction managerImpl) as an actor.

Its inputs are messages: ``SignalsObserved`` from the stats actor after each collection
(the node's signals and every pod's usage, as /stats/summary reports them), ``ActivePods``
from the sync loop (the pods it may evict) and its own Tick every 10 s. On each Tick it runs
one pass of runtime.eviction (evaluate, then rank and choose) and acts:

- the node conditions (MemoryPressure, DiskPressure, PIDPressure), when they change, go to
  the sync loop (admission) and, in cluster mode, to the node-status actor as
  ``NodePressure``;
- for a disk signal it first asks the garbage collector to reclaim node resources
  (``CollectGarbage`` to the ``reclaim`` address, when one is wired) and evicts only if the
  next, newer observations still show the threshold met;
- else it evicts one pod per pass: an ``Evicted`` event and ``EvictPod`` to the sync loop,
  which kills the pod through its worker and fails it with reason Evicted; no other pod is
  evicted until that one has stopped (or 30 s passed, upstream's podCleanupTimeout);
- before any of that, with local storage capacity isolation (the default), every pod over
  its emptyDir sizeLimit or ephemeral-storage limits is evicted (runtime.eviction.
  local_storage), thresholds or none, and the pass ends there, as upstream's
  localStorageEviction.

Replay: every input is a recorded delivery and time comes from the injected clock, so the
actor is rebuilt and replayed like the others (the stats actor that feeds it is not).
"""

from __future__ import annotations

from typing import Any

from loguru import logger
from msgspec import Struct

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers
from actors.core.trace.names import message
from actors.kubelet import names
from actors.kubelet.messages import CollectGarbage, GarbageCollected
from actors.kubelet.metrics import KubeletMetrics
from runtime.clock import Clock
from runtime.events import reasons
from runtime.events.recorder import NULL_RECORDER, EventRecorder, node_ref, pod_ref
from runtime.eviction.api import EPHEMERAL_STORAGE, INODES, EvictionConfig
from runtime.eviction.evaluate import EvictionState, evaluate
from runtime.eviction.local_storage import local_storage_eviction
from runtime.eviction.rank import REASON, EvictionOrder, choose
from runtime.eviction.signals import NodeSignals
from runtime.pod.model import Pod

POD_CLEANUP_TIMEOUT = 30.0
"""podCleanupTimeout: how long an eviction waits for its pod to stop before the next."""


@message("SignalsObserved")
class SignalsObserved(Struct, frozen=True):
    """The stats actor -> eviction: one collection's signals and pod usage."""

    signals: NodeSignals


@message("ActivePods")
class ActivePods(Struct, frozen=True):
    """The sync loop -> eviction: the admitted pods not yet stopping (the candidates)."""

    pods: tuple[Pod, ...]


@message("NodePressure")
class NodePressure(Struct, frozen=True):
    """Eviction -> sync loop and node status: the node conditions that hold now."""

    conditions: tuple[str, ...]


@message("EvictPod")
class EvictPod(Struct, frozen=True):
    """Eviction -> sync loop: kill this pod with this grace and fail it (reason Evicted)."""

    uid: str
    grace_period: int
    reason: str
    message: str
    # The DisruptionTarget condition with the message (pressure evictions); local storage
    # limits add none, as upstream's evictPod gets no condition for them.
    disruption: bool = True


@message("GetPressure")
class GetPressure(Struct, frozen=True):
    """Ask: the node conditions this manager last told (an empty tuple: none)."""



class EvictionSettings(Struct, frozen=True):
    """How the eviction actor is wired: its config, who hears of pressure, and the
    garbage collector's address ("" when there is none)."""

    config: EvictionConfig
    notify: tuple[str, ...] = (names.SYNC_LOOP,)
    reclaim: str = ""


class EvictionManager(Actor):
    """One pass per Tick: conditions, node-level reclaim, at most one eviction."""

    def __init__(self, dispatch: Dispatch, timers: Timers, clock: Clock,
                 settings: EvictionSettings, node_name: str, incarnation: int = 0,
                 metrics: KubeletMetrics | None = None,
                 events: EventRecorder = NULL_RECORDER) -> None:
        super().__init__(names.EVICTION, dispatch, incarnation)
        self._timers = timers
        self._clock = clock
        self._settings = settings
        self._node_name = node_name
        self._metrics = metrics
        self._events = events
        self._state = EvictionState()
        self._signals: NodeSignals | None = None
        self._pods: tuple[Pod, ...] = ()
        self._told: tuple[str, ...] | None = None
        self._reclaim_asked_at: float | None = None  # observation time of the last ask
        self._evicting: tuple[frozenset[str], float] | None = None  # (uids, since)
        self._ticker: Cancellable | None = None
        self._log = logger.bind(pod="", uid="", container="")

    def on_start(self) -> None:
        self._ticker = self._timers.every(
            names.TICK_EVICTION, self.name, self._settings.config.monitoring_interval)

    def on_stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()

    def handle(self, message: Any) -> Any:
        if isinstance(message, SignalsObserved):
            self._signals = message.signals
        elif isinstance(message, ActivePods):
            self._pods = message.pods
            if self._evicting is not None and not (
                    self._evicting[0] & {p.uid for p in message.pods}):
                self._evicting = None  # stopped: the next pass may evict again
        elif isinstance(message, Tick) and message.kind == names.TICK_EVICTION:
            self._synchronize()
        elif isinstance(message, GetPressure):
            return self._told or ()
        elif isinstance(message, GarbageCollected):
            # What was freed shows in the next observations, which decide; logged here.
            self._log.info("eviction manager: garbage collection freed {} bytes",
                           message.bytes_freed)
        else:
            return super().handle(message)
        return None

    # --- one pass ------------------------------------------------------------------------

    def _synchronize(self) -> None:
        signals = self._signals
        config = self._settings.config
        if signals is None or not (config.thresholds or config.local_storage_capacity_isolation):
            return
        now = self._clock.monotonic()
        verdict = evaluate(config, self._state, signals, now)
        self._state = verdict.state
        self._tell_conditions(verdict.state.conditions)
        threshold = verdict.reclaim
        if threshold is None and not verdict.state.thresholds_met:
            self._reclaim_asked_at = None  # relieved: a new episode asks again
        if threshold is None and not config.local_storage_capacity_isolation:
            return
        if self._evicting is not None:
            # Upstream's waitForPodsCleanup: no other eviction until the last ones stopped.
            uids, since = self._evicting
            if now - since < POD_CLEANUP_TIMEOUT:
                self._log.info("eviction manager: waiting for pods {} to be cleaned up",
                               sorted(uids))
                return
            self._log.info("eviction manager: timed out waiting for pods {} to be cleaned up",
                           sorted(uids))
            self._evicting = None
        if config.local_storage_capacity_isolation:
            orders = local_storage_eviction(self._pods, signals)
            if orders:
                for each in orders:
                    self._evict(each)
                self._evicting = (frozenset(o.uid for o in orders), now)
                return
        if threshold is None:
            return
        resource = verdict.resource
        self._log.info("eviction manager: attempting to reclaim {}", resource)
        self._events.event(node_ref(self._node_name), reasons.WARNING,
                           reasons.EVICTION_THRESHOLD_MET, f"Attempting to reclaim {resource}")
        if self._reclaim_node_resources(threshold.signal, resource, signals):
            return
        if not self._pods:
            self._log.error("eviction manager: eviction thresholds have been met, but no "
                            "pods are active to evict")
            return
        if self._metrics is not None:
            age = max(self._clock.now() - signals.at, 0.0)
            for starved in verdict.starved:
                self._metrics.eviction_stats_age.labels(starved.signal).observe(age)
        order = choose(config, threshold, resource, self._pods, signals, verdict.starved)
        if order is None:
            self._log.info("eviction manager: unable to evict any pods from the node")
            return
        self._evict(order)
        self._evicting = (frozenset((order.uid,)), now)

    def _evict(self, order: EvictionOrder) -> None:
        """evictPod: the Evicted event, then the kill to the sync loop."""
        pod = next(p for p in self._pods if p.uid == order.uid)
        self._events.event(pod_ref(pod), reasons.WARNING, REASON, order.message)
        logger.bind(pod=pod.metadata.name, uid=pod.uid, container="").info(
            "evicting pod: {}", order.message)
        self.send(names.SYNC_LOOP, EvictPod(order.uid, order.grace_period, REASON,
                                            order.message, order.disruption))
        if self._metrics is not None:
            self._metrics.evictions.labels(order.signal).inc()

    def _reclaim_node_resources(self, signal: str, resource: str, signals: NodeSignals
                                ) -> bool:
        """Disk signals: ask the garbage collector first, and evict only if observations
        newer than the ask still show the threshold met. True: wait for them."""
        if not self._settings.reclaim or resource not in (EPHEMERAL_STORAGE, INODES):
            return False
        asked = self._reclaim_asked_at
        if asked is not None and signals.at > asked:
            self._reclaim_asked_at = None  # reclaimed, still starved: evict this pass
            return False
        if asked is None:
            self._reclaim_asked_at = signals.at
            self.send(self._settings.reclaim, CollectGarbage(
                f"the node is low on {resource} ({signal})", reply_to=self.name))
        return True

    def _tell_conditions(self, conditions: tuple[str, ...]) -> None:
        if conditions == self._told:
            return
        if conditions or self._told:
            self._log.info("eviction manager: node conditions now {}", list(conditions) or
                           "none")
        self._told = conditions
        for address in self._settings.notify:
            self.send(address, NodePressure(conditions))
