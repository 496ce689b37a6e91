"""``/metrics/probes``: every probe attempt counted by result, as upstream's prober does.

upstream pkg/kubelet/prober/prober_manager.go: ``prober_probe_total`` (a counter; labels
probe_type, result, container, pod, namespace, pod_uid) on a registry of its own that the
kubelet serves at /metrics/probes. probe_type is ``Liveness``, ``Readiness`` or ``Startup``
(its probeType.String()); result ``successful``, ``failed`` or ``unknown``. A probe
worker that stops deletes its series (worker.go), so gone containers leave no series.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from actors.kubelet.messages import ProbeKind
from runtime.prober.results import ProbeResult

PROBE_TYPES = {ProbeKind.LIVENESS: "Liveness", ProbeKind.READINESS: "Readiness",
               ProbeKind.STARTUP: "Startup"}
RESULTS = {ProbeResult.SUCCESS: "successful", ProbeResult.FAILURE: "failed",
           ProbeResult.UNKNOWN: "unknown"}


class ProbeMetrics:
    """The prober's registry, filled by the probe manager."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.probe_total = Counter(
            "prober_probe_total", "Cumulative number of a liveness, readiness or startup "
            "probe for a container by result.",
            ["probe_type", "result", "container", "pod", "namespace", "pod_uid"],
            registry=self.registry)

    def observe(self, kind: ProbeKind, result: ProbeResult, container: str, pod: str,
                namespace: str, uid: str) -> None:
        self.probe_total.labels(PROBE_TYPES[kind], RESULTS[result], container, pod,
                                namespace, uid).inc()

    def forget(self, kind: ProbeKind, container: str, pod: str, namespace: str,
               uid: str) -> None:
        """A worker stopped: its series go (as upstream's ProberResults.Delete)."""
        for result in RESULTS.values():
            try:
                self.probe_total.remove(PROBE_TYPES[kind], result, container, pod,
                                        namespace, uid)
            except KeyError:
                continue
