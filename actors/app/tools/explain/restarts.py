"""Restarts, exits and kills of a pod's containers, each with the chain behind it.

Read from the pod worker's PodObserved messages (each a full runtime status: every
instance of every container, with its restart count, exit code and reason), the
Killing, BackOff and FailedPostStartHook events, the StopContainer calls (their grace),
and, for a kill by a probe, the probe's verdict and the failed attempts that led to it
(ProbeOutcome, with their output). A restart's sentence says how the instance before it
ended, the back-off the kubelet waited, and when the new one started.
"""

from __future__ import annotations

import contextlib
import signal
from dataclasses import dataclass, field

from actors.app.tools.explain.model import (
    Call,
    Evidence,
    Finding,
    PodHistory,
    Seen,
    clock_time,
    evidence,
    ids,
    iso_time,
    seconds,
)
from actors.kubelet.events import RecordEvent
from actors.kubelet.messages import PodObserved, ProbeKind, ProbeVerdict
from actors.kubelet.probe_manager import ProbeOutcome
from runtime.cri.types import ContainerState
from runtime.events import reasons
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus
from runtime.pod.model import Probe
from runtime.prober.results import ProbeResult

STOP_CALLS = frozenset({"stop_container", "StopContainer"})
START_CALLS = frozenset({"start_container", "StartContainer"})


@dataclass(slots=True)
class Instance:
    """One container instance as the pod worker saw it over time."""

    status: ContainerRuntimeStatus
    first: Seen  # the observation that first showed it
    exited: Seen | None = None  # the first that showed it exited
    backoffs: list[tuple[Seen, float, str]] = field(default_factory=list)
    # the back-off waits after its exit: (the report, the delay, the waiting message)


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
                    newest[-1].backoffs.append((seen, delay, step.message))
    return out


@dataclass(frozen=True, slots=True)
class Ending:
    """How one instance ended: a sentence and where it comes from."""

    text: str
    seqs: tuple[int, ...]
    killed: bool  # by the kubelet (a probe, a hook, a changed spec), not on its own
    at: float | None  # when: the kill's event, or the first report of the exit
    evidence: tuple[Evidence, ...] = ()


OOM_KILLED = "OOMKilled"
"""The terminated reason of a container the kernel's OOM killer ended."""


def exit_evidence(instance: Instance) -> list[Evidence]:
    """What the runtime reported of an instance's exit: its code, the signal behind a code
    above 128, its reason, OOM, its termination message, when it finished."""
    status, at = instance.status, instance.exited
    if at is None:
        return []
    found = evidence("exitCode", status.exit_code, at)
    if status.exit_code > 128:
        with contextlib.suppress(ValueError):  # not a signal's number: the process's own
            found += evidence("signal", signal.Signals(status.exit_code - 128).name, at)
    found += evidence("reason", status.reason, at)
    if status.reason == OOM_KILLED:
        found += evidence("oomKilled", True, at)
    found += evidence("terminationMessage", status.message.strip(), at)
    if status.finished_at > 0:
        found += evidence("finishedAt", iso_time(status.finished_at), at)
    return found


def backoff_evidence(instance: Instance) -> list[Evidence]:
    """The crash-loop back-off after an instance's exit: its newest delay, the waiting
    message, and when the kubelet may start the container again (its exit plus the delay,
    as the kubelet's back-off counts)."""
    if not instance.backoffs:
        return []
    seen, delay, message = instance.backoffs[-1]
    found = evidence("backOff", delay, seen) + evidence("backOffMessage", message, seen)
    if instance.status.finished_at > 0:
        found += evidence("nextStart", iso_time(instance.status.finished_at + delay), seen)
    return found


def next_start(instance: Instance) -> str:
    """", next start at HH:MM:SS" after a back-off, when the exit's time is known."""
    if not instance.backoffs or instance.status.finished_at <= 0:
        return ""
    return f", next start at {clock_time(instance.status.finished_at + instance.backoffs[-1][1])}"


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


def probe_evidence(history: PodHistory, failed: list[tuple[Seen, ProbeOutcome]],
                   verdict: Seen | None, probe: Probe | None, container: str = ""
                   ) -> list[Evidence]:
    """The last failed attempt as upstream's Unhealthy event words it, its output and its
    exit code or HTTP status; how many failed in a row, against which threshold (about
    ``container``; "": the finding's own)."""
    if not failed:
        return []
    last, outcome = failed[-1]
    unhealthy = next((s for s, e in history.events(reasons.CONTAINER_UNHEALTHY)
                      if s.parent == last.id), None)
    found = []
    if unhealthy is not None and isinstance(unhealthy.message, RecordEvent):
        found += evidence("probeMessage", unhealthy.message.message, unhealthy, container)
    found += evidence("probeOutput", outcome.output.strip(), last, container)
    if probe is not None and probe.exec is not None:
        found += evidence("probeExitCode", outcome.code, last, container)
    elif probe is not None and probe.http_get is not None:
        found += evidence("httpStatus", outcome.code, last, container)
    found += evidence("probeFailures", len(failed), verdict or last, container)
    if probe is not None:
        found += evidence("failureThreshold", probe.failure_threshold, verdict or last,
                          container)
    return found


def probe_story(history: PodHistory, container: str, container_id: str, kind: ProbeKind,
                until: Seen) -> tuple[str, tuple[int, ...], list[Evidence]]:
    """"liveness probe failed 3 times (HTTP 500, threshold 3)", with its messages and its
    evidence."""
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
    found = probe_evidence(history, failed, verdict[0] if verdict else None, probe)
    return text, ids((s for s, _ in failed), (verdict[0] if verdict else None,)), found


