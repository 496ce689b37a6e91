"""The sandbox's ``linux.overhead`` and ``linux.resources`` (upstream
kuberuntime_sandbox_linux.go applySandboxResources and its test table): the pod's
spec.overhead as a Guaranteed amount, and its requests and limits as PodRequests /
PodLimits sum them without the overhead; both always sent, the overhead all zero for a pod
without one."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from runtime.cm.container_resources import linux_resources, overhead_resources, sandbox_resources
from runtime.cri.types import LinuxContainerResources, PodSandboxConfig, PodSandboxMetadata
from runtime.kuberuntime.sandbox import generate_sandbox_config
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import Pod
from tests.unit.runtime.test_cm import ctr, guaranteed, pod, rr

MI = 2**20
PERIOD = 100_000


def res(shares: int, quota: int = 0, memory: int = 0) -> LinuxContainerResources:
    """What calculateLinuxResources gives with the CFS quota on (the default)."""
    return LinuxContainerResources(cpu_period=PERIOD, cpu_quota=quota, cpu_shares=shares,
                                   memory_limit_in_bytes=memory)


NO_OVERHEAD = LinuxContainerResources()  # upstream's empty message
VM = {"cpu": "250m", "memory": "120Mi"}  # a RuntimeClass's overhead.podFixed
SIDECAR = "Always"

SANDBOX = [
    ("best effort, no overhead: the minimum shares, no quota, an empty overhead",
     pod(ctr()), res(2), NO_OVERHEAD),
    ("guaranteed: the containers' sum",
     pod(guaranteed("a"), guaranteed("b", cpu="300m", memory="28Mi")),
     res(409, 40_000, 128 * MI), NO_OVERHEAD),
    ("burstable: requested shares, only the limits set are summed",
     pod(ctr("a", {"cpu": "250m", "memory": "64Mi"}, {"cpu": "500m"}),
         ctr("b", {"cpu": "100m"})),
     res(358, 50_000), NO_OVERHEAD),
    ("a limit without a request: shares of the limit (the API server's defaulting)",
     pod(ctr("a", limits={"cpu": "1", "memory": "64Mi"})),
     res(1024, 100_000, 64 * MI), NO_OVERHEAD),
    ("a request of 0 with a limit: the minimum shares (upstream's RequestZeroCPU)",
     pod(ctr("a", {"cpu": "0"}, {"cpu": "2"})), res(2, 200_000), NO_OVERHEAD),
    ("overhead only: the resources leave it out, the overhead is requests = limits",
     pod(ctr(), overhead=VM), res(2), res(256, 25_000, 120 * MI)),
    ("guaranteed with overhead: the overhead stays out of the resources",
     pod(guaranteed("a", cpu="1", memory="1Gi"), overhead=VM),
     res(1024, 100_000, 1024 * MI), res(256, 25_000, 120 * MI)),
    ("memory-only overhead: the minimum shares and no quota for it",
     pod(ctr(), overhead={"memory": "64Mi"}), res(2), res(2, 0, 64 * MI)),
    ("a larger init container wins over the containers' sum",
     pod(ctr("app", {"cpu": "1"}, {"cpu": "1", "memory": "100Mi"}),
         init=(ctr("init", {"cpu": "3"}, {"cpu": "3", "memory": "50Mi"}),)),
     res(3072, 300_000, 100 * MI), NO_OVERHEAD),
    ("a sidecar adds to the containers and to the init containers after it",
     pod(ctr("app", {"cpu": "1"}, {"cpu": "1"}),
         init=(ctr("side", {"cpu": "500m"}, {"cpu": "500m"}, restart_policy=SIDECAR),
               ctr("init", {"cpu": "2"}, {"cpu": "2"}))),
     res(2560, 250_000), NO_OVERHEAD),
    ("a sidecar after the init container: the init container alone needs less",
     pod(ctr("app", {"cpu": "1"}, {"cpu": "1"}),
         init=(ctr("init", {"cpu": "2"}, {"cpu": "2"}),
               ctr("side", {"cpu": "500m"}, {"cpu": "500m"}, restart_policy=SIDECAR))),
     res(2048, 200_000), NO_OVERHEAD),
    ("pod-level resources replace the containers' sums",
     pod(ctr("a", {"cpu": "100m"}),
         pod_resources=rr({"cpu": "500m"}, {"cpu": "1", "memory": "256Mi"}), overhead=VM),
     res(512, 100_000, 256 * MI), res(256, 25_000, 120 * MI)),
]


@pytest.mark.parametrize(("case", "subject", "resources", "overhead"), SANDBOX,
                         ids=[c[0] for c in SANDBOX])
def test_sandbox_resources_and_overhead(case: str, subject: Pod,
                                        resources: LinuxContainerResources,
                                        overhead: LinuxContainerResources,
                                        tmp_path: Path) -> None:
    assert sandbox_resources(subject) == resources
    assert overhead_resources(subject) == overhead
    config = generate_sandbox_config(subject, 0, NodeSettings(
        node_name="n", resolv_conf="", pod_logs_dir=str(tmp_path)))
    assert (config.resources, config.overhead) == (resources, overhead)


def test_without_the_cfs_quota_neither_period_nor_quota() -> None:
    """--cpu-cfs-quota=false: calculateLinuxResources leaves period and quota out."""
    subject = pod(guaranteed("a", cpu="1"), overhead=VM)
    assert sandbox_resources(subject, cpu_cfs_quota=False) == LinuxContainerResources(
        cpu_shares=1024, memory_limit_in_bytes=100 * MI)
    assert overhead_resources(subject, cpu_cfs_quota=False) == LinuxContainerResources(
        cpu_shares=256, memory_limit_in_bytes=120 * MI)
    assert linux_resources(None, 0, 0, cpu_cfs_quota=False) == LinuxContainerResources(
        cpu_shares=2)


def test_a_config_without_them_encodes_as_before() -> None:
    """A config not made by generate_sandbox_config leaves both out of its JSON (UNSET),
    so what it records is what it recorded before the fields existed; a zero overhead the
    kubelet made is kept, it is sent."""
    bare = PodSandboxConfig(metadata=PodSandboxMetadata("web", "u", "ns"))
    encoded = msgspec.json.decode(msgspec.json.encode(bare))
    assert "overhead" not in encoded and "resources" not in encoded
    made = msgspec.structs.replace(bare, overhead=NO_OVERHEAD, resources=res(2))
    decoded = msgspec.json.decode(msgspec.json.encode(made), type=PodSandboxConfig)
    assert decoded == made and decoded.overhead == NO_OVERHEAD
    assert msgspec.json.decode(msgspec.json.encode(bare), type=PodSandboxConfig) == bare
