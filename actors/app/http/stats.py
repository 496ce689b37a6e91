"""The stats endpoints: ``/stats/summary``, ``/metrics/resource``, ``/metrics/cadvisor``
and ``/metrics/probes``, all read from caches (a scrape never waits on the runtime).

``/stats/summary`` is the Summary API (stats/v1alpha1) as the last collection of the stats
actor (actors.kubelet.stats_collector) left it; ``?only_cpu_and_memory=true`` keeps CPU and
memory only, as upstream's handler does. Authorization: the main port's filter checks
``/stats/*`` as subresource ``stats`` and ``/metrics/*`` as ``metrics`` (auth.py), as
upstream's kubelet.
"""

from __future__ import annotations

import falcon
from msgspec import Struct
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from actors.app.http.stats_metrics import CadvisorMetrics, ResourceMetrics
from actors.kubelet.metric_text import prometheus_text
from actors.kubelet.probe_metrics import ProbeMetrics
from actors.kubelet.stats_collector import StatsCache
from runtime.stats import summary as s
from runtime.stats.collector import StatsSnapshot

NOT_YET = "the kubelet has not collected stats yet: try again in a few seconds"


class StatsEndpoints(Struct, frozen=True):
    """What the stats routes read: the stats cache and the prober's registry."""

    cache: StatsCache | None = None
    probes: ProbeMetrics | None = None

    def snapshot(self) -> StatsSnapshot | None:
        return self.cache.get() if self.cache is not None else None


class SummaryResource:
    """``/stats/summary``: the cached Summary, as JSON (500 ``Internal Error: ...`` before
    the first collection, as upstream answers when it has no stats)."""

    def __init__(self, stats: StatsEndpoints) -> None:
        self._stats = stats

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        snap = self._stats.snapshot()
        if snap is None:  # upstream's handleError: 500, "Internal Error: ..." as text
            resp.status = falcon.HTTP_500
            resp.content_type = "text/plain; charset=utf-8"
            resp.text = f"Internal Error: {NOT_YET}"
            return
        summary = snap.summary
        # Exactly one value, exactly "true", as upstream's handleSummary checks it.
        if req.get_param_as_list("only_cpu_and_memory") == ["true"]:
            summary = s.cpu_and_memory_only(summary)
        resp.content_type = falcon.MEDIA_JSON
        resp.data = s.encode(summary)

    on_head = on_get


class RegistryResource:
    """A Prometheus registry in the text format."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = prometheus_text(self._registry)

    on_head = on_get


def _registry(*collectors: ResourceMetrics | CadvisorMetrics) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    for collector in collectors:
        registry.register(collector)
    return registry


def add_stats_routes(app: falcon.App[falcon.Request, falcon.Response],
                     stats: StatsEndpoints | None) -> None:
    """Mount the stats endpoints on ``app`` (nothing when the kubelet collects none)."""
    if stats is None:
        return
    app.add_route("/stats/summary", SummaryResource(stats))
    app.add_route("/metrics/resource", RegistryResource(_registry(
        ResourceMetrics(stats.snapshot))))
    app.add_route("/metrics/cadvisor", RegistryResource(_registry(
        CadvisorMetrics(stats.snapshot))))
    probes = stats.probes.registry if stats.probes is not None else CollectorRegistry()
    app.add_route("/metrics/probes", RegistryResource(probes))
