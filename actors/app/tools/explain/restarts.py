"""Restarts, exits and kills of a pod's containers, each with the chain behind it.

Read from the pod worker's PodObserved messages (each a full runtime status: every
instance of every container, with its restart count, exit code and reason), the
Killing, BackOff and FailedPostStartHook events, the StopContainer calls (their grace),
and, for a kill by a probe, the probe's verdict and the failed attempts that led to it
(ProbeOutcome, with their output). A restart's sentence says how the instance before it
ended, the back-off the kubelet waited, and when the new one started.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.app.tools.explain.model import (
    Call,
    Finding,
    PodHistory,
    Seen,
    clock_time,
    ids,
    seconds,
)
from actors.kubelet.events import RecordEvent
from actors.kubelet.messages import PodObserved, ProbeKind, ProbeVerdict
from actors.kubelet.probe_manager import ProbeOutcome
from runtime.cri.types import ContainerState
from runtime.events import reasons
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus
from runtime.prober.results import ProbeResult

STOP_CALLS = frozenset({"stop_container", "StopContainer"})
START_CALLS = frozenset({"start_container", "StartContainer"})


@dataclass(slots=True)
class Instance:
    """One container instance as the pod worker saw it over time."""

    status: ContainerRuntimeStatus
    first: Seen  # the observation that first showed it
    exited: Seen | None = None  # the first that showed it exited
    backoffs: list[tuple[Seen, float]] = field(default_factory=list)  # waits after its exit


def instances(history: PodHistory) -> dict[str, list[Instance]]:
    """Every instance of every container, by container name, oldest first."""
    out: dict[str, list[Instance]] = {}
    by_id: dict[str, Instance] = {}
    for seen, observed in history.of(PodObserved):
        for status in sorted(observed.runtime.container_statuses,
                             key=lambda c: (c.created_at, c.restart_count)):
            known = by_id.get(status.id)
            if known is None:
                known = by_id[status.id] = Instance(status, seen)
                out.setdefault(status.name, []).append(known)
            else:
                known.status = status
            if status.state == ContainerState.EXITED and known.exited is None:
                known.exited = seen
        for step in observed.sync.steps if observed.sync is not None else ():
            delay = step.backoff_seconds
            if step.error == "CrashLoopBackOff" and delay is not None:
                newest = out.get(step.target, [])
                if newest:
                    newest[-1].backoffs.append((seen, delay))
    return out


@dataclass(frozen=True, slots=True)
class Ending:
    """How one instance ended: a sentence and where it comes from."""

    text: str
    seqs: tuple[int, ...]
    killed: bool  # by the kubelet (a probe, a hook, a changed spec), not on its own
    at: float | None  # when: the kill's event, or the first report of the exit


def _stop_call(history: PodHistory, container_id: str) -> Call | None:
    return next((c for c in history.calls
                 if c.method in STOP_CALLS and c.args and c.args[0] == container_id), None)


def _kill_event(history: PodHistory, call: Call, container: str
                ) -> tuple[Seen, RecordEvent] | None:
    """The Killing event recorded in the handler that made the StopContainer ``call``."""
    found = None
    for seen, event in history.events(reasons.KILLING_CONTAINER, container):
        if seen.parent == call.within and seen.m <= call.m:
            found = (seen, event)
    return found


def _grace_text(history: PodHistory, call: Call, killing: Seen | None, container: str) -> str:
    """"killed with 30 s grace (preStop took 2.1 s)": the grace the runtime was given."""
    grace = call.args[1] if len(call.args) > 1 else None
    text = f"killed with {grace} s grace" if isinstance(grace, int | float) else "killed"
    spec = history.container_spec(container)
    if (spec is not None and spec.lifecycle is not None and spec.lifecycle.pre_stop is not None
            and killing is not None):
        text += f" (preStop took {seconds(max(call.began - killing.m, 0.0))})"
    return text


def probe_failures(history: PodHistory, container_id: str, kind: ProbeKind,
                   until: Seen) -> tuple[list[tuple[Seen, ProbeOutcome]],
                                         tuple[Seen, ProbeVerdict] | None]:
    """The failed attempts of a probe that led to its last verdict before ``until``: the
    attempts since the one before them that succeeded, and the verdict."""
    verdict: tuple[Seen, ProbeVerdict] | None = None
    for seen, flip in history.of(ProbeVerdict):
        if (flip.container_id == container_id and flip.kind == kind
                and flip.result == ProbeResult.FAILURE and seen.id <= until.id):
            verdict = (seen, flip)
    limit = verdict[0].parent if verdict is not None and verdict[0].parent else until.id
    failed: list[tuple[Seen, ProbeOutcome]] = []
    for seen, outcome in history.of(ProbeOutcome):
        if outcome.container_id != container_id or outcome.kind != kind or seen.id > limit:
            continue
        if outcome.result == ProbeResult.SUCCESS:
            failed = []
        else:
            failed.append((seen, outcome))
    return failed, verdict


def probe_story(history: PodHistory, container: str, container_id: str, kind: ProbeKind,
                until: Seen) -> tuple[str, tuple[int, ...]]:
    """"liveness probe failed 3 times (HTTP 500, threshold 3)", with its messages."""
    failed, verdict = probe_failures(history, container_id, kind, until)
    spec = history.container_spec(container)
    probe = None
    if spec is not None:
        probe = {ProbeKind.LIVENESS: spec.liveness_probe, ProbeKind.STARTUP: spec.startup_probe,
                 ProbeKind.READINESS: spec.readiness_probe}[kind]
    details: list[str] = []
    outputs = list(dict.fromkeys(o.output.strip() for _, o in failed if o.output.strip()))
    if outputs:
        details.append("; ".join(f'"{out[:120]}"' for out in outputs[:3]))
    if probe is not None:
        details.append(f"threshold {probe.failure_threshold}, every {probe.period_seconds} s")
    count = len(failed)
    times = "once" if count == 1 else f"{count} times"
    text = f"{kind.value} probe failed {times}" if count else f"{kind.value} probe failed"
    if details:
        text += f" ({', '.join(details)})"
    return text, ids((s for s, _ in failed), (verdict[0] if verdict else None,))


def ending(history: PodHistory, container: str, instance: Instance) -> Ending:
    """How ``instance`` ended: killed by the kubelet (why, with what grace) or on its own."""
    status = instance.status
    call = _stop_call(history, status.id)
    if call is not None:
        kill = _kill_event(history, call, container)
        killing, event = kill if kill is not None else (None, None)
        grace = _grace_text(history, call, killing, container)
        message = event.message if event is not None else ""
        hook = next(((s, e) for s, e in history.events(reasons.FAILED_POST_START_HOOK, container)
                     if s.parent == call.within), None)
        seqs = ids((killing, call.within))
        at = killing.t if killing is not None else call.t
        if hook is not None:
            step = _step_message(history, call.within, container, "PostStartHookError")
            why = f"its postStart hook failed ({step})" if step else "its postStart hook failed"
            return Ending(f"{why}, container {grace}", ids(seqs, (hook[0],)), True, hook[0].t)
        for kind in (ProbeKind.LIVENESS, ProbeKind.STARTUP):
            if f"failed {kind.value} probe" in message and killing is not None:
                story, probe_seqs = probe_story(history, container, status.id, kind, killing)
                return Ending(f"{story}, container {grace}", ids(seqs, probe_seqs), True, at)
        if message and "Stopping container" not in message:
            return Ending(f"{message[:1].lower()}{message[1:]}: container {grace}", seqs, True,
                          at)
        changed = next((s for s, _ in history.events(reasons.SANDBOX_CHANGED, "")
                        if s.parent == call.within), None)
        if changed is not None:
            return Ending(f"its pod's sandbox changed (it is killed and re-created), "
                          f"container {grace}", ids(seqs, (changed,)), True, at)
        if killing is not None:
            return Ending(f"stopped with its pod, container {grace}", seqs, True, at)
    exited = instance.exited
    code = f"exited with code {status.exit_code}"
    if status.reason:
        code += f" ({status.reason})"
    if status.message.strip():
        code += f': "{status.message.strip()[:160]}"'
    return Ending(code, ids((exited,)), False, exited.t if exited is not None else None)


def _step_message(history: PodHistory, within: int, container: str, error: str) -> str:
    for seen, observed in history.of(PodObserved):
        if seen.parent != within or observed.sync is None:
            continue
        for step in observed.sync.steps:
            if step.target == container and step.error == error:
                return step.message
    return ""


def _backoff_text(waits: list[tuple[Seen, float]]) -> str:
    delays = list(dict.fromkeys(delay for _, delay in waits))
    return "back-off " + ", ".join(seconds(d) for d in delays)


def restart_findings(history: PodHistory) -> list[Finding]:
    """One finding per restart of each container (and its first start), oldest first."""
    out: list[Finding] = []
    for container, found in instances(history).items():
        for index, instance in enumerate(found):
            started = next((s for s, _ in history.events(reasons.STARTED_CONTAINER, container)
                            if s.parent == instance.first.parent), None)
            if index == 0:
                if instance.status.state == ContainerState.CREATED:
                    continue
                if not any(c.method in START_CALLS and c.args[:1] == (instance.status.id,)
                           for c in history.calls):
                    # Not started by the kubelet that wrote this trace: adopted at its start.
                    since = instance.status.started_at
                    text = (f"container {container} was started before this trace began"
                            + (f" (at {clock_time(since)})" if since > 0 else ""))
                    out.append(Finding(instance.first.t, "start", text, ids((instance.first,)),
                                       container))
                    continue
                text = f"container {container} started at {clock_time(instance.first.t)}"
                if instance.status.restart_count:
                    text += (f" (restart count {instance.status.restart_count}: earlier "
                             "instances are not in this trace)")
                out.append(Finding(instance.first.t, "start", text,
                                   ids((instance.first, started)), container))
                continue
            before = found[index - 1]
            end = ending(history, container, before)
            parts = [end.text]
            sandbox = next((s for s, _ in history.events(reasons.SANDBOX_CHANGED, "")
                            if before.first.id < s.id <= instance.first.id), None)
            if sandbox is not None and "sandbox" not in end.text:
                parts.append("the pod's sandbox changed and was re-created")
                end = Ending(end.text, ids(end.seqs, (sandbox,)), end.killed, end.at)
            parts.append(_backoff_text(before.backoffs) if before.backoffs else "no back-off")
            parts.append(f"started {clock_time(instance.first.t)}")
            number = instance.status.restart_count
            when = end.at if end.at is not None else instance.first.t
            text = f"restart {number} of {container} at {clock_time(when)}: " + ", ".join(parts)
            out.append(Finding(instance.first.t, "restart", text,
                               ids(end.seqs, (s for s, _ in before.backoffs[:1]),
                                   (instance.first, started)), container))
    return out


def exit_findings(history: PodHistory) -> list[Finding]:
    """The last instance of a container that ended and was not (yet) restarted."""
    out: list[Finding] = []
    policy = history.pod.spec.restart_policy if history.pod is not None else "Always"
    for container, found in instances(history).items():
        last = found[-1]
        if last.exited is None:
            continue
        end = ending(history, container, last)
        if end.killed and "stopped with its pod" in end.text:
            continue  # the pod's termination says it
        text = f"container {container} at {clock_time(end.at or last.exited.t)}: {end.text}"
        if last.backoffs:
            text += f"; waiting to restart: {_backoff_text(last.backoffs)} (CrashLoopBackOff)"
        elif policy == "Never" or (policy == "OnFailure" and last.status.exit_code == 0):
            text += f"; restartPolicy {policy}: not restarted"
        out.append(Finding(last.exited.t, "exit", text,
                           ids(end.seqs, (last.exited,), (s for s, _ in last.backoffs[-1:])),
                           container))
    return out

