"""One stats collection: CRI and the node's counters -> a Summary and the series the
metrics endpoints add to it.

Per collection, as upstream's CRI stats provider: ListPodSandbox and ListContainers (names,
start times), ListContainerStats (each container's CPU, memory and writable layer),
ListPodSandboxStats (each pod's cgroup CPU and memory, its network namespace, its process
count), ImageFsInfo; the node from its root cgroup and /proc. A runtime without
ListPodSandboxStats (UNIMPLEMENTED) gets the pod's cgroup and its sandbox's network
namespace read directly, as upstream's provider reads them through cAdvisor then. Disk
usage of logs and volumes is walked at most once per ``fs_period`` (upstream's
--volume-stats-agg-period, 1 minute) and reused between walks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from loguru import logger
from msgspec import Struct, field

from runtime.cri.sandbox_stats import SandboxStats
from runtime.cri.service import CRIRuntime
from runtime.cri.types import (
    Container,
    ContainerState,
    ContainerStats,
    FilesystemUsage,
    PodSandbox,
    SandboxState,
)
from runtime.errors import CRIError, CRIUnimplemented
from runtime.host_counters import (
    CgroupSample,
    DiskUsage,
    FsSample,
    HostPaths,
    boot_time,
    cgroup_created,
    cgroup_pids,
    disk_usage,
    find_pod_cgroups,
    memory_total,
    network_interfaces,
    read_cgroup,
    rlimit,
    statfs,
)
from runtime.kuberuntime.labels import CONTAINER_NAME, POD_NAME, POD_NAMESPACE, POD_UID
from runtime.stats import build
from runtime.stats import summary as s

KUBEPODS = "kubepods"
"""The pods' cgroup root under the cgroup root (runtime.cm, cgroupfs driver)."""

FS_PERIOD_S = 60.0
"""upstream's --volume-stats-agg-period default: how often volumes are walked (du)."""


class ContainerInfo(Struct, frozen=True):
    """What /metrics/cadvisor labels a container's series with, beyond the summary."""

    namespace: str
    pod: str
    container: str
    id: str  # the runtime's container ID (cAdvisor's ``name``)
    image: str
    cgroup: str  # cAdvisor's ``id``: the container's cgroup path


class StatsSnapshot(Struct, frozen=True):
    """One collection: the summary, container details for /metrics/cadvisor, and how it
    went (``error`` set when a part failed: upstream's resource_scrape_error)."""

    summary: s.Summary
    containers: tuple[ContainerInfo, ...] = ()
    pod_cgroups: tuple[tuple[str, str], ...] = ()  # (pod UID, cgroup path)
    taken_at: float = 0.0
    seconds: float = 0.0
    error: str = ""


class StatsSettings(Struct, frozen=True):
    node_name: str
    root_dir: str
    pod_logs_dir: str
    paths: HostPaths = field(default_factory=HostPaths)
    fs_period: float = FS_PERIOD_S


def node_memory(paths: HostPaths, at: float, root: CgroupSample | None = None
                ) -> s.MemoryStats | None:
    """The node's memory as the summary reports it (``root``: the root cgroup, read here
    when not given): availableBytes, what the eviction manager takes as memory.available,
    is the memory capacity (MemTotal) less the root cgroup's working set (its usage less
    its inactive file pages), not /proc/meminfo's MemAvailable."""
    if root is None:
        root = read_cgroup(paths, "")
    return build.cgroup_memory(root, at, memory_total(paths)) if root is not None else None


