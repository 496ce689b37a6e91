"""Resource stats: the node readers on a fake cgroup and /proc tree, the pure pieces of the
summary as tables, and one collection on the fake runtime decoded strictly against the
upstream types (tests.stats_v1alpha1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from msgspec import UNSET

from runtime import host_counters as host
from runtime.clock import FakeClock
from runtime.cri.sandbox_stats import SandboxStats
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ImageSpec,
    PodSandboxConfig,
    PodSandboxMetadata,
)
from runtime.cri.usage import CpuUsage, InterfaceUsage
from runtime.ids import ContainerID
from runtime.kuberuntime import labels as L
from runtime.stats import build
from runtime.stats import summary as s
from runtime.stats.collector import StatsCollector, StatsSettings, node_memory
from runtime.testing.fake_runtime import FakeRuntime
from tests.stats_v1alpha1 import decode

IMAGE = "localhost:5000/kubelet-actors/busybox:1.35"
NET_DEV = "\n".join((
    "Inter-|   Receive                     |  Transmit",
    " face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop"
    " fifo colls carrier compressed",
    "    lo: 500 5 0 0 0 0 0 0 500 5 0 0 0 0 0 0",
    "  eth0: 1110 10 2 0 0 0 0 0 472 4 1 0 0 0 0 0",
    "veth12: 70 1 0 0 0 0 0 0 70 1 0 0 0 0 0 0",
)) + "\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def fake_v1_tree(root: Path, pod_uid: str = "u1") -> host.HostPaths:
    """A cgroup v1 hierarchy (root, one burstable pod with its sandbox) and a /proc."""
    cg, proc = root / "cgroup", root / "proc"
    for rel, usage, inactive, cpu in (("", 4_000_000, 1_000_000, 9_000_000_000),
                                      ("kubepods", 400_000, 100_000, 3_000_000_000),
                                      (f"kubepods/burstable/pod{pod_uid}", 300_000, 100_000,
                                       2_000_000_000)):
        write(cg / "cpuacct" / rel / "cpuacct.usage", f"{cpu}\n")
        write(cg / "memory" / rel / "memory.usage_in_bytes", f"{usage}\n")
        write(cg / "memory" / rel / "memory.limit_in_bytes", "9223372036854771712\n")
        write(cg / "memory" / rel / "memory.stat",
              f"cache 1\nrss 2\ntotal_rss 150000\ntotal_inactive_file {inactive}\n"
              "total_pgfault 77\ntotal_pgmajfault 3\n")
    write(cg / "pids" / f"kubepods/burstable/pod{pod_uid}" / "pids.current", "3\n")
    write(cg / "memory" / f"kubepods/burstable/pod{pod_uid}" / "sandbox-1" / "cgroup.procs",
          "4242\n")
    write(proc / "net/dev", NET_DEV)
    write(proc / "4242/net/dev", NET_DEV)
    write(proc / "stat", "cpu  1 2 3\nbtime 1700000000\n")
    write(proc / "meminfo", "MemTotal:       10000 kB\nMemFree: 1 kB\n")
    write(proc / "sys/kernel/pid_max", "32768\n")
    write(proc / "sys/kernel/threads-max", "12000\n")
    write(proc / "loadavg", "0.50 0.40 0.30 2/2056 9999\n")
    return host.HostPaths(proc=str(proc), cgroup=str(cg))


# --- readers -----------------------------------------------------------------------------


def test_a_v1_cgroup_reads_as_cadvisor_reads_it(tmp_path: Path) -> None:
    paths = fake_v1_tree(tmp_path)
    sample = host.read_cgroup(paths, "kubepods/burstable/podu1")
    assert sample == host.CgroupSample(
        cpu_usage_ns=2_000_000_000, memory_usage=300_000, working_set=200_000, rss=150_000,
        page_faults=77, major_page_faults=3, memory_limit=None, pids=3)
    assert host.read_cgroup(paths, "kubepods/missing") is None
    assert host.find_pod_cgroups(paths) == {"u1": "kubepods/burstable/podu1"}
    assert host.cgroup_pids(paths, "kubepods/burstable/podu1/sandbox-1") == (4242,)


def test_a_v2_cgroup_reads_usage_usec_and_anon(tmp_path: Path) -> None:
    cg = tmp_path / "cg"
    write(cg / "cgroup.controllers", "cpu memory pids\n")
    write(cg / "kubepods/cpu.stat", "usage_usec 1500\nuser_usec 1000\n")
    write(cg / "kubepods/memory.current", "5000\n")
    write(cg / "kubepods/memory.max", "8000\n")
    write(cg / "kubepods/memory.stat", "anon 1200\ninactive_file 6000\npgfault 9\n")
    sample = host.read_cgroup(host.HostPaths(cgroup=str(cg)), "kubepods")
    assert sample is not None
    assert (sample.cpu_usage_ns, sample.working_set, sample.rss, sample.memory_limit,
            sample.page_faults) == (1_500_000, 0, 1200, 8000, 9)


def test_the_v2_root_cgroup_memory_comes_from_meminfo(tmp_path: Path) -> None:
    """No memory.current at the v2 root: used memory less the root's inactive_file."""
    cg, proc = tmp_path / "cg", tmp_path / "proc"
    write(cg / "cgroup.controllers", "cpu memory pids\n")
    write(cg / "cpu.stat", "usage_usec 1500\n")
    write(cg / "memory.stat", "anon 1200\ninactive_file 2048\n")
    write(proc / "meminfo", "MemTotal:       10000 kB\nMemFree:         4000 kB\n"
                            "Inactive(file):   9 kB\n")
    sample = host.read_cgroup(host.HostPaths(proc=str(proc), cgroup=str(cg)), "")
    assert sample is not None
    assert (sample.memory_usage, sample.working_set) == (6000 * 1024, 6000 * 1024 - 2048)


