"""Where the pod stands when the trace ends, and why: still Pending (admission, sandbox,
volumes, images), running but not ready (readiness probes, containers waiting), or done.

The status is computed from the newest runtime status and sync result the pod worker
reported, with the probe verdicts, by upstream's rules (runtime.status.generate), as the
status manager computes it; the reasons come from the messages behind it, with the
evidence of every container that waits or is not ready, each piece naming its container.
"""

from __future__ import annotations

from actors.app.tools.explain.admission import refusal_evidence
from actors.app.tools.explain.model import (
    Evidence,
    Finding,
    PodHistory,
    Seen,
    clock_time,
    container_of_path,
    evidence,
    ids,
)
from actors.app.tools.explain.restarts import probe_evidence
from actors.kubelet.messages import (
    PodObserved,
    PodRejected,
    PodWorkerDone,
    ProbeKind,
    ProbeVerdict,
    UpdateKind,
    UpdatePod,
    WorkerState,
)
from actors.kubelet.probe_manager import ProbeOutcome
from runtime.events import reasons
from runtime.ids import ContainerID
from runtime.prober.results import ProbeResult
from runtime.status.generate import generate_pod_status
from runtime.status.types import PodStatus

POD_STEPS = {"CreatePodSandbox": "creating its sandbox", "MountVolumes": "mounting its volumes",
             "CreatePodCgroup": "creating its cgroup",
             "PrepareDynamicResources": "preparing its resource claims"}


STEP_EVIDENCE = {"CreatePodSandbox": "sandboxError", "MountVolumes": "mountError"}
"""The evidence field of a failed pod-level step's message."""


def _pod_step_failures(history: PodHistory, since: int) -> tuple[list[str], list[Evidence]]:
    """Failed pod-level steps (sandbox, volumes) since the last one that worked, and their
    newest errors verbatim."""
    failed: dict[str, tuple[int, Seen, str, str]] = {}
    newest: dict[str, tuple[Seen, str]] = {}
    for seen, observed in history.of(PodObserved):
        if seen.id < since or observed.sync is None:
            continue
        for step in observed.sync.steps:
            if step.action not in POD_STEPS:
                continue
            if step.ok:
                failed.pop(step.action, None)
            else:
                count = failed[step.action][0] + 1 if step.action in failed else 1
                first = failed[step.action][1] if step.action in failed else seen
                failed[step.action] = (count, first, step.error, step.message)
                newest[step.action] = (seen, step.message)
    found: list[Evidence] = []
    for action in failed:
        if action in STEP_EVIDENCE:
            found += evidence(STEP_EVIDENCE[action], newest[action][1], newest[action][0])
    return [f"{POD_STEPS[action]} failed {count} time{'s' if count > 1 else ''} since "
            f"{clock_time(first.t)} ({error}: {message[:200]})"
            for action, (count, first, error, message) in failed.items()], found


def failing_attempts(history: PodHistory, container_id: ContainerID, kind: ProbeKind
                     ) -> list[tuple[Seen, ProbeOutcome]]:
    """The attempts of a probe that failed since the last one that succeeded, to the end of
    the trace (a container never ready has its first verdict from no attempt at all)."""
    failed: list[tuple[Seen, ProbeOutcome]] = []
    for seen, outcome in history.of(ProbeOutcome):
        if outcome.container_id != container_id or outcome.kind != kind:
            continue
        failed = [] if outcome.result == ProbeResult.SUCCESS else [*failed, (seen, outcome)]
    return failed


def _init_wait(status: PodStatus, seen: Seen) -> tuple[str, list[Evidence]]:
    """The init container a Pending pod waits for (the first that has not succeeded) and
    where it stands; "" when none holds it."""
    total = len(status.init_container_statuses)
    for number, init in enumerate(status.init_container_statuses, 1):
        state = init.state
        if state.terminated is not None and state.terminated.exit_code == 0:
            continue
        if state.running is not None:
            where = "running"
        elif state.terminated is not None:
            where = (f"exited with code {state.terminated.exit_code}"
                     + (f" ({state.terminated.reason})" if state.terminated.reason else ""))
        elif state.waiting is not None and state.waiting.reason:
            where = f"waiting: {state.waiting.reason}"
        else:
            where = "not started"
        if init.restart_count:
            where += f", restarted {init.restart_count} time{'s' if init.restart_count > 1 else ''}"
        return (f"waiting for init container {init.name} ({number} of {total}): {where}",
                evidence("initContainer", init.name, seen, init.name))
    return "", []


def pulls_in_flight(history: PodHistory) -> list[tuple[Seen, str]]:
    """Pulls the trace shows begun and not ended (a Pulling event, no Pulled or Failed
    after it for that container): what a pod waits on while its sync pulls."""
    started: dict[str, tuple[Seen, str]] = {}
    for seen, event in history.events():
        name = container_of_path(event.ref.field_path)
        if event.reason == reasons.PULLING_IMAGE:
            started[name] = (seen, event.message)
        elif event.reason in (reasons.PULLED_IMAGE, reasons.FAILED_TO_PULL_IMAGE,
                              reasons.BACK_OFF_PULL_IMAGE):
            started.pop(name, None)
    return [(seen, f"{name}: {message[:1].lower()}{message[1:]} since {clock_time(seen.t)}")
            for name, (seen, message) in started.items()]


