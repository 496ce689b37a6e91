"""bench/cluster_bench.py kept from rotting: its three phases with tiny numbers on the e2e
containerd and an emulated API server. No figure is checked (figures are not tests)."""

from __future__ import annotations

import io
import uuid

import pytest
from rich.console import Console

from bench.cluster_bench import ClusterBench, run
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient

pytestmark = pytest.mark.e2e


def test_cluster_bench_runs_with_tiny_numbers_emulated_apiserver(
        containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    work = containerd.base_dir / "cluster-bench" / uuid.uuid4().hex[:8]
    work.mkdir(parents=True)
    out = io.StringIO()
    bench = ClusterBench(containerd.endpoint, work, Console(file=out, width=170), max_pods=2)
    try:
        run(bench, samples=1, pods=2, events=10, window=1.0)
        bench.console.print(bench.table())
    finally:
        bench.close()
    assert set(bench.r) == {"latency", "steady", "flood"}
    assert "pod Running in the API" in out.getvalue()
