"""A reflector as client-go's: LIST, then WATCH from the list's resourceVersion, and hand
the whole set to a callback on every change.

Upstream's rules (k8s.io/client-go/tools/cache/reflector.go):
- the first LIST asks for resourceVersion "0" (the server's cache); a relist asks for the
  last version seen, and for "" (a consistent read) when that answers 410 Expired or "Too
  large resource version"; pages of 500 are followed with ``continue``;
- each WATCH starts from the last version seen with ``allowWatchBookmarks`` and a
  ``timeoutSeconds`` drawn from [5, 10) min; a watch the server ends is reopened from the
  last version without a relist; BOOKMARK events only advance the version;
- a watch that cannot be opened because the connection is refused, or is answered 429,
  is retried after a back-off without a relist; a 410 (ERROR event or answer) and any other
  error end the round, and the next round relists after a back-off; a watch that ends in
  under a second with no event counts as an error;
- back-off: client-go's ExponentialBackoffManager(800 ms, 30 s, reset after 2 min, factor 2,
  jitter 1.0): a delay d is drawn from [d, 2d).

Every change (the LIST, each ADDED, MODIFIED or DELETED) hands the callback a
:class:`Snapshot` of the whole set, as the kubelet's API pod source does with its
UndeltaStore. Time, randomness and waiting are injected, so tests and replays decide them.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loguru import logger

from runtime import errors
from runtime.clock import Clock, RealClock
from runtime.kubeapi.client import KubeClient, Resource, WatchStream

__all__ = ["Backoff", "Reflector", "Snapshot"]

MIN_WATCH_TIMEOUT = 300.0
"""client-go's minWatchTimeout: each watch asks for [1, 2) times this."""
PAGE_SIZE = 500
SHORT_WATCH = 1.0


@dataclass(frozen=True)
class Snapshot:
    """The whole set after a change, sorted by namespace and name.

    ``relisted`` is True when it comes from a LIST (upstream's Replace), False for a watch
    event. Objects are the API's JSON: read them, never change them (the reflector keeps
    them and hands the same ones out again).
    """

    resource_version: str
    items: tuple[Mapping[str, Any], ...]
    relisted: bool


class Backoff:
    """client-go's ExponentialBackoffManager: ``next()`` is the next delay in seconds."""

    def __init__(self, clock: Clock, rng: random.Random, *, initial: float = 0.8,
                 cap: float = 30.0, reset_after: float = 120.0, factor: float = 2.0,
                 jitter: float = 1.0) -> None:
        self._clock = clock
        self._rng = rng
        self._initial = initial
        self._cap = cap
        self._reset_after = reset_after
        self._factor = factor
        self._jitter = jitter
        self._current = initial
        self._last: float | None = None

    def next(self) -> float:
        now = self._clock.monotonic()
        if self._last is not None and now - self._last > self._reset_after:
            self._current = self._initial
        self._last = now
        delay = self._current
        self._current = min(self._current * self._factor, self._cap)
        if self._jitter > 0:
            delay += self._rng.random() * self._jitter * delay
        return delay


