"""Signal observations and pod usage, made from the stats summary (makeSignalObservations).

The eviction manager decides on the numbers /stats/summary reports: memory.available is the
node's available memory (capacity less the root cgroup's working set: usage less
inactive_file), nodefs the filesystem of the kubelet's root dir, imagefs the runtime's image
filesystem (CRI ImageFsInfo), pid.available kernel.pid_max less the running processes. Each
pod's usage is its summary entry, reduced to what ranking and the message read.
"""

from __future__ import annotations

from msgspec import Struct

from runtime.eviction.api import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
)
from runtime.stats import summary as s


class Observation(Struct, frozen=True):
    """One signal: what is available of what capacity."""

    signal: str
    available: int
    capacity: int


class ContainerUsage(Struct, frozen=True):
    name: str
    memory: int | None = None  # working set bytes
    rootfs: int | None = None  # writable layer bytes
    rootfs_inodes: int | None = None
    logs: int | None = None
    logs_inodes: int | None = None


class VolumeUsage(Struct, frozen=True):
    name: str
    used: int | None = None
    inodes: int | None = None


class PodUsage(Struct, frozen=True):
    """What the summary says one pod uses."""

    uid: str
    memory: int | None = None  # the pod cgroup's working set
    processes: int | None = None
    containers: tuple[ContainerUsage, ...] = ()
    volumes: tuple[VolumeUsage, ...] = ()
    ephemeral_storage: int | None = None  # the summary's ephemeral-storage used bytes


class NodeSignals(Struct, frozen=True):
    """One collection's observations and pod usage, taken at ``at`` (wall clock)."""

    at: float
    observations: tuple[Observation, ...]
    pods: tuple[PodUsage, ...] = ()
    dedicated_image_fs: bool = False

    def get(self, signal: str) -> Observation | None:
        return next((o for o in self.observations if o.signal == signal), None)

    def pod(self, uid: str) -> PodUsage | None:
        return next((p for p in self.pods if p.uid == uid), None)


def _fs(out: list[Observation], fs: s.FsStats | None, available: str, inodes: str) -> None:
    if fs is None:
        return
    if fs.available_bytes is not None and fs.capacity_bytes is not None:
        out.append(Observation(available, fs.available_bytes, fs.capacity_bytes))
    if fs.inodes_free is not None and fs.inodes is not None:
        out.append(Observation(inodes, fs.inodes_free, fs.inodes))


def _pod(pod: s.PodStats) -> PodUsage:
    containers = tuple(ContainerUsage(
        c.name,
        c.memory.working_set_bytes if c.memory is not None else None,
        c.rootfs.used_bytes if c.rootfs is not None else None,
        c.rootfs.inodes_used if c.rootfs is not None else None,
        c.logs.used_bytes if c.logs is not None else None,
        c.logs.inodes_used if c.logs is not None else None) for c in pod.containers)
    volumes = tuple(VolumeUsage(v.name or "", v.used_bytes, v.inodes_used)
                    for v in pod.volume or ())
    return PodUsage(
        pod.pod_ref.uid,
        pod.memory.working_set_bytes if pod.memory is not None else None,
        pod.process_stats.process_count if pod.process_stats is not None else None,
        containers, volumes,
        pod.ephemeral_storage.used_bytes if pod.ephemeral_storage is not None else None)


def observe(summary: s.Summary, at: float) -> NodeSignals:
    """makeSignalObservations: the node's signals and every pod's usage."""
    node = summary.node
    out: list[Observation] = []
    memory = node.memory
    if memory is not None and memory.available_bytes is not None \
            and memory.working_set_bytes is not None:
        out.append(Observation(MEMORY_AVAILABLE, memory.available_bytes,
                               memory.available_bytes + memory.working_set_bytes))
    pods = next((c for c in node.system_containers or () if c.name == s.SYSTEM_CONTAINER_PODS),
                None)
    if pods is not None and pods.memory is not None and pods.memory.available_bytes is not None \
            and pods.memory.working_set_bytes is not None:
        out.append(Observation(ALLOCATABLE_MEMORY_AVAILABLE, pods.memory.available_bytes,
                               pods.memory.available_bytes + pods.memory.working_set_bytes))
    _fs(out, node.fs, NODEFS_AVAILABLE, NODEFS_INODES_FREE)
    image = node.runtime.image_fs if node.runtime is not None else None
    _fs(out, image, IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE)
    rlimit = node.rlimit
    if rlimit is not None and rlimit.maxpid is not None and rlimit.curproc is not None:
        out.append(Observation(PID_AVAILABLE, rlimit.maxpid - rlimit.curproc, rlimit.maxpid))
    dedicated = (node.fs is not None and image is not None
                 and (node.fs.capacity_bytes, node.fs.inodes)
                 != (image.capacity_bytes, image.inodes))
    return NodeSignals(at, tuple(out), tuple(_pod(p) for p in summary.pods), dedicated)
