"""Memory-backed volumes: what upstream's emptyDir plugin mounts, and when it unmounts.

Upstream (pkg/volume/emptydir) mounts a tmpfs at an emptyDir's directory when its
``medium`` is ``Memory``, and a hugetlbfs when it is ``HugePages`` or ``HugePages-<size>``.
The secret, projected and downwardAPI plugins wrap an emptyDir of medium ``Memory``, so
their files never reach the node's disk; configMap's wraps a disk one.

The tmpfs is sized as SizeMemoryBackedVolumes (GA, locked on) sizes it: the node's
allocatable memory, or the pod's memory limit (the pod cgroup's, ResourceConfigForPod)
when that is smaller, or the volume's ``sizeLimit`` when that is smaller still; mounted
with ``size=<bytes>`` and, on kernels from 6.4, ``noswap``. A hugetlbfs gets
``pagesize=<size>`` from the pod's huge page requests. A directory already mounted so is
left as it is (set-up runs at every sync). Teardown unmounts each tmpfs and hugetlbfs
under the pod's volumes before its directory goes. The mounts go through the recorded
``VolumeMounts`` service (runtime.kuberuntime.volume_mounts); the decisions here are pure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable

from msgspec import Struct

from runtime.cm.resources import HUGEPAGES_PREFIX, resource_config_for_pod, value
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.volume_mounts import MountPoint, VolumeMounts
from runtime.machine import binary_si
from runtime.pod.model import Pod, Volume, volume_source
from runtime.pod.quantity import FORMAT_WRONG, parse_quantity

__all__ = ["MEDIUM_MEMORY", "MediumError", "MemoryMount", "memory_mount", "memory_size",
           "set_up_medium", "sweep_leftover_mounts", "tear_down_memory_volumes",
           "volume_medium"]

MEDIUM_MEMORY = "Memory"
MEDIUM_HUGEPAGES = "HugePages"
MEDIUM_HUGEPAGES_PREFIX = "HugePages-"
TMPFS = "tmpfs"
HUGETLBFS = "hugetlbfs"
MEMORY_FILESYSTEMS = frozenset({TMPFS, HUGETLBFS})
NOSWAP = "noswap"  # upstream's swap.TmpfsNoswapOption
NOSWAP_KERNEL = (6, 4)  # upstream's TmpfsNoswapSupportKernelVersion

_WRAPPED_IN_MEMORY = frozenset({"secret", "projected", "downwardAPI"})
"""The plugins whose wrapped emptyDir is of medium Memory (their wrappedVolumeSpec)."""


class MediumError(Exception):
    """The volume's medium cannot be mounted; the message is upstream's."""


class MemoryMount(Struct, frozen=True):
    """What to mount at a memory-backed volume's directory (mount(8)'s arguments)."""

    source: str
    fstype: str
    options: tuple[str, ...] = ()


def volume_medium(volume: Volume) -> str:
    """The medium the volume's directory lives on: an emptyDir's own, ``Memory`` for the
    plugins that wrap a memory emptyDir, else ``""`` (the node's disk)."""
    if volume.empty_dir is not None:
        return volume.empty_dir.medium
    return MEDIUM_MEMORY if volume_source(volume) in _WRAPPED_IN_MEMORY else ""


def is_hugepage_medium(medium: str) -> bool:
    """upstream v1helper.IsHugePageMedium."""
    return medium == MEDIUM_HUGEPAGES or medium.startswith(MEDIUM_HUGEPAGES_PREFIX)


def _bytes(quantity: str | int | float) -> int:
    return value(parse_quantity(quantity))


def memory_size(pod: Pod, volume: Volume, settings: NodeSettings) -> int:
    """upstream calculateEmptyDirMemorySize: the node's allocatable memory, the pod's
    memory limit when positive and no larger, the volume's sizeLimit when positive and no
    larger than that; 0 (the kernel's default, half the RAM) when the node's allocatable
    memory is unknown."""
    allocatable = dict(settings.allocatable).get("memory")
    size = _bytes(allocatable) if allocatable is not None else 0
    pod_limit = resource_config_for_pod(pod, enforce_cpu_limits=False).memory
    if pod_limit is not None and pod_limit > 0 and (size == 0 or pod_limit <= size):
        size = pod_limit
    size_limit = volume.empty_dir.size_limit if volume.empty_dir is not None else None
    if size_limit is not None:
        limit = _bytes(size_limit)
        if limit > 0 and (size == 0 or limit <= size):
            size = limit
    return size


def tmpfs_noswap(kernel_release: str | None = None) -> bool:
    """upstream IsTmpfsNoswapOptionSupported, by the kernel's version (6.4 and later)."""
    release = os.uname().release if kernel_release is None else kernel_release
    match = re.match(r"(\d+)\.(\d+)", release)
    return match is not None and (int(match[1]), int(match[2])) >= NOSWAP_KERNEL


def _hugepage_size_from_medium(medium: str) -> int:
    """upstream HugePageSizeFromMedium, in bytes."""
    try:
        return _bytes(medium[len(MEDIUM_HUGEPAGES_PREFIX):])
    except ValueError as err:
        raise MediumError(FORMAT_WRONG) from err


def _hugepage_requests(pod: Pod) -> Iterable[str]:
    """The resource names a pod requests, pod level first, then its containers and init
    containers (getPageSizeMountOption's order)."""
    if pod.spec.resources is not None:
        yield from pod.spec.resources.requests
    for container in (*pod.spec.containers, *pod.spec.init_containers):
        if container.resources is not None:
            yield from container.resources.requests


def hugepage_mount_option(medium: str, pod: Pod) -> str:
    """upstream getPageSizeMountOption: ``pagesize=<size>`` of the pod's huge page
    requests (of the medium's size, for ``HugePages-<size>``); MediumError otherwise."""
    wanted = None if medium == MEDIUM_HUGEPAGES else _hugepage_size_from_medium(medium)
    found: int | None = None
    for name in _hugepage_requests(pod):
        if not name.startswith(HUGEPAGES_PREFIX):
            continue
        try:
            size = _bytes(name[len(HUGEPAGES_PREFIX):])
        except ValueError as err:  # HugePageSizeFromResourceName's ParseQuantity
            raise MediumError(FORMAT_WRONG) from err
        if wanted is None:
            if found is not None and found != size:
                raise MediumError(f"medium: {medium} can't be used if container requests "
                                  "multiple huge page sizes")
            found = size
        elif size == wanted:
            found = size
    if found is None:
        raise MediumError(f"medium {medium}: hugePages storage requested, but there is no "
                          "resource request for huge pages")
    return f"pagesize={binary_si(found)}"


def memory_mount(pod: Pod, volume: Volume, settings: NodeSettings) -> MemoryMount | None:
    """What the volume's directory gets mounted with; None for a disk-backed volume;
    MediumError with upstream's words for a medium that cannot be had."""
    medium = volume_medium(volume)
    if not medium:
        return None
    if medium == MEDIUM_MEMORY:
        size = memory_size(pod, volume, settings)
        options = ((f"size={size}",) if size > 0 else ()) + ((NOSWAP,)
                                                             if settings.tmpfs_noswap else ())
        return MemoryMount(TMPFS, TMPFS, options)
    if is_hugepage_medium(medium):
        return MemoryMount("nodev", HUGETLBFS, (hugepage_mount_option(medium, pod),))
    raise MediumError(f'unknown storage medium "{medium}"')


_PAGE_SIZE = re.compile(r"^pagesize=(\d+)([KMG]?)$")
_PAGE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _mounted_page_size(point: MountPoint) -> int | None:
    """A hugetlbfs mount's page size, from its options (the kernel writes ``pagesize=2M``)."""
    for option in point.options:
        match = _PAGE_SIZE.match(option)
        if match:
            return int(match[1]) * _PAGE_UNITS[match[2]]
    return None


def set_up_medium(pod: Pod, volume: Volume, path: str, settings: NodeSettings,
                  mounts: VolumeMounts, make_dir: Callable[[], None]) -> bool:
    """Mount the volume's medium at ``path``, unless it is so mounted already (upstream
    setupTmpfs and setupHugepages: set-up is idempotent); ``make_dir`` makes the directory
    first (left alone once mounted: a chmod would reach the mount's root). False for a
    disk-backed volume; MediumError with upstream's words when it cannot be had."""
    medium = volume_medium(volume)
    if not medium:
        return False
    top = next((p for p in mounts.mounts_under(path) if p.path == ""), None)
    if medium == MEDIUM_MEMORY and top is not None and top.fstype == TMPFS:
        return True
    if is_hugepage_medium(medium) and top is not None and top.fstype == HUGETLBFS:
        if medium == MEDIUM_HUGEPAGES:
            return True
        mounted = _mounted_page_size(top)
        if mounted is None:
            raise MediumError(f"pod {pod.uid}: mounted dir {path} pagesize is not determined")
        wanted = _hugepage_size_from_medium(medium)
        if mounted != wanted:
            raise MediumError(f"pod {pod.uid}: mounted dir {path} pagesize "
                              f"'{binary_si(mounted)}' and requested medium size "
                              f"'{binary_si(wanted)}' differ")
        return True
    make_dir()
    wanted_mount = memory_mount(pod, volume, settings)
    assert wanted_mount is not None
    error = mounts.mount(wanted_mount.source, path, wanted_mount.fstype, wanted_mount.options)
    if error:
        raise MediumError(error)
    return True


def tear_down_memory_volumes(volumes_dir: str, mounts: VolumeMounts) -> tuple[str, ...]:
    """Unmount and remove every tmpfs and hugetlbfs volume under a pod's ``volumes``
    directory, each before its directory goes; the errors of those that could not be."""
    errors: list[str] = []
    seen: set[str] = set()
    for point in mounts.mounts_under(volumes_dir):
        if not point.path or point.path in seen or point.fstype not in MEMORY_FILESYSTEMS:
            continue
        seen.add(point.path)
        error = mounts.tear_down(os.path.join(volumes_dir, point.path))
        if error:
            errors.append(error)
    return tuple(errors)


def sweep_leftover_mounts(pods_dir: str, keep: frozenset[str], mounts: VolumeMounts
                          ) -> tuple[tuple[str, str], ...]:
    """At a kubelet's start: tear down the tmpfs and hugetlbfs volumes of pods not in
    ``keep`` (pod UIDs), left mounted by a kubelet that stopped before it unmounted them
    (``<pods_dir>/<uid>/volumes/<plugin>/<name>``); the (path, error) of each that stays."""
    left: list[tuple[str, str]] = []
    seen: set[str] = set()
    for point in mounts.mounts_under(pods_dir):
        parts = point.path.split("/")
        if (len(parts) < 4 or parts[1] != "volumes" or parts[0] in keep
                or point.fstype not in MEMORY_FILESYSTEMS or point.path in seen):
            continue
        seen.add(point.path)
        path = os.path.join(pods_dir, point.path)
        error = mounts.tear_down(path)
        if error:
            left.append((path, error))
    return tuple(left)
