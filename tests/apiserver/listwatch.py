"""Lists and watches of the emulated API server, read from the store at a resourceVersion.

As kube-apiserver's generic registry and watch cache answer them: label and field selectors;
a list at the newest version, at least a version (waiting up to 3 s for it, then 504), or
exactly one (410 Gone once compacted), paged with continue tokens that keep the first page's
version; watches from a version (410 Gone when compacted) or from now with the current
objects first, objects leaving the selection sent as DELETED, bookmarks, the initial
events' end, a timeout, and streams cut or expired by the test.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from tests.apiserver import errors
from tests.apiserver.errors import APIError
from tests.apiserver.objects import resource_key, with_type
from tests.apiserver.resources import ResourceType
from tests.apiserver.selectors import (
    FieldTerm,
    Requirement,
    fields_match,
    labels_match,
)
from tests.apiserver.store import Key, Store, Watcher

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True)
class ListOptions:
    """The query of a LIST or WATCH, parsed (see handler.py)."""

    labels: tuple[Requirement, ...] = ()
    fields: tuple[FieldTerm, ...] = ()
    resource_version: str | None = None
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    allow_bookmarks: bool = False
    timeout: float | None = None
    send_initial_events: bool = False


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED MODIFIED DELETED BOOKMARK ERROR, or DROP: cut the stream
    object: dict[str, Any]

    def json(self) -> dict[str, Any]:
        return {"type": self.type, "object": self.object}


def _matches(rt: ResourceType, obj: dict[str, Any], opts: ListOptions) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return labels_match(opts.labels, labels) and fields_match(opts.fields, rt.get_fields(obj))


def list_objects(store: Store, rt: ResourceType, ns: str, opts: ListOptions) -> dict[str, Any]:
    key = resource_key(rt)
    start_after: Key | None = None
    with store.cond:
        at: int | None = None
        if opts.continue_token:
            at, start_after = _decode_continue(opts.continue_token)
            if at < store.compacted:
                raise errors.gone(
                    "The provided continue parameter is too old to display a consistent "
                    "list result. You can start a new list without the continue "
                    "parameter, or use the continue token in this response to retrieve "
                    "the remainder of the results.")
        elif opts.resource_version_match == "Exact" and opts.resource_version:
            at = _parse_rv(opts.resource_version)
            if at < store.compacted:
                raise errors.gone(f"too old resource version: {at} ({store.compacted})")
        elif opts.resource_version not in (None, "", "0"):
            _wait_for_rv(store, _parse_rv(opts.resource_version))
        list_rv = at if at is not None else store.rv
        state = store.items(key, at if at is not None and at < store.rv else None)
    keys = sorted(k for k in state if not rt.namespaced or not ns or k[0] == ns)
    if start_after is not None:
        keys = [k for k in keys if k > start_after]
    matching = [k for k in keys if _matches(rt, state[k], opts)]
    # The watch cache answers resourceVersion=0 whole, ignoring limit (as upstream did for
    # years; a reflector's first list relies on neither).
    paged = opts.limit > 0 and opts.resource_version != "0"
    page = matching[:opts.limit] if paged else matching
    meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
    if paged and len(matching) > len(page):
        meta["continue"] = _encode_continue(list_rv, page[-1])
        if not opts.labels and not opts.fields:
            meta["remainingItemCount"] = len(matching) - len(page)
    items = []
    for k in page:
        item = state[k]
        item.pop("kind", None)
        item.pop("apiVersion", None)
        items.append(item)
    return {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta,
            "items": items}


def _parse_rv(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise errors.bad_request(f"invalid resource version: {text!r}") from None
    if value < 0:
        raise errors.bad_request(f"invalid resource version: {text!r}")
    return value


def _wait_for_rv(store: Store, rv: int) -> None:
    # Upstream waits up to 3 s for a resourceVersion it has not seen, then answers 504.
    deadline = time.monotonic() + 3.0
    while store.rv < rv:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise APIError(504, "Timeout",
                           f"Timeout: Too large resource version: {rv}, current: "
                           f"{store.rv}",
                           {"causes": [{"reason": "ResourceVersionTooLarge",
                                        "message": "Too large resource version"}],
                            "retryAfterSeconds": 1})
        store.cond.wait(remaining)


def watch(store: Store, rt: ResourceType, ns: str, opts: ListOptions,
          stopping: Callable[[], bool], *, default_watch_timeout: float,
          bookmark_interval: float) -> Generator[WatchEvent | None]:
    """Events for a watch; None now and then so the caller can notice a gone client."""
    key = resource_key(rt)
    timeout = opts.timeout if opts.timeout is not None else default_watch_timeout
    deadline = time.monotonic() + timeout
    rv_text = opts.resource_version or ""
    initial: list[WatchEvent] = []
    with store.cond:
        if rv_text in ("", "0") or opts.send_initial_events:
            position = store.rv
            if rv_text not in ("", "0") and opts.send_initial_events:
                _wait_for_rv(store, _parse_rv(rv_text))
                position = store.rv
            state = store.items(key)
            for k in sorted(state):
                obj = state[k]
                if (not rt.namespaced or not ns or k[0] == ns) and \
                        _matches(rt, obj, opts):
                    initial.append(WatchEvent("ADDED", with_type(rt, obj)))
            if opts.send_initial_events:
                initial.append(_bookmark(rt, position, initial_end=True))
        else:
            position = _parse_rv(rv_text)
            if position < store.compacted:
                yield WatchEvent("ERROR", errors.gone(
                    f"too old resource version: {position} ({store.compacted})"
                ).status())
                return
        watcher = Watcher(key, position)
        store.watchers.append(watcher)
    try:
        yield from initial
        next_bookmark = time.monotonic() + bookmark_interval
        while True:
            with store.cond:
                if not watcher.expired and not store.events_after(key, watcher.position):
                    now = time.monotonic()
                    wake = min(deadline, now + 0.5)
                    if opts.allow_bookmarks:
                        wake = min(wake, next_bookmark)
                    if wake > now:
                        store.cond.wait(wake - now)
                if watcher.dropped or store.stopped or stopping():
                    # The caller cuts the stream without its last chunk.
                    yield WatchEvent("DROP", {})
                    return
                expired = watcher.expired
                current_rv = store.rv
                events = [e for e in store.events_after(key, watcher.position)
                          if e.rv <= current_rv]
            if expired:
                yield WatchEvent("ERROR", errors.gone(
                    f"too old resource version: {watcher.position} "
                    f"({store.compacted})").status())
                return
            for event in events:
                converted = _convert(rt, ns, opts, event.type, event.obj, event.old)
                if converted is not None:
                    yield converted
            watcher.position = current_rv
            now = time.monotonic()
            if now >= deadline:
                if opts.allow_bookmarks:
                    yield _bookmark(rt, current_rv)
                return
            if opts.allow_bookmarks and now >= next_bookmark:
                yield _bookmark(rt, current_rv)
                next_bookmark = now + bookmark_interval
            if not events:
                yield None
    finally:
        with store.cond:
            watcher.ended = True
            store.watchers.remove(watcher)


def _convert(rt: ResourceType, ns: str, opts: ListOptions, kind: str,
             obj: dict[str, Any], old: dict[str, Any] | None) -> WatchEvent | None:
    """What a filtered watch sends: objects leaving the selection arrive as DELETED."""
    if rt.namespaced and ns and obj["metadata"].get("namespace") != ns:
        return None
    now = _matches(rt, obj, opts)
    before = old is not None and _matches(rt, old, opts)
    if kind == "MODIFIED":
        if now and before:
            return WatchEvent("MODIFIED", with_type(rt, obj))
        if now:
            return WatchEvent("ADDED", with_type(rt, obj))
        if before:
            return WatchEvent("DELETED", with_type(rt, obj))
        return None
    if kind == "DELETED":
        return WatchEvent("DELETED", with_type(rt, obj)) if before or now else None
    return WatchEvent(kind, with_type(rt, obj)) if now else None


def _bookmark(rt: ResourceType, rv: int, *, initial_end: bool = False) -> WatchEvent:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return WatchEvent("BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version,
                                   "metadata": meta})


def _encode_continue(rv: int, last: Key) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(last)})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, Key]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(raw["rv"]), (str(raw["start"][0]), str(raw["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError):
        raise errors.bad_request(f"continue key is not valid: {token}") from None
