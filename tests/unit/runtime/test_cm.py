"""runtime.cm against upstream's tables: qos_test.go (GetPodQOS), helpers_linux_test.go
(MilliCPUToShares, MilliCPUToQuota, ResourceConfigForPod), policy_test.go
(GetContainerOOMScoreAdjust), kuberuntime_container_linux_test.go (container resources,
hugepage limits), cgroup_manager_linux_test.go (cgroup names); PodCgroups on the fake
CgroupManager, CgroupFS on a directory tree, and the runtime manager's use of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.clock import FakeClock
from runtime.cm.aggregate import pod_limits, pod_requests
from runtime.cm.cgroupfs import HYBRID_UNIFIED, CgroupFS, v1_mounts
from runtime.cm.container_resources import (
    container_hugepage_limits,
    linux_container_resources,
    node_hugepage_sizes,
)
from runtime.cm.fake import FakeCgroupManager
from runtime.cm.names import (
    SYSTEMD,
    CgroupName,
    parse_root,
    parse_systemd,
    pod_cgroup_parent,
    to_cgroupfs,
    to_systemd,
)
from runtime.cm.node_allocatable import AllocatableConfig, plan
from runtime.cm.oom import container_oom_score_adjust
from runtime.cm.pod_cgroups import PodCgroups, pod_cgroup_spec
from runtime.cm.qos import pod_qos
from runtime.cm.resources import (
    NodeResourceConfig,
    ResourceConfig,
    hugepage_unit_size,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    resource_config_for_pod,
)
from runtime.cri.types import HugepageLimit
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.machine import MachineCapacity
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec, ResourceRequirements
from runtime.testing.fake_runtime import FakeRuntime

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
Res = dict[str, Any]


def rr(requests: Res | None = None, limits: Res | None = None) -> ResourceRequirements:
    return ResourceRequirements(requests=requests or {}, limits=limits or {})


def ctr(name: str = "c", requests: Res | None = None, limits: Res | None = None,
        restart_policy: str | None = None) -> Container:
    resources = rr(requests, limits) if requests or limits else None
    return Container(name=name, image=IMAGE, resources=resources,
                     restart_policy=restart_policy)


def pod(*containers: Container, init: tuple[Container, ...] = (), uid: str = "u-1",
        pod_resources: ResourceRequirements | None = None, overhead: Res | None = None,
        priority_class: str = "", priority: int | None = None,
        annotations: dict[str, str] | None = None) -> Pod:
    return Pod(
        metadata=ObjectMeta(name="p", namespace="default", uid=uid,
                            annotations=annotations or {}),
        spec=PodSpec(containers=containers, init_containers=init, resources=pod_resources,
                     overhead=overhead or {}, priority_class_name=priority_class,
                     priority=priority),
    )


def guaranteed(name: str = "c", cpu: str = "100m", memory: str = "100Mi") -> Container:
    both = {"cpu": cpu, "memory": memory}
    return ctr(name, both, both)


# --- GetPodQOS (qos_test.go) -----------------------------------------------------------

QOS = [
    ("best-effort-best-effort", pod(ctr("a"), ctr("b")), "BestEffort"),
    ("best-effort", pod(ctr()), "BestEffort"),
    ("best-effort-burstable", pod(ctr("a"), ctr("b", {"cpu": "1"})), "Burstable"),
    ("best-effort-guaranteed", pod(ctr("a"), guaranteed("b")), "Burstable"),
    ("burstable-cpu-guaranteed-memory",
     pod(ctr(requests={"cpu": "1", "memory": "100Mi"}, limits={"memory": "100Mi"})),
     "Burstable"),
    ("burstable-no-limits", pod(ctr(requests={"cpu": "100m", "memory": "100Mi"})),
     "Burstable"),
    ("burstable-guaranteed", pod(ctr("a", {"cpu": "1", "memory": "100Mi"},
                                     {"cpu": "2", "memory": "100Mi"}), guaranteed("b")),
     "Burstable"),
    ("burstable-unbounded-but-requests-match-limits",
     pod(guaranteed("a"), ctr("b", {"cpu": "100m", "memory": "100Mi"})), "Burstable"),
    ("burstable-1", pod(ctr(requests={"cpu": "10m", "memory": "10Mi"},
                            limits={"cpu": "100m", "memory": "100Mi"})), "Burstable"),
    ("burstable-2", pod(ctr(requests={"cpu": "0", "memory": "10Mi"},
                            limits={"cpu": "100m", "memory": "100Mi"})), "Burstable"),
    ("guaranteed", pod(guaranteed()), "Guaranteed"),
    ("guaranteed-guaranteed", pod(guaranteed("a"), guaranteed("b", "1", "1Gi")),
     "Guaranteed"),
    ("guaranteed-with-gpu", pod(ctr(
        requests={"cpu": "1", "memory": "1Gi"},
        limits={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"})), "Guaranteed"),
    ("best-effort-with-gpu", pod(ctr(limits={"nvidia.com/gpu": "2"})), "BestEffort"),
    ("best-effort-hugepages", pod(ctr(limits={"hugepages-2Mi": "4Mi"})), "BestEffort"),
    ("zero quantities are unset", pod(ctr(requests={"cpu": "0", "memory": "0"})),
     "BestEffort"),
    ("limits only default the requests (the API server's defaulting)",
     pod(ctr(limits={"cpu": "1", "memory": "1Gi"})), "Guaranteed"),
    ("an init container counts", pod(guaranteed(), init=(ctr("i"),)), "Burstable"),
    ("guaranteed with a guaranteed init container",
     pod(guaranteed(), init=(guaranteed("i", "2", "2Gi"),)), "Guaranteed"),
    ("pod-level guaranteed", pod(ctr(), pod_resources=rr(
        {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})), "Guaranteed"),
    ("pod-level limits only: requests default to them",
     pod(ctr(), pod_resources=rr(limits={"cpu": "1", "memory": "1Gi"})), "Guaranteed"),
    ("pod-level limits, a container request: the pod request is the containers'",
     pod(ctr(requests={"cpu": "500m"}), pod_resources=rr(
         limits={"cpu": "1", "memory": "1Gi"})), "Burstable"),
    ("pod-level requests only", pod(guaranteed(), pod_resources=rr({"cpu": "1"})),
     "Burstable"),
    ("pod-level cpu limit only", pod(ctr(), pod_resources=rr(
        {"cpu": "1"}, {"cpu": "1"})), "Burstable"),
    ("pod-level decides over guaranteed containers", pod(guaranteed(), pod_resources=rr(
        {"cpu": "200m"}, {"cpu": "1"})), "Burstable"),
]


@pytest.mark.parametrize(("case", "subject", "qos"), QOS, ids=[q[0] for q in QOS])
def test_pod_qos(case: str, subject: Pod, qos: str) -> None:
    assert pod_qos(subject) == qos


# --- MilliCPUToShares / MilliCPUToQuota (helpers_linux_test.go) -----------------------


@pytest.mark.parametrize(("milli", "shares"), [
    (0, 2), (1, 2), (2, 2), (3, 3), (10, 10), (100, 102), (1000, 1024), (1500, 1536),
    (256_000, 262144), (300_000, 262144),
])
def test_milli_cpu_to_shares(milli: int, shares: int) -> None:
    assert milli_cpu_to_shares(milli) == shares


@pytest.mark.parametrize(("milli", "period", "quota"), [
    (0, 100_000, 0), (5, 100_000, 1000), (9, 100_000, 1000), (10, 100_000, 1000),
    (200, 100_000, 20_000), (500, 100_000, 50_000), (1000, 100_000, 100_000),
    (1500, 100_000, 150_000), (1500, 50_000, 75_000), (10, 50_000, 1000),
])
def test_milli_cpu_to_quota(milli: int, period: int, quota: int) -> None:
    assert milli_cpu_to_quota(milli, period) == quota


# --- ResourceConfigForPod (helpers_linux_test.go) --------------------------------------

MI = 2**20
GI = 2**30
CONFIGS = [
    ("besteffort", pod(ctr()), True, ResourceConfig(cpu_shares=2)),
    ("burstable-no-limits", pod(ctr(requests={"cpu": "100m", "memory": "100Mi"})), True,
     ResourceConfig(cpu_shares=102)),
    ("burstable-with-limits", pod(ctr(requests={"cpu": "100m", "memory": "100Mi"},
                                      limits={"cpu": "200m", "memory": "200Mi"})), True,
     ResourceConfig(102, 20_000, 100_000, 200 * MI)),
    ("burstable-with-limits-no-cpu-enforcement",
     pod(ctr(requests={"cpu": "100m", "memory": "100Mi"},
             limits={"cpu": "200m", "memory": "200Mi"})), False,
     ResourceConfig(102, -1, 100_000, 200 * MI)),
    ("burstable-partial-limits", pod(
        ctr("a", {"cpu": "100m", "memory": "100Mi"}, {"cpu": "200m", "memory": "200Mi"}),
        ctr("b", {"cpu": "100m", "memory": "100Mi"})), True, ResourceConfig(cpu_shares=204)),
    ("burstable-memory-limits-only", pod(
        ctr("a", {"cpu": "100m"}, {"memory": "200Mi"}),
        ctr("b", {"memory": "10Mi"}, {"memory": "100Mi"})), True,
     ResourceConfig(cpu_shares=102, memory=300 * MI)),
    ("guaranteed", pod(guaranteed(cpu="100m", memory="100Mi")), True,
     ResourceConfig(102, 10_000, 100_000, 100 * MI)),
    ("guaranteed-no-cpu-enforcement", pod(guaranteed(cpu="100m", memory="100Mi")), False,
     ResourceConfig(102, -1, 100_000, 100 * MI)),
    ("guaranteed-with-overhead", pod(guaranteed(cpu="100m", memory="100Mi"),
                                     overhead={"cpu": "10m", "memory": "10Mi"}), True,
     ResourceConfig(112, 11_000, 100_000, 110 * MI)),
    ("burstable-overhead-only-on-set-limits", pod(
        ctr(requests={"cpu": "100m"}, limits={"memory": "100Mi"}),
        overhead={"cpu": "10m", "memory": "10Mi"}), True,
     ResourceConfig(cpu_shares=112, memory=110 * MI)),
    ("init container larger than the regular ones", pod(
        guaranteed("a", "100m", "100Mi"), init=(guaranteed("i", "500m", "50Mi"),)), True,
     ResourceConfig(512, 50_000, 100_000, 100 * MI)),
    ("a sidecar adds to the regular containers", pod(
        guaranteed("a", "100m", "100Mi"),
        init=(Container(name="s", image=IMAGE, restart_policy="Always",
                        resources=rr({"cpu": "50m", "memory": "20Mi"},
                                     {"cpu": "50m", "memory": "20Mi"})),)), True,
     ResourceConfig(153, 15_000, 100_000, 120 * MI)),
    ("an init container without a limit after a sidecar with one: limits declared",
     pod(ctr("a", {"cpu": "100m"}, {"cpu": "200m", "memory": "100Mi"}),
         init=(ctr("s", {"cpu": "50m"}, {"cpu": "100m", "memory": "20Mi"}, "Always"),
               ctr("i", {"cpu": "10m"}))), True,
     ResourceConfig(153, 30_000, 100_000, 120 * MI)),
    ("an init container without limits and no sidecar: no limits declared",
     pod(ctr("a", {"cpu": "100m"}, {"cpu": "200m", "memory": "100Mi"}),
         init=(ctr("i", {"cpu": "10m"}),)), True, ResourceConfig(cpu_shares=102)),
    ("pod-level resources", pod(ctr(), pod_resources=rr(limits={"cpu": "200m",
                                                                "memory": "128Mi"})), True,
     ResourceConfig(204, 20_000, 100_000, 128 * MI)),
    ("pod-level limits over containers without", pod(
        ctr("a", {"cpu": "50m"}), ctr("b"),
        pod_resources=rr(limits={"cpu": "1", "memory": "1Gi"})), True,
     ResourceConfig(51, 100_000, 100_000, 1024 * MI)),
    ("hugepages", pod(ctr(requests={"cpu": "100m", "hugepages-2Mi": "4Mi"},
                          limits={"hugepages-2Mi": "4Mi"})), True,
     ResourceConfig(cpu_shares=102, hugepage_limits={2 * MI: 4 * MI})),
]


@pytest.mark.parametrize(("case", "subject", "enforce", "expected"), CONFIGS,
                         ids=[c[0] for c in CONFIGS])
def test_resource_config_for_pod(case: str, subject: Pod, enforce: bool,
                                 expected: ResourceConfig) -> None:
    assert resource_config_for_pod(subject, enforce_cpu_limits=enforce) == expected


def test_pod_requests_and_limits_aggregate_as_upstream() -> None:
    subject = pod(ctr("a", {"cpu": "100m"}, {"cpu": "200m"}), ctr("b", {"cpu": "300m"}),
                  init=(ctr("i", {"cpu": "1"}, {"cpu": "2"}),))
    assert pod_requests(subject)["cpu"] == 1
    assert pod_limits(subject)["cpu"] == 2


# --- GetContainerOOMScoreAdjust (policy_test.go) ---------------------------------------

CAPACITY = 4000


def burst(name: str, memory: int, restart: str | None = None) -> Container:
    return ctr(name, {"memory": str(memory)}, {"cpu": "1"}, restart)


OOM = [
    ("best-effort", pod(ctr()), 0, 1000),
    ("guaranteed", pod(guaranteed()), 0, -997),
    ("burstable without a memory request: 999, not best-effort's 1000",
     pod(ctr(requests={"cpu": "1"})), 0, 999),
    ("burstable half the memory", pod(burst("c", 2000)), 0, 500),
    ("burstable a tenth", pod(burst("c", 400)), 0, 900),
    ("burstable all the memory: clamped to 3", pod(burst("c", 4000)), 0, 3),
    ("burstable more than the memory: clamped to 3", pod(burst("c", 8000)), 0, 3),
    ("critical: static and system-node-critical",
     pod(ctr(), priority_class="system-node-critical",
         annotations={"kubernetes.io/config.source": "file"}), 0, -997),
    ("system-node-critical but not critical", pod(ctr(), priority_class="system-node-critical"),
     0, 1000),
    ("critical by priority but not node-critical", pod(ctr(), priority=2_000_001_000), 0,
     1000),
    ("a sidecar with less memory gets the smallest regular container's score",
     pod(burst("a", 1000), burst("b", 2000), init=(burst("s", 500, "Always"),)), 2, 750),
    ("a sidecar with more memory keeps its own",
     pod(burst("a", 1000), init=(burst("s", 2000, "Always"),)), 1, 500),
    ("an init container is no sidecar",
     pod(burst("a", 1000), init=(burst("i", 500),)), 1, 875),
    ("pod-level memory request shared among containers",
     pod(burst("a", 500), burst("b", 500), pod_resources=rr({"memory": "2000"})), 0, 750),
]


@pytest.mark.parametrize(("case", "subject", "index", "expected"), OOM,
                         ids=[o[0] for o in OOM])
def test_container_oom_score_adjust(case: str, subject: Pod, index: int,
                                    expected: int) -> None:
    container = (*subject.spec.containers, *subject.spec.init_containers)[index]
    assert container_oom_score_adjust(subject, container, CAPACITY) == expected


# --- container resources (kuberuntime_container_linux_test.go) -------------------------

CONTAINER = [
    ("nothing", ctr(), (2, 0, 100_000, 0)),
    ("request and limit", ctr(requests={"cpu": "1", "memory": "128Mi"},
                              limits={"cpu": "2", "memory": "128Mi"}),
     (1024, 200_000, 100_000, 128 * MI)),
    ("a limit without a request: shares of the limit", ctr(limits={"cpu": "2"}),
     (2048, 200_000, 100_000, 0)),
    ("a zero request: the minimum shares, whatever the limit (upstream's RequestZeroCPU)",
     ctr(requests={"cpu": "0"}, limits={"cpu": "2"}), (2, 200_000, 100_000, 0)),
    ("a tiny limit: the 1 ms quota floor", ctr(limits={"cpu": "1m"}),
     (2, 1000, 100_000, 0)),
    ("fractions round up as Quantity.MilliValue", ctr(limits={"cpu": "0.0001"}),
     (2, 1000, 100_000, 0)),
]


@pytest.mark.parametrize(("case", "container", "expected"), CONTAINER,
                         ids=[c[0] for c in CONTAINER])
def test_linux_container_resources(case: str, container: Container,
                                   expected: tuple[int, int, int, int]) -> None:
    r = linux_container_resources(pod(container), container, 2**30)
    assert (r.cpu_shares, r.cpu_quota, r.cpu_period, r.memory_limit_in_bytes) == expected


def test_oom_score_adj_reaches_the_container_resources() -> None:
    container = ctr(requests={"memory": "1000"}, limits={"memory": "2000"})
    assert linux_container_resources(pod(container), container, CAPACITY).oom_score_adj == 750


def test_hugepage_limits_for_every_node_size() -> None:
    """GetHugepageLimitsFromResources: every page size the node has, 0 unless asked."""
    container = ctr(limits={"hugepages-2Mi": "4Mi", "hugepages-64Ki": "1Mi", "cpu": "1"})
    assert container_hugepage_limits(container, ("2MB", "1GB")) == (
        HugepageLimit("2MB", 4 * MI), HugepageLimit("1GB", 0))
    r = linux_container_resources(pod(container), container, 2**30, ("2MB", "1GB"))
    assert r.hugepage_limits == (HugepageLimit("2MB", 4 * MI), HugepageLimit("1GB", 0))


@pytest.mark.parametrize(("size", "name"), [
    (2 * MI, "2MB"), (2**30, "1GB"), (64 * 1024, "64KB"), (32 * MI, "32MB")])
def test_hugepage_unit_size(size: int, name: str) -> None:
    assert hugepage_unit_size(size) == name


def test_node_hugepage_sizes(tmp_path: Path) -> None:
    for entry in ("hugepages-2048kB", "hugepages-1048576kB", "other"):
        (tmp_path / entry).mkdir()
    assert node_hugepage_sizes(str(tmp_path)) == ("1GB", "2MB")
    assert node_hugepage_sizes(str(tmp_path / "none")) == ()


# --- cgroup names (cgroup_manager_linux_test.go) ---------------------------------------

UID = "7f0a-11e9"


@pytest.mark.parametrize(("subject", "driver", "parent"), [
    (pod(guaranteed(), uid=UID), "cgroupfs", f"/kubepods/pod{UID}"),
    (pod(ctr(requests={"cpu": "1"}), uid=UID), "cgroupfs", f"/kubepods/burstable/pod{UID}"),
    (pod(ctr(), uid=UID), "cgroupfs", f"/kubepods/besteffort/pod{UID}"),
    (pod(guaranteed(), uid=UID), SYSTEMD, "/kubepods.slice/kubepods-pod7f0a_11e9.slice"),
    (pod(ctr(), uid=UID), SYSTEMD, "/kubepods.slice/kubepods-besteffort.slice/"
                                   "kubepods-besteffort-pod7f0a_11e9.slice"),
])
def test_pod_cgroup_parent(subject: Pod, driver: str, parent: str) -> None:
    assert pod_cgroup_parent(subject, "/", driver) == parent


def test_cgroup_names_round_trip() -> None:
    assert to_systemd(()) == "/"
    assert to_systemd(("system", "Burstable")) == "/system.slice/system-Burstable.slice"
    assert to_systemd(("Burstable-pod_123",)) == "/Burstable_pod_123.slice"
    assert parse_systemd("/system.slice/system-Burstable.slice") == ("system", "Burstable")
    assert to_cgroupfs(("kubepods", "burstable")) == "/kubepods/burstable"
    assert parse_root("/", "cgroupfs") == ()
    assert parse_root("/nested/root", "cgroupfs") == ("nested", "root")
    assert parse_root("machine.slice", SYSTEMD) == ("machine",)
    assert pod_cgroup_parent(pod(ctr(), uid="u"), "/nested", "cgroupfs") == (
        "/nested/kubepods/besteffort/podu")


# --- PodCgroups on the fake manager ------------------------------------------------------


def test_start_creates_kubepods_and_the_qos_cgroups() -> None:
    fake = FakeCgroupManager()
    PodCgroups(fake, (), "cgroupfs", node_cpu_millis=2000, node_memory=8 * 2**30).start()
    assert fake.cgroups == {
        ("kubepods",): ResourceConfig(cpu_shares=2048, memory=8 * 2**30),
        ("kubepods", "burstable"): ResourceConfig(),
        ("kubepods", "besteffort"): ResourceConfig(cpu_shares=2),
    }


def test_ensure_update_qos_and_destroy() -> None:
    fake = FakeCgroupManager()
    cgroups = PodCgroups(fake, (), "cgroupfs", 2000, 2**30)
    cgroups.start()
    burstable = pod(ctr(requests={"cpu": "100m"}, limits={"memory": "64Mi"}), uid="b1")
    other = pod(ctr(requests={"cpu": "250m"}), uid="b2")
    best = pod(ctr(), uid="e1")
    assert cgroups.ensure(pod_cgroup_spec(burstable)) == "/kubepods/burstable/podb1"
    assert cgroups.ensure(pod_cgroup_spec(other)) == "/kubepods/burstable/podb2"
    assert cgroups.ensure(pod_cgroup_spec(best)) == "/kubepods/besteffort/pode1"
    assert fake.cgroups[("kubepods", "burstable", "podb1")] == ResourceConfig(
        cpu_shares=102, memory=64 * MI)
    # Shares follow the burstable pods' requests, updated before each new pod cgroup.
    assert fake.cgroups[("kubepods", "burstable")].cpu_shares == 358
    assert cgroups.pod_cgroups() == {"b1": ("kubepods", "burstable", "podb1"),
                                     "b2": ("kubepods", "burstable", "podb2"),
                                     "e1": ("kubepods", "besteffort", "pode1")}
    fake.calls.clear()
    assert cgroups.ensure(pod_cgroup_spec(burstable)) == "/kubepods/burstable/podb1"
    assert fake.calls == []  # an existing pod cgroup is left alone
    assert cgroups.destroy("b2")
    assert ("kubepods", "burstable", "podb2") not in fake.cgroups
    assert fake.cgroups[("kubepods", "burstable")].cpu_shares == 102
    fake.processes[("kubepods", "besteffort", "pode1")] = frozenset({4242})
    cgroups.cleanup_orphans(frozenset({"b1"}))
    # An orphan holding processes is another kubelet's pod on this machine: kept.
    assert cgroups.pod_cgroups() == {"b1": ("kubepods", "burstable", "podb1"),
                                     "e1": ("kubepods", "besteffort", "pode1")}
    del fake.processes[("kubepods", "besteffort", "pode1")]
    cgroups.cleanup_orphans(frozenset({"b1"}))
    assert cgroups.pod_cgroups() == {"b1": ("kubepods", "burstable", "podb1")}
    assert cgroups.destroy("never-had-one")


def test_a_qos_cgroup_value_is_written_when_it_changes_not_for_every_pod() -> None:
    fake = FakeCgroupManager()
    cgroups = PodCgroups(fake, (), "cgroupfs", 2000, 2**30)
    cgroups.start()
    cgroups.ensure(pod_cgroup_spec(pod(ctr(), uid="e1")))
    fake.calls.clear()
    cgroups.ensure(pod_cgroup_spec(pod(ctr(), uid="e2")))
    assert cgroups.destroy("e1")
    assert [c for c in fake.calls if c[0] == "update"] == []
    cgroups.ensure(pod_cgroup_spec(pod(ctr(requests={"cpu": "1"}), uid="b1")))
    assert fake.calls[-2:] == [("update", ("kubepods", "burstable")),
                               ("create", ("kubepods", "burstable", "podb1"))]
    assert fake.cgroups[("kubepods", "burstable")].cpu_shares == 1024


def test_a_pod_this_kubelet_ensured_is_destroyed_without_listing_every_pod_cgroup() -> None:
    """A mass removal listed every pod cgroup per pod removed (under the lock all pod
    workers share); one this kubelet ensured is found where ensure put it. One it did
    not ensure (adopted after a restart, an orphan) is still looked for among all."""
    fake = FakeCgroupManager()
    cgroups = PodCgroups(fake, (), "cgroupfs", 2000, 2**30)
    cgroups.start()
    cgroups.ensure(pod_cgroup_spec(pod(ctr(), uid="e1")))
    fake.create(("kubepods", "burstable", "podadopted"), ResourceConfig())
    fake.calls.clear()
    assert cgroups.destroy("e1")
    assert [c for c in fake.calls if c[0] == "children"] == []
    assert ("destroy", ("kubepods", "besteffort", "pode1")) in fake.calls
    fake.calls.clear()
    assert cgroups.destroy("adopted")
    assert ("destroy", ("kubepods", "burstable", "podadopted")) in fake.calls
    assert [c for c in fake.calls if c[0] == "children"] != []
    assert cgroups.pod_cgroups() == {}


class LockWatchingManager(FakeCgroupManager):
    """Records whether the PodCgroups lock was held while a pod cgroup's directories
    were made or removed."""

    def __init__(self) -> None:
        super().__init__()
        self.owner: PodCgroups | None = None
        self.locked_during: list[str] = []

    def _note(self, what: str, name: CgroupName) -> None:
        if self.owner is not None and len(name) == 3 and self.owner._lock.locked():
            self.locked_during.append(what)

    def create(self, name: CgroupName, config: ResourceConfig) -> None:
        self._note("create", name)
        super().create(name, config)

    def destroy(self, name: CgroupName) -> None:
        self._note("destroy", name)
        super().destroy(name)


def test_a_pod_cgroup_is_made_and_removed_outside_the_lock_every_worker_shares() -> None:
    """Fifty workers starting (or stopping) at once queued on the lock while its holder
    made a dozen directories; the lock now covers the known pods and the QoS update."""
    fake = LockWatchingManager()
    cgroups = PodCgroups(fake, (), "cgroupfs", 2000, 2**30)
    fake.owner = cgroups
    cgroups.start()
    burstable = pod(ctr(requests={"cpu": "100m"}), uid="b1")
    assert cgroups.ensure(pod_cgroup_spec(burstable)) == "/kubepods/burstable/podb1"
    assert fake.cgroups[("kubepods", "burstable")].cpu_shares == 102
    assert cgroups.destroy("b1")
    assert fake.locked_during == []
    assert ("kubepods", "burstable", "podb1") not in fake.cgroups
    assert fake.cgroups[("kubepods", "burstable")].cpu_shares == 2


def test_systemd_pod_cgroups_are_found_by_uid() -> None:
    fake = FakeCgroupManager()
    cgroups = PodCgroups(fake, (), SYSTEMD, 1000, 2**30)
    cgroups.start()
    assert cgroups.ensure(pod_cgroup_spec(pod(ctr(), uid="a-b"))) == (
        "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-poda_b.slice")
    assert list(cgroups.pod_cgroups()) == ["a-b"]


# --- CgroupFS on a directory tree ------------------------------------------------------


def v1_tree(tmp_path: Path) -> dict[str, str]:
    mounts = {c: str(tmp_path / c) for c in ("cpu", "cpuacct", "cpuset", "memory", "pids")}
    for path in mounts.values():
        Path(path).mkdir()
    (tmp_path / "cpuset" / "cpuset.cpus").write_text("0-1\n")
    (tmp_path / "cpuset" / "cpuset.mems").write_text("0\n")
    return mounts


class KernelLikeCgroupFS(CgroupFS):
    """CgroupFS whose new directories get the files the kernel would put there."""

    def create(self, name: tuple[str, ...], config: ResourceConfig) -> None:
        for controller, directory in self._dirs(name).items():
            path = Path(directory)
            for parent in (*reversed(path.parents), path):
                if not parent.exists():
                    parent.mkdir()
                    if controller == "cpuset":
                        (parent / "cpuset.cpus").write_text("")
                        (parent / "cpuset.mems").write_text("")
                    (parent / "cgroup.procs").write_text("")
        super().create(name, config)


def test_cgroupfs_v1_writes_the_limits(tmp_path: Path) -> None:
    fs = KernelLikeCgroupFS("cgroupfs", mounts=v1_tree(tmp_path))
    name = ("kubepods", "burstable", "podu")
    assert not fs.exists(name)
    fs.create(name, ResourceConfig(102, 20_000, 100_000, 64 * MI))
    assert fs.exists(name)
    cpu = tmp_path / "cpu/kubepods/burstable/podu"
    assert (cpu / "cpu.shares").read_text() == "102"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "20000"
    assert (cpu / "cpu.cfs_period_us").read_text() == "100000"
    assert (tmp_path / "memory/kubepods/burstable/podu/memory.limit_in_bytes").read_text() == (
        str(64 * MI))
    # A new cpuset cgroup takes its parent's cpus and mems, or no task could join it.
    assert (tmp_path / "cpuset/kubepods/burstable/podu/cpuset.cpus").read_text() == "0-1"
    assert (tmp_path / "cpuset/kubepods/cpuset.mems").read_text() == "0"
    assert fs.children(("kubepods", "burstable")) == ("podu",)
    fs.update(name, ResourceConfig(cpu_shares=2))
    assert (cpu / "cpu.shares").read_text() == "2"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "20000"  # None leaves a value alone


def test_cgroupfs_v2_writes_weight_max_and_memory(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    directory = tmp_path / "kubepods"
    directory.mkdir()
    (directory / "cgroup.controllers").write_text("cpu memory pids\n")
    (directory / "cgroup.subtree_control").write_text("")
    fs = CgroupFS("cgroupfs", unified_root=str(tmp_path))
    fs.create(("kubepods", "podu"), ResourceConfig(1024, 50_000, 100_000, 64 * MI))
    pod_dir = directory / "podu"
    assert (pod_dir / "cpu.weight").read_text() == "39"
    assert (pod_dir / "cpu.max").read_text() == "50000 100000"
    assert (pod_dir / "memory.max").read_text() == str(64 * MI)
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"


def test_cgroupfs_destroy_removes_nested_cgroups(tmp_path: Path) -> None:
    """rmdir deepest first: the runtime's container cgroups may still be there."""
    mounts = {c: str(tmp_path / c) for c in ("cpu", "memory")}
    for c in mounts:
        (tmp_path / c / "kubepods" / "podu" / "container").mkdir(parents=True)
    fs = CgroupFS("cgroupfs", mounts=mounts)
    fs.destroy(("kubepods", "podu"))
    assert not (tmp_path / "cpu" / "kubepods" / "podu").exists()
    assert not (tmp_path / "memory" / "kubepods" / "podu").exists()
    assert (tmp_path / "cpu" / "kubepods").exists()
    fs.destroy(("kubepods", "podu"))  # gone already: nothing to do