class StatsCollector:
    """Collects a StatsSnapshot on demand; keeps the counters rates need between calls.

    Not thread-safe: one collection at a time (the stats actor sees to it).
    """

    def __init__(self, runtime: CRIRuntime, settings: StatsSettings,
                 now: Callable[[], float] = time.time) -> None:
        self._runtime = runtime
        self._settings = settings
        self._now = now
        self._cpu: dict[str, build.CpuCounter] = {}
        self._sandbox_stats_supported = True
        self._disk: dict[str, DiskUsage | None] = {}
        self._disk_at = -1e18

    def collect(self) -> StatsSnapshot:
        started = self._now()
        errors: list[str] = []
        rt = self._runtime
        sandboxes = self._newest_ready(rt.list_pod_sandbox())
        containers = [c for c in rt.list_containers() if c.state is ContainerState.RUNNING]
        cstats = {c.id: c for c in rt.list_container_stats()}
        pstats = self._sandbox_stats(errors)
        try:
            image = next(iter(rt.image_fs_info()), None)
        except CRIError as err:
            errors.append(f"ImageFsInfo: {err}")
            image = None
        paths = self._settings.paths
        node_fs = statfs(self._settings.root_dir)
        image_fs = statfs(image.mountpoint) if image is not None else None
        refresh_disk = started - self._disk_at >= self._settings.fs_period
        disk: dict[str, DiskUsage | None] = {}
        pod_cgroups = find_pod_cgroups(paths)
        images = self._image_names(containers, errors)
        pods: list[s.PodStats] = []
        infos: list[ContainerInfo] = []
        live: set[str] = {"", KUBEPODS}
        for sandbox in sandboxes:
            uid = sandbox.metadata.uid
            mine = [c for c in containers if c.pod_sandbox_id == sandbox.id]
            cstats_list: list[s.ContainerStats] = []
            for c in sorted(mine, key=lambda c: c.metadata.name):
                live.add(c.id)
                stats = cstats.get(c.id)
                log_dir = os.path.join(self._settings.pod_logs_dir,
                                       f"{sandbox.metadata.namespace}_{sandbox.metadata.name}_{uid}",
                                       c.metadata.name)
                logs = self._du(log_dir, refresh_disk, disk)
                cstats_list.append(self._container(c, stats, logs, node_fs, image_fs, started))
                cgroup = pod_cgroups.get(uid, "")
                infos.append(ContainerInfo(
                    sandbox.metadata.namespace, sandbox.metadata.name,
                    c.labels.get(CONTAINER_NAME, c.metadata.name), c.id,
                    images.get(c.image.image, c.image.image),
                    f"/{cgroup}/{c.id}" if cgroup else f"/{c.id}"))
            live.add(sandbox.id)
            volumes = self._volumes(uid, refresh_disk, disk, node_fs, started)
            pods.append(self._pod(sandbox, pstats.get(sandbox.id), pod_cgroups.get(uid),
                                  tuple(cstats_list), volumes, node_fs, started))
        if refresh_disk:
            self._disk, self._disk_at = disk, started
        node = self._node(node_fs, image, image_fs, started)
        self._cpu = {k: v for k, v in self._cpu.items() if k in live}
        return StatsSnapshot(
            s.Summary(node, tuple(pods)), tuple(infos),
            tuple(sorted(pod_cgroups.items())), started, self._now() - started,
            "; ".join(errors))

    # --- parts ------------------------------------------------------------------------

    @staticmethod
    def _newest_ready(sandboxes: tuple[PodSandbox, ...]) -> list[PodSandbox]:
        """One sandbox per pod UID, the newest ready one (upstream drops the others)."""
        newest: dict[str, PodSandbox] = {}
        for sb in sandboxes:
            if sb.state is not SandboxState.READY:
                continue
            uid = sb.labels.get(POD_UID, sb.metadata.uid)
            if uid not in newest or sb.created_at > newest[uid].created_at:
                newest[uid] = sb
        return sorted(newest.values(), key=lambda sb: (sb.metadata.namespace, sb.metadata.name))

    def _image_names(self, containers: list[Container], errors: list[str]) -> dict[str, str]:
        """Image ID -> its first tag: containerd lists a container's image by ID, cAdvisor
        labels series with the name it was run from."""
        if not any(c.image.image.startswith("sha256:") for c in containers):
            return {}
        try:
            return {i.id: i.repo_tags[0] for i in self._runtime.list_images() if i.repo_tags}
        except CRIError as err:
            errors.append(f"ListImages: {err}")
            return {}

    def _sandbox_stats(self, errors: list[str]) -> dict[str, SandboxStats]:
        if not self._sandbox_stats_supported:
            return {}
        try:
            return {p.id: p for p in self._runtime.list_pod_sandbox_stats()}
        except CRIUnimplemented:
            logger.info("the runtime has no ListPodSandboxStats: pod stats from cgroups")
            self._sandbox_stats_supported = False
        except CRIError as err:
            errors.append(f"ListPodSandboxStats: {err}")
        return {}

    def _rate(self, key: str, at: float, usage_ns: int | None) -> int | None:
        if usage_ns is None:
            return None
        current = build.CpuCounter(at, usage_ns)
        rate = build.nano_cores(self._cpu.get(key), current)
        self._cpu[key] = current
        return rate

    def _du(self, path: str, refresh: bool, disk: dict[str, DiskUsage | None]
            ) -> DiskUsage | None:
        if refresh or path not in self._disk:
            disk[path] = disk_usage(path)
            if not refresh:
                self._disk[path] = disk[path]
            return disk[path]
        disk[path] = self._disk[path]
        return disk[path]

    def _container(self, c: Container, stats: ContainerStats | None, logs: DiskUsage | None,
                   node_fs: FsSample | None, image_fs: FsSample | None,
                   at: float) -> s.ContainerStats:
        name = c.labels.get(CONTAINER_NAME, c.metadata.name)
        cpu = memory = rootfs = None
        if stats is not None and stats.cpu is not None:
            rate = self._rate(c.id, stats.cpu.timestamp or at, stats.cpu.usage_core_nanoseconds)
            cpu = build.cpu_stats(stats.cpu, rate)
        if stats is not None and stats.memory is not None:
            memory = build.memory_stats(stats.memory)
        if stats is not None and stats.writable_layer is not None:
            layer = stats.writable_layer
            rootfs = build.fs_stats(layer.timestamp or at, image_fs, layer.used_bytes,
                                    layer.inodes_used)
        log_fs = (build.fs_stats(at, node_fs, logs.bytes, logs.inodes)
                  if logs is not None else None)
        return s.ContainerStats(name, s.go_time(c.created_at), cpu, memory, rootfs, log_fs)

    def _volumes(self, uid: str, refresh: bool, disk: dict[str, DiskUsage | None],
                 node_fs: FsSample | None, at: float) -> tuple[s.VolumeStats, ...]:
        base = os.path.join(self._settings.root_dir, "pods", uid, "volumes")
        out: list[s.VolumeStats] = []
        try:
            plugins = sorted(os.listdir(base))
        except (FileNotFoundError, NotADirectoryError):
            return ()
        for plugin in plugins:
            try:
                names = sorted(os.listdir(os.path.join(base, plugin)))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for name in names:
                usage = self._du(os.path.join(base, plugin, name), refresh, disk)
                if usage is not None:
                    out.append(build.volume_stats(name, usage, node_fs, at))
        return tuple(out)

    def _pod(self, sandbox: PodSandbox, stats: SandboxStats | None, cgroup: str | None,
             containers: tuple[s.ContainerStats, ...], volumes: tuple[s.VolumeStats, ...],
             node_fs: FsSample | None, at: float) -> s.PodStats:
        meta = sandbox.metadata
        ref = s.PodReference(sandbox.labels.get(POD_NAME, meta.name),
                             sandbox.labels.get(POD_NAMESPACE, meta.namespace),
                             sandbox.labels.get(POD_UID, meta.uid))
        cpu = memory = network = None
        processes: int | None = None
        paths = self._settings.paths
        sample = read_cgroup(paths, cgroup) if cgroup else None
        if stats is not None:
            if stats.cpu is not None:
                rate = self._rate(sandbox.id, stats.cpu.timestamp or at,
                                  stats.cpu.usage_core_nanoseconds)
                cpu = build.cpu_stats(stats.cpu, rate)
            if stats.memory is not None:
                memory = build.memory_stats(stats.memory)
            if stats.network is not None:
                network = build.cri_network(stats.network, at)
            processes = stats.process_count
        elif sample is not None:
            cpu = build.cgroup_cpu(sample, at, self._rate(sandbox.id, at, sample.cpu_usage_ns))
            memory = build.cgroup_memory(sample, at, None)
            pids = cgroup_pids(paths, os.path.join(cgroup or "", sandbox.id))
            if pids:
                network = build.network_stats(network_interfaces(paths, pids[0]), at)
        # A count of 0 cannot be a running pod (its pause process at least): containerd
        # 1.6 answers 0 for a sandbox whose cgroup it cannot read. Ask the cgroup then.
        if not processes and sample is not None and sample.pids is not None:
            processes = sample.pids
        return s.PodStats(
            ref, s.go_time(sandbox.created_at), containers, cpu, memory, network,
            volumes or None, build.ephemeral_storage(containers, volumes, node_fs, at),
            s.ProcessStats(processes) if processes is not None else None)

    def _node(self, node_fs: FsSample | None, image: FilesystemUsage | None,
              image_fs: FsSample | None, at: float) -> s.NodeStats:
        paths = self._settings.paths
        root = read_cgroup(paths, "")
        cpu = build.cgroup_cpu(root, at, self._rate("", at, root.cpu_usage_ns)) \
            if root is not None else None
        memory = node_memory(paths, at, root)
        max_pid, procs = rlimit(paths)
        system: tuple[s.ContainerStats, ...] | None = None
        pods = read_cgroup(paths, KUBEPODS)
        if pods is not None:  # upstream's "pods" system container: the pods' cgroup root
            system = (s.ContainerStats(
                s.SYSTEM_CONTAINER_PODS, s.go_time(cgroup_created(paths, KUBEPODS) or at),
                build.cgroup_cpu(pods, at, self._rate(KUBEPODS, at, pods.cpu_usage_ns)),
                build.cgroup_memory(pods, at, memory_total(paths))),)
        started = boot_time(paths) or at
        image_stats = build.image_fs(image, image_fs, at)
        return s.NodeStats(
            self._settings.node_name, s.go_time(started), system, cpu, memory,
            build.network_stats(network_interfaces(paths), at),
            build.fs_stats(at, node_fs) if node_fs is not None else None,
            s.RuntimeStats(image_stats, image_stats),
            s.RlimitStats(s.go_time(at), max_pid, procs))
