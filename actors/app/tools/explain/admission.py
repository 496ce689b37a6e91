"""A pod the kubelet refused at admission: upstream's reason and message."""

from __future__ import annotations

from actors.app.tools.explain.model import Finding, PodHistory, clock_time, evidence, ids
from actors.kubelet.messages import PodRejected


def admission_findings(history: PodHistory) -> list[Finding]:
    return [Finding(seen.t, "admission",
                    f"rejected at admission at {clock_time(seen.t)}: {rejected.reason}: "
                    f"{rejected.message} (the pod is Failed and never runs here)",
                    ids((seen,)), "",
                    (*evidence("admissionReason", rejected.reason, seen),
                     *evidence("admissionMessage", rejected.message, seen)))
            for seen, rejected in history.of(PodRejected)]
