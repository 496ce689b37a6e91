"""Reads of the node's own counters: cgroups (v1 or v2), /proc and filesystems.

Every read goes through ``HostPaths`` so a test can point it at a fake tree. Values are as
cAdvisor reports them for the summary: a cgroup's working set is its usage less its
inactive file pages (``total_inactive_file`` on v1, ``inactive_file`` on v2), never
negative; disk usage is counted in blocks (``st_blocks * 512``), as ``du`` counts it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import msgspec
from msgspec import Struct

from runtime.cri.usage import InterfaceUsage

CGROUP_ROOT = "/sys/fs/cgroup"
PROC_ROOT = "/proc"
_UNLIMITED = 1 << 62  # a v1 memory.limit_in_bytes at or above this is "no limit"


class HostPaths(Struct, frozen=True):
    """Where the node's counters are: real paths by default, a temp tree in tests."""

    proc: str = PROC_ROOT
    cgroup: str = CGROUP_ROOT

    def unified(self) -> bool:
        """cgroup v2 only (``cgroup.controllers`` at the root), as runtime.cm decides."""
        return os.path.exists(os.path.join(self.cgroup, "cgroup.controllers"))


class CgroupSample(Struct, frozen=True):
    """One cgroup's counters; None where the file is missing."""

    cpu_usage_ns: int | None = None
    memory_usage: int | None = None
    working_set: int | None = None
    rss: int | None = None
    page_faults: int | None = None
    major_page_faults: int | None = None
    memory_limit: int | None = None
    pids: int | None = None


class FsSample(Struct, frozen=True):
    """statfs of a filesystem: bytes and inodes."""

    capacity: int
    available: int
    used: int
    inodes: int
    inodes_free: int


class DiskUsage(Struct, frozen=True):
    """What a directory tree holds: bytes in blocks and inodes (files and dirs)."""

    bytes: int
    inodes: int


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError, ProcessLookupError, PermissionError):
        return None


def _int(path: str) -> int | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


def flat_keyed(text: str) -> dict[str, int]:
    """``key value`` lines (memory.stat, cpu.stat) as a dict; malformed lines skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def working_set(usage: int, inactive_file: int) -> int:
    """cAdvisor's working set: usage less inactive file pages, floored at 0."""
    return max(usage - inactive_file, 0)


def read_cgroup(paths: HostPaths, rel: str) -> CgroupSample | None:
    """The counters of the cgroup at ``rel`` (e.g. ``kubepods/burstable/pod<uid>``, or ""
    for the root); None when it does not exist."""
    rel = rel.strip("/")
    if paths.unified():
        sample = _read_v2(os.path.join(paths.cgroup, rel))
        if sample is not None and not rel and sample.memory_usage is None:
            sample = _root_memory_v2(paths, sample)
        return sample
    return _read_v1(paths.cgroup, rel)