def test_cgroupfs_destroy_of_an_empty_pod_cgroup_is_one_rmdir_per_hierarchy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod whose sandboxes are gone leaves empty directories: removed without a walk of
    each hierarchy for processes (which a mass removal did twice a pod, in every one)."""
    mounts = {c: str(tmp_path / c) for c in ("cpu", "memory", "pids")}
    for c in mounts:
        (tmp_path / c / "kubepods" / "podu").mkdir(parents=True)
    walked: list[str] = []

    def walk(top: str, **_: object) -> Iterator[tuple[str, list[str], list[str]]]:
        walked.append(top)
        return iter(())

    monkeypatch.setattr("runtime.cm.cgroupfs.os.walk", walk)
    CgroupFS("cgroupfs", mounts=mounts).destroy(("kubepods", "podu"))
    assert walked == []
    assert not any((tmp_path / c / "kubepods" / "podu").exists() for c in mounts)
    assert all((tmp_path / c / "kubepods").exists() for c in mounts)


# --- the runtime manager -----------------------------------------------------------------


def test_sync_pod_creates_the_pod_cgroup_and_names_it_cgroup_parent(tmp_path: Path) -> None:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=[IMAGE])
    settings = NodeSettings(node_name="n", root_dir=str(tmp_path / "root"),
                            pod_logs_dir=str(tmp_path / "logs"), cgroups_per_qos=True,
                            memory_capacity=2**30)
    cgroups_fs = FakeCgroupManager()
    cgroups = PodCgroups(cgroups_fs, (), "cgroupfs", 1000, 2**30)
    cgroups.start()
    manager = KubeRuntimeManager(fake, settings, clock, cgroups=cgroups)
    subject = pod(Container(name="c", image=IMAGE, image_pull_policy="IfNotPresent",
                            resources=rr({"cpu": "100m"}, {"memory": "64Mi"})), uid="u-9")
    status = manager.get_pod_status(PodUID("u-9"), "p", "default")
    assert manager.sync_pod(subject, status).ok
    sandbox = manager.get_pod_status(PodUID("u-9"), "p", "default").sandbox_statuses[0]
    assert fake.sandbox_config(sandbox.id).cgroup_parent == "/kubepods/burstable/podu-9"
    assert cgroups_fs.cgroups[("kubepods", "burstable", "podu-9")] == ResourceConfig(
        cpu_shares=102, memory=64 * MI)
    container = manager.get_pod_status(PodUID("u-9"), "p", "default").container_statuses[0]
    resources = fake.container_config(container.id).resources
    assert resources is not None
    assert (resources.cpu_shares, resources.memory_limit_in_bytes, resources.oom_score_adj) == (
        102, 64 * MI, 1000 - 1000 * 64 * MI // 2**30)
    manager.destroy_pod_cgroup(PodUID("u-9"))
    assert ("kubepods", "burstable", "podu-9") not in cgroups_fs.cgroups


def test_without_cgroups_per_qos_no_cgroup_parent(tmp_path: Path) -> None:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=[IMAGE])
    settings = NodeSettings(node_name="n", root_dir=str(tmp_path / "root"),
                            pod_logs_dir=str(tmp_path / "logs"), memory_capacity=2**30)
    manager = KubeRuntimeManager(fake, settings, clock)
    subject = pod(Container(name="c", image=IMAGE, image_pull_policy="IfNotPresent"))
    assert manager.sync_pod(subject, manager.get_pod_status(PodUID("u-1"), "p", "default")).ok
    sandbox = manager.get_pod_status(PodUID("u-1"), "p", "default").sandbox_statuses[0]
    assert fake.sandbox_config(sandbox.id).cgroup_parent == ""


HYBRID_MOUNTINFO = """\
30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
41 30 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 30 0:39 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
45 30 0:42 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
46 30 0:43 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
"""


def test_v1_mounts_on_a_hybrid_machine_include_its_cgroup2_hierarchy(tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(HYBRID_MOUNTINFO)
    assert v1_mounts(str(mountinfo)) == {
        HYBRID_UNIFIED: "/sys/fs/cgroup/unified", "name=systemd": "/sys/fs/cgroup/systemd",
        "cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
        "memory": "/sys/fs/cgroup/memory"}


def test_cgroupfs_destroy_on_a_hybrid_machine_removes_the_pod_from_cgroup2_too(
        tmp_path: Path) -> None:
    """runc makes a container's cgroup (and so its pod's) in the hybrid cgroup2 tree too:
    left there, one empty directory stayed behind for every pod ever run."""
    mounts = {c: str(tmp_path / c) for c in ("cpu", "memory", HYBRID_UNIFIED)}
    for c in mounts:
        (tmp_path / c / "kubepods" / "podu" / "container").mkdir(parents=True)
    CgroupFS("cgroupfs", mounts=mounts).destroy(("kubepods", "podu"))
    assert not any((tmp_path / c / "kubepods" / "podu").exists() for c in mounts)


# --- node allocatable: the kubepods and reserved cgroups' limits ---------------------------


def test_cgroupfs_writes_pids_max_of_a_node_resource_config(tmp_path: Path) -> None:
    """pids.max on v1 (the pids hierarchy) and v2; a pod's ResourceConfig has none."""
    v1 = tmp_path / "v1"
    v1.mkdir()
    fs = KernelLikeCgroupFS("cgroupfs", mounts=v1_tree(v1))
    fs.create(("kubepods",), NodeResourceConfig(cpu_shares=1536, memory=GI, pids_limit=31768))
    assert (v1 / "pids/kubepods/pids.max").read_text() == "31768"
    assert (v1 / "cpu/kubepods/cpu.shares").read_text() == "1536"
    fs.update(("kubepods",), ResourceConfig(cpu_shares=2))
    assert (v1 / "pids/kubepods/pids.max").read_text() == "31768"
    v2 = tmp_path / "v2"
    (v2 / "kubepods").mkdir(parents=True)
    for directory in (v2, v2 / "kubepods"):
        (directory / "cgroup.controllers").write_text("cpu memory pids\n")
        (directory / "cgroup.subtree_control").write_text("")
    CgroupFS("cgroupfs", unified_root=str(v2)).update(
        ("kubepods",), NodeResourceConfig(memory=GI, pids_limit=100))
    assert (v2 / "kubepods/pids.max").read_text() == "100"
    assert (v2 / "kubepods/memory.max").read_text() == str(GI)