def ending(history: PodHistory, container: str, instance: Instance) -> Ending:
    """How ``instance`` ended: killed by the kubelet (why, with what grace) or on its own,
    with the exit the runtime reported as evidence either way."""
    status = instance.status
    exited = exit_evidence(instance)
    call = _stop_call(history, status.id)
    if call is not None:
        kill = _kill_event(history, call, container)
        killing, event = kill if kill is not None else (None, None)
        grace = _grace_text(history, call, killing, container)
        message = event.message if event is not None else ""
        said = evidence("killMessage", message, killing)
        pre_stop = pre_stop_failure(history, call.within, container)
        if pre_stop is not None:
            grace += ", its preStop hook failed" + hook_quote(pre_stop[1])
            said += hook_evidence(*pre_stop)
        hook = next(((s, e) for s, e in history.events(reasons.FAILED_POST_START_HOOK, container)
                     if s.parent == call.within), None)
        seqs = ids((killing, call.within), (pre_stop[0] if pre_stop else None,))
        at = killing.t if killing is not None else call.t
        if hook is not None:
            hooked = hook_evidence(*hook)
            if hook[1].hook_output is None:
                # Traced before the output went beside the event: the failed step's
                # message (the container's waiting message) holds it.
                step = _step_message(history, call.within, container, "PostStartHookError")
                why = f"its postStart hook failed ({step[1]})" if step else \
                    "its postStart hook failed"
                if step:
                    hooked += evidence("hookOutput", step[1], step[0])
            else:
                why = "its postStart hook failed" + hook_quote(hook[1])
            return Ending(f"{why}, container {grace}", ids(seqs, (hook[0],)), True, hook[0].t,
                          (*hooked, *(e for e in said if e.field == "killMessage"),
                           *exited))
        for kind in (ProbeKind.LIVENESS, ProbeKind.STARTUP):
            if f"failed {kind.value} probe" in message and killing is not None:
                story, probe_seqs, probed = probe_story(history, container, status.id, kind,
                                                        killing)
                return Ending(f"{story}, container {grace}", ids(seqs, probe_seqs), True, at,
                              (*probed, *said, *exited))
        if message and "Stopping container" not in message:
            return Ending(f"{message[:1].lower()}{message[1:]}: container {grace}", seqs, True,
                          at, (*said, *exited))
        changed = next((s for s, _ in history.events(reasons.SANDBOX_CHANGED, "")
                        if s.parent == call.within), None)
        if changed is not None:
            return Ending(f"its pod's sandbox changed (it is killed and re-created), "
                          f"container {grace}", ids(seqs, (changed,)), True, at,
                          (*said, *exited))
        if killing is not None:
            return Ending(f"stopped with its pod, container {grace}", seqs, True, at,
                          (*said, *exited))
    seen = instance.exited
    code = f"exited with code {status.exit_code}"
    if status.reason:
        code += f" ({status.reason})"
    if status.message.strip():
        code += f': "{status.message.strip()[:160]}"'
    return Ending(code, ids((seen,)), False, seen.t if seen is not None else None,
                  tuple(exited))


def pre_stop_failure(history: PodHistory, within: int, container: str
                     ) -> tuple[Seen, RecordEvent] | None:
    """The FailedPreStopHook event of ``container`` the handler of delivery ``within``
    recorded (its kill ran the hook)."""
    return next(((s, e) for s, e in history.events(reasons.FAILED_PRE_STOP_HOOK, container)
                 if s.parent == within), None)


def hook_quote(event: RecordEvent) -> str:
    """`` (exit code 3: "cache not found")``: what a failed hook said, for a sentence;
    "" when the trace holds nothing of it."""
    said = event.hook_output
    if said is None:
        return ""
    parts = [f"exit code {said.exit_code}"] if said.exit_code is not None else []
    if said.output:
        parts.append(f'"{said.output[:120]}"')
    return f" ({': '.join(parts)})" if parts else ""


def hook_evidence(seen: Seen, event: RecordEvent, container: str = "") -> list[Evidence]:
    """A failed hook's event message (upstream's: "PreStopHook failed"), and beside it
    what the hook said: its output and exit code."""
    said = event.hook_output
    return (evidence("hookMessage", event.message, seen, container)
            + (evidence("hookOutput", said.output, seen, container)
               + evidence("hookExitCode", said.exit_code, seen, container)
               if said is not None else []))


def _step_message(history: PodHistory, within: int, container: str, error: str
                  ) -> tuple[Seen, str] | None:
    """The message of the failed step ``error`` the handler of delivery ``within`` reported."""
    for seen, observed in history.of(PodObserved):
        if seen.parent != within or observed.sync is None:
            continue
        for step in observed.sync.steps:
            if step.target == container and step.error == error:
                return seen, step.message
    return None


def _backoff_text(waits: list[tuple[Seen, float, str]]) -> str:
    delays = list(dict.fromkeys(delay for _, delay, _ in waits))
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
                               ids(end.seqs, (s for s, _, _ in before.backoffs[:1]),
                                   (instance.first, started)), container,
                               (*end.evidence, *backoff_evidence(before))))
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
            text += (f"; waiting to restart: {_backoff_text(last.backoffs)} (CrashLoopBackOff)"
                     f"{next_start(last)}")
        elif policy == "Never" or (policy == "OnFailure" and last.status.exit_code == 0):
            text += f"; restartPolicy {policy}: not restarted"
        out.append(Finding(last.exited.t, "exit", text,
                           ids(end.seqs, (last.exited,), (s for s, _, _ in last.backoffs[-1:])),
                           container, (*end.evidence, *backoff_evidence(last))))
    return out