def test_node_memory_available_is_capacity_less_the_root_working_set(tmp_path: Path) -> None:
    """memory.available as the eviction manager sees it: MemTotal less the root cgroup's
    usage less its inactive file pages (not MemAvailable, not MemFree)."""
    paths = fake_v1_tree(tmp_path)
    memory = node_memory(paths, 5.0)
    assert memory is not None
    assert memory.working_set_bytes == 4_000_000 - 1_000_000
    assert memory.available_bytes == 10000 * 1024 - 3_000_000
    assert node_memory(host.HostPaths(proc=str(tmp_path / "proc"),
                                      cgroup=str(tmp_path / "none")), 5.0) is None


@pytest.mark.parametrize(("usage", "inactive", "expected"), [
    (1000, 200, 800), (1000, 0, 1000), (100, 500, 0),  # never negative
])
def test_working_set_is_usage_less_inactive_file(usage: int, inactive: int,
                                                 expected: int) -> None:
    assert host.working_set(usage, inactive) == expected


def test_proc_readers(tmp_path: Path) -> None:
    paths = fake_v1_tree(tmp_path)
    names = [i.name for i in host.network_interfaces(paths)]
    assert names == ["eth0"]  # lo and veth* left out, as cAdvisor does
    (eth0,) = host.network_interfaces(paths, 4242)
    assert eth0 == InterfaceUsage("eth0", 1110, 2, 472, 1)
    assert host.rlimit(paths) == (12000, 2056)  # min(pid_max, threads-max); loadavg total
    assert host.boot_time(paths) == 1_700_000_000.0
    assert host.memory_total(paths) == 10000 * 1024


def test_disk_usage_counts_blocks_and_inodes_once(tmp_path: Path) -> None:
    top = tmp_path / "vol"
    (top / "sub").mkdir(parents=True)
    (top / "sub" / "a").write_bytes(b"x" * 10000)
    os.link(top / "sub" / "a", top / "hard")
    usage = host.disk_usage(str(top))
    assert usage is not None
    assert usage.inodes == 3  # vol, sub, a (the hard link is the same inode)
    assert usage.bytes >= 10000
    assert host.disk_usage(str(tmp_path / "none")) is None


# --- pure pieces -------------------------------------------------------------------------


@pytest.mark.parametrize(("previous", "current", "expected"), [
    (None, (10.0, 5_000), None),  # no earlier sample
    ((10.0, 1_000_000_000), (12.0, 2_000_000_000), 500_000_000),  # half a core
    ((10.0, 1_000), (10.0, 2_000), None),  # time did not move
    ((10.0, 5_000), (11.0, 1_000), None),  # counter went back (a new cgroup)
])
def test_nano_cores_from_counter_deltas(previous: tuple[float, int] | None,
                                        current: tuple[float, int],
                                        expected: int | None) -> None:
    prev = build.CpuCounter(*previous) if previous else None
    assert build.nano_cores(prev, build.CpuCounter(*current)) == expected


def test_the_runtimes_own_nano_cores_win_over_the_computed_rate() -> None:
    assert build.cpu_stats(CpuUsage(0.0, 10, 7), 99).usage_nano_cores == 7
    assert build.cpu_stats(CpuUsage(0.0, 10, None), 99).usage_nano_cores == 99
    assert build.cpu_stats(CpuUsage(0.0, 10, 0), 99).usage_nano_cores == 99


def test_network_stats_inline_eth0_and_list_every_interface() -> None:
    net = build.network_stats([InterfaceUsage("eth1", 1), InterfaceUsage("eth0", 2, 0, 3, 0)],
                              0.0)
    assert net is not None and net.name == "eth0" and net.rx_bytes == 2
    assert [i.name for i in net.interfaces or ()] == ["eth1", "eth0"]
    assert build.network_stats([], 0.0) is None


def test_ephemeral_storage_sums_rootfs_logs_and_volumes() -> None:
    fs = host.FsSample(capacity=100, available=40, used=60, inodes=10, inodes_free=4)
    containers = [s.ContainerStats("a", "t", rootfs=s.FsStats("t", used_bytes=5, inodes_used=1),
                                   logs=s.FsStats("t", used_bytes=7, inodes_used=2))]
    volumes = [build.volume_stats("cache", host.DiskUsage(11, 3), fs, 0.0)]
    eph = build.ephemeral_storage(containers, volumes, fs, 0.0)
    assert (eph.used_bytes, eph.inodes_used, eph.capacity_bytes, eph.available_bytes) == (
        23, 6, 100, 40)


