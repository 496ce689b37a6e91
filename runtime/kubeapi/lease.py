"""The node lease: kube-node-lease/<node>, renewed as upstream's lease controller does.

k8s.io/component-helpers/apimachinery/lease/controller.go with the kubelet's settings
(pkg/kubelet/kubelet.go): leaseDurationSeconds 40, renew interval 0.25 of it (10 s) with
4% jitter (wait.JitterUntil, the sync first). A renewal PUTs the last lease the server
returned with a new renewTime (no GET); after a failure it falls back to ensureLease (GET,
or create when NotFound) retried after 100 ms doubling to 7 s; up to 5 immediate PUT tries,
a Conflict fetching the newer lease first. The owner reference to the Node (the kubelet's
setNodeOwnerFunc) is added whenever it is missing and the Node's UID can be read; a lease
is not created without it.
"""

from __future__ import annotations

import copy
import datetime
import random
import threading
from collections.abc import Callable, Mapping
from typing import Any

from loguru import logger

from runtime import errors
from runtime.clock import Clock
from runtime.kubeapi.client import LEASES, NODES, KubeClient

__all__ = ["LEASE_DURATION_SECONDS", "LEASE_NAMESPACE", "LeaseController", "micro_time",
           "new_lease"]

LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
RENEW_INTERVAL_FRACTION = 0.25
RENEW_JITTER = 0.04
MAX_UPDATE_RETRIES = 5
MAX_BACKOFF = 7.0


def micro_time(at: float) -> str:
    """metav1.MicroTime on the wire: microseconds, UTC."""
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_lease(node_name: str, now: float, *, base: Mapping[str, Any] | None = None,
              duration: int = LEASE_DURATION_SECONDS, node_uid: str = "") -> dict[str, Any]:
    """newLease + setNodeOwnerFunc: a fresh lease, or a copy of ``base``, renewed at
    ``now``, with the Node as owner when ``node_uid`` is known and none is set."""
    if base is None:
        lease: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": node_name, "namespace": LEASE_NAMESPACE},
            "spec": {"holderIdentity": node_name, "leaseDurationSeconds": duration}}
    else:
        lease = copy.deepcopy(dict(base))
    lease.setdefault("spec", {})["renewTime"] = micro_time(now)
    meta = lease.setdefault("metadata", {})
    if not meta.get("ownerReferences") and node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node_name,
                                    "uid": node_uid}]
    return lease


class LeaseController:
    """Creates and renews this node's lease."""

    def __init__(self, client: KubeClient, node_name: str, *, clock: Clock,
                 rng: random.Random | None = None, wait: Callable[[float], bool] | None = None,
                 duration: int = LEASE_DURATION_SECONDS,
                 node_uid: Callable[[], str] | None = None,
                 on_repeated_heartbeat_failure: Callable[[], None] | None = None) -> None:
        self._client = client
        self.node_name = node_name
        self._clock = clock
        self._rng = rng or random.Random()
        self._stopped = threading.Event()
        self._wait = wait or self._stopped.wait
        self.duration = duration
        self.renew_interval = duration * RENEW_INTERVAL_FRACTION
        self._node_uid = node_uid or self._get_node_uid
        # As the node status: upstream drops the heartbeat connections after a second
        # failure in a row.
        self.on_repeated_heartbeat_failure = on_repeated_heartbeat_failure
        self.latest: dict[str, Any] | None = None
        self.renewals = 0
        self._log = logger.bind(node=node_name, lease=f"{LEASE_NAMESPACE}/{node_name}")

    def stop(self) -> None:
        self._stopped.set()

    def _get_node_uid(self) -> str:
        return str(self._client.get(NODES, self.node_name)["metadata"]["uid"])

    def _new_lease(self, base: Mapping[str, Any] | None) -> tuple[dict[str, Any], bool]:
        """The lease to write, and whether the owner reference could be set."""
        uid = ""
        has_owner = bool(base and (base.get("metadata") or {}).get("ownerReferences"))
        if not has_owner:
            try:
                uid = self._node_uid()
            except errors.APIError as err:
                self._log.error("failed to get node when trying to set owner ref to the node "
                                "lease: {}", err)
        lease = new_lease(self.node_name, self._clock.now(), base=base,
                          duration=self.duration, node_uid=uid)
        return lease, has_owner or bool(uid)

    def sync(self) -> None:
        """One renewal round (upstream's sync)."""
        if self.latest is not None:
            try:
                self._retry_update(self.latest)
                return
            except errors.APIError as err:
                self._log.info("failed to update lease using latest lease, fallback to "
                               "ensure lease: {}", err)
        lease, created = self._backoff_ensure()
        self.latest = lease
        if lease is not None and not created:
            try:
                self._retry_update(lease)
            except errors.APIError as err:
                self._log.error("{}, will retry after {}s", err, self.renew_interval)

    def _backoff_ensure(self) -> tuple[dict[str, Any] | None, bool]:
        sleep = 0.1
        while True:
            try:
                return self._ensure()
            except errors.APIError as err:
                sleep = min(2 * sleep, MAX_BACKOFF)
                self._log.error("failed to ensure lease exists, will retry in {}s: {}",
                                sleep, err)
                if self._wait(sleep):
                    return None, False

    def _ensure(self) -> tuple[dict[str, Any] | None, bool]:
        try:
            return self._client.get(LEASES, self.node_name, LEASE_NAMESPACE), False
        except errors.APINotFound:
            pass
        lease, owned = self._new_lease(None)
        if not owned:
            # As upstream: no lease without its owner; the next round tries again.
            return None, False
        return self._client.create(LEASES, lease, LEASE_NAMESPACE), True

    def _retry_update(self, base: dict[str, Any] | None) -> None:
        for attempt in range(MAX_UPDATE_RETRIES):
            if base is None:
                break
            lease, _ = self._new_lease(base)
            try:
                self.latest = self._client.update(LEASES, lease, LEASE_NAMESPACE)
                self.renewals += 1
                return
            except errors.APIConflict:
                # Optimistic lock lost: fetch the newer lease and try again.
                base, _ = self._backoff_ensure()
                continue
            except errors.APIError as err:
                self._log.error("failed to update lease: {}", err)
                if attempt > 0 and self.on_repeated_heartbeat_failure is not None:
                    self.on_repeated_heartbeat_failure()
        raise errors.APIError(f"failed {MAX_UPDATE_RETRIES} attempts to update lease")

    def run(self) -> None:
        """wait.JitterUntil(sync, renew_interval, 0.04, sliding): sync, then wait."""
        while not self._stopped.is_set():
            self.sync()
            period = self.renew_interval * (1 + self._rng.random() * RENEW_JITTER)
            if self._wait(period):
                return
