"""The order in which a pod's containers stop when it has sidecars.

Upstream's terminationOrdering (pkg/kubelet/kuberuntime/kuberuntime_termination_order.go):
every running container is killed at once, but before it is stopped (after its preStop
hook) a sidecar (restartable init container) waits until every regular container has
terminated and the sidecar declared after it has terminated, so sidecars stop after the
regular containers and in reverse order. The wait never takes longer than what is left of
the container's grace period, and the time waited comes off it.

``prerequisites`` is the pure part (who waits on whom); ``TerminationOrdering`` holds one
event per container for the kill threads to wait on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping

from runtime.clock import Clock
from runtime.pod.model import Pod

Wait = Callable[[threading.Event, float], bool]
"""Wait for an event at most that many seconds; whether it was set (threading's wait)."""


def _wait(event: threading.Event, timeout: float) -> bool:
    return event.wait(timeout)


def prerequisites(pod: Pod) -> dict[str, tuple[str, ...]]:
    """For each sidecar, the containers that must terminate before it is stopped: every
    regular container, then the next sidecar in spec order. Others wait on nothing."""
    mains = tuple(c.name for c in pod.spec.containers)
    needs: dict[str, tuple[str, ...]] = {}
    later: str | None = None
    for init in reversed(pod.spec.init_containers):
        if init.is_restartable_init:
            needs[init.name] = mains + ((later,) if later is not None else ())
            later = init.name
    return needs


class TerminationOrdering:
    """Shared by the threads that kill one pod's containers."""

    def __init__(self, pod: Pod, running: Iterable[str], clock: Clock,
                 wait: Wait = _wait) -> None:
        self._clock = clock
        self._wait = wait
        self._lock = threading.Lock()
        running_names = set(running)
        self._terminated: dict[str, threading.Event] = {}
        for container in (*pod.spec.containers, *pod.spec.init_containers):
            event = threading.Event()
            if container.name not in running_names:
                event.set()  # not running: nothing to wait for
            self._terminated[container.name] = event
        self._needs: Mapping[str, tuple[str, ...]] = prerequisites(pod)

    def wait_for_turn(self, name: str, grace: int) -> float:
        """Block until it is ``name``'s turn to stop, at most ``grace`` seconds; the
        seconds waited. No grace, no wait."""
        if grace <= 0:
            return 0.0
        start = self._clock.monotonic()
        for needed in self._needs.get(name, ()):
            event = self._terminated.get(needed)
            if event is None:
                continue
            left = grace - (self._clock.monotonic() - start)
            if left <= 0 or not self._wait(event, left):
                break  # the grace period is over: stop it now
        return self._clock.monotonic() - start

    def container_terminated(self, name: str) -> None:
        """``name`` has been stopped: the containers waiting on it may go."""
        with self._lock:
            event = self._terminated.get(name)
        if event is not None:
            event.set()


def has_sidecars(pod: Pod | None) -> bool:
    return pod is not None and any(c.is_restartable_init for c in pod.spec.init_containers)
