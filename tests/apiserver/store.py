"""The emulated etcd + watch cache: objects, one global resourceVersion, an event log.

Every write takes the next resourceVersion (a decimal string on the object, as upstream) and
appends an event to the log, which watches read from and which lists at an older
resourceVersion undo to rebuild the state they ask for. ``compact()`` forgets the log up to a
point: older resourceVersions then answer 410 Gone, as after an etcd compaction.
"""

from __future__ import annotations

import bisect
import copy
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects


@dataclass(frozen=True)
class Event:
    """One write: ADDED, MODIFIED or DELETED, with the object after (and before) it."""

    rv: int
    type: str
    resource: str
    key: Key
    obj: dict[str, Any]
    old: dict[str, Any] | None


@dataclass
class Watcher:
    """An open watch; faults can end it (``drop``) or make it fail with 410 (``expire``)."""

    resource: str
    position: int
    dropped: bool = False
    expired: bool = False
    ended: bool = False


@dataclass
class Store:
    """All objects of all resources, guarded by one condition that watches wait on."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    rv: int = 0
    compacted: int = 0
    objects: dict[str, dict[Key, dict[str, Any]]] = field(default_factory=dict)
    log: list[Event] = field(default_factory=list)
    watchers: list[Watcher] = field(default_factory=list)
    stopped: bool = False
    # Called with each write's Event, under ``cond`` (the control endpoint's history).
    observers: list[Callable[[Event], None]] = field(default_factory=list)

    # All methods expect the caller to hold ``cond`` when they read and write together.

    def get(self, resource: str, key: Key) -> dict[str, Any] | None:
        obj = self.objects.get(resource, {}).get(key)
        return copy.deepcopy(obj) if obj is not None else None

    def write(self, resource: str, key: Key, obj: dict[str, Any] | None) -> dict[str, Any]:
        """Store ``obj`` (None deletes) under the next resourceVersion; return what was stored.

        A deleted object is returned (and sent to watches) with the deletion's version.
        """
        table = self.objects.setdefault(resource, {})
        old = table.get(key)
        self.rv += 1
        if obj is None:
            if old is None:
                raise KeyError(key)
            stored = copy.deepcopy(old)
            stored["metadata"]["resourceVersion"] = str(self.rv)
            del table[key]
            kind = "DELETED"
        else:
            stored = copy.deepcopy(obj)
            stored["metadata"]["resourceVersion"] = str(self.rv)
            table[key] = stored
            kind = "MODIFIED" if old is not None else "ADDED"
        event = Event(self.rv, kind, resource, key, copy.deepcopy(stored), copy.deepcopy(old))
        self.log.append(event)
        for observer in self.observers:
            observer(event)
        self.cond.notify_all()
        return copy.deepcopy(stored)

    def items(self, resource: str, at: int | None = None) -> dict[Key, dict[str, Any]]:
        """Copies of a resource's objects, now or as they were at resourceVersion ``at``."""
        state = {k: copy.deepcopy(v) for k, v in self.objects.get(resource, {}).items()}
        if at is None:
            return state
        for event in reversed(self.log):
            if event.rv <= at:
                break
            if event.resource != resource:
                continue
            if event.old is None:
                state.pop(event.key, None)
            else:
                state[event.key] = copy.deepcopy(event.old)
        return state

    def events_after(self, resource: str, position: int) -> list[Event]:
        start = bisect.bisect_right(self.log, position, key=lambda e: e.rv)
        return [e for e in self.log[start:] if e.resource == resource]

    def compact(self, rv: int | None = None) -> int:
        """Forget history up to ``rv`` (default: now); older versions are then 410 Gone."""
        target = self.rv if rv is None else min(rv, self.rv)
        self.compacted = max(self.compacted, target)
        # Open watches were registered before the compaction and keep their events, as the
        # watch cache keeps serving its watchers after etcd compacts.
        keep_from = min([self.compacted, *(w.position for w in self.watchers if not w.ended)])
        start = bisect.bisect_right(self.log, keep_from, key=lambda e: e.rv)
        del self.log[:start]
        self.cond.notify_all()
        return self.compacted
