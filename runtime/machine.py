"""What this machine offers pods: the node's allocatable resources, read once at start.

Upstream's kubelet takes the node's capacity from cAdvisor's machine info (online CPUs,
MemTotal, the filesystem of its root directory) and subtracts the reservations and the
hard eviction thresholds to get allocatable. kubelet-actors reserves nothing, so its
allocatable is the capacity minus upstream's default hard eviction thresholds
(``memory.available<100Mi``, ``nodefs.available<10%``), as a kubelet started with no
``--kube-reserved``, ``--system-reserved`` or ``--eviction-hard`` reports it.
"""

from __future__ import annotations

import os
import platform

from runtime.errors import ConfigError

__all__ = ["EVICTION_MEMORY_AVAILABLE", "EVICTION_NODEFS_AVAILABLE", "machine_allocatable",
           "machine_arch", "mem_total"]

EVICTION_MEMORY_AVAILABLE = 100 * 1024 * 1024
"""Upstream's default hard eviction threshold memory.available<100Mi, in bytes."""
EVICTION_NODEFS_AVAILABLE = 0.1
"""Upstream's default hard eviction threshold nodefs.available<10%, as a fraction."""

_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
           "armv7l": "arm", "armv6l": "arm", "ppc64le": "ppc64le", "s390x": "s390x",
           "riscv64": "riscv64", "i686": "386", "i386": "386"}


def machine_arch() -> str:
    """The machine's architecture as Go's GOARCH names it (the kubernetes.io/arch label)."""
    machine = platform.machine().lower()
    return _GOARCH.get(machine, machine)


def mem_total(meminfo: str = "/proc/meminfo") -> int:
    """MemTotal of ``meminfo`` in bytes (what cAdvisor reports as MemoryCapacity)."""
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key == "MemTotal":
                    amount, _, unit = rest.strip().partition(" ")
                    return int(amount) * (1024 if unit.strip() == "kB" else 1)
    except (OSError, ValueError) as err:
        raise ConfigError(f"{meminfo}: cannot read MemTotal: {err}", file=meminfo) from err
    raise ConfigError(f"{meminfo}: no MemTotal line", file=meminfo)


def _filesystem_bytes(root_dir: str) -> int:
    """The size of the filesystem holding ``root_dir`` (its nearest existing parent)."""
    path = os.path.abspath(root_dir)
    while not os.path.exists(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)
    stat = os.statvfs(path)
    return stat.f_blocks * stat.f_frsize


def machine_allocatable(root_dir: str, max_pods: int, meminfo: str = "/proc/meminfo"
                        ) -> dict[str, str]:
    """The node's allocatable resources as quantities: cpu (online CPUs), memory
    (MemTotal), ephemeral-storage (the filesystem of ``root_dir``), each less upstream's
    default hard eviction threshold, and pods (``max_pods``)."""
    memory = max(mem_total(meminfo) - EVICTION_MEMORY_AVAILABLE, 0)
    storage = _filesystem_bytes(root_dir)
    storage -= int(storage * EVICTION_NODEFS_AVAILABLE)
    return {"cpu": str(os.cpu_count() or 1), "memory": str(memory),
            "ephemeral-storage": str(storage), "pods": str(max_pods)}


APPARMOR_ENABLED = "/sys/module/apparmor/parameters/enabled"


def apparmor_enabled(path: str = APPARMOR_ENABLED) -> bool:
    """Does this kernel enforce AppArmor (runc's apparmor.IsEnabled, which upstream's
    kubelet asks before admitting a pod that names a profile)?"""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip().startswith("Y")
    except OSError:
        return False
