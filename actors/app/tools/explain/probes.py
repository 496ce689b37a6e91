"""Readiness and startup: when a container turned ready or not ready, and why.

Read from the probe manager's verdicts (ProbeVerdict: a probe's result flipped after its
thresholds) and the attempts that led to each (ProbeOutcome, with their output). A
liveness or startup failure that killed a container is told with its restart
(actors.app.tools.explain.restarts).
"""

from __future__ import annotations

from actors.app.tools.explain.model import Finding, PodHistory, clock_time, ids
from actors.app.tools.explain.restarts import probe_story
from actors.kubelet.messages import ProbeKind, ProbeVerdict
from actors.kubelet.probe_manager import ProbeOutcome
from runtime.prober.results import ProbeResult


def readiness_findings(history: PodHistory) -> list[Finding]:
    out: list[Finding] = []
    for seen, verdict in history.of(ProbeVerdict):
        name, at = verdict.container_name, clock_time(seen.t)
        parent = history.by_id(seen.parent) if seen.parent is not None else None
        from_attempt = parent is not None and isinstance(parent.message, ProbeOutcome)
        if verdict.kind == ProbeKind.READINESS:
            if verdict.result == ProbeResult.SUCCESS:
                out.append(Finding(seen.t, "ready", f"container {name} ready at {at}: its "
                                   "readiness probe succeeded", ids((parent, seen)), name))
            elif not from_attempt:
                out.append(Finding(seen.t, "not-ready", f"container {name} not ready from "
                                   f"{at}: a new container is not ready until its readiness "
                                   "probe succeeds", ids((seen,)), name))
            else:
                story, seqs, found = probe_story(history, name, verdict.container_id,
                                                 ProbeKind.READINESS, seen)
                out.append(Finding(seen.t, "not-ready", f"container {name} not ready from "
                                   f"{at}: {story}", ids(seqs, (seen,)), name, tuple(found)))
        elif verdict.kind == ProbeKind.STARTUP and verdict.result == ProbeResult.SUCCESS:
            out.append(Finding(seen.t, "started", f"container {name}'s startup probe "
                               f"succeeded at {at}: liveness and readiness probes run from "
                               "now", ids((parent, seen)), name))
    return out
