"""What this machine offers pods: its capacity, read at start (runtime.cm.node_allocatable
computes the Node's allocatable from it).

Upstream's kubelet takes the node's capacity from cAdvisor's machine info (online CPUs,
MemTotal, the filesystem of its root directory, huge pages) and pidlimit (the process IDs),
and subtracts --system-reserved, --kube-reserved and the hard eviction thresholds to get
allocatable. A kubelet started with none of them still has upstream's default hard
eviction thresholds (``memory.available<100Mi``, ``nodefs.available<10%``) taken off.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from msgspec import Struct

from runtime.errors import ConfigError

__all__ = ["EVICTION_MEMORY_AVAILABLE", "EVICTION_NODEFS_AVAILABLE", "MachineCapacity",
           "MachineIdentity", "binary_si", "format_cpuset", "machine_arch", "machine_capacity",
           "machine_identity", "mem_total", "online_cpus", "parse_cpuset", "pid_max"]

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


CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
PIDS = "pid"
"""pidlimit.PIDs: the node's process IDs, internal capacity only (not on the Node)."""


class MachineCapacity(Struct, frozen=True):
    """What the machine has (cAdvisor's MachineInfo, pidlimit): cpus, bytes of memory and
    of the root directory's filesystem, --max-pods, process IDs, huge pages by resource
    name (``hugepages-2Mi``) in bytes, and the online cpus' ids."""

    cpu: int
    memory: int
    ephemeral_storage: int
    pods: int
    pid: int | None = None
    hugepages: tuple[tuple[str, int], ...] = ()
    online_cpus: tuple[int, ...] = ()

    def resources(self, internal: bool = False) -> dict[str, Decimal]:
        """The capacity as a resource list; ``internal`` adds the process IDs
        (upstream's internalCapacity)."""
        out = {CPU: Decimal(self.cpu), MEMORY: Decimal(self.memory),
               EPHEMERAL_STORAGE: Decimal(self.ephemeral_storage), PODS: Decimal(self.pods)}
        out.update((name, Decimal(size)) for name, size in self.hugepages)
        if internal and self.pid is not None:
            out[PIDS] = Decimal(self.pid)
        return out


_ATOI = re.compile(r"^[+-]?[0-9]+$")


def _atoi(text: str) -> int:
    if not _ATOI.match(text):
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def parse_cpuset(text: str) -> tuple[int, ...]:
    """cpuset.Parse, the kernel's cpu list format ("0-2,5" -> (0, 1, 2, 5)) of
    /sys/devices/system/cpu/online and --reserved-cpus; ValueError in its words."""
    if text == "":
        return ()
    cpus: set[int] = set()
    for part in text.split(","):
        start_text, dash, end_text = part.partition("-")
        if not dash:
            cpus.add(_atoi(start_text))
            continue
        start, end = _atoi(start_text), _atoi(end_text)
        if start > end:
            raise ValueError(f'invalid range "{part}" ({start} > {end})')
        cpus.update(range(start, end + 1))
    return tuple(sorted(cpus))


def format_cpuset(cpus: tuple[int, ...]) -> str:
    """CPUSet.String: contiguous runs as ranges, "0-2,5"."""
    runs: list[str] = []
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        runs.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(runs)


def online_cpus(path: str = "/sys/devices/system/cpu/online") -> tuple[int, ...]:
    """The online cpus' ids (what cAdvisor's topology lists); every cpu os.cpu_count
    reports when the file cannot be read."""
    try:
        return parse_cpuset(Path(path).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return tuple(range(os.cpu_count() or 1))


def pid_max(proc_sys: str = "/proc/sys/kernel") -> int | None:
    """pidlimit's MaxPID: the smaller of kernel.pid_max and kernel.threads-max (None when
    neither can be read)."""
    found: list[int] = []
    for name in ("pid_max", "threads-max"):
        try:
            found.append(int(Path(proc_sys, name).read_text(encoding="ascii").strip()))
        except (OSError, ValueError):
            continue
    return min(found) if found else None


def machine_capacity(root_dir: str, max_pods: int, meminfo: str = "/proc/meminfo"
                     ) -> MachineCapacity:
    """This machine's capacity: online CPUs, MemTotal, the filesystem of ``root_dir``,
    ``max_pods``, the process IDs and the huge pages."""
    return MachineCapacity(
        cpu=os.cpu_count() or 1, memory=mem_total(meminfo),
        ephemeral_storage=_filesystem_bytes(root_dir), pods=max_pods, pid=pid_max(),
        hugepages=tuple(sorted(_hugepages().items())), online_cpus=online_cpus())



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