# --- one collection ----------------------------------------------------------------------


def _pod(fake: FakeRuntime, uid: str, name: str) -> ContainerID:
    meta = PodSandboxMetadata(name, uid, "default")
    labels = {L.POD_NAME: name, L.POD_NAMESPACE: "default", L.POD_UID: uid}
    sandbox = PodSandboxConfig(meta, labels=labels)
    sid = fake.run_pod_sandbox(sandbox)
    config = ContainerConfig(ContainerMetadata("main"), ImageSpec(IMAGE),
                             labels={**labels, L.CONTAINER_NAME: "main"})
    cid = fake.create_container(sid, config, sandbox)
    fake.start_container(cid)
    return cid


def test_a_collection_on_the_fake_runtime_decodes_as_upstreams_summary(tmp_path: Path) -> None:
    clock = FakeClock()
    fake = FakeRuntime(clock, images=(IMAGE,))
    cid = _pod(fake, "u1", "web")
    paths = fake_v1_tree(tmp_path)
    root = tmp_path / "root"
    (root / "pods/u1/volumes/kubernetes.io~empty-dir/cache").mkdir(parents=True)
    (root / "pods/u1/volumes/kubernetes.io~empty-dir/cache/data").write_bytes(b"y" * 8192)
    logs = tmp_path / "logs" / "default_web_u1" / "main"
    logs.mkdir(parents=True)
    (logs / "0.log").write_bytes(b"z" * 4096)
    collector = StatsCollector(fake, StatsSettings("node-1", str(root), str(tmp_path / "logs"),
                                                   paths), now=clock.now)
    fake.set_stats(cid, 1_000_000_000, 5_000_000, 4096)
    first = collector.collect()
    clock.step(10.0)
    fake.set_stats(cid, 3_000_000_000, 6_000_000, 4096)
    snap = collector.collect()
    assert snap.error == ""
    summary = decode(s.encode(snap.summary))  # strict: upstream's names and nesting
    assert summary.node.nodeName == "node-1"
    assert summary.node.rlimit and summary.node.rlimit.maxpid == 12000
    (pods,) = summary.node.systemContainers or []  # upstream's "pods" system container
    assert pods.name == "pods" and pods.memory and pods.memory.workingSetBytes == 300_000
    (pod,) = summary.pods or []
    assert (pod.podRef.name, pod.podRef.uid) == ("web", "u1")
    (main,) = pod.containers or []
    assert main.cpu and main.cpu.usageNanoCores == 200_000_000  # 2 s of CPU in 10 s
    assert main.memory and main.memory.workingSetBytes == 6_000_000
    assert main.rootfs and main.rootfs.usedBytes == 4096
    # du of the log dir, as upstream's MetricsDu: the directory's own block counts too.
    assert main.logs and main.logs.usedBytes >= 4096  # type: ignore[operator]
    assert main.logs.inodesUsed == 2
    assert pod.cpu and pod.cpu.usageNanoCores == 200_000_000
    (volume,) = pod.volume or []
    assert volume.name == "cache" and volume.usedBytes >= 8192  # type: ignore[operator]
    assert pod.ephemeral_storage and pod.ephemeral_storage.usedBytes >= 8192 + 4096 + 4096  # type: ignore[operator]
    # No rate on the first collection: only a counter.
    first_main = first.summary.pods[0].containers[0]
    assert first_main.cpu is not None and first_main.cpu.usage_nano_cores is None
    only = decode(s.encode(s.cpu_and_memory_only(snap.summary)))
    assert only.node.fs is UNSET and only.node.cpu is not UNSET
    assert only.pods and only.pods[0].volume is UNSET and only.pods[0].memory is not UNSET


def test_without_list_pod_sandbox_stats_the_pod_cgroup_is_read(tmp_path: Path) -> None:
    from runtime.errors import CRIUnimplemented

    class Old(FakeRuntime):
        def list_pod_sandbox_stats(self) -> tuple[SandboxStats, ...]:
            raise CRIUnimplemented("ListPodSandboxStats", "unknown method", "UNIMPLEMENTED")

    clock = FakeClock()
    fake = Old(clock, images=(IMAGE,))
    _pod(fake, "u1", "web")
    collector = StatsCollector(fake, StatsSettings("n", str(tmp_path), str(tmp_path),
                                                   fake_v1_tree(tmp_path)), now=clock.now)
    summary = decode(s.encode(collector.collect().summary))
    (pod,) = summary.pods or []
    assert pod.memory and pod.memory.workingSetBytes == 200_000
    assert pod.cpu and pod.cpu.usageCoreNanoSeconds == 2_000_000_000
    assert pod.process_stats and pod.process_stats.process_count == 3
