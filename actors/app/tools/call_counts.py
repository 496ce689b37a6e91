"""How many calls of each method a traced run made of a service, and how long they took.

A trace records every call the actors make through the intercepted services (the CRI
runtime, the embedded containerd, the API server's objects) as a ``call`` record with its
method, duration, the actor whose handler made it and the monotonic time it ended. This
counts them per method (and per actor), over the whole trace or a window of it: what a
pod start costs in runtime calls, counted rather than timed, so a change to the start
path shows as numbers that do not move with the machine's load.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class MethodCalls:
    """The calls of one method: how many, and their summed duration in seconds."""

    method: str
    count: int
    seconds: float


def calls_in(records: Iterable[Mapping[str, Any]], target: str = "runtime",
             since: float | None = None, until: float | None = None
             ) -> list[Mapping[str, Any]]:
    """The ``call`` records of ``target`` that ended within [since, until] (monotonic
    seconds, the trace's ``m``; None: unbounded)."""
    return [r for r in records
            if r.get("k") == "call" and r.get("target", "runtime") == target
            and (since is None or r.get("m", 0.0) >= since)
            and (until is None or r.get("m", 0.0) <= until)]


def count_by_method(calls: Iterable[Mapping[str, Any]]) -> dict[str, MethodCalls]:
    """Per method, in the order of their first call."""
    counts: dict[str, int] = {}
    seconds: dict[str, float] = {}
    for call in calls:
        method = str(call["method"])
        counts[method] = counts.get(method, 0) + 1
        seconds[method] = seconds.get(method, 0.0) + float(call.get("dur", 0.0))
    return {m: MethodCalls(m, counts[m], seconds[m]) for m in counts}


def count_by_actor(calls: Iterable[Mapping[str, Any]], group: Any = None
                   ) -> dict[str, dict[str, int]]:
    """actor -> method -> count; ``group`` maps an actor's address to the name it is
    counted under (e.g. every pod worker as ``pod``); calls outside a handler count
    under ``-``."""
    out: dict[str, dict[str, int]] = {}
    for call in calls:
        actor = str(call.get("actor") or "-")
        if group is not None:
            actor = group(actor)
        per = out.setdefault(actor, {})
        per[str(call["method"])] = per.get(str(call["method"]), 0) + 1
    return out
