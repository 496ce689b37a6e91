"""Reserved resources end to end on a real containerd, standalone, as upstream's kubelet
enforces them (pkg/kubelet/cm/node_container_manager_linux.go; test/e2e_node
node_container_manager_test.go): the daemon started with systemReserved, kubeReserved and
enforceNodeAllocatable [pods, system-reserved, kube-reserved], under a cgroup root of its
own (actors.app.testbed.own_cgroup_root), so the machine's /kubepods is not touched.

The kernel's own cgroup files show the limits: kubepods gets the capacity less both
reservations (memory, cpu shares, pids; the eviction threshold is not taken off the
cgroup), the system and kube reserved cgroups their reservation. Admission refuses a pod
whose memory request fits the capacity but not the allocatable (capacity less both
reservations and the 100Mi hard eviction threshold), with upstream's OutOfmemory, and runs
a small one in the kubepods hierarchy. The Node's events (logged: standalone, no API
server keeps them) are upstream's NodeAllocatableEnforced, once for kubepods and once per
reserved cgroup. system-reserved-compressible limits the cpu alone. A reserved cgroup that
does not exist stops the start, in upstream's words (upstream's Validate, the missing
directories named).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from actors.app.testbed import BUSYBOX_IMAGE, Bed, own_cgroup_root
from runtime.cm.cgroupfs import CgroupFS, v1_mounts
from runtime.cm.names import CGROUPFS, parse_root
from runtime.cm.resources import ResourceConfig
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import NODE, daemon_on, remove_every_pod, stopped_after
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

BED = Bed("node-allocatable-test", "kat-resv-", "katrs0", "10.96.1.0/24")
MI = 1 << 20
GI = 1 << 30
SYSTEM_MEMORY = GI
KUBE_MEMORY = 512 * MI
SYSTEM_CPU_MILLIS = 500
KUBE_PIDS = 1000
EVICTION_MEMORY = 100 * MI  # the default hard threshold memory.available<100Mi


def mem_total() -> int:
    """MemTotal in bytes, read here (not with the daemon's code)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal in /proc/meminfo")


def task_max() -> int:
    values = [int(Path(f"/proc/sys/kernel/{name}").read_text()) for name in
              ("pid_max", "threads-max")]
    return min(values)


def shares(millis: int) -> int:
    return max(millis * 1024 // 1000, 2)


def page_floor(size: int) -> int:
    page = os.sysconf("SC_PAGE_SIZE")
    return size // page * page


class Cgroups:
    """A cgroup's files as the kernel reports them, on v1 (per controller) or v2."""

    def __init__(self) -> None:
        self.unified = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        self.mounts = {} if self.unified else v1_mounts()

    def read(self, controller: str, cgroup: str, v1: str, v2: str) -> str:
        base = "/sys/fs/cgroup" if self.unified else self.mounts[controller]
        return Path(base, cgroup.lstrip("/"), v2 if self.unified else v1).read_text().strip()

    def memory(self, cgroup: str) -> int:
        return int(self.read("memory", cgroup, "memory.limit_in_bytes", "memory.max"))

    def cpu(self, cgroup: str) -> int:
        """cpu.shares on v1; on v2 the weight is compared through runc's conversion."""
        return int(self.read("cpu", cgroup, "cpu.shares", "cpu.weight"))

    def expected_cpu(self, millis: int) -> int:
        value = shares(millis)
        return 1 + (value - 2) * 9999 // 262142 if self.unified else value

    def pids(self, cgroup: str) -> str:
        return self.read("pids", cgroup, "pids.max", "pids.max")


def pod(name: str, memory: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                                 "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"],
                                 "resources": {"requests": {"memory": memory}}}]}})


def config(root: str, enforce: str = "[pods, system-reserved, kube-reserved]") -> str:
    return (f"cgroupRoot: {root}\n"
            f"systemReserved: {{cpu: {SYSTEM_CPU_MILLIS}m, memory: {SYSTEM_MEMORY // MI}Mi}}\n"
            f"kubeReserved: {{memory: {KUBE_MEMORY // MI}Mi, pid: \"{KUBE_PIDS}\"}}\n"
            f"enforceNodeAllocatable: {enforce}\n"
            f"systemReservedCgroup: {root}/system-reserved\n"
            f"kubeReservedCgroup: {root}/kube-reserved\n")