def test_start_gives_kubepods_the_planned_limits() -> None:
    """The plan's kubepods limits (runtime.cm.node_allocatable) replace the capacity's."""
    fake = FakeCgroupManager()
    node = plan(MachineCapacity(cpu=2, memory=8 * GI, ephemeral_storage=GI, pods=110,
                                pid=32768),
                AllocatableConfig(system_reserved=(("cpu", "500m"), ("memory", "1Gi")),
                                  kube_reserved=(("pid", "768"),)))
    PodCgroups(fake, (), "cgroupfs", node=node.kubepods).start()
    assert fake.cgroups[("kubepods",)] == NodeResourceConfig(
        cpu_shares=1536, memory=7 * GI, pids_limit=32000)


class RefusingManager(FakeCgroupManager):
    """The kernel refusing a memory limit below what the cgroup already uses (EBUSY)."""

    def update(self, name: CgroupName, config: ResourceConfig) -> None:
        if name == ("kubepods",) and config.memory is not None:
            raise OSError(16, "Device or resource busy")
        super().update(name, config)


def test_a_kubepods_limit_the_kernel_refuses_leaves_the_qos_cgroups_made() -> None:
    """start leaves an existing kubepods as it is (actors.app.cgroups retries the limits,
    with events); enforce_node_allocatable says the kernel's refusal."""
    fake = RefusingManager()
    fake.cgroups[("kubepods",)] = ResourceConfig()
    cgroups = PodCgroups(fake, (), "cgroupfs", node=NodeResourceConfig(memory=GI))
    cgroups.start()
    assert ("kubepods", "burstable") in fake.cgroups
    assert fake.cgroups[("kubepods",)] == ResourceConfig()
    with pytest.raises(OSError, match="Device or resource busy"):
        cgroups.enforce_node_allocatable()
