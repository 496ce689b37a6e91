"""Why a pod stopped as a whole: its source removed it, the API deleted it, its active
deadline passed, it was evicted or failed otherwise, or it was an orphan.

Read from the sync loop's kill orders (UpdatePod KILL with its reason and grace), the
pod worker's pod-level verdicts (PodObserved.failed_reason: DeadlineExceeded, Evicted,
...), a cluster-mode status with a reason (PodStatusChanged), events with a pod-level
Evicted reason, the pod killer's orders, and the StopContainer calls that carried the
kill out (their grace, and the preStop hooks that failed on the way with what they
said) up to the worker's ``terminated``.
"""

from __future__ import annotations

from actors.app.tools.explain.model import Evidence, Finding, PodHistory, Seen, clock_time, ids
from actors.app.tools.explain.restarts import (
    STOP_CALLS,
    hook_evidence,
    hook_quote,
    pre_stop_failure,
)
from actors.kubelet.cluster.messages import PodStatusChanged
from actors.kubelet.messages import (
    KillRuntimePod,
    PodObserved,
    PodWorkerDone,
    UpdateKind,
    UpdatePod,
    WorkerState,
)
from runtime.pod import active_deadline

EVICTED = "Evicted"
"""The pod status reason of an evicted pod (upstream's eviction manager)."""
SOURCE_REMOVED = "removed from its source"
DELETED = "deleted"


def _kill_carried_out(history: PodHistory, since: Seen
                      ) -> tuple[str, tuple[int, ...], list[Evidence]]:
    """What the worker did after ``since``: the containers it stopped (and the preStop
    hooks that failed on the way, with what they said), when it was done."""
    names: dict[str, str] = {}
    for _, observed in history.of(PodObserved):
        for status in observed.runtime.container_statuses:
            names[status.id] = status.name
    stops = [c for c in history.calls if c.method in STOP_CALLS and c.m >= since.m]
    done = next((s for s, d in history.of(PodWorkerDone)
                 if s.id > since.id and d.state == WorkerState.TERMINATED), None)
    parts: list[str] = []
    found: list[Evidence] = []
    hooks: list[Seen] = []
    for call in stops:
        if len(call.args) < 2:
            continue
        name = names.get(str(call.args[0]), str(call.args[0])[:12])
        part = f"{name} killed with {call.args[1]} s grace"
        pre_stop = pre_stop_failure(history, call.within, name)
        if pre_stop is not None:
            part += ", its preStop hook failed" + hook_quote(pre_stop[1])
            found += hook_evidence(*pre_stop, name)
            hooks.append(pre_stop[0])
        parts.append(part)
    text = "; ".join(parts) if parts else "no container was running"
    if done is not None:
        text += f"; terminated at {clock_time(done.t)}"
    return text, ids((c.within for c in stops[:4]), hooks, (done,)), found


def _source(history: PodHistory) -> str:
    if history.pod is None:
        return "its source"
    source = history.pod.metadata.annotations.get("kubernetes.io/config.source", "")
    return f"its source ({source})" if source else "its source"


def kill_findings(history: PodHistory) -> list[Finding]:
    """The first kill order of the pod (later ones only shorten its grace)."""
    first = next(((s, u) for s, u in history.of(UpdatePod) if u.kind == UpdateKind.KILL), None)
    if first is None:
        return []
    seen, kill = first
    carried, seqs, found = _kill_carried_out(history, seen)
    at = clock_time(seen.t)
    if kill.reason == SOURCE_REMOVED:
        what = f"the pod was removed from {_source(history)} at {at}"
    elif kill.reason == DELETED:
        grace = kill.grace_override
        if grace is None:
            grace = kill.pod.metadata.deletion_grace_period_seconds
        what = (f"the pod was deleted through the API at {at}"
                + (f" with a grace period of {grace} s" if grace is not None else ""))
    else:
        what = f"the pod was stopped at {at}: {kill.reason or 'killed'}"
    if kill.remove:
        what += " (to be removed from the node)"
    return [Finding(seen.t, "deletion", f"{what}: {carried}", ids((seen,), seqs), "",
                    tuple(found))]


def failure_findings(history: PodHistory) -> list[Finding]:
    """A pod-level verdict: DeadlineExceeded, Evicted, or any other reason a status gives."""
    out: list[Finding] = []
    told: set[str] = set()
    for seen, observed in history.of(PodObserved):
        reason = observed.failed_reason
        if not reason or reason in told:
            continue
        told.add(reason)
        carried, seqs, found = _kill_carried_out(history, seen)
        at = clock_time(seen.t)
        if reason == active_deadline.REASON:
            deadline = observed.pod.spec.active_deadline_seconds
            text = (f"activeDeadlineSeconds ({deadline} s) exceeded at {at}: "
                    f"{observed.failed_message}; the pod is Failed ({reason}): {carried}")
            kind = "deadline"
        elif reason == EVICTED:
            text = (f"the pod was evicted at {at}: {observed.failed_message}; "
                    f"the pod is Failed ({reason}): {carried}")
            kind = "eviction"
        else:
            text = (f"the pod was failed at {at}: {reason}: {observed.failed_message}: "
                    f"{carried}")
            kind = "failed"
        out.append(Finding(seen.t, kind, text, ids((seen,), seqs), "", tuple(found)))
    for seen, changed in history.of(PodStatusChanged):
        reason = changed.status.reason
        if not reason or reason in told or changed.status.phase != "Failed":
            continue
        told.add(reason)
        kind = "eviction" if reason == EVICTED else "failed"
        out.append(Finding(seen.t, kind, f"the pod's status became Failed at "
                           f"{clock_time(seen.t)}: {reason}: {changed.status.message}",
                           ids((seen,))))
    for seen, event in history.events(EVICTED, ""):
        if EVICTED in told:
            continue
        told.add(EVICTED)
        out.append(Finding(seen.t, "eviction", f"the pod was evicted at {clock_time(seen.t)}: "
                           f"{event.message}", ids((seen,))))
    return out


def orphan_findings(history: PodHistory) -> list[Finding]:
    """The pod killer's orders, when no worker had stopped the pod before (after one did,
    an order for what a relist still showed of it is the clean-up, not a cause)."""
    killed = next((s.id for s, u in history.of(UpdatePod) if u.kind == UpdateKind.KILL), None)
    return [Finding(seen.t, "orphan",
                    f"the runtime held the pod, which no source wants: the pod killer "
                    f"stopped it at {clock_time(seen.t)} ({order.reason})", ids((seen,)))
            for seen, order in history.of(KillRuntimePod)
            if killed is None or seen.id < killed]
