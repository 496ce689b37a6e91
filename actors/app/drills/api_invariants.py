"""The API drills' invariants, as pure functions of what the API server saw and holds.

Inputs are the emulator's request log (emulator.Seen: when, verb, resource, name, the
resourceVersion asked, the code of the injected fault that answered) and its history of
pod writes (tests/apiserver/control.pod_summary). Each returns problems in words (empty:
the invariant holds), as invariants.py does for the runtime side.

The reflector's numbers are client-go's (runtime.kubeapi.reflector): a failed round backs
off 0.8 s doubling to 30 s with jitter [d, 2d); a cut watch is reopened from the last
resourceVersion without a relist; a 410 relists (once more, consistently, when the relist's
own version is gone).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

BACKOFF_INITIAL = 0.8
BACKOFF_FACTOR = 2.0
BACKOFF_CAP = 30.0
SLACK_S = 0.05
"""Clock slack between the kubelet's sleeps and the server's timestamps."""


class Request(Protocol):
    @property
    def at(self) -> float: ...
    @property
    def verb(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def resource_version(self) -> str | None: ...
    @property
    def fault_code(self) -> int: ...


def reflector_requests(requests: Iterable[Request], resource: str = "pods") -> list[Request]:
    """The list and watch requests of ``resource`` (the reflector's), in order."""
    return sorted((r for r in requests if r.resource == resource and r.verb in ("list",
                                                                                  "watch")),
                  key=lambda r: r.at)


def max_backoff_attempts(seconds: float, initial: float = BACKOFF_INITIAL,
                         factor: float = BACKOFF_FACTOR, cap: float = BACKOFF_CAP) -> int:
    """How many failed rounds a back-off of ``initial`` doubling to ``cap`` (the shortest
    delays: jitter only lengthens them) fits in ``seconds``, the first one at once."""
    attempts, elapsed, delay = 1, 0.0, initial
    while elapsed + delay <= seconds + 1e-9:
        elapsed += delay
        attempts += 1
        delay = min(delay * factor, cap)
    return attempts


def tight_loop(requests: Sequence[Request], min_gap: float = BACKOFF_INITIAL) -> list[str]:
    """After a request a fault answered, the reflector's next request waits ``min_gap``."""
    problems: list[str] = []
    for before, after in itertools.pairwise(requests):
        gap = after.at - before.at
        if before.fault_code and gap < min_gap - SLACK_S:
            problems.append(f"{after.verb} {after.resource} {gap:.3f} s after a "
                            f"{before.verb} answered {before.fault_code} (back-off is "
                            f"at least {min_gap:g} s)")
    return problems


def too_many_rounds(requests: Sequence[Request], seconds: float, what: str) -> list[str]:
    """No more failed rounds in ``seconds`` than a back-off allows (plus the one that
    succeeds when the fault ends)."""
    failed = sum(1 for r in requests if r.fault_code)
    allowed = max_backoff_attempts(seconds)
    if failed > allowed:
        return [f"{failed} failed {what} requests in {seconds:.1f} s: a back-off from "
                f"{BACKOFF_INITIAL:g} s allows {allowed}"]
    return []


def retry_after_ignored(requests: Iterable[Request], retry_after: float) -> list[str]:
    """After a 429 with Retry-After, the same request (verb, resource, name) comes again
    no sooner than ``retry_after`` seconds (client-go's checkWait)."""
    last: dict[tuple[str, str, str], Request] = {}
    problems: list[str] = []
    for r in sorted(requests, key=lambda r: r.at):
        key = (r.verb, r.resource, r.name)
        before = last.get(key)
        if before is not None and before.fault_code == 429 and \
                r.at - before.at < retry_after - SLACK_S:
            problems.append(f"{r.verb} {r.resource}{'/' + r.name if r.name else ''} again "
                            f"{r.at - before.at:.3f} s after a 429 asking for "
                            f"{retry_after:g} s")
        last[key] = r
    return problems


def relists(requests: Sequence[Request], at_least: int, at_most: int, why: str) -> list[str]:
    lists = sum(1 for r in requests if r.verb == "list")
    if not at_least <= lists <= at_most:
        return [f"{lists} relists of pods {why} (expected {at_least} to {at_most})"]
    return []


# --- pod history ---------------------------------------------------------------------------

def writes_of(history: Iterable[Mapping[str, Any]], name: str,
              namespace: str = "default") -> list[Mapping[str, Any]]:
    return [h for h in history if h["name"] == name and h["namespace"] == namespace]


def ready_flips(history: Iterable[Mapping[str, Any]], name: str) -> list[str]:
    """Once the API showed pod ``name`` Ready, no later write of the same pod (uid) shows
    it not Ready (a kubelet restart or an API fault must not flap it)."""
    ready_uids: set[str] = set()
    for h in writes_of(history, name):
        if h["type"] == "DELETED":
            continue
        if h["ready"] == "True":
            ready_uids.add(h["uid"])
        elif h["uid"] in ready_uids:
            return [f"pod {name} went from Ready to {h['ready'] or 'no Ready condition'} "
                    f"(phase {h['phase'] or '-'}) at resourceVersion {h['rv']}"]
    return []


def restarts(history: Iterable[Mapping[str, Any]], name: str) -> list[str]:
    """No container of pod ``name`` was restarted or replaced: restartCount stays 0 and a
    container keeps its ID once it has one."""
    ids: dict[tuple[str, str], str] = {}
    for h in writes_of(history, name):
        for c in h["containers"]:
            if c["restartCount"]:
                return [f"pod {name} container {c['name']} restartCount {c['restartCount']} "
                        f"at resourceVersion {h['rv']}"]
            if not c["containerID"]:
                continue
            key = (h["uid"], c["name"])
            if ids.setdefault(key, c["containerID"]) != c["containerID"]:
                return [f"pod {name} container {c['name']} replaced: {ids[key][:25]} -> "
                        f"{c['containerID'][:25]} at resourceVersion {h['rv']}"]
    return []


def regressions(history: Iterable[Mapping[str, Any]], name: str) -> list[str]:
    """A container the API showed terminated never shows running or waiting again (a
    slow or retried status write landing late must not undo a newer one)."""
    ended: set[tuple[str, str]] = set()
    for h in writes_of(history, name):
        for c in h["containers"]:
            key = (h["uid"], c["name"])
            if c["state"] == "terminated":
                ended.add(key)
            elif key in ended:
                return [f"pod {name} container {c['name']} shown {c['state']} after it was "
                        f"terminated, at resourceVersion {h['rv']}"]
    return []


def terminated_shown(pod: Mapping[str, Any] | None, container: str, exit_code: int) -> list[str]:
    """The API pod shows ``container`` terminated with ``exit_code``."""
    if pod is None:
        return ["the pod is not in the API"]
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        if c.get("name") == container:
            done = (c.get("state") or {}).get("terminated")
            if done is None:
                return [f"container {container} is {next(iter(c.get('state') or {}), '?')} "
                        "in the API, not terminated"]
            if done.get("exitCode") != exit_code:
                return [f"container {container} terminated with {done.get('exitCode')}, "
                        f"not {exit_code}"]
            return []
    return [f"no status of container {container} in the API"]


def running_ready(pod: Mapping[str, Any] | None) -> list[str]:
    """The API pod is Running, Ready, every container running."""
    if pod is None:
        return ["not in the API"]
    status = pod.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    statuses = status.get("containerStatuses") or []
    if status.get("phase") != "Running" or conditions.get("Ready") != "True" or not statuses \
            or not all("running" in (c.get("state") or {}) for c in statuses):
        return [f"{status.get('phase') or 'no phase'}, Ready {conditions.get('Ready')}, "
                f"{sum('running' in (c.get('state') or {}) for c in statuses)}/"
                f"{len(statuses)} running"]
    return []
