"""Prometheus metrics, named as upstream's kubelet names them where it has them.

A ``Counter`` is exported as ``<name>_total`` (upstream's ``_total`` names); an
``ExactCounter`` as ``<name>`` (upstream's counters named without it).

One registry per kubelet (not the global default), so tests and several kubelets in one
process never share counters.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from actors.kubelet.metric_text import ExactCounter

_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_START_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 45.0,
                  60.0, 120.0, 300.0)


class KubeletMetrics:
    """Every metric the kubelet exports, on its own registry."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.running_pods = Gauge(
            "kubelet_running_pods", "Number of pods that have a running pod sandbox",
            registry=r)
        self.running_containers = Gauge(
            "kubelet_running_containers", "Number of containers currently running",
            ["container_state"], registry=r)
        self.pod_start_duration = Histogram(
            "kubelet_pod_start_duration_seconds",
            "Duration in seconds from the kubelet seeing a pod for the first time to the pod "
            "starting to run", buckets=_START_BUCKETS, registry=r)
        self.pleg_relist_duration = Histogram(
            "kubelet_pleg_relist_duration_seconds",
            "Duration in seconds for relisting pods in PLEG.", buckets=_DURATION_BUCKETS,
            registry=r)
        self.pleg_last_seen = Gauge(
            "kubelet_pleg_last_seen_seconds",
            "Timestamp in seconds when PLEG was last seen active.", registry=r)
        self.evented_pleg_connection_success = ExactCounter(
            "kubelet_evented_pleg_connection_success_count", "The number of times a "
            "streaming client was obtained to receive events from the runtime.", registry=r)
        self.evented_pleg_connection_error = ExactCounter(
            "kubelet_evented_pleg_connection_error_count", "The number of errors encountered "
            "during the establishment of streaming connection with the runtime.", registry=r)
        self.runtime_events_source = Gauge(
            "kubelet_actors_runtime_events_source", "1 for the source of the runtime event "
            "stream the PLEG holds open (cri: GetContainerEvents; containerd: its events "
            "service), 0 once it is lost.", ["source"], registry=r)
        self.runtime_operations = Counter(
            "kubelet_runtime_operations", "Cumulative number of runtime operations by "
            "operation type.", ["operation_type"], registry=r)
        self.runtime_operation_errors = Counter(
            "kubelet_runtime_operations_errors", "Cumulative number of runtime operation "
            "errors by operation type.", ["operation_type"], registry=r)
        self.runtime_operation_duration = Histogram(
            "kubelet_runtime_operations_duration_seconds",
            "Duration in seconds of runtime operations. Broken down by operation type.",
            ["operation_type"], buckets=_DURATION_BUCKETS, registry=r)
        self.pod_worker_duration = Histogram(
            "kubelet_pod_worker_duration_seconds",
            "Duration in seconds to sync a single pod. Broken down by operation type: "
            "create, update, or sync", ["operation_type"], buckets=_DURATION_BUCKETS,
            registry=r)
        self.manifest_errors = Counter(
            "kubelet_actors_manifest_errors", "Manifests rejected, by source.", ["source"],
            registry=r)
        self.manifest_errors_current = Gauge(
            "kubelet_actors_manifest_errors_current",
            "Manifests currently rejected, by source.", ["source"], registry=r)
        self.mailbox_depth = Gauge(
            "kubelet_actors_mailbox_depth", "Messages waiting in an actor's mailbox "
            "(pod workers summed).", ["actor"], registry=r)
        self.actor_restarts = Counter(
            "kubelet_actors_restarts", "Actors replaced by their supervisor after a failure.",
            ["actor"], registry=r)
        self.dead_letters = Counter(
            "kubelet_actors_dead_letters", "Messages sent to an actor that was not alive.",
            ["message"], registry=r)
        self.dead_letters_unhandled = Counter(
            "kubelet_actors_dead_letters_unhandled",
            "Dead letters neither redelivered to a restarted actor nor dropped by rule.",
            ["message"], registry=r)
        self.image_garbage_collected = Counter(
            "kubelet_image_garbage_collected", "Total number of images garbage "
            "collected by the kubelet, whether through disk usage or image age.", ["reason"],
            registry=r)
        self.evictions = ExactCounter(
            "kubelet_evictions", "Cumulative number of pod evictions by eviction signal",
            ["eviction_signal"], registry=r)
        self.eviction_stats_age = Histogram(
            "kubelet_eviction_stats_age_seconds", "Time between when stats are collected, "
            "and when pod is evicted based on those stats by eviction signal",
            ["eviction_signal"], registry=r)
        self.containerd_restarts = Counter(
            "kubelet_actors_containerd_restarts",
            "Times the embedded containerd was restarted.", registry=r)
        # Upstream's help of the end time says "start" too: kept, as monitoring matches it.
        self.graceful_shutdown_start_time = Gauge(
            "kubelet_graceful_shutdown_start_time_seconds",
            "Last graceful shutdown start time since unix epoch in seconds", registry=r)
        self.graceful_shutdown_end_time = Gauge(
            "kubelet_graceful_shutdown_end_time_seconds",
            "Last graceful shutdown start time since unix epoch in seconds", registry=r)

    def observe_runtime_call(self, method: str, seconds: float, ok: bool) -> None:
        """The hook runtime.cri.instrumented calls for every CRI call."""
        self.runtime_operations.labels(method).inc()
        self.runtime_operation_duration.labels(method).observe(seconds)
        if not ok:
            self.runtime_operation_errors.labels(method).inc()
