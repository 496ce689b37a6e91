"""client-go's EventCorrelator (tools/record/events_cache.go): what to send for an event.

Three steps, in upstream's order, each with an LRU cache of 4096 entries:

1. **aggregation**: events that differ only in their message (same source, object, type,
   reason, reporting controller and instance) are counted per 10-minute window; from the
   10th distinct message on, the event becomes one aggregate event, "(combined from
   similar events): <message>", keyed by the group, so later ones count on it;
2. **dedup** (eventObserve): an event seen before under its key keeps the first one's
   name and firstTimestamp and gets count + 1, and a strategic merge patch of count,
   lastTimestamp and message to send instead of a create;
3. **spam filter**: a token bucket per source and object (burst 25, one token back every
   5 minutes); an event it refuses is skipped (the caches above still saw it).

``update_state`` takes the API server's answer (its name and resourceVersion). Time comes
from ``clock`` (a passive clock: read, never waited on). Not thread-safe: one actor owns it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from runtime.apitime import rfc3339
from runtime.events.v1 import CoreEvent, unix_nanos

MAX_LRU_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_SECONDS = 600
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
AGGREGATE_PREFIX = "(combined from similar events): "

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """groupcache's lru.Cache: get refreshes, add evicts the least recently used."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def add(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def event_key(e: CoreEvent) -> str:
    """getEventKey: source, object (with field path), type, reason, message."""
    o = e.involved
    return "".join((e.source_component, e.source_host, o.kind, o.namespace, o.name,
                    o.field_path, o.uid, o.api_version, e.type, e.reason, e.message))


def spam_key(e: CoreEvent) -> str:
    """getSpamKey: source and object (not its field path)."""
    o = e.involved
    return "".join((e.source_component, e.source_host, o.kind, o.namespace, o.name, o.uid,
                    o.api_version))


def aggregate_by_reason(e: CoreEvent) -> tuple[str, str]:
    """EventAggregatorByReasonFunc: (the group's key, the message within it)."""
    o = e.involved
    return "".join((e.source_component, e.source_host, o.kind, o.namespace, o.name, o.uid,
                    o.api_version, e.type, e.reason, e.reporting_controller,
                    e.reporting_instance)), e.message


def aggregate_message(e: CoreEvent) -> str:
    """EventAggregatorByReasonMessageFunc."""
    return AGGREGATE_PREFIX + e.message


class TokenBucket:
    """golang.org/x/time/rate's Limiter as a passive one (Allow only): starts full."""

    def __init__(self, qps: float, burst: int) -> None:
        self._qps = qps
        self._burst = burst
        self._tokens = 0.0
        self._last: float | None = None

    def try_accept(self, now: float) -> bool:
        if self._last is None:
            tokens = float(self._burst)
        else:
            elapsed = max(now - self._last, 0.0)
            tokens = min(float(self._burst), self._tokens + elapsed * self._qps)
        tokens -= 1.0
        if tokens < 0:
            return False  # as rate.Limiter: a refused reservation changes nothing
        self._tokens, self._last = tokens, now
        return True


@dataclass(slots=True)
class _AggregateRecord:
    local_keys: set[str] = field(default_factory=set)
    last_timestamp: float | None = None


@dataclass(frozen=True, slots=True)
class _EventLog:
    count: int
    first_timestamp: float
    name: str
    resource_version: str


@dataclass(frozen=True, slots=True)
class CorrelateResult:
    """What to do with an event: create ``event`` (``patch`` None), patch it, or skip."""

    event: CoreEvent | None
    patch: dict[str, Any] | None = None
    skip: bool = False


class EventCorrelator:
    """Filters, aggregates, counts and de-duplicates events (upstream's defaults)."""

    def __init__(self, clock: Callable[[], float], *, cache_size: int = MAX_LRU_CACHE_ENTRIES,
                 burst: int = SPAM_BURST, qps: float = SPAM_QPS,
                 max_events: int = AGGREGATE_MAX_EVENTS,
                 max_interval: float = AGGREGATE_INTERVAL_SECONDS,
                 spam_key_func: Callable[[CoreEvent], str] = spam_key) -> None:
        self._clock = clock
        self._burst, self._qps = burst, qps
        self._max_events, self._max_interval = max_events, max_interval
        self._spam_key = spam_key_func
        self._spam: LRU[str, TokenBucket] = LRU(cache_size)
        self._aggregates: LRU[str, _AggregateRecord] = LRU(cache_size)
        self._logs: LRU[str, _EventLog] = LRU(cache_size)

    def correlate(self, new: CoreEvent) -> CorrelateResult:
        """EventCorrelate: aggregate, then observe (count), then the spam filter."""
        aggregate, key = self._aggregate(new)
        observed, patch = self._observe(aggregate, key)
        if self._filtered(observed):
            return CorrelateResult(None, None, True)
        return CorrelateResult(observed, patch)

    def update_state(self, event: CoreEvent) -> None:
        """UpdateState: the server's copy (name, resourceVersion, count) under its key."""
        self._logs.add(event_key(event), _EventLog(event.count, event.first_timestamp,
                                                   event.name, event.resource_version))

    # --- the three steps -----------------------------------------------------------------

    def _aggregate(self, new: CoreEvent) -> tuple[CoreEvent, str]:
        now = self._clock()
        key = event_key(new)
        group, local = aggregate_by_reason(new)
        record = self._aggregates.get(group) or _AggregateRecord()
        if record.last_timestamp is None or now - record.last_timestamp > self._max_interval:
            record = _AggregateRecord()
        record.local_keys.add(local)
        record.last_timestamp = now
        self._aggregates.add(group, record)
        if len(record.local_keys) < self._max_events:
            return new, key
        record.local_keys.pop()  # do not grow the set past the maximum
        combined = CoreEvent(
            name=f"{new.involved.name}.{unix_nanos(now):x}", namespace=new.namespace,
            involved=new.involved, reason=new.reason, message=aggregate_message(new),
            type=new.type, first_timestamp=now, last_timestamp=now, count=1,
            source_component=new.source_component, source_host=new.source_host)
        return combined, group

    def _observe(self, event: CoreEvent, key: str) -> tuple[CoreEvent, dict[str, Any] | None]:
        last = self._logs.get(key)
        patch: dict[str, Any] | None = None
        if last is not None and last.count > 0:
            event = event.replace(name=last.name, resource_version=last.resource_version,
                                  first_timestamp=last.first_timestamp, count=last.count + 1)
            # The two-way strategic merge patch from the event with count 0, lastTimestamp
            # at the epoch and no message to this one: exactly these three fields.
            patch = {"count": event.count, "lastTimestamp": rfc3339(event.last_timestamp),
                     "message": event.message}
        self._logs.add(key, _EventLog(event.count, event.first_timestamp, event.name,
                                      event.resource_version))
        return event, patch

    def _filtered(self, event: CoreEvent) -> bool:
        key = self._spam_key(event)
        bucket = self._spam.get(key) or TokenBucket(self._qps, self._burst)
        refused = not bucket.try_accept(self._clock())
        self._spam.add(key, bucket)
        return refused
