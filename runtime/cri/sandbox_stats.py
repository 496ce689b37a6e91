"""CRI v1 stats messages -> domain types: container stats in full, and pod sandbox stats.

``ListPodSandboxStats`` (CRI v1, containerd 1.6 and later on Linux) gives a pod's own
cgroup usage (CPU, memory), its network namespace's interfaces and its process count, as
upstream's CRI stats provider reads them (pkg/kubelet/stats/cri_stats_provider.go). A
runtime that does not implement it answers UNIMPLEMENTED (runtime.errors.CRIUnimplemented);
the stats collector then reads the pod's cgroup and network namespace itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct, field

from proto import api_pb2
from runtime.cri.convert import frozen_map, ns_to_seconds
from runtime.cri.types import ContainerStats, FilesystemUsage
from runtime.cri.usage import CpuUsage, InterfaceUsage, MemoryUsage, NetworkUsage
from runtime.ids import ContainerID, SandboxID


def _empty() -> Mapping[str, str]:
    return {}


class SandboxStats(Struct, frozen=True):
    """One pod sandbox's usage (CRI PodSandboxStats, its Linux part)."""

    id: SandboxID
    name: str
    namespace: str
    uid: str
    labels: Mapping[str, str] = field(default_factory=_empty)
    cpu: CpuUsage | None = None
    memory: MemoryUsage | None = None
    network: NetworkUsage | None = None
    process_count: int | None = None
    containers: tuple[ContainerStats, ...] = ()


def _value(msg: Any, name: str) -> int | None:
    """An optional ``UInt64Value`` field: None when the runtime left it out."""
    return int(getattr(msg, name).value) if msg.HasField(name) else None


def cpu_from_proto(msg: api_pb2.CpuUsage) -> CpuUsage:
    return CpuUsage(ns_to_seconds(msg.timestamp),
                    _value(msg, "usage_core_nano_seconds"), _value(msg, "usage_nano_cores"))


def memory_from_proto(msg: api_pb2.MemoryUsage) -> MemoryUsage:
    return MemoryUsage(
        ns_to_seconds(msg.timestamp), _value(msg, "working_set_bytes"),
        _value(msg, "available_bytes"), _value(msg, "usage_bytes"), _value(msg, "rss_bytes"),
        _value(msg, "page_faults"), _value(msg, "major_page_faults"))


def _interface(msg: api_pb2.NetworkInterfaceUsage) -> InterfaceUsage:
    return InterfaceUsage(msg.name, _value(msg, "rx_bytes"), _value(msg, "rx_errors"),
                          _value(msg, "tx_bytes"), _value(msg, "tx_errors"))


def network_from_proto(msg: api_pb2.NetworkUsage) -> NetworkUsage:
    default = _interface(msg.default_interface) if msg.HasField("default_interface") else None
    return NetworkUsage(ns_to_seconds(msg.timestamp), default,
                        tuple(_interface(i) for i in msg.interfaces))


def container_stats_full(msg: api_pb2.ContainerStats) -> ContainerStats:
    """CRI ContainerStats -> domain ContainerStats with its whole samples."""
    cpu = cpu_from_proto(msg.cpu) if msg.HasField("cpu") else None
    memory = memory_from_proto(msg.memory) if msg.HasField("memory") else None
    writable = None
    if msg.HasField("writable_layer"):
        layer = msg.writable_layer
        writable = FilesystemUsage(layer.fs_id.mountpoint, layer.used_bytes.value,
                                   layer.inodes_used.value, ns_to_seconds(layer.timestamp))
    attrs = msg.attributes
    stamp = max(msg.cpu.timestamp, msg.memory.timestamp, msg.writable_layer.timestamp)
    return ContainerStats(
        id=ContainerID(attrs.id), name=attrs.metadata.name, labels=frozen_map(attrs.labels),
        cpu_usage_core_nanoseconds=cpu.usage_core_nanoseconds if cpu else None,
        memory_working_set_bytes=memory.working_set_bytes if memory else None,
        writable_layer_used_bytes=(_value(msg.writable_layer, "used_bytes")
                                   if writable else None),
        timestamp=ns_to_seconds(stamp), cpu=cpu, memory=memory, writable_layer=writable)


def sandbox_stats_from_proto(msg: api_pb2.PodSandboxStats) -> SandboxStats:
    """CRI PodSandboxStats -> domain SandboxStats (the Linux part)."""
    attrs = msg.attributes
    linux = msg.linux
    has = linux.HasField
    process = None
    if has("process") and linux.process.HasField("process_count"):
        process = int(linux.process.process_count.value)
    return SandboxStats(
        id=SandboxID(attrs.id), name=attrs.metadata.name, namespace=attrs.metadata.namespace,
        uid=attrs.metadata.uid, labels=frozen_map(attrs.labels),
        cpu=cpu_from_proto(linux.cpu) if has("cpu") else None,
        memory=memory_from_proto(linux.memory) if has("memory") else None,
        network=network_from_proto(linux.network) if has("network") else None,
        process_count=process,
        containers=tuple(container_stats_full(c) for c in linux.containers))
