"""A pod the kubelet refused at admission, as ``kubectl describe pod`` shows it: its
status's Reason (OutOfcpu, NodeAffinity, ...) and Message ("Pod was rejected: " and the
refusal's message, as upstream's rejectPod writes it; the refusal's event, which describe
lists under Events, carries the message alone)."""

from __future__ import annotations

from actors.app.tools.explain.model import (
    Evidence,
    Finding,
    PodHistory,
    Seen,
    clock_time,
    evidence,
    ids,
)
from actors.kubelet.messages import PodRejected


def refusal_evidence(seen: Seen, rejected: PodRejected) -> list[Evidence]:
    """The reason and the status message of the refusal."""
    return (evidence("admissionReason", rejected.reason, seen)
            + evidence("admissionMessage", rejected.status_message, seen))


def admission_findings(history: PodHistory) -> list[Finding]:
    return [Finding(seen.t, "admission",
                    f"rejected at admission at {clock_time(seen.t)} (the pod is Failed and "
                    f"never runs here): Reason: {rejected.reason}, Message: "
                    f"{rejected.status_message}",
                    ids((seen,)), "", tuple(refusal_evidence(seen, rejected)))
            for seen, rejected in history.of(PodRejected)]
