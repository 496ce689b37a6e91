"""Prometheus collectors over the cached stats: ``/metrics/resource`` and
``/metrics/cadvisor``.

``/metrics/resource`` is upstream's resource metrics collector
(pkg/kubelet/metrics/collectors/resource_metrics.go): node, pod and container CPU
(counters, seconds) and working set (gauges), each sample stamped with its stats time;
``container_start_time_seconds`` without a stamp; ``scrape_error`` (deprecated in 1.29) and
``resource_scrape_error``, 1 when the stats could not be had. ``/metrics/cadvisor`` has the
``container_*`` series dashboards read, labelled as cAdvisor labels them (container, id,
image, name, namespace, pod): one set per container, one per pod cgroup (container "") and
one for the node's root cgroup (id "/").
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from runtime.stats import summary as s
from runtime.stats.collector import ContainerInfo, StatsSnapshot

_NS = 1e9


def _stamp(go_time: str) -> float:
    """A metav1.Time string back to seconds (the sample's timestamp)."""
    return float(calendar.timegm(time.strptime(go_time, "%Y-%m-%dT%H:%M:%SZ")))


class ResourceMetrics(Collector):
    """upstream's resourceMetricsCollector over a snapshot getter."""

    def __init__(self, snapshot: Callable[[], StatsSnapshot | None]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot()
        error = 1.0 if snap is None or snap.error else 0.0
        node_cpu = CounterMetricFamily(
            "node_cpu_usage_seconds", "Cumulative cpu time consumed by the node in "
            "core-seconds")
        node_mem = GaugeMetricFamily(
            "node_memory_working_set_bytes", "Current working set of the node in bytes")
        start = GaugeMetricFamily(
            "container_start_time_seconds", "Start time of the container since unix epoch "
            "in seconds", labels=["container", "pod", "namespace"])
        c_cpu = CounterMetricFamily(
            "container_cpu_usage_seconds", "Cumulative cpu time consumed by the container "
            "in core-seconds", labels=["container", "pod", "namespace"])
        c_mem = GaugeMetricFamily(
            "container_memory_working_set_bytes", "Current working set of the container in "
            "bytes", labels=["container", "pod", "namespace"])
        p_cpu = CounterMetricFamily(
            "pod_cpu_usage_seconds", "Cumulative cpu time consumed by the pod in "
            "core-seconds", labels=["pod", "namespace"])
        p_mem = GaugeMetricFamily(
            "pod_memory_working_set_bytes", "Current working set of the pod in bytes",
            labels=["pod", "namespace"])
        if snap is not None:
            node = snap.summary.node
            if node.cpu is not None and node.cpu.usage_core_nano_seconds is not None:
                node_cpu.add_metric([], node.cpu.usage_core_nano_seconds / _NS,
                                    timestamp=_stamp(node.cpu.time))
            if node.memory is not None and node.memory.working_set_bytes is not None:
                node_mem.add_metric([], node.memory.working_set_bytes,
                                    timestamp=_stamp(node.memory.time))
            for pod in snap.summary.pods:
                ref = pod.pod_ref
                for c in pod.containers:
                    labels = [c.name, ref.name, ref.namespace]
                    if _stamp(c.start_time) > 0:
                        start.add_metric(labels, _stamp(c.start_time))
                    if c.cpu is not None and c.cpu.usage_core_nano_seconds is not None:
                        c_cpu.add_metric(labels, c.cpu.usage_core_nano_seconds / _NS,
                                         timestamp=_stamp(c.cpu.time))
                    if c.memory is not None and c.memory.working_set_bytes is not None:
                        c_mem.add_metric(labels, c.memory.working_set_bytes,
                                         timestamp=_stamp(c.memory.time))
                if pod.cpu is not None and pod.cpu.usage_core_nano_seconds is not None:
                    p_cpu.add_metric([ref.name, ref.namespace],
                                     pod.cpu.usage_core_nano_seconds / _NS,
                                     timestamp=_stamp(pod.cpu.time))
                if pod.memory is not None and pod.memory.working_set_bytes is not None:
                    p_mem.add_metric([ref.name, ref.namespace], pod.memory.working_set_bytes,
                                     timestamp=_stamp(pod.memory.time))
        yield from (node_cpu, node_mem, start, c_cpu, c_mem, p_cpu, p_mem)
        for name in ("scrape_error", "resource_scrape_error"):
            gauge = GaugeMetricFamily(name, "1 if there was an error while getting container "
                                      "metrics, 0 otherwise")
            gauge.add_metric([], error)
            yield gauge


_CADVISOR_LABELS = ["container", "id", "image", "name", "namespace", "pod"]


class _Families:
    """The cAdvisor families one scrape fills."""

    def __init__(self) -> None:
        L = _CADVISOR_LABELS
        # cAdvisor's extra "cpu" label: "total" (the kubelet turns per-CPU usage off).
        self.cpu = CounterMetricFamily(
            "container_cpu_usage_seconds", "Cumulative cpu time consumed in seconds.",
            labels=[*L, "cpu"])
        self.ws = GaugeMetricFamily(
            "container_memory_working_set_bytes", "Current working set in bytes.", labels=L)
        self.usage = GaugeMetricFamily(
            "container_memory_usage_bytes", "Current memory usage in bytes, including all "
            "memory regardless of when it was accessed", labels=L)
        self.rss = GaugeMetricFamily("container_memory_rss", "Size of RSS in bytes.", labels=L)
        self.faults = CounterMetricFamily(
            "container_memory_failures", "Cumulative count of memory allocation failures.",
            labels=[*L, "failure_type", "scope"])
        self.fs = GaugeMetricFamily(
            "container_fs_usage_bytes", "Number of bytes that are consumed by the container "
            "on this filesystem.", labels=[*L, "device"])
        self.start = GaugeMetricFamily(
            "container_start_time_seconds", "Start time of the container since unix epoch in "
            "seconds.", labels=L)
        self.seen = GaugeMetricFamily(
            "container_last_seen", "Last time a container was seen by the exporter", labels=L)
        self.rx = CounterMetricFamily(
            "container_network_receive_bytes", "Cumulative count of bytes received",
            labels=[*L, "interface"])
        self.tx = CounterMetricFamily(
            "container_network_transmit_bytes", "Cumulative count of bytes transmitted",
            labels=[*L, "interface"])
        self.rx_err = CounterMetricFamily(
            "container_network_receive_errors", "Cumulative count of errors encountered "
            "while receiving", labels=[*L, "interface"])
        self.tx_err = CounterMetricFamily(
            "container_network_transmit_errors", "Cumulative count of errors encountered "
            "while transmitting", labels=[*L, "interface"])
        self.procs = GaugeMetricFamily(
            "container_processes", "Number of processes running inside the container.",
            labels=L)

    def all(self) -> tuple[Metric, ...]:
        return (self.cpu, self.ws, self.usage, self.rss, self.faults, self.fs, self.start,
                self.seen, self.rx, self.tx, self.rx_err, self.tx_err, self.procs)

    def cpu_memory(self, labels: list[str], cpu: s.CPUStats | None,
                   memory: s.MemoryStats | None) -> None:
        if cpu is not None and cpu.usage_core_nano_seconds is not None:
            self.cpu.add_metric([*labels, "total"], cpu.usage_core_nano_seconds / _NS,
                                timestamp=_stamp(cpu.time))
        if memory is None:
            return
        at = _stamp(memory.time)
        for family, value in ((self.ws, memory.working_set_bytes),
                              (self.usage, memory.usage_bytes), (self.rss, memory.rss_bytes)):
            if value is not None:
                family.add_metric(labels, value, timestamp=at)
        for kind, value in (("pgfault", memory.page_faults),
                            ("pgmajfault", memory.major_page_faults)):
            if value is not None:
                self.faults.add_metric([*labels, kind, "container"], value, timestamp=at)

    def network(self, labels: list[str], network: s.NetworkStats | None) -> None:
        if network is None:
            return
        at = _stamp(network.time)
        for i in network.interfaces or ():
            for family, value in ((self.rx, i.rx_bytes), (self.tx, i.tx_bytes),
                                  (self.rx_err, i.rx_errors), (self.tx_err, i.tx_errors)):
                if value is not None:
                    family.add_metric([*labels, i.name], value, timestamp=at)


class CadvisorMetrics(Collector):
    """The container_* series of cAdvisor's exporter over a snapshot getter."""

    def __init__(self, snapshot: Callable[[], StatsSnapshot | None]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot()
        f = _Families()
        if snap is not None:
            self._fill(snap, f)
        yield from f.all()

    @staticmethod
    def _fill(snap: StatsSnapshot, f: _Families) -> None:
        node = snap.summary.node
        root = ["", "/", "", "", "", ""]
        f.cpu_memory(root, node.cpu, node.memory)
        f.network(root, node.network)
        infos: dict[tuple[str, str, str], ContainerInfo] = {
            (i.namespace, i.pod, i.container): i for i in snap.containers}
        cgroups = dict(snap.pod_cgroups)
        for pod in snap.summary.pods:
            ref = pod.pod_ref
            pod_labels = ["", f"/{cgroups[ref.uid]}" if ref.uid in cgroups else "", "", "",
                          ref.namespace, ref.name]
            f.cpu_memory(pod_labels, pod.cpu, pod.memory)
            f.network(pod_labels, pod.network)
            if pod.process_stats is not None and pod.process_stats.process_count is not None:
                f.procs.add_metric(pod_labels, pod.process_stats.process_count)
            for c in pod.containers:
                info = infos.get((ref.namespace, ref.name, c.name))
                labels = [c.name, info.cgroup if info else "", info.image if info else "",
                          info.id if info else "", ref.namespace, ref.name]
                f.cpu_memory(labels, c.cpu, c.memory)
                f.start.add_metric(labels, _stamp(c.start_time))
                f.seen.add_metric(labels, snap.taken_at)
                if c.rootfs is not None and c.rootfs.used_bytes is not None:
                    f.fs.add_metric([*labels, "rootfs"], c.rootfs.used_bytes,
                                    timestamp=_stamp(c.rootfs.time))
