"""The pod killer: stops and removes runtime pods that no source wants (orphans).

Kills run on a small thread pool, since one may wait out a grace period; their outcome
comes back as a message, and a pod already being killed is not killed twice.
"""

from __future__ import annotations

from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.trace.names import message
from actors.kubelet import names
from actors.kubelet.messages import KillRuntimePod, RuntimePodKilled
from runtime.errors import CRIError
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager


@message("KillFinished")
@dataclass(frozen=True, slots=True)
class KillFinished:
    """Internal: a kill job ended."""

    uid: PodUID
    ok: bool
    error: str = ""


class PodKiller(Actor):
    """Kills orphans with their own grace period and preStop hooks (from their labels)."""

    def __init__(
        self,
        dispatch: Dispatch,
        manager: KubeRuntimeManager,
        workers: int = 4,
        incarnation: int = 0,
        executor: Executor | None = None,
    ) -> None:
        super().__init__(names.KILLER, dispatch, incarnation)
        self._manager = manager
        # A replay passes an executor that runs nothing: the outcomes are in the trace.
        self._pool: Executor = executor or ThreadPoolExecutor(
            workers, thread_name_prefix="pod-killer")
        self._in_flight: set[PodUID] = set()

    def handle(self, message: Any) -> Any:
        if isinstance(message, KillRuntimePod):
            if message.uid in self._in_flight:
                return None
            self._in_flight.add(message.uid)
            self._pool.submit(self._kill, message)
        elif isinstance(message, KillFinished):
            self._in_flight.discard(message.uid)
            self.send(names.SYNC_LOOP, RuntimePodKilled(message.uid, message.ok, message.error))
        else:
            return super().handle(message)
        return None

    def _kill(self, order: KillRuntimePod) -> None:
        log = logger.bind(pod=order.name, uid=order.uid, container="")
        try:
            status = self._manager.get_pod_status(order.uid, order.name, order.namespace)
            result = self._manager.kill_pod(None, status, order.grace_override)
            if not result.ok:
                raise CRIError("KillPod", str(result))
            self._manager.remove_pod_sandboxes(status)
            self._manager.destroy_pod_cgroup(order.uid)
            self._manager.unmount_volumes(order.uid, order.name)
            log.info("removed {} pod", order.reason)
            self.send(self.name, KillFinished(order.uid, True))
        except CRIError as err:
            log.warning("killing {} pod failed: {}", order.reason, err)
            self.send(self.name, KillFinished(order.uid, False, str(err)))
        except Exception as err:  # a bug must not lose the in-flight mark
            log.exception("killing {} pod failed", order.reason)
            self.send(self.name, KillFinished(order.uid, False, repr(err)))

    def on_stop(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
