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
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import ConfigError

__all__ = ["EVICTION_MEMORY_AVAILABLE", "EVICTION_NODEFS_AVAILABLE", "MachineIdentity",
           "binary_si", "machine_allocatable",
           "machine_arch", "machine_identity", "mem_total", "node_resources"]

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
_BINARY = (("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20),
           ("Ki", 1 << 10))


def binary_si(value: int) -> str:
    """A byte count as resource.Quantity's canonical BinarySI text ("8148564Ki", "1Gi",
    "47093746742"): the largest binary suffix that divides it exactly."""
    if value == 0:
        return "0"
    for suffix, size in _BINARY:
        if value % size == 0:
            return f"{value // size}{suffix}"
    return str(value)


def _hugepages(root: str = "/sys/kernel/mm/hugepages") -> dict[str, int]:
    """The total of each huge page size, as cAdvisor reports them (hugepages-2Mi: bytes)."""
    out: dict[str, int] = {}
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return out
    for entry in entries:
        if not entry.startswith("hugepages-") or not entry.endswith("kB"):
            continue
        try:
            size_kb = int(entry[len("hugepages-"):-2])
            count = int(Path(root, entry, "nr_hugepages").read_text().strip())
        except (OSError, ValueError):
            continue
        out[f"hugepages-{binary_si(size_kb * 1024)}"] = count * size_kb * 1024
    return out


def node_resources(root_dir: str, max_pods: int, meminfo: str = "/proc/meminfo"
                   ) -> tuple[dict[str, str], dict[str, str]]:
    """The Node's capacity and allocatable as upstream's MachineInfo setter writes them:
    cpu, memory, ephemeral-storage, pods and hugepages-*, as quantities; allocatable is
    capacity less the default hard eviction thresholds and the huge pages (from memory)."""
    memory = mem_total(meminfo)
    storage = _filesystem_bytes(root_dir)
    hugepages = _hugepages()
    capacity = {"cpu": str(os.cpu_count() or 1), "memory": binary_si(memory),
                "ephemeral-storage": binary_si(storage), "pods": str(max_pods)}
    capacity.update({name: binary_si(size) for name, size in hugepages.items()})
    allocatable = dict(capacity)
    allocatable["memory"] = binary_si(max(memory - EVICTION_MEMORY_AVAILABLE
                                          - sum(hugepages.values()), 0))
    allocatable["ephemeral-storage"] = binary_si(storage - int(storage *
                                                               EVICTION_NODEFS_AVAILABLE))
    return capacity, allocatable


@dataclass(frozen=True)
class MachineIdentity:
    """What cAdvisor and its version info tell the Node's nodeInfo."""

    machine_id: str
    system_uuid: str
    boot_id: str
    kernel_version: str
    os_image: str


def _first_line(*paths: str) -> str:
    for path in paths:
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
    return ""


def _os_image(os_release: str) -> str:
    try:
        text = Path(os_release).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "PRETTY_NAME":
            return value.strip().strip('"')
    return "Linux"


def machine_identity(os_release: str = "/etc/os-release") -> MachineIdentity:
    """machine-id, product UUID (root only: "" when unreadable, as cAdvisor then has
    none), boot id, kernel release and the OS's PRETTY_NAME."""
    return MachineIdentity(
        machine_id=_first_line("/etc/machine-id", "/var/lib/dbus/machine-id"),
        system_uuid=_first_line("/sys/class/dmi/id/product_uuid"),
        boot_id=_first_line("/proc/sys/kernel/random/boot_id"),
        kernel_version=platform.release(),
        os_image=_os_image(os_release))