def _meminfo(paths: HostPaths) -> dict[str, int]:
    """/proc/meminfo in bytes, by field."""
    out: dict[str, int] = {}
    for line in (_read(os.path.join(paths.proc, "meminfo")) or "").splitlines():
        name, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            out[name] = int(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    return out


def _root_memory_v2(paths: HostPaths, sample: CgroupSample) -> CgroupSample:
    """The v2 root cgroup has no memory.current: its usage is the node's used memory
    (MemTotal less MemFree), its working set that less the inactive file pages of the
    root's memory.stat (the eviction manager's memory.available rests on it)."""
    info = _meminfo(paths)
    if "MemTotal" not in info or "MemFree" not in info:
        return sample
    usage = info["MemTotal"] - info["MemFree"]
    stat = flat_keyed(_read(os.path.join(paths.cgroup, "memory.stat")) or "")
    inactive = stat.get("inactive_file", info.get("Inactive(file)", 0))
    return msgspec.structs.replace(sample, memory_usage=usage,
                               working_set=working_set(usage, inactive))


def _read_v1(root: str, rel: str) -> CgroupSample | None:
    memory_dir = os.path.join(root, "memory", rel)
    if not os.path.isdir(memory_dir):
        return None
    cpu = _int(os.path.join(root, "cpuacct", rel, "cpuacct.usage"))
    stat = flat_keyed(_read(os.path.join(memory_dir, "memory.stat")) or "")
    usage = _int(os.path.join(memory_dir, "memory.usage_in_bytes"))
    limit = _int(os.path.join(memory_dir, "memory.limit_in_bytes"))
    pids = _int(os.path.join(root, "pids", rel, "pids.current"))
    return CgroupSample(
        cpu_usage_ns=cpu, memory_usage=usage,
        working_set=None if usage is None else working_set(
            usage, stat.get("total_inactive_file", 0)),
        rss=stat.get("total_rss"), page_faults=stat.get("total_pgfault"),
        major_page_faults=stat.get("total_pgmajfault"),
        memory_limit=None if limit is None or limit >= _UNLIMITED else limit, pids=pids)


def _read_v2(directory: str) -> CgroupSample | None:
    if not os.path.isdir(directory):
        return None
    cpu = flat_keyed(_read(os.path.join(directory, "cpu.stat")) or "")
    stat = flat_keyed(_read(os.path.join(directory, "memory.stat")) or "")
    usage = _int(os.path.join(directory, "memory.current"))
    limit_text = (_read(os.path.join(directory, "memory.max")) or "max").strip()
    return CgroupSample(
        cpu_usage_ns=cpu["usage_usec"] * 1000 if "usage_usec" in cpu else None,
        memory_usage=usage,
        working_set=None if usage is None else working_set(usage, stat.get("inactive_file", 0)),
        rss=stat.get("anon"), page_faults=stat.get("pgfault"),
        major_page_faults=stat.get("pgmajfault"),
        memory_limit=int(limit_text) if limit_text.isdigit() else None,
        pids=_int(os.path.join(directory, "pids.current")))


def cgroup_created(paths: HostPaths, rel: str) -> float | None:
    """When a cgroup was made (its directory's change time, as cAdvisor's spec reads it)."""
    base = paths.cgroup if paths.unified() else os.path.join(paths.cgroup, "memory")
    try:
        return os.stat(os.path.join(base, rel.strip("/"))).st_ctime
    except OSError:
        return None


def find_pod_cgroups(paths: HostPaths, kubepods: str = "kubepods") -> dict[str, str]:
    """Pod UID -> cgroup path (relative to the hierarchy) of each ``pod<uid>`` directory
    under ``kubepods`` and its QoS children, as runtime.cm names them (cgroupfs driver)."""
    base = paths.cgroup if paths.unified() else os.path.join(paths.cgroup, "memory")
    found: dict[str, str] = {}
    for parent in (kubepods, f"{kubepods}/burstable", f"{kubepods}/besteffort"):
        try:
            entries = list(os.scandir(os.path.join(base, parent)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.name.startswith("pod") and entry.is_dir():
                found[entry.name[3:]] = f"{parent}/{entry.name}"
    return found


def cgroup_pids(paths: HostPaths, rel: str) -> tuple[int, ...]:
    """The processes of a cgroup and its children (memory hierarchy on v1)."""
    base = paths.cgroup if paths.unified() else os.path.join(paths.cgroup, "memory")
    pids: list[int] = []
    for root, _dirs, files in os.walk(os.path.join(base, rel.strip("/"))):
        if "cgroup.procs" in files:
            pids += [int(p) for p in (_read(os.path.join(root, "cgroup.procs")) or "").split()
                     if p.isdigit()]
    return tuple(pids)


# --- /proc ---------------------------------------------------------------------------------


def parse_net_dev(text: str) -> tuple[InterfaceUsage, ...]:
    """/proc/net/dev (or /proc/<pid>/net/dev, a network namespace's) as interfaces."""
    out: list[InterfaceUsage] = []
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or len(fields) < 16:
            continue
        rx_bytes, rx_errors = int(fields[0]), int(fields[2])
        tx_bytes, tx_errors = int(fields[8]), int(fields[10])
        out.append(InterfaceUsage(name.strip(), rx_bytes, rx_errors, tx_bytes, tx_errors))
    return tuple(out)


IGNORED_INTERFACE_PREFIXES = ("lo", "veth", "docker", "nerdctl")
"""cAdvisor leaves these out of a container's (and the node's) network stats."""


def network_interfaces(paths: HostPaths, pid: int | None = None) -> tuple[InterfaceUsage, ...]:
    """The interfaces of the node's network namespace, or of ``pid``'s, cAdvisor's
    ignored ones left out."""
    where = "net/dev" if pid is None else f"{pid}/net/dev"
    text = _read(os.path.join(paths.proc, where))
    if text is None:
        return ()
    return tuple(i for i in parse_net_dev(text)
                 if not i.name.startswith(IGNORED_INTERFACE_PREFIXES))


def boot_time(paths: HostPaths) -> float | None:
    """When the node booted (``btime`` of /proc/stat): the node's stats start time."""
    for line in (_read(os.path.join(paths.proc, "stat")) or "").splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return None


def memory_total(paths: HostPaths) -> int | None:
    """MemTotal of /proc/meminfo in bytes: the node's memory capacity."""
    for line in (_read(os.path.join(paths.proc, "meminfo")) or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def rlimit(paths: HostPaths) -> tuple[int | None, int | None]:
    """(maxpid, curproc) as upstream's pidlimit reads them: the lower of kernel.pid_max
    and kernel.threads-max, and the task count of /proc/loadavg ("running/total")."""
    limits = [_int(os.path.join(paths.proc, "sys/kernel", f))
              for f in ("pid_max", "threads-max")]
    known = [v for v in limits if v is not None]
    max_pid = min(known) if len(known) == len(limits) else None
    load = (_read(os.path.join(paths.proc, "loadavg")) or "").split()
    procs = None
    if len(load) >= 4 and "/" in load[3]:
        total = load[3].split("/")[1]
        procs = int(total) if total.isdigit() else None
    return max_pid, procs


# --- filesystems -----------------------------------------------------------------------------


def statfs(path: str) -> FsSample | None:
    """Capacity, available and used bytes and inodes of the filesystem holding ``path``."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return FsSample(
        capacity=st.f_blocks * st.f_frsize, available=st.f_bavail * st.f_frsize,
        used=(st.f_blocks - st.f_bfree) * st.f_frsize, inodes=st.f_files,
        inodes_free=st.f_ffree)


def _walk(path: str) -> Iterator[os.stat_result]:
    try:
        entries = list(os.scandir(path))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        yield st
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(entry.path)


def disk_usage(path: str) -> DiskUsage | None:
    """Bytes (blocks) and inodes under ``path`` (itself included), as ``du`` counts;
    None when it does not exist. Hard links count once."""
    try:
        top = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    seen: set[tuple[int, int]] = {(top.st_dev, top.st_ino)}
    used, inodes = top.st_blocks * 512, 1
    for st in _walk(path):
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        used += st.st_blocks * 512
        inodes += 1
    return DiskUsage(used, inodes)


