"""Pure pieces of the summary: CPU rates from counters, samples -> stats/v1alpha1 objects.

No I/O here: runtime.stats.collector reads, these decide what the numbers mean, as
upstream's CRI stats provider does (pkg/kubelet/stats/cri_stats_provider.go and
helper.go).
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import Struct

from runtime.cri.types import FilesystemUsage
from runtime.cri.usage import CpuUsage, InterfaceUsage, MemoryUsage, NetworkUsage
from runtime.host_counters import CgroupSample, DiskUsage, FsSample
from runtime.stats import summary as s

DEFAULT_INTERFACE = "eth0"
"""The interface whose counters NetworkStats carries inline (upstream's network package)."""


class CpuCounter(Struct, frozen=True):
    """A cumulative CPU counter at a time: what a rate is computed from."""

    timestamp: float
    usage_ns: int


def nano_cores(previous: CpuCounter | None, current: CpuCounter) -> int | None:
    """Average usage in nanocores between two samples, as upstream's
    getAndUpdateContainerUsageNanoCores: None without an earlier sample, when time did not
    move forward, or when the counter went back (a restarted cgroup)."""
    if previous is None:
        return None
    elapsed = current.timestamp - previous.timestamp
    delta = current.usage_ns - previous.usage_ns
    if elapsed <= 0 or delta < 0:
        return None
    return int(delta / elapsed)


def cpu_stats(usage: CpuUsage, rate: int | None) -> s.CPUStats:
    """A CRI CPU sample as CPUStats: the runtime's own nanocores win when it sent them
    (upstream bypasses its cache then), else the rate computed from the counter."""
    cores = usage.usage_nano_cores if usage.usage_nano_cores else rate
    return s.CPUStats(s.go_time(usage.timestamp), cores, usage.usage_core_nanoseconds)


def memory_stats(usage: MemoryUsage) -> s.MemoryStats:
    return s.MemoryStats(
        s.go_time(usage.timestamp), usage.available_bytes, usage.usage_bytes,
        usage.working_set_bytes, usage.rss_bytes, usage.page_faults, usage.major_page_faults)


def cgroup_cpu(sample: CgroupSample, at: float, rate: int | None) -> s.CPUStats | None:
    if sample.cpu_usage_ns is None:
        return None
    return s.CPUStats(s.go_time(at), rate, sample.cpu_usage_ns)


def cgroup_memory(sample: CgroupSample, at: float, capacity: int | None) -> s.MemoryStats | None:
    """A cgroup's memory as MemoryStats; availableBytes = limit (else ``capacity``, the
    node's memory for the root) less the working set, left out with neither."""
    if sample.memory_usage is None:
        return None
    limit = sample.memory_limit or capacity
    available = (max(limit - sample.working_set, 0)
                 if limit is not None and sample.working_set is not None else None)
    return s.MemoryStats(s.go_time(at), available, sample.memory_usage, sample.working_set,
                         sample.rss, sample.page_faults, sample.major_page_faults)


def _interface(i: InterfaceUsage) -> s.InterfaceStats:
    return s.InterfaceStats(i.name, i.rx_bytes, i.rx_errors, i.tx_bytes, i.tx_errors)


def network_stats(interfaces: Iterable[InterfaceUsage], at: float,
                  default: InterfaceUsage | None = None) -> s.NetworkStats | None:
    """NetworkStats: ``default`` (else eth0) inline, every interface in ``interfaces``."""
    all_ = tuple(interfaces)
    if default is None:
        default = next((i for i in all_ if i.name == DEFAULT_INTERFACE), None)
    if default is not None and default.name not in {i.name for i in all_}:
        all_ = (default, *all_)
    if not all_:
        return None
    d = default or InterfaceUsage("")
    return s.NetworkStats(time=s.go_time(at), name=d.name, rx_bytes=d.rx_bytes,
                          rx_errors=d.rx_errors, tx_bytes=d.tx_bytes, tx_errors=d.tx_errors,
                          interfaces=tuple(_interface(i) for i in all_))


def cri_network(usage: NetworkUsage, at: float) -> s.NetworkStats | None:
    """A sandbox's NetworkUsage (the runtime may leave its timestamp at 0: then ``at``)."""
    return network_stats(usage.interfaces, usage.timestamp or at, usage.default_interface)


def fs_stats(at: float, fs: FsSample | None, used: int | None = None,
             inodes_used: int | None = None) -> s.FsStats:
    """FsStats of a usage on a filesystem (capacity, available and inodes from ``fs``);
    ``used`` defaults to the filesystem's own used bytes."""
    if fs is None:
        return s.FsStats(s.go_time(at), used_bytes=used, inodes_used=inodes_used)
    return s.FsStats(
        s.go_time(at), fs.available, fs.capacity, fs.used if used is None else used,
        fs.inodes_free, fs.inodes,
        fs.inodes - fs.inodes_free if inodes_used is None else inodes_used)


def image_fs(usage: FilesystemUsage | None, fs: FsSample | None, at: float) -> s.FsStats | None:
    """The runtime's image filesystem: used bytes and inodes as ImageFsInfo says."""
    if usage is None:
        return None
    return fs_stats(usage.timestamp or at, fs, usage.used_bytes, usage.inodes_used)


def volume_stats(name: str, usage: DiskUsage, fs: FsSample | None, at: float) -> s.VolumeStats:
    f = fs_stats(at, fs, usage.bytes, usage.inodes)
    return s.VolumeStats(f.time, f.available_bytes, f.capacity_bytes, f.used_bytes,
                         f.inodes_free, f.inodes, f.inodes_used, name)


def ephemeral_storage(containers: Iterable[s.ContainerStats],
                      volumes: Iterable[s.VolumeStats], fs: FsSample | None,
                      at: float) -> s.FsStats:
    """upstream's calcEphemeralStorage: every container's rootfs and logs plus the pod's
    local volumes, on the node's filesystem."""
    used = inodes = 0
    for c in containers:
        for part in (c.rootfs, c.logs):
            if part is not None:
                used += part.used_bytes or 0
                inodes += part.inodes_used or 0
    for v in volumes:
        used += v.used_bytes or 0
        inodes += v.inodes_used or 0
    return fs_stats(at, fs, used, inodes)
