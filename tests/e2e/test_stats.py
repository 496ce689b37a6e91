"""Resource stats on a real containerd, through the daemon's HTTP API as metrics-server,
Prometheus and kubectl top read them: /stats/summary (decoded strictly as upstream's
stats/v1alpha1), /metrics/resource, /metrics/cadvisor, /metrics/probes."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from msgspec import UNSET
from prometheus_client.parser import text_string_to_metric_families

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import Daemon
from tests.helpers import promtool_check, wait_for
from tests.stats_v1alpha1 import PodStats, Summary, decode

pytestmark = pytest.mark.e2e

MIB = 1 << 20


def pod(name: str, script: str, extra: str = "", volumes: str = "") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps("trap 'exit 0' TERM; " + script)}]
{extra}{volumes}"""


BURN = "while :; do :; done"
# 64 MiB in the pod's /dev/shm (tmpfs: charged to the writer's memory cgroup as working
# set) after a few seconds, so the test sees the working set grow.
FILL = "sleep 4; head -c 67108864 /dev/zero > /dev/shm/fill; while true; do sleep 1; done"
WRITE = "head -c 1048576 /dev/urandom > /cache/data; while true; do sleep 1; done"
CACHE = """    volumeMounts: [{name: cache, mountPath: /cache}]
  volumes:
  - name: cache
    emptyDir: {}
"""
PROBED = """    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
"""


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    workdir = containerd.base_dir / "stats" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    manifests = workdir / "manifests"
    (manifests / "burn.yaml").write_text(pod("burn", BURN))
    (manifests / "fill.yaml").write_text(pod("fill", FILL))
    (manifests / "write.yaml").write_text(pod("write", WRITE, volumes=CACHE))
    (manifests / "probed.yaml").write_text(pod("probed", "while true; do sleep 1; done",
                                               PROBED))
    d = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
               "--stats-collection-period", "2s", "--volume-stats-agg-period", "2s")
    d.start()
    try:
        yield d
    finally:
        d.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def summary(daemon: Daemon) -> Summary | None:
    code, body = daemon.get("/stats/summary")
    return decode(body) if code == 200 else None


def pod_stats(daemon: Daemon, name: str) -> PodStats | None:
    got = summary(daemon)
    pods = (got.pods or []) if got is not None else []
    return next((p for p in pods if p.podRef.name == name), None)


def metrics(daemon: Daemon, path: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    code, text = daemon.get(path)
    assert code == 200, text
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    promtool_check(text)
    return out


def test_stats_of_busy_pods_on_containerd(daemon: Daemon) -> None:
    for name in ("burn", "fill", "write", "probed"):
        daemon.wait_running(f"{name}-e2e-node", 60.0)

    def burning() -> PodStats | None:
        p = pod_stats(daemon, "burn-e2e-node")
        if p is None or not p.containers or p.cpu is None or not p.containers[0].cpu:
            return None
        cores = p.containers[0].cpu.usageNanoCores
        pod_cores = p.cpu.usageNanoCores  # type: ignore[union-attr]
        return p if isinstance(cores, int) and cores > 100_000_000 and isinstance(
            pod_cores, int) and pod_cores > 100_000_000 else None
    burn = wait_for(burning, 60.0, "the CPU burner's usageNanoCores above 0.1 core")
    assert burn is not None and burn.podRef.namespace == "default"

    def filled() -> int:
        p = pod_stats(daemon, "fill-e2e-node")
        memory = p.containers[0].memory if p and p.containers else None
        ws = getattr(memory, "workingSetBytes", 0)
        return ws if isinstance(ws, int) and ws > 60 * MIB else 0
    wait_for(filled, 60.0, "the filler's workingSetBytes above 60 MiB")

    def written() -> Any:
        p = pod_stats(daemon, "write-e2e-node")
        vols = [v for v in (p.volume or []) if v.name == "cache"] if p and p.volume else []
        used = getattr(vols[0], "usedBytes", 0) if vols else 0
        return used if isinstance(used, int) and used >= MIB else None
    wait_for(written, 60.0, "the emptyDir's usedBytes to show the 1 MiB written")
    write = pod_stats(daemon, "write-e2e-node")
    assert write is not None and write.ephemeral_storage
    assert write.ephemeral_storage.usedBytes >= MIB  # type: ignore[operator]
    (main,) = write.containers or []
    assert main.rootfs and main.logs and main.startTime

    node = summary(daemon)
    assert node is not None
    n = node.node
    assert n.nodeName == "e2e-node" and n.cpu and n.memory and n.fs and n.rlimit
    assert n.memory.workingSetBytes and n.cpu.usageCoreNanoSeconds
    assert n.runtime and n.runtime.imageFs and n.runtime.imageFs.usedBytes is not UNSET
    assert burn.network and burn.network.name == "eth0"
    assert burn.process_stats and burn.process_stats.process_count  # pause and sh at least

    resource = metrics(daemon, "/metrics/resource")
    burners = [v for labels, v in resource["container_cpu_usage_seconds_total"]
               if labels["pod"] == "burn-e2e-node" and labels["container"] == "main"]
    assert burners and burners[0] > 0
    assert any(labels["pod"] == "fill-e2e-node"
               for labels, _ in resource["pod_memory_working_set_bytes"])
    assert resource["resource_scrape_error"] == [({}, 0.0)]
    assert resource["node_cpu_usage_seconds_total"][0][1] > 0

    cadvisor = metrics(daemon, "/metrics/cadvisor")
    series = [labels for labels, _ in cadvisor["container_memory_working_set_bytes"]
              if labels["pod"] == "fill-e2e-node" and labels["container"] == "main"]
    assert series and series[0]["image"] == BUSYBOX_IMAGE and series[0]["id"].endswith(
        series[0]["name"])
    assert any(labels["pod"] == "burn-e2e-node" and labels["interface"] == "eth0"
               for labels, _ in cadvisor["container_network_receive_bytes_total"])

    def probed() -> float:
        got = metrics(daemon, "/metrics/probes").get("prober_probe_total", [])
        return sum(v for labels, v in got if labels["pod"] == "probed-e2e-node"
                   and labels["probe_type"] == "Readiness" and labels["result"] == "successful"
                   and labels["container"] == "main" and labels["namespace"] == "default")
    wait_for(lambda: probed() >= 3, 30.0, "three successful readiness probes counted")
