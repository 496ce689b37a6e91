"""The lease actor: creates and renews kube-node-lease/<node>.

Upstream's lease controller with the kubelet's settings: nodeLeaseDurationSeconds (40),
renewed every quarter of it with 4% jitter (wait.JitterUntil, the first sync at once).
runtime.kubeapi.lease does the rules (PUT of the last lease, GET only after a conflict or an
error, the Node as owner); this actor runs one round per timer, so a round that cannot reach
the server ends and the next one, a renew interval later, tries again.
"""

from __future__ import annotations

import random
from typing import Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers
from actors.kubelet import names
from actors.kubelet.cluster.context import Cluster
from runtime.clock import Clock
from runtime.kubeapi.lease import RENEW_JITTER, LeaseController


class LeaseActor(Actor):
    """Renews this node's lease while the kubelet runs."""

    def __init__(self, dispatch: Dispatch, timers: Timers, clock: Clock, cluster: Cluster,
                 incarnation: int = 0, rng: random.Random | None = None) -> None:
        super().__init__(names.NODE_LEASE, dispatch, incarnation)
        self._timers = timers
        self._clock = clock
        self._cluster = cluster
        self._rng = rng or random.Random()
        self._next: Cancellable | None = None
        # wait: one ensure attempt per round; the next round is the retry.
        self.controller = LeaseController(
            cluster.heartbeat, cluster.node.node_name, clock=clock, rng=self._rng,
            wait=lambda _seconds: True,
            duration=cluster.settings.node_lease_duration_seconds,
            on_repeated_heartbeat_failure=cluster.heartbeat.transport.close)
        self._log = logger.bind(pod="", uid="", container="", node=cluster.node.node_name)

    def on_start(self) -> None:
        self._schedule(0.0)

    def on_stop(self) -> None:
        if self._next is not None:
            self._next.cancel()

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind == names.TICK_LEASE:
            self._renew()
            return None
        return super().handle(message)

    def _renew(self) -> None:
        if not self._cluster.registration.is_set():
            self._schedule(min(1.0, self.controller.renew_interval))  # no owner yet
            return
        before = self.controller.renewals
        self.controller.sync()
        if self.controller.renewals == before and self.controller.latest is None:
            self._log.warning("node lease not renewed this round")
        interval = self.controller.renew_interval
        self._schedule(interval * (1 + self._rng.random() * RENEW_JITTER))

    def _schedule(self, delay: float) -> None:
        self._next = self._timers.once(delay, self.name,
                                       Tick(names.TICK_LEASE, self._clock.monotonic() + delay))