def _too_large(err: errors.APIError) -> bool:
    """client-go's isTooLargeResourceVersionError: a 504 whose cause is
    ResourceVersionTooLarge (or, from older servers, its message)."""
    causes = err.details.get("causes")
    if isinstance(causes, list) and any(isinstance(c, dict) and c.get("reason") ==
                                        "ResourceVersionTooLarge" for c in causes):
        return True
    return err.code == 504 and "Too large resource version" in err.message


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Reflector:
    """Keeps one selection of one resource in step with the API server.

    ``run()`` loops until ``stop()``; ``start()`` runs it on a daemon thread. ``wait`` is
    how it sleeps: called with seconds, returns True when it should stop (default: waits on
    the stop event, so ``stop()`` interrupts a back-off).
    """

    def __init__(self, client: KubeClient, resource: Resource, on_snapshot:
                 Callable[[Snapshot], None], *, namespace: str = "", field_selector: str = "",
                 label_selector: str = "", clock: Clock | None = None,
                 rng: random.Random | None = None, wait: Callable[[float], bool] | None = None,
                 page_size: int = PAGE_SIZE, min_watch_timeout: float = MIN_WATCH_TIMEOUT,
                 name: str = "") -> None:
        self._client = client
        self._resource = resource
        self._on_snapshot = on_snapshot
        self._namespace = namespace
        self._field_selector = field_selector
        self._label_selector = label_selector
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._stopped = threading.Event()
        self._wait = wait or self._stopped.wait
        self._page_size = page_size
        self._min_watch_timeout = min_watch_timeout
        self.name = name or f"{resource.plural}?{field_selector or label_selector or 'all'}"
        self._log = logger.bind(reflector=self.name)
        self._backoff = Backoff(self._clock, self._rng)
        self._store: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None
        self.last_sync_resource_version = ""
        self._rv_unavailable = False
        self._events = 0
        self.lists = 0
        self.watches = 0

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.run, name=f"reflector {self.name}",
                                        daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def run(self) -> None:
        """upstream's Run: ListAndWatch, then a back-off, until stopped."""
        while not self.stopped:
            try:
                self._list_and_watch()
            except errors.APIError as err:
                self._log.bind(error=type(err).__name__).warning(
                    "list and watch of {} failed: {}", self._resource.plural, err)
            if self.stopped or self._wait(self._backoff.next()):
                return

    # --- list ----------------------------------------------------------------------------

    def _relist_version(self) -> str:
        if self._rv_unavailable:
            return ""
        return self.last_sync_resource_version or "0"

    def _list(self) -> None:
        version = self._relist_version()
        try:
            listed = self._client.list_all(
                self._resource, self._namespace, field_selector=self._field_selector,
                label_selector=self._label_selector, limit=self._page_size,
                resource_version=version)
        except errors.APIError as err:
            if not (isinstance(err, errors.APIGone) or _too_large(err)):
                raise
            # The version is compacted away, or newer than this server has seen (another
            # server behind a load balancer): read from storage instead, as client-go does.
            self._log.info("relist from resourceVersion {} refused ({}): consistent list",
                           version, err.reason or err.code)
            self._rv_unavailable = True
            listed = self._client.list_all(
                self._resource, self._namespace, field_selector=self._field_selector,
                label_selector=self._label_selector, limit=self._page_size)
        self.lists += 1
        self._rv_unavailable = False
        self._store = {_key(obj): obj for obj in listed.items}
        self.last_sync_resource_version = listed.resource_version
        self._deliver(relisted=True)

    def _deliver(self, *, relisted: bool) -> None:
        items = tuple(self._store[k] for k in sorted(self._store))
        self._on_snapshot(Snapshot(self.last_sync_resource_version, items, relisted))

    # --- watch ---------------------------------------------------------------------------

    def _list_and_watch(self) -> None:
        self._list()
        while not self.stopped:
            timeout = int(self._min_watch_timeout * (self._rng.random() + 1.0))
            started = self._clock.monotonic()
            try:
                stream = self._client.watch(
                    self._resource, self._namespace,
                    resource_version=self.last_sync_resource_version,
                    field_selector=self._field_selector, label_selector=self._label_selector,
                    allow_bookmarks=True, timeout_seconds=timeout,
                    # A server that goes silent (a dead peer) must not hold us past the
                    # watch's own timeout; bookmarks keep a live one talking.
                    read_timeout=timeout + 60.0)
            except (errors.APIUnreachable, errors.APITooManyRequests) as err:
                if isinstance(err, errors.APITooManyRequests) or isinstance(
                        err.__cause__, ConnectionRefusedError):
                    self._log.info("watch of {} not opened ({}): backing off",
                                   self._resource.plural, err)
                    if self._wait(self._backoff.next()):
                        return
                    continue
                raise
            self.watches += 1
            with self._lock:
                self._stream = stream
            if self.stopped:
                stream.close()
                return
            self._events = 0
            try:
                self._handle(stream)
            except errors.APIGone as err:
                self._log.info("watch of {} closed with: {}", self._resource.plural, err)
                return
            except errors.APITooManyRequests:
                if self._wait(self._backoff.next()):
                    return
                continue
            except errors.APIUnreachable as err:
                # As client-go's StreamWatcher: a cut stream (EOF, reset, timeout) ends the
                # watch like the server's own end does; it is reopened from the last version.
                if not self.stopped:
                    self._log.info("watch stream of {} cut: {}", self._resource.plural, err)
            except errors.APIError as err:
                if not self.stopped:
                    self._log.warning("watch of {} ended with: {}", self._resource.plural, err)
                return
            finally:
                with self._lock:
                    self._stream = None
                stream.close()
            if self.stopped:
                return
            if self._events == 0 and self._clock.monotonic() - started < SHORT_WATCH:
                self._log.warning("very short watch of {}: closed in under a second with no "
                                  "event", self._resource.plural)
                return

    def _handle(self, stream: WatchStream) -> None:
        for event in stream:
            if self.stopped:
                return
            self._events += 1
            version = event.resource_version
            if event.type == "BOOKMARK":
                self.last_sync_resource_version = version or self.last_sync_resource_version
                continue
            key = _key(event.object)
            if event.type in ("ADDED", "MODIFIED"):
                self._store[key] = event.object
            elif event.type == "DELETED":
                self._store.pop(key, None)
            else:
                self._log.warning("unable to understand watch event type {}", event.type)
                continue
            self.last_sync_resource_version = version or self.last_sync_resource_version
            self._deliver(relisted=False)
