"""``kubelet-actors explain``: the chain of causes behind a pod's state, read from a trace.

Pure functions: trace records in, findings out. ``model`` reads one pod's messages from
the records; one module per kind of finding reads them (``restarts``: starts, restarts,
exits and kills of containers with their probe, hook and back-off chains; ``images``:
image pulls; ``admission``; ``termination``: removal, deletion, active deadline, eviction
and other pod-level failures, orphans; ``probes``: readiness and startup flips;
``state``: where the pod stands when the trace ends and why). Each finding carries the
evidence it rests on (model.Evidence: an exit code, a probe's message, an error verbatim)
with the delivery it was read from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from actors.app.tools.explain.admission import admission_findings
from actors.app.tools.explain.images import image_findings
from actors.app.tools.explain.model import (
    Finding,
    PodHistory,
    PodKey,
    match_pods,
    pods_in,
    read_history,
)
from actors.app.tools.explain.probes import readiness_findings
from actors.app.tools.explain.restarts import exit_findings, restart_findings
from actors.app.tools.explain.state import state_findings
from actors.app.tools.explain.termination import failure_findings, kill_findings, orphan_findings

SCHEMA = 2
"""The version of ``-o json``'s (and ``-o yaml``'s) layout; a change that breaks readers
bumps it (a new key does not). Version 2::

    {"schema": 2, "trace": DIR,
     "pods": [{"uid", "name", "namespace", "pid": the daemon's,
               "findings": [{"time": RFC 3339 UTC, "kind", "container": "" for the pod,
                             "text", "seqs": [delivery ids],
                             "evidence": [{"field", "value",
                                           "container": "" for the pod,
                                           "seq": its delivery id,
                                           "time": RFC 3339 UTC}]}]}]}

FIELDs: model.EVIDENCE_FIELDS. (Version 1 keyed ``evidence`` by field, one piece each: a
pod's state quotes a field for each container that waits or is not ready.)

Kinds: start, restart, exit, image, admission, ready, not-ready, started, deadline,
eviction, failed, deletion, orphan, and state (always last: where the pod stands)."""

FINDERS: tuple[Callable[[PodHistory], list[Finding]], ...] = (
    admission_findings, restart_findings, exit_findings, image_findings, readiness_findings,
    failure_findings, kill_findings, orphan_findings)
"""The finding modules, run in this order; the current state comes last."""


@dataclass(frozen=True, slots=True)
class PodExplanation:
    """Everything ``explain`` says about one pod (one UID)."""

    uid: str
    name: str
    namespace: str
    findings: tuple[Finding, ...]

    def to_json(self) -> dict[str, Any]:
        return {"uid": self.uid, "name": self.name, "namespace": self.namespace,
                "findings": [f.to_json() for f in self.findings]}


def explain_history(history: PodHistory, container: str | None = None) -> PodExplanation:
    """The findings about one pod, oldest first, the state last (``container``: only its
    own findings and the pod's, with the evidence about it or the pod)."""
    found: list[Finding] = []
    for finder in FINDERS:
        found.extend(finder(history))
    found.sort(key=lambda f: (f.time, f.seqs[:1]))
    found.extend(state_findings(history))
    found = [f.with_containers() for f in found]
    if container is not None:
        found = [dataclasses.replace(f, evidence=tuple(
            e for e in f.evidence if e.container in ("", container)))
            for f in found if f.container in ("", container)]
    return PodExplanation(history.uid, history.name, history.namespace, tuple(found))


def explain(records: Sequence[dict[str, Any]], pod: str, namespace: str | None = None,
            container: str | None = None) -> list[PodExplanation]:
    """Explain every pod ``pod`` names in the trace (a name, ``ns/name`` or a UID prefix;
    several pods when a name was used by several UIDs), oldest first. Empty: none."""
    keys = match_pods(pods_in(records), pod, namespace)
    return [explain_history(read_history(records, key), container) for key in keys]


def known_pods(records: Iterable[dict[str, Any]]) -> list[PodKey]:
    """Every pod the trace names, to say which there are when a query matches none."""
    return pods_in(records)


__all__ = ["SCHEMA", "Finding", "PodExplanation", "PodKey", "explain", "explain_history",
           "known_pods"]
