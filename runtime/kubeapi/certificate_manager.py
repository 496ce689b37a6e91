"""One rotated certificate: client-go's certificate manager, one round at a time.

The manager holds the pair in use (read from its :class:`FileStore`, or a bootstrap pair
stored there and rotated at once), says when to rotate it (``next_rotation_deadline``:
NotBefore plus a jittered 70-90% of its lifetime, or now when it does not satisfy the
template or was never had), and rotates it (``rotate``: a new ECDSA P-256 key, a CSR of the
template, the request, the wait for its certificate (15 minutes), the store; the round's
failure is logged as upstream logs it and counted). It times nothing itself: the kubelet's
certificate actor (actors.kubelet.cluster.certificates) runs a round at the deadline on a
thread of its own and schedules retries with ``retry_delay`` (upstream's backoff: 2 s
doubling, 10% jitter, five tries, then every 32 s).

``current()`` is None once the pair has expired (client-go's Current); ``generation``
counts the pairs the manager has had, so a Transport taking its pair from here
(``client_pair``) knows when to drop its connections; ``subscribe`` calls back on each new
pair. ``exit_due`` is upstream's transport watchdog: with no valid client certificate for
``exit_after`` while the server answers, the kubelet must exit, so its supervisor starts it
again with the bootstrap kubeconfig.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

from loguru import logger

from runtime import errors
from runtime.clock import Clock
from runtime.kubeapi.certificate_store import FileStore, NoCertKeyError, Pair, parse_pair, utc
from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.csr import (
    Template,
    generate_key,
    make_csr,
    request_certificate,
    wait_for_certificate,
)

__all__ = ["CERTIFICATE_WAIT_TIMEOUT", "EXIT_AFTER", "CertificateManager"]

CERTIFICATE_WAIT_TIMEOUT = 15 * 60.0
"""certificateWaitTimeout: how long one round waits for its CSR to be issued."""
EXIT_AFTER = 5 * 60.0
"""server.go's exitAfter for the client certificate's transport."""
EXIT_CHECK_PERIOD = 10.0
"""UpdateTransport's period: how often the client certificate is looked at."""
BACKOFF_INITIAL = 2.0
BACKOFF_FACTOR = 2.0
BACKOFF_JITTER = 0.1
BACKOFF_STEPS = 5
POLL_AFTER_BACKOFF = 32.0
"""After BACKOFF_STEPS failed rounds, upstream polls every 32 s (wait.PollInfinite)."""


def jittery_fraction(rng: random.Random) -> float:
    """jitteryDuration / total: wait.Jitter(d, 0.2) - 0.3 d, i.e. 0.7 to 0.9."""
    return 1.0 + 0.2 * rng.random() - 0.3