def state_findings(history: PodHistory) -> list[Finding]:
    end = history.trace_end
    rejected = next(((s, r) for s, r in history.of(PodRejected)), None)
    if rejected is not None:
        seen, refusal = rejected
        return [Finding(end, "state", f"now Failed: rejected at admission ({refusal.reason})",
                        ids((seen,)), "", tuple(refusal_evidence(seen, refusal)))]
    done = next(((s, d) for s, d in history.of(PodWorkerDone)
                 if d.state == WorkerState.TERMINATED), None)
    kill = next(((s, u) for s, u in history.of(UpdatePod) if u.kind == UpdateKind.KILL), None)
    if done is not None and kill is not None and kill[1].remove:
        return [Finding(end, "state", f"now gone: stopped at {clock_time(done[0].t)} and "
                        "removed from the node", ids((kill[0], done[0])))]
    observed = list(history.of(PodObserved))
    pulling = pulls_in_flight(history)
    if not observed:
        first = next((s for s, _ in history.of(UpdatePod)), None)
        text = ("now Pending: admitted, its first sync has not finished" if first is not None
                else "now Pending: the kubelet has not admitted it (waiting for another pod "
                "of the same name to stop, or not seen yet)")
        if pulling:
            text += "; " + "; ".join(why for _, why in pulling)
        return [Finding(end, "state", text, ids((first,), (s for s, _ in pulling)))]
    last_seen, last = observed[-1]
    readiness: dict[ContainerID, ProbeResult] = {}
    startup: dict[ContainerID, ProbeResult] = {}
    verdict_seen: dict[ContainerID, Seen] = {}
    for seen, verdict in history.of(ProbeVerdict):
        if verdict.kind == ProbeKind.READINESS:
            readiness[verdict.container_id] = verdict.result
            verdict_seen[verdict.container_id] = seen
        elif verdict.kind == ProbeKind.STARTUP:
            startup[verdict.container_id] = verdict.result
    sync = next((o.sync for _, o in reversed(observed) if o.sync is not None), None)
    status = generate_pod_status(last.pod, last.runtime, sync, readiness, startup)
    # A pod-level verdict (DeadlineExceeded, Evicted) holds from the report that gave it
    # on, as the status manager keeps it.
    failed = next(((s, o) for s, o in observed if o.failed_reason), None)
    phase = "Failed" if failed is not None else status.phase
    causes: list[str] = []
    found: list[Evidence] = []
    seqs: list[Seen | None] = [last_seen]
    if failed is not None:
        causes.append(f"{failed[1].failed_reason}: {failed[1].failed_message}")
        seqs.append(failed[0])
    elif status.reason:
        causes.append(f"{status.reason}: {status.message}")
    if phase == "Pending":
        last_ok = max((s.id for s, o in observed if o.runtime.ready_sandbox is not None),
                      default=0)
        steps, step_evidence = _pod_step_failures(history, last_ok)
        causes.extend(steps)
        found += step_evidence
        init_wait, init_evidence = _init_wait(status, last_seen)
        if init_wait:
            causes.append(init_wait)
            found += init_evidence
    for container in (*status.init_container_statuses, *status.container_statuses):
        waiting = container.state.waiting
        if waiting is not None:
            reason = f"{container.name} waiting: {waiting.reason}"
            if waiting.message:
                reason += f": {waiting.message[:200]}"
            causes.append(reason)
            found += (evidence("waitingReason", waiting.reason, last_seen, container.name)
                      + evidence("waitingMessage", waiting.message, last_seen, container.name))
        elif container.state.running is not None and not container.ready and phase == "Running":
            why = f"{container.name} running, not ready"
            cid = ContainerID(container.container_id.split("://", 1)[-1])
            if readiness.get(cid) == ProbeResult.FAILURE and cid in verdict_seen:
                attempts = failing_attempts(history, cid, ProbeKind.READINESS)
                outputs = list(dict.fromkeys(o.output.strip() for _, o in attempts
                                             if o.output.strip()))
                why += f": readiness probe failing since {clock_time(verdict_seen[cid].t)}"
                if outputs:
                    why += f' ("{outputs[-1][:120]}")'
                spec = history.container_spec(container.name)
                found += probe_evidence(
                    history, attempts, None, spec.readiness_probe if spec is not None else None,
                    container.name)
                seqs.append(verdict_seen[cid])
                seqs.extend(s for s, _ in attempts[-1:])
            elif (startup.get(cid) != ProbeResult.SUCCESS
                  and (spec := history.container_spec(container.name)) is not None
                  and spec.startup_probe is not None):
                why += ": its startup probe has not succeeded yet"
            else:
                why += ": waiting for its first readiness probe"
            causes.append(why)
        elif container.state.terminated is not None and phase in ("Running", "Pending"):
            term = container.state.terminated
            causes.append(f"{container.name} terminated: exit code {term.exit_code}"
                           + (f" ({term.reason})" if term.reason else ""))
    late = [(s, why) for s, why in pulling if s.id > last_seen.id]
    causes.extend(why for _, why in late)
    seqs.extend(s for s, _ in late)
    ready = any(c.type == "Ready" and c.status == "True" for c in status.conditions)
    head = f"now {phase}" + (", ready" if phase == "Running" and ready else "")
    if phase == "Running" and not ready:
        head += ", not ready"
    text = head + (": " + "; ".join(causes) if causes else "")
    text += f" (as of {clock_time(last_seen.t)}, the pod worker's last report)"
    return [Finding(end, "state", text, ids(seqs), "", tuple(found))]
