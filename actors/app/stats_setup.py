"""Wires resource stats into the daemon: the collector on an unrecorded runtime, the stats
actor's parts, the prober's registry and what the HTTP routes read.

The collector's CRI calls are timed into the kubelet's runtime metrics but never recorded
in a trace (see actors.kubelet.stats_collector for why that keeps replay exact).
"""

from __future__ import annotations

from msgspec import Struct

from actors.app.config.flags import KubeletFlags
from actors.app.http.stats import StatsEndpoints
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.probe_metrics import ProbeMetrics
from actors.kubelet.stats_collector import StatsCache, StatsParts
from runtime.cri.instrumented import Timing
from runtime.cri.intercept import intercept
from runtime.cri.service import CRIRuntime
from runtime.kuberuntime.settings import NodeSettings
from runtime.stats.collector import StatsCollector, StatsSettings


class StatsWiring(Struct, frozen=True):
    parts: StatsParts | None  # None: --stats-collection-period=0
    probes: ProbeMetrics
    endpoints: StatsEndpoints


def stats_wiring(flags: KubeletFlags, node: NodeSettings, runtime: CRIRuntime,
                 metrics: KubeletMetrics) -> StatsWiring:
    """The stats parts for ``runtime`` (the raw one: not the recording chain)."""
    probes = ProbeMetrics()
    if flags.stats_collection_period <= 0:
        return StatsWiring(None, probes, StatsEndpoints(None, probes))
    timed = intercept(runtime, CRIRuntime, Timing(metrics.observe_runtime_call))
    settings = StatsSettings(node.node_name, node.root_dir, node.pod_logs_dir,
                             fs_period=flags.volume_stats_agg_period)
    cache = StatsCache()
    parts = StatsParts(StatsCollector(timed, settings), cache, flags.stats_collection_period)
    return StatsWiring(parts, probes, StatsEndpoints(cache, probes))