class CertificateManager:
    """The pair of one signer (``name`` in logs: ``kubernetes.io/kubelet-serving``, ...)."""

    def __init__(self, *, store: FileStore, signer_name: str,
                 get_template: Callable[[], Template | None],
                 get_usages: Callable[[Any], tuple[str, ...]],
                 client_for: Callable[[Pair | None], KubeClient], clock: Clock,
                 rng: random.Random | None = None, name: str = "",
                 bootstrap: tuple[bytes, bytes] | None = None,
                 requested_lifetime: int | None = None,
                 wait_timeout: float = CERTIFICATE_WAIT_TIMEOUT) -> None:
        self.store = store
        self.signer_name = signer_name
        self.name = name or signer_name
        self._get_template = get_template
        self._get_usages = get_usages
        self.client_for = client_for
        """The client a round's CSR goes out on, given the pair in use (settable: the
        kubelet's client is made after its manager)."""
        self._clock = clock
        self._rng = rng or random.Random()
        self._requested_lifetime = requested_lifetime
        self._wait_timeout = wait_timeout
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Pair], None]] = []
        self._server_healthy = False
        self.generation = 0
        self.rotations = 0
        self.renew_failures = 0
        self._pair, self._force = self._current_or_bootstrap(bootstrap)
        if self._pair is not None:
            self.generation = 1
        self._last_available = clock.monotonic()
        self._log = logger.bind(signer=signer_name)

    def _current_or_bootstrap(self, bootstrap: tuple[bytes, bytes] | None
                              ) -> tuple[Pair | None, bool]:
        """getCurrentCertificateOrBootstrap: the stored pair while valid, else the
        bootstrap pair (stored, and rotated at once), else none (rotated at once)."""
        try:
            pair = self.store.current()
            if not pair.expired(self._clock.now()):
                return pair, False
        except NoCertKeyError:
            pass  # none stored yet: the bootstrap pair, or a rotation now
        if bootstrap is None:
            return None, True
        pair = parse_pair(bootstrap[0], bootstrap[1], "the bootstrap certificate")
        try:
            pair = self.store.update(*bootstrap)
        except errors.CertificateError as err:
            logger.error("Unable to set the cert/key pair to the bootstrap certificate: {}",
                         err)
        return pair, True

    # --- what is in use ------------------------------------------------------------------

    def current(self) -> Pair | None:
        """The pair in use, None when there is none or it has expired."""
        with self._lock:
            pair = self._pair
        if pair is not None and pair.expired(self._clock.now()):
            return None
        return pair

    def client_pair(self) -> tuple[bytes, bytes] | None:
        """The current (cert, key) PEMs, for a Transport's Credentials."""
        pair = self.current()
        return None if pair is None else (pair.cert_pem, pair.key_pem)

    @property
    def server_healthy(self) -> bool:
        with self._lock:
            return self._server_healthy

    def subscribe(self, listener: Callable[[Pair], None]) -> None:
        """Call ``listener`` with each new pair (on the rotating thread)."""
        self._listeners.append(listener)

    # --- when ----------------------------------------------------------------------------

    def satisfies_template(self) -> bool:
        """certSatisfiesTemplate: the pair has the template's CN and at least its DNS
        names, IPs and organizations."""
        with self._lock:
            pair = self._pair
        if pair is None:
            return False
        template = self._get_template()
        if template is None:
            return True
        if template.common_name != pair.common_name:
            self._log.info("{}: Current certificate CN ({}) does not match requested CN ({})",
                           self.name, pair.common_name, template.common_name)
            return False
        for what, want, have in (("DNS names", template.dns_names, pair.dns_names),
                                 ("IP addresses", template.ip_addresses, pair.ip_addresses),
                                 ("orgs", template.organizations, pair.organizations)):
            missing = sorted(set(want) - set(have))
            if missing:
                self._log.info("{}: Current certificate is missing requested {} {}",
                               self.name, what, missing)
                return False
        return True

    def next_rotation_deadline(self) -> float:
        """When to rotate (wall-clock seconds): now if forced or the pair does not
        satisfy the template, else NotBefore + 70-90% of the lifetime."""
        if self._force:
            self._force = False
            return self._clock.now()
        if not self.satisfies_template():
            return self._clock.now()
        with self._lock:
            pair = self._pair
        assert pair is not None
        total = pair.not_after - pair.not_before
        deadline = pair.not_before + total * jittery_fraction(self._rng)
        self._log.info("{}: Certificate expiration is {}, rotation deadline is {}", self.name,
                       utc(pair.not_after), utc(deadline))
        return deadline

    def has_template(self) -> bool:
        return self._get_template() is not None

    def retry_delay(self, failures: int) -> float:
        """The wait after ``failures`` failed rounds in a row (wait.ExponentialBackoff of
        2 s, factor 2, jitter 0.1, 5 steps; then wait.PollInfinite of 32 s)."""
        if failures < BACKOFF_STEPS:
            base = BACKOFF_INITIAL * BACKOFF_FACTOR ** (failures - 1)
            return base * (1.0 + BACKOFF_JITTER * self._rng.random())
        if failures == BACKOFF_STEPS:
            self._log.error("{}: Reached backoff limit, still unable to rotate certs",
                            self.name)
        return POLL_AFTER_BACKOFF

    # --- a round -------------------------------------------------------------------------

    def rotate(self, stop: threading.Event | None = None) -> bool:
        """rotateCerts: request, wait for and store a new pair; True when one is in use."""
        self._log.info("{}: Rotating certificates", self.name)
        template = self._get_template()
        if template is None:
            self._log.error("{}: Unable to generate a certificate signing request: {}: "
                            "unable to create a csr, no template available", self.name,
                            self.name)
            self.renew_failures += 1
            return False
        try:
            key, key_pem = generate_key()
            csr_pem = make_csr(key, template)
            usages = self._get_usages(key)
        except (ValueError, TypeError) as err:
            self._log.error("{}: Unable to generate a certificate signing request: {}",
                            self.name, err)
            self.renew_failures += 1
            return False
        client = self.client_for(self.current())
        try:
            name, uid = request_certificate(client, csr_pem, "", self.signer_name,
                                            self._requested_lifetime, usages, key)
        except errors.APIError as err:
            self._log.error("{}: Failed while requesting a signed certificate from the "
                            "control plane: {}", self.name, err)
            self.renew_failures += 1
            self._server_error(err)
            return False
        except errors.CertificateError as err:
            self._log.error("{}: Failed while requesting a signed certificate from the "
                            "control plane: {}", self.name, err)
            self.renew_failures += 1
            return False
        try:
            cert_pem = wait_for_certificate(client, name, uid, self._wait_timeout,
                                            self._clock, stop)
        except errors.CertificateError as err:
            self._log.bind(csr=name).error("{}: certificate request was not signed: {}",
                                           self.name, err)
            self.renew_failures += 1
            return False
        try:
            pair = self.store.update(cert_pem, key_pem)
        except errors.CertificateError as err:
            self._log.error("{}: Unable to store the new cert/key pair: {}", self.name, err)
            self.renew_failures += 1
            return False
        with self._lock:
            self._server_healthy = True
            self._pair = pair
            self.generation += 1
        self.rotations += 1
        self._log.bind(csr=name, serial=f"{pair.serial:x}").info(
            "{}: new certificate from {} stored in {}, valid until {}", self.name, name,
            pair.path, utc(pair.not_after))
        for listener in list(self._listeners):
            listener(pair)
        return True

    def _server_error(self, err: errors.APIError) -> None:
        """updateServerError: what a failed request says of the server's health."""
        with self._lock:
            if isinstance(err, errors.APIUnauthorized):
                self._server_healthy = True  # SSL-terminating proxies answer so
            elif isinstance(err, errors.APIServerError):
                self._server_healthy = False
            else:
                self._server_healthy = isinstance(err, (errors.APINotFound,
                                                        errors.APIForbidden))

    # --- the watchdog --------------------------------------------------------------------

    def exit_due(self, exit_after: float = EXIT_AFTER) -> bool:
        """Whether the kubelet must exit now: no valid certificate for ``exit_after`` and
        the server answering (logged as upstream's transport logs it)."""
        now = self._clock.monotonic()
        if self.current() is not None:
            self._last_available = now
            return False
        if now - self._last_available <= exit_after:
            return False
        if self.server_healthy:
            self._log.error("It has been {} since a valid client cert was found and the "
                            "server is responsive, exiting.", _go_duration(exit_after))
            return True
        self._log.error("It has been {} since a valid client cert was found, but the server "
                        "is not responsive. A restart may be necessary to retrieve new "
                        "initial credentials.", _go_duration(exit_after))
        return False


def _go_duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"
