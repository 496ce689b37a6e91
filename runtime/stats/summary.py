"""The Summary API's types (kubelet stats/v1alpha1), encoded as upstream encodes them.

Field by field from k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go: JSON names, nesting
(``InterfaceStats`` inline in ``NetworkStats``, ``FsStats`` inline in ``VolumeStats``) and
``omitempty`` (a field whose default is None is left out when None, as Go leaves out a nil
pointer or slice). Fields Go always writes have no default. Times are ``metav1.Time``
strings: RFC 3339 in UTC to the second.
"""

from __future__ import annotations

import msgspec

from runtime.apitime import rfc3339

SYSTEM_CONTAINER_PODS = "pods"
"""upstream's SystemContainerPods: the system container of the pods' cgroup root."""


go_time = rfc3339
"""A metav1.Time as JSON: RFC 3339, UTC, whole seconds."""


class _Obj(msgspec.Struct, frozen=True, omit_defaults=True, rename="camel"):
    """Every summary type: Go's camelCase JSON names, omitempty fields left out."""


class CPUStats(_Obj, frozen=True):
    time: str
    usage_nano_cores: int | None = None
    usage_core_nano_seconds: int | None = None


class MemoryStats(_Obj, frozen=True):
    time: str
    available_bytes: int | None = None
    usage_bytes: int | None = None
    working_set_bytes: int | None = None
    rss_bytes: int | None = None
    page_faults: int | None = None
    major_page_faults: int | None = None


class SwapStats(_Obj, frozen=True):
    time: str
    swap_available_bytes: int | None = None
    swap_usage_bytes: int | None = None


class InterfaceStats(_Obj, frozen=True):
    name: str
    rx_bytes: int | None = None
    rx_errors: int | None = None
    tx_bytes: int | None = None
    tx_errors: int | None = None


class NetworkStats(InterfaceStats, frozen=True, kw_only=True):
    """NetworkStats: its default interface's InterfaceStats inline (Go's embedding)."""

    time: str
    interfaces: tuple[InterfaceStats, ...] | None = None


class FsStats(_Obj, frozen=True):
    time: str
    available_bytes: int | None = None
    capacity_bytes: int | None = None
    used_bytes: int | None = None
    inodes_free: int | None = None
    inodes: int | None = None
    inodes_used: int | None = None


class PVCReference(_Obj, frozen=True):
    name: str
    namespace: str


class VolumeStats(FsStats, frozen=True):
    """VolumeStats: its FsStats inline (Go's embedding), then the volume's name."""

    name: str | None = None
    pvc_ref: PVCReference | None = None


class ContainerStats(_Obj, frozen=True):
    name: str
    start_time: str
    cpu: CPUStats | None = msgspec.field(default=None, name="cpu")
    memory: MemoryStats | None = None
    rootfs: FsStats | None = None
    logs: FsStats | None = None
    swap: SwapStats | None = None


class PodReference(_Obj, frozen=True):
    name: str
    namespace: str
    uid: str


class ProcessStats(_Obj, frozen=True):
    process_count: int | None = msgspec.field(default=None, name="process_count")


class PodStats(_Obj, frozen=True):
    pod_ref: PodReference
    start_time: str
    containers: tuple[ContainerStats, ...]
    cpu: CPUStats | None = msgspec.field(default=None, name="cpu")
    memory: MemoryStats | None = None
    network: NetworkStats | None = None
    volume: tuple[VolumeStats, ...] | None = None
    ephemeral_storage: FsStats | None = msgspec.field(default=None, name="ephemeral-storage")
    process_stats: ProcessStats | None = msgspec.field(default=None, name="process_stats")
    swap: SwapStats | None = None


class RlimitStats(_Obj, frozen=True):
    time: str
    maxpid: int | None = msgspec.field(default=None, name="maxpid")
    curproc: int | None = msgspec.field(default=None, name="curproc")


class RuntimeStats(_Obj, frozen=True):
    image_fs: FsStats | None = None
    container_fs: FsStats | None = None


class NodeStats(_Obj, frozen=True):
    node_name: str
    start_time: str
    system_containers: tuple[ContainerStats, ...] | None = None
    cpu: CPUStats | None = msgspec.field(default=None, name="cpu")
    memory: MemoryStats | None = None
    network: NetworkStats | None = None
    fs: FsStats | None = None
    runtime: RuntimeStats | None = None
    rlimit: RlimitStats | None = None
    swap: SwapStats | None = None


class Summary(_Obj, frozen=True):
    node: NodeStats
    pods: tuple[PodStats, ...]


_ENCODER = msgspec.json.Encoder()


def encode(summary: Summary) -> bytes:
    return _ENCODER.encode(summary)


def cpu_and_memory_only(summary: Summary) -> Summary:
    """``?only_cpu_and_memory=true``: upstream's GetCPUAndMemoryStats (node and pods with
    CPU and memory, containers with CPU and memory; nothing else)."""
    node = summary.node
    return Summary(
        node=NodeStats(node.node_name, node.start_time, node.system_containers,
                       node.cpu, node.memory),
        pods=tuple(
            PodStats(p.pod_ref, p.start_time,
                     tuple(ContainerStats(c.name, c.start_time, c.cpu, c.memory)
                           for c in p.containers),
                     cpu=p.cpu, memory=p.memory)
            for p in summary.pods))
