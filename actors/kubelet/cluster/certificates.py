"""The certificate actors: the kubelet's client certificate and its serving certificate,
each rotated by a runtime.kubeapi.certificate_manager.CertificateManager.

Upstream's manager is a goroutine that sleeps until the rotation deadline (NotBefore plus a
jittered 70-90% of the lifetime, or at once when there is no valid pair), then rotates with
backoff (2 s doubling, five tries, then every 32 s). Here a one-shot timer of the injected
clock's monotonic time brings the deadline's Tick; the round (a key, a CSR, the request and
the wait for its approval, up to 15 minutes) runs on the actor's own one-thread pool, never
in the handler, and its end comes back as CertificateRotated, which schedules the next
deadline or the retry. A stopping actor sets the event the wait looks at.

The client certificate's actor also runs upstream's transport watchdog every 10 s: when
no valid client certificate has been had for five minutes and the API server answers,
``on_expired`` is called (the daemon's exits the process, as upstream's kubelet does, so
its supervisor starts it again with the bootstrap kubeconfig).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.timers import Cancellable, Timers
from actors.kubelet import names
from actors.kubelet.cluster.messages import CertificateRotated
from runtime.clock import Clock
from runtime.kubeapi.certificate_manager import EXIT_AFTER, EXIT_CHECK_PERIOD, CertificateManager


class CertificateActor(Actor):
    """Rotates one certificate while the kubelet runs."""

    def __init__(self, name: str, dispatch: Dispatch, timers: Timers, clock: Clock,
                 manager: CertificateManager, incarnation: int = 0,
                 on_expired: Callable[[], None] | None = None,
                 exit_after: float = EXIT_AFTER) -> None:
        super().__init__(name, dispatch, incarnation)
        self._timers = timers
        self._clock = clock
        self.manager = manager
        self._on_expired = on_expired
        self._exit_after = exit_after
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._halt = threading.Event()
        self._busy = False
        self._failures = 0
        self._next: Cancellable | None = None
        self._check: Cancellable | None = None
        self._log = logger.bind(pod="", uid="", container="", signer=manager.signer_name)

    def on_start(self) -> None:
        self._log.info("{}: Certificate rotation is enabled", self.manager.name)
        self._schedule_deadline()
        if self._on_expired is not None:
            self._check = self._timers.every(names.TICK_CERTIFICATE_CHECK, self.name,
                                             EXIT_CHECK_PERIOD)

    def on_stop(self) -> None:
        self._halt.set()
        for timer in (self._next, self._check):
            if timer is not None:
                timer.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind == names.TICK_CERTIFICATE_ROTATE:
            self._begin()
        elif isinstance(message, Tick) and message.kind == names.TICK_CERTIFICATE_CHECK:
            if self._on_expired is not None and self.manager.exit_due(self._exit_after):
                self._on_expired()
        elif isinstance(message, CertificateRotated):
            self._finished(message.ok)
        else:
            return super().handle(message)
        return None

    def _begin(self) -> None:
        if self._busy:
            return
        if not self.manager.has_template():
            # No addresses yet to ask a serving certificate for: look again in a second,
            # as upstream's rotation loop (wait.Until, 1 s) does.
            self._schedule(1.0)
            return
        self._busy = True
        self._pool.submit(self._round)

    def _round(self) -> None:
        try:
            ok = self.manager.rotate(self._halt)
        except Exception as err:  # a round must always report back, or rotation stops
            self._log.opt(exception=err).error("{}: rotation round failed: {}",
                                               self.manager.name, err)
            ok = False
        self.send(self.name, CertificateRotated(ok))

    def _finished(self, ok: bool) -> None:
        self._busy = False
        if self._halt.is_set():
            return
        if ok:
            self._failures = 0
            self._schedule_deadline()
            return
        self._failures += 1
        self._schedule(self.manager.retry_delay(self._failures))

    def _schedule_deadline(self) -> None:
        deadline = self.manager.next_rotation_deadline()
        delay = max(0.0, deadline - self._clock.now())
        if delay > 0:
            self._log.info("{}: Waiting {:.0f}s for next certificate rotation",
                           self.manager.name, delay)
        self._schedule(delay)

    def _schedule(self, delay: float) -> None:
        if self._next is not None:
            self._next.cancel()
        self._next = self._timers.once(
            delay, self.name, Tick(names.TICK_CERTIFICATE_ROTATE,
                                   self._clock.monotonic() + delay))
