"""Cgroups through the cgroup filesystem (upstream cgroup_manager_linux.go, whose
libcontainer fs managers do the same writes).

CgroupManager is the narrow interface the pod cgroup logic needs; CgroupFS implements
it on cgroup v1 (a directory per mounted controller: cpu.shares, cpu.cfs_period_us,
cpu.cfs_quota_us, memory.limit_in_bytes, pids.max, hugetlb.<size>.limit_in_bytes) and on
the unified v2 hierarchy (cpu.weight, cpu.max, memory.max, pids.max, hugetlb.<size>.max).
Names are tuples of components (runtime.cm.names) spelled by the driver.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping
from typing import Final, Protocol

from loguru import logger

from runtime.cm.names import CgroupName, fs_path
from runtime.cm.resources import NodeResourceConfig, ResourceConfig, hugepage_unit_size
from runtime.errors import ConfigError

CGROUP_ROOT: Final = "/sys/fs/cgroup"
# What must exist for a cgroup to count as there (upstream's v1 Exists checks these).
REQUIRED_V1: Final = ("cpu", "cpuacct", "cpuset", "memory")
KILL_ATTEMPTS: Final = 5


class CgroupManager(Protocol):
    """What the kubelet does to cgroups, whatever the driver and version."""

    def exists(self, name: CgroupName) -> bool: ...

    def create(self, name: CgroupName, config: ResourceConfig) -> None: ...

    def update(self, name: CgroupName, config: ResourceConfig) -> None: ...

    def destroy(self, name: CgroupName) -> None:
        """Kill what still runs in the cgroup and its children, then remove them."""

    def children(self, name: CgroupName) -> tuple[str, ...]: ...

    def pids(self, name: CgroupName) -> frozenset[int]:
        """The processes in the cgroup and its children."""


_MOUNT_OPTIONS = frozenset(("rw", "ro", "xattr", "noprefix", "clone_children", "cpuset_v2_mode"))
"""Options of a v1 cgroup mount that name no controller."""

HYBRID_UNIFIED = "unified"
"""v1_mounts' key for the cgroup2 hierarchy a hybrid machine mounts beside its v1 ones
(systemd's /sys/fs/cgroup/unified). runc makes each container's cgroup there too, with
its parents (the pod's); libcontainer's cgroupfs manager counts it among a cgroup's paths
in hybrid mode, so the pod's directory there is made and removed with the others."""


def v1_mounts(mountinfo: str = "/proc/self/mountinfo") -> dict[str, str]:
    """Controller -> mount point of every cgroup v1 hierarchy ("name=systemd" too), and
    HYBRID_UNIFIED -> the cgroup2 mount of a hybrid machine."""
    mounts: dict[str, str] = {}
    with open(mountinfo, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            if fields[sep + 1] == "cgroup2":
                mounts.setdefault(HYBRID_UNIFIED, fields[4])
                continue
            if fields[sep + 1] != "cgroup":
                continue
            for option in fields[sep + 3].split(","):
                if option in _MOUNT_OPTIONS or ("=" in option and not option.startswith("name=")):
                    continue
                mounts.setdefault(option, fields[4])
    return mounts


def is_unified(root: str = CGROUP_ROOT) -> bool:
    """cgroup v2 only (/sys/fs/cgroup itself is cgroup2), as libcontainer decides."""
    return os.path.exists(os.path.join(root, "cgroup.controllers"))


# Control files are read and written with os-level calls: a buffered text file's open
# adds an fstat, an ioctl and a seek to each, and every syscall lets go of the GIL (which
# 50 pod workers starting at once then queue for). A pod cgroup takes some forty of them.


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, value.encode("ascii"))
    finally:
        os.close(fd)


def _read(path: str) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("ascii").strip()


def _shares_to_weight(shares: int) -> int:
    """cgroup v1 shares [2, 262144] -> v2 weight [1, 10000] (runc's conversion)."""
    return 1 + ((shares - 2) * 9999) // 262142 if shares else 0


class CgroupFS:
    """A CgroupManager writing the cgroup filesystem of this machine (or of ``mounts``
    in a test). ``driver`` spells names (cgroupfs paths or systemd slices)."""

    def __init__(self, driver: str, mounts: Mapping[str, str] | None = None,
                 unified_root: str | None = None) -> None:
        self.driver = driver
        if unified_root is None and mounts is None and is_unified():
            unified_root = CGROUP_ROOT
        self.unified_root = unified_root
        self.mounts: Mapping[str, str] = {} if unified_root else (
            mounts if mounts is not None else v1_mounts())
        if not self.unified_root and not all(c in self.mounts for c in ("cpu", "memory")):
            raise ConfigError("cgroups: no cpu and memory controllers are mounted "
                              f"(found {sorted(self.mounts)}); run with "
                              "--cgroups-per-qos=false --enforce-node-allocatable= to leave "
                              "cgroups to the runtime")

    # --- paths ------------------------------------------------------------------------

    def _dirs(self, name: CgroupName) -> dict[str, str]:
        """Controller (or "unified") -> directory of ``name``."""
        rel = fs_path(name, self.driver).lstrip("/")
        if self.unified_root:
            return {"unified": os.path.join(self.unified_root, rel)}
        dirs: dict[str, str] = {}
        for controller, mount in self.mounts.items():
            dirs.setdefault(controller, os.path.join(mount, rel))
        return dirs

    def path(self, name: CgroupName, controller: str) -> str:
        return self._dirs(name)["unified" if self.unified_root else controller]

    # --- CgroupManager ----------------------------------------------------------------

    def exists(self, name: CgroupName) -> bool:
        dirs = self._dirs(name)
        wanted = ("unified",) if self.unified_root else tuple(
            c for c in REQUIRED_V1 if c in dirs)
        return all(os.path.isdir(dirs[c]) for c in wanted)

    def create(self, name: CgroupName, config: ResourceConfig) -> None:
        for controller, directory in self._dirs(name).items():
            _mkdir(directory)
            if controller == "cpuset":
                self._fill_cpuset(directory)
        if self.unified_root:
            self._enable_controllers(name)
        self.update(name, config)

    def update(self, name: CgroupName, config: ResourceConfig) -> None:
        if self.unified_root:
            self._update_v2(self._dirs(name)["unified"], config)
        else:
            self._update_v1(self._dirs(name), config)

    def children(self, name: CgroupName) -> tuple[str, ...]:
        directory = self.path(name, "memory")
        try:
            return tuple(sorted(e.name for e in os.scandir(directory) if e.is_dir()))
        except FileNotFoundError:
            return ()

    def pids(self, name: CgroupName) -> frozenset[int]:
        return frozenset(self._pids(self._dirs(name)))

    def destroy(self, name: CgroupName) -> None:
        # The common case, a pod whose sandboxes are gone, is one rmdir per hierarchy: the
        # kernel refuses (EBUSY) to remove a cgroup that holds processes or children, and
        # only then are its processes looked for (every directory walked) and killed.
        dirs = {c: d for c, d in self._dirs(name).items() if not _removed_if_empty(d)}
        if not dirs:
            return
        for _ in range(KILL_ATTEMPTS):
            pids = self._pids(dirs)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for directory in dirs.values():
            _remove_tree(directory)

    # --- details ------------------------------------------------------------------------

    def _pids(self, dirs: Mapping[str, str]) -> set[int]:
        pids: set[int] = set()
        for directory in dirs.values():
            for root, _, files in os.walk(directory):
                if "cgroup.procs" in files:
                    try:
                        pids.update(int(p) for p in _read(os.path.join(root, "cgroup.procs"))
                                    .split())
                    except (OSError, ValueError):
                        continue
        return pids

    @staticmethod
    def _fill_cpuset(directory: str) -> None:
        """A new v1 cpuset cgroup has no cpus or mems: take them from the parent (which
        gets them from its own first), or no task could ever join it."""
        parent = os.path.dirname(directory)
        for key in ("cpuset.cpus", "cpuset.mems"):
            mine = os.path.join(directory, key)
            try:
                if _read(mine):
                    continue
            except FileNotFoundError:
                continue
            inherited = _read(os.path.join(parent, key))
            if not inherited:
                CgroupFS._fill_cpuset(parent)
                inherited = _read(os.path.join(parent, key))
            _write(mine, inherited)

    def _enable_controllers(self, name: CgroupName) -> None:
        assert self.unified_root is not None
        path = self.unified_root
        for part in fs_path(name, self.driver).strip("/").split("/"):
            available = _read(os.path.join(path, "cgroup.controllers")).split()
            wanted = [c for c in ("cpu", "cpuset", "memory", "pids", "hugetlb") if c in available]
            try:
                _write(os.path.join(path, "cgroup.subtree_control"),
                       " ".join("+" + c for c in wanted))
            except OSError as err:
                logger.warning("cgroup {}: cannot enable controllers {}: {}", path, wanted, err)
            path = os.path.join(path, part)

    @staticmethod
    def _update_v1(dirs: Mapping[str, str], config: ResourceConfig) -> None:
        cpu = dirs["cpu"]
        if config.cpu_shares:
            _write(os.path.join(cpu, "cpu.shares"), str(config.cpu_shares))
        if config.cpu_period:
            _write(os.path.join(cpu, "cpu.cfs_period_us"), str(config.cpu_period))
        if config.cpu_quota:
            _write(os.path.join(cpu, "cpu.cfs_quota_us"), str(config.cpu_quota))
        if config.memory:
            _write(os.path.join(dirs["memory"], "memory.limit_in_bytes"), str(config.memory))
        pids = dirs.get("pids")
        if isinstance(config, NodeResourceConfig) and config.pids_limit is not None \
                and pids is not None:
            _write(os.path.join(pids, "pids.max"), str(config.pids_limit))
        hugetlb = dirs.get("hugetlb")
        if hugetlb is not None:
            for size, limit in config.hugepage_limits.items():
                _write(os.path.join(hugetlb,
                                    f"hugetlb.{hugepage_unit_size(size)}.limit_in_bytes"),
                       str(limit))

    @staticmethod
    def _update_v2(directory: str, config: ResourceConfig) -> None:
        if config.cpu_shares:
            _write(os.path.join(directory, "cpu.weight"),
                   str(_shares_to_weight(config.cpu_shares)))
        if config.cpu_quota or config.cpu_period:
            quota = "max" if not config.cpu_quota or config.cpu_quota < 0 else str(
                config.cpu_quota)
            _write(os.path.join(directory, "cpu.max"),
                   f"{quota} {config.cpu_period or 100_000}")
        if config.memory:
            _write(os.path.join(directory, "memory.max"), str(config.memory))
        if isinstance(config, NodeResourceConfig) and config.pids_limit is not None:
            _write(os.path.join(directory, "pids.max"), str(config.pids_limit))
        for size, limit in config.hugepage_limits.items():
            target = os.path.join(directory, f"hugetlb.{hugepage_unit_size(size)}.max")
            if os.path.exists(target):
                _write(target, str(limit))


def _remove_tree(directory: str) -> None:
    """rmdir the cgroup's children, deepest first, then itself (cgroup directories
    cannot be removed while they hold children; their files go with them)."""
    if not os.path.isdir(directory):
        return
    for root, subdirs, _ in os.walk(directory, topdown=False):
        for sub in subdirs:
            _rmdir(os.path.join(root, sub))
    _rmdir(directory)


def _mkdir(directory: str) -> None:
    """The directory, made with its parents when they are missing (a pod cgroup's parent
    is there: one mkdir)."""
    with contextlib.suppress(FileExistsError):
        try:
            os.mkdir(directory)
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)


def _removed_if_empty(directory: str) -> bool:
    """rmdir ``directory``: whether it is gone now (False: it holds something, or the
    removal failed for a reason the full removal will report)."""
    try:
        os.rmdir(directory)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _rmdir(path: str) -> None:
    # Removed meanwhile: the runtime removes its containers' cgroups.
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(path)