def test_reservations_limit_the_kubepods_cgroup_and_admission(
        containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    cgroups = Cgroups()
    with own_cgroup_root(BED) as root:
        manager = CgroupFS(CGROUPFS)
        for name in ("system-reserved", "kube-reserved"):
            manager.create(parse_root(f"{root}/{name}", CGROUPFS), ResourceConfig())
        daemon = daemon_on(containerd, "node-allocatable", config=config(root))
        capacity = mem_total()
        allocatable = capacity - SYSTEM_MEMORY - KUBE_MEMORY - EVICTION_MEMORY
        too_big = allocatable + 256 * MI  # more than allocatable, less than capacity
        assert too_big < capacity
        (daemon.manifests / "big.json").write_text(pod("big", str(too_big)))
        (daemon.manifests / "small.json").write_text(pod("small", "16Mi"))
        with stopped_after(daemon.start()):
            kubepods = f"{root}/kubepods"
            # The kernel's view: capacity less both reservations, no eviction threshold.
            assert cgroups.memory(kubepods) == page_floor(capacity - SYSTEM_MEMORY
                                                          - KUBE_MEMORY)
            assert cgroups.cpu(kubepods) == cgroups.expected_cpu(
                (os.cpu_count() or 1) * 1000 - SYSTEM_CPU_MILLIS)
            assert cgroups.pids(kubepods) == str(task_max() - KUBE_PIDS)
            assert cgroups.memory(f"{root}/system-reserved") == SYSTEM_MEMORY
            assert cgroups.cpu(f"{root}/system-reserved") == cgroups.expected_cpu(
                SYSTEM_CPU_MILLIS)
            assert cgroups.memory(f"{root}/kube-reserved") == KUBE_MEMORY
            assert cgroups.pids(f"{root}/kube-reserved") == str(KUBE_PIDS)

            def enforced() -> list[str] | None:
                lines = [line for line in daemon.log_path.read_text(errors="replace")
                         .splitlines() if "NodeAllocatableEnforced" in line]
                return lines if len(lines) == 3 else None

            lines = wait_for(enforced, 30.0, "three NodeAllocatableEnforced events")
            assert lines is not None
            for message in ("Updated Node Allocatable limit across pods",
                            f"Updated limits on system reserved cgroup {root}/system-reserved",
                            f"Updated limits on kube reserved cgroup {root}/kube-reserved"):
                assert any(line.endswith(f"Node/{NODE}: {message}") for line in lines), lines

            small = daemon.wait_running(f"small-{NODE}", timeout=90.0)
            uid = small["metadata"]["uid"]
            assert Path(cgroups.mounts.get("memory", "/sys/fs/cgroup"),
                        f"{kubepods.lstrip('/')}/burstable/pod{uid}").is_dir()

            def refused() -> dict[str, str] | None:
                found = daemon.pod(f"big-{NODE}")
                status = (found or {}).get("status", {})
                return status if status.get("phase") == "Failed" else None

            status = wait_for(refused, 60.0, "the big pod refused")
            assert status is not None
            assert status["reason"] == "OutOfmemory", status
            assert (f"Node didn't have enough resource: memory, requested: {too_big}, used: "
                    in status["message"]), status
            assert status["message"].endswith(f"capacity: {allocatable}"), status
            remove_every_pod(daemon)


def test_a_reserved_cgroup_that_does_not_exist_stops_the_start(
        containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    with own_cgroup_root(BED) as root:
        daemon = daemon_on(containerd, "node-allocatable",
                           config=config(root, "[pods, system-reserved]"))
        with stopped_after(daemon.start(wait=False)):
            assert daemon.proc is not None
            assert daemon.proc.wait(timeout=60) != 0
            log = daemon.log_path.read_text(errors="replace")
            name = "[" + " ".join(f'"{part}"' for part in
                                  (*root.strip("/").split("/"), "system-reserved")) + "]"
            assert (f'Failed to enforce System Reserved Cgroup Limits on "{root}/system-reserved"'
                    f": cgroup {name} has some missing paths: ") in log, log


def test_compressible_enforcement_limits_only_the_cpu(
        containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    """system-reserved-compressible: the reserved cgroup's cpu shares, its memory left as
    it was."""
    cgroups = Cgroups()
    with own_cgroup_root(BED) as root:
        manager = CgroupFS(CGROUPFS)
        system = f"{root}/system-reserved"
        manager.create(parse_root(system, CGROUPFS), ResourceConfig())
        unlimited = cgroups.memory(system)
        daemon = daemon_on(containerd, "node-allocatable", config=(
            f"cgroupRoot: {root}\n"
            f"systemReserved: {{cpu: {SYSTEM_CPU_MILLIS}m, memory: {SYSTEM_MEMORY // MI}Mi}}\n"
            "enforceNodeAllocatable: [pods, system-reserved-compressible]\n"
            f"systemReservedCgroup: {system}\n"))
        with stopped_after(daemon.start()):
            assert cgroups.cpu(system) == cgroups.expected_cpu(SYSTEM_CPU_MILLIS)
            assert cgroups.memory(system) == unlimited
            assert unlimited != SYSTEM_MEMORY
