"""/metrics text names counters as upstream's kubelet does (actors.kubelet.metric_text)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from actors.kubelet.metric_text import prometheus_text
from actors.kubelet.metrics import KubeletMetrics


def _text() -> str:
    metrics = KubeletMetrics()
    metrics.evictions.labels("memory.available").inc()
    metrics.evented_pleg_connection_success.inc()
    metrics.observe_runtime_call("RunPodSandbox", 0.1, ok=False)
    return prometheus_text(metrics.registry).decode()


def test_counters_upstream_names_without_total_keep_their_names() -> None:
    text = _text()
    assert "# HELP kubelet_evictions Cumulative number of pod evictions" in text
    assert "# TYPE kubelet_evictions counter\n" in text
    assert 'kubelet_evictions{eviction_signal="memory.available"} 1.0\n' in text
    assert "# TYPE kubelet_evented_pleg_connection_success_count counter\n" in text
    assert "kubelet_evented_pleg_connection_success_count 1.0\n" in text
    assert "kubelet_evictions_total" not in text


def test_counters_upstream_names_with_total_keep_it() -> None:
    text = _text()
    assert "# TYPE kubelet_runtime_operations_total counter\n" in text
    assert 'kubelet_runtime_operations_total{operation_type="RunPodSandbox"} 1.0\n' in text
    assert 'kubelet_runtime_operations_errors_total{operation_type="RunPodSandbox"} 1.0\n' \
        in text


def test_no_created_series_as_upstream_has_none() -> None:
    assert "_created" not in _text()


def test_a_prometheus_parser_reads_every_family_with_its_type() -> None:
    families = {f.name: f for f in text_string_to_metric_families(_text())}
    assert families["kubelet_evictions"].type == "counter"
    assert families["kubelet_runtime_operations"].type == "counter"
    assert [s.value for s in families["kubelet_evictions"].samples] == [1.0]
