"""The stats endpoints over a cache filled on the fake runtime: /stats/summary decodes
strictly as upstream's types, the metrics parse with prometheus_client's parser and pass
promtool (Debian's prometheus package, installed by scripts/setup.sh), names and labels as
upstream's."""

from __future__ import annotations

from pathlib import Path

import falcon.testing
import pytest
from msgspec import UNSET
from prometheus_client.parser import text_string_to_metric_families

from actors.app.http.routes import build_app
from actors.app.http.stats import StatsEndpoints
from actors.kubelet.messages import ProbeKind
from actors.kubelet.probe_metrics import ProbeMetrics
from actors.kubelet.stats_collector import StatsCache
from runtime.clock import FakeClock
from runtime.prober.results import ProbeResult
from runtime.stats.collector import StatsCollector, StatsSettings
from runtime.testing.fake_runtime import FakeRuntime
from tests.helpers import promtool_check
from tests.stats_v1alpha1 import decode
from tests.unit.app.test_http_server import FakeView
from tests.unit.runtime.test_stats import IMAGE, _pod, fake_v1_tree


@pytest.fixture
def endpoints(tmp_path: Path) -> StatsEndpoints:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=(IMAGE,))
    cid = _pod(fake, "u1", "web")
    collector = StatsCollector(fake, StatsSettings("node-1", str(tmp_path), str(tmp_path),
                                                   fake_v1_tree(tmp_path)), now=clock.now)
    cache = StatsCache()
    fake.set_stats(cid, 1_000_000_000, 5_000_000, 4096)
    cache.put(collector.collect())
    clock.step(10.0)
    fake.set_stats(cid, 2_500_000_000, 5_000_000, 4096)
    cache.put(collector.collect())
    probes = ProbeMetrics()
    probes.observe(ProbeKind.READINESS, ProbeResult.SUCCESS, "main", "web", "default", "u1")
    probes.observe(ProbeKind.READINESS, ProbeResult.FAILURE, "main", "web", "default", "u1")
    probes.observe(ProbeKind.READINESS, ProbeResult.SUCCESS, "main", "web", "default", "u1")
    return StatsEndpoints(cache, probes)


def client(tmp_path: Path, stats: StatsEndpoints) -> falcon.testing.TestClient:
    return falcon.testing.TestClient(build_app(FakeView(tmp_path), stats=stats))


def families(text: str) -> dict[str, list[tuple[dict[str, str], float, float | None]]]:
    out: dict[str, list[tuple[dict[str, str], float, float | None]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            stamp = float(sample.timestamp) if sample.timestamp is not None else None
            out.setdefault(sample.name, []).append((sample.labels, sample.value, stamp))
    return out


def test_summary_decodes_strictly_as_upstreams_types(tmp_path: Path,
                                                     endpoints: StatsEndpoints) -> None:
    resp = client(tmp_path, endpoints).simulate_get("/stats/summary")
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    summary = decode(resp.content)
    (pod,) = summary.pods or []
    (main,) = pod.containers or []
    assert main.cpu and main.cpu.usageNanoCores == 150_000_000
    only = decode(client(tmp_path, endpoints).simulate_get(
        "/stats/summary", params={"only_cpu_and_memory": "true"}).content)
    assert only.pods and only.pods[0].ephemeral_storage is UNSET


def test_summary_before_the_first_collection_is_upstreams_internal_error(
        tmp_path: Path) -> None:
    resp = client(tmp_path, StatsEndpoints(StatsCache())).simulate_get("/stats/summary")
    assert resp.status_code == 500
    assert resp.text.startswith("Internal Error: the kubelet has not collected stats yet")


def test_only_cpu_and_memory_needs_exactly_true(tmp_path: Path,
                                                endpoints: StatsEndpoints) -> None:
    for value in ("1", "True", "yes"):
        full = decode(client(tmp_path, endpoints).simulate_get(
            "/stats/summary", params={"only_cpu_and_memory": value}).content)
        assert full.node.fs is not UNSET, value


def test_resource_metrics_as_upstreams_collector(tmp_path: Path,
                                                 endpoints: StatsEndpoints) -> None:
    text = client(tmp_path, endpoints).simulate_get("/metrics/resource").text
    got = families(text)
    assert set(got) >= {
        "node_cpu_usage_seconds_total", "node_memory_working_set_bytes",
        "container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
        "container_start_time_seconds", "pod_cpu_usage_seconds_total",
        "pod_memory_working_set_bytes", "scrape_error", "resource_scrape_error"}
    ((labels, value, stamp),) = got["container_cpu_usage_seconds_total"]
    assert labels == {"container": "main", "pod": "web", "namespace": "default"}
    assert value == 2.5 and stamp is not None  # seconds, stamped with the stats time
    ((labels, _, stamp),) = got["container_start_time_seconds"]
    assert stamp is None  # upstream sends the start time without a timestamp
    assert got["resource_scrape_error"] == [({}, 0.0, None)]
    assert "# TYPE node_cpu_usage_seconds_total counter" in text
    promtool_check(text)


def test_resource_metrics_without_stats_report_a_scrape_error(tmp_path: Path) -> None:
    text = client(tmp_path, StatsEndpoints(StatsCache())).simulate_get("/metrics/resource").text
    got = families(text)
    assert got["scrape_error"] == [({}, 1.0, None)]
    assert "container_cpu_usage_seconds_total" not in got
    promtool_check(text)


def test_cadvisor_metrics_label_series_as_cadvisor(tmp_path: Path,
                                                   endpoints: StatsEndpoints) -> None:
    text = client(tmp_path, endpoints).simulate_get("/metrics/cadvisor").text
    got = families(text)
    for name in ("container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
                 "container_memory_usage_bytes", "container_fs_usage_bytes",
                 "container_start_time_seconds"):
        series = [labels for labels, _, _ in got[name] if labels.get("container") == "main"]
        assert series, name
        assert {"container", "id", "image", "name", "namespace", "pod"} <= set(series[0])
        assert series[0]["image"] == IMAGE and series[0]["pod"] == "web"
    roots = [labels for labels, _, _ in got["container_cpu_usage_seconds_total"]
             if labels["id"] == "/"]
    assert roots and roots[0]["cpu"] == "total", "the node's root cgroup series"
    pod_level = [labels for labels, _, _ in got["container_memory_working_set_bytes"]
                 if labels["pod"] == "web" and labels["container"] == ""]
    assert pod_level and pod_level[0]["id"] == "/kubepods/burstable/podu1"
    promtool_check(text)


def test_probe_metrics_count_results_as_upstreams_prober(tmp_path: Path,
                                                         endpoints: StatsEndpoints) -> None:
    text = client(tmp_path, endpoints).simulate_get("/metrics/probes").text
    got = families(text)
    counts = {(labels["probe_type"], labels["result"]): value
              for labels, value, _ in got["prober_probe_total"]}
    assert counts == {("Readiness", "successful"): 2.0, ("Readiness", "failed"): 1.0}
    labels = got["prober_probe_total"][0][0]
    assert labels | {"result": "", "probe_type": ""} == {
        "probe_type": "", "result": "", "container": "main", "pod": "web",
        "namespace": "default", "pod_uid": "u1"}
    promtool_check(text)
    assert endpoints.probes is not None
    endpoints.probes.forget(ProbeKind.READINESS, "main", "web", "default", "u1")
    assert "prober_probe_total{" not in client(tmp_path, endpoints).simulate_get(
        "/metrics/probes").text

