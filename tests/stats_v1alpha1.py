"""An independent mirror of upstream's Summary API types, for decoding what the kubelet
serves strictly: k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go, field by field.

Written from the Go source, not from the product's own model (runtime.stats.summary), so a
test that decodes /stats/summary with it checks the product against upstream:
- attribute names are the Go ``json`` tags verbatim (camelCase, ``ephemeral-storage``,
  ``process_stats``, ``maxpid``...), unknown keys are an error (forbid_unknown_fields);
- a Go field without ``omitempty`` is required here; a pointer or slice with
  ``omitempty`` may be absent but never ``null`` (Go leaves a nil pointer out);
- ``uint64`` is a non-negative integer, ``int64`` an integer, ``metav1.Time`` an RFC 3339
  UTC string (Go's encoding of a non-zero metav1.Time);
- ``json:",inline"`` embeddings (InterfaceStats in NetworkStats, FsStats in VolumeStats,
  UserDefinedMetricDescriptor in UserDefinedMetric) are spelled out flat.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import UNSET, Meta, UnsetType

Time = Annotated[str, Meta(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")]
UInt64 = Annotated[int, Meta(ge=0)]  # (msgspec bounds stop at int64; Go values here fit)
Int64 = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]


class _Go(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class CPUStats(_Go, frozen=True):
    time: Time
    usageNanoCores: UInt64 | UnsetType = UNSET
    usageCoreNanoSeconds: UInt64 | UnsetType = UNSET


class MemoryStats(_Go, frozen=True):
    time: Time
    availableBytes: UInt64 | UnsetType = UNSET
    usageBytes: UInt64 | UnsetType = UNSET
    workingSetBytes: UInt64 | UnsetType = UNSET
    rssBytes: UInt64 | UnsetType = UNSET
    pageFaults: UInt64 | UnsetType = UNSET
    majorPageFaults: UInt64 | UnsetType = UNSET


class SwapStats(_Go, frozen=True):
    time: Time
    swapAvailableBytes: UInt64 | UnsetType = UNSET
    swapUsageBytes: UInt64 | UnsetType = UNSET


class InterfaceStats(_Go, frozen=True):
    name: str
    rxBytes: UInt64 | UnsetType = UNSET
    rxErrors: UInt64 | UnsetType = UNSET
    txBytes: UInt64 | UnsetType = UNSET
    txErrors: UInt64 | UnsetType = UNSET


class NetworkStats(_Go, frozen=True):
    time: Time
    # InterfaceStats, inline
    name: str
    rxBytes: UInt64 | UnsetType = UNSET
    rxErrors: UInt64 | UnsetType = UNSET
    txBytes: UInt64 | UnsetType = UNSET
    txErrors: UInt64 | UnsetType = UNSET
    interfaces: list[InterfaceStats] | UnsetType = UNSET


class FsStats(_Go, frozen=True):
    time: Time
    availableBytes: UInt64 | UnsetType = UNSET
    capacityBytes: UInt64 | UnsetType = UNSET
    usedBytes: UInt64 | UnsetType = UNSET
    inodesFree: UInt64 | UnsetType = UNSET
    inodes: UInt64 | UnsetType = UNSET
    inodesUsed: UInt64 | UnsetType = UNSET


class PVCReference(_Go, frozen=True):
    name: str
    namespace: str


class VolumeHealthStats(_Go, frozen=True):
    abnormal: bool


class VolumeStats(_Go, frozen=True):
    # FsStats, inline
    time: Time
    availableBytes: UInt64 | UnsetType = UNSET
    capacityBytes: UInt64 | UnsetType = UNSET
    usedBytes: UInt64 | UnsetType = UNSET
    inodesFree: UInt64 | UnsetType = UNSET
    inodes: UInt64 | UnsetType = UNSET
    inodesUsed: UInt64 | UnsetType = UNSET
    name: str | UnsetType = UNSET
    pvcRef: PVCReference | UnsetType = UNSET
    volumeHealthStats: VolumeHealthStats | UnsetType = UNSET


class AcceleratorStats(_Go, frozen=True):
    make: str
    model: str
    id: str
    memoryTotal: UInt64
    memoryUsed: UInt64
    dutyCycle: UInt64


class UserDefinedMetric(_Go, frozen=True):
    # UserDefinedMetricDescriptor, inline
    name: str
    type: str
    units: str
    time: Time
    value: float
    labels: dict[str, str] | UnsetType = UNSET


class ContainerStats(_Go, frozen=True):
    name: str
    startTime: Time
    cpu: CPUStats | UnsetType = UNSET
    memory: MemoryStats | UnsetType = UNSET
    accelerators: list[AcceleratorStats] | UnsetType = UNSET
    rootfs: FsStats | UnsetType = UNSET
    logs: FsStats | UnsetType = UNSET
    userDefinedMetrics: list[UserDefinedMetric] | UnsetType = UNSET
    swap: SwapStats | UnsetType = UNSET


class PodReference(_Go, frozen=True):
    name: str
    namespace: str
    uid: str


class ProcessStats(_Go, frozen=True):
    process_count: UInt64 | UnsetType = UNSET


class PodStats(_Go, frozen=True):
    podRef: PodReference
    startTime: Time
    containers: list[ContainerStats] | None  # no omitempty: Go writes null for nil
    cpu: CPUStats | UnsetType = UNSET
    memory: MemoryStats | UnsetType = UNSET
    network: NetworkStats | UnsetType = UNSET
    volume: list[VolumeStats] | UnsetType = UNSET
    ephemeral_storage: FsStats | UnsetType = msgspec.field(default=UNSET,
                                                          name="ephemeral-storage")
    process_stats: ProcessStats | UnsetType = UNSET
    swap: SwapStats | UnsetType = UNSET


class RlimitStats(_Go, frozen=True):
    time: Time
    maxpid: Int64 | UnsetType = UNSET
    curproc: Int64 | UnsetType = UNSET


class RuntimeStats(_Go, frozen=True):
    imageFs: FsStats | UnsetType = UNSET
    containerFs: FsStats | UnsetType = UNSET


class NodeStats(_Go, frozen=True):
    nodeName: str
    startTime: Time
    systemContainers: list[ContainerStats] | UnsetType = UNSET
    cpu: CPUStats | UnsetType = UNSET
    memory: MemoryStats | UnsetType = UNSET
    network: NetworkStats | UnsetType = UNSET
    fs: FsStats | UnsetType = UNSET
    runtime: RuntimeStats | UnsetType = UNSET
    rlimit: RlimitStats | UnsetType = UNSET
    swap: SwapStats | UnsetType = UNSET


class Summary(_Go, frozen=True):
    node: NodeStats
    pods: list[PodStats] | None  # no omitempty


def decode(body: bytes | str) -> Summary:
    """Decode a /stats/summary body strictly (msgspec.ValidationError names the path)."""
    return msgspec.json.decode(body, type=Summary)
