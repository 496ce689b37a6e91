"""The node's allocatable resources as upstream's kubelet computes them with no
reservations: capacity less the default hard eviction thresholds; the machine's capacity."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.cm.node_allocatable import AllocatableConfig, plan
from runtime.errors import ConfigError
from runtime.eviction.api import float32
from runtime.eviction.parse import hard_eviction_reserves, parse_threshold_config
from runtime.machine import (
    machine_arch,
    machine_capacity,
    mem_total,
    online_cpus,
    pid_max,
)
from runtime.pod.quantity import parse_quantity

MEMINFO = "MemTotal:        4030756 kB\nMemFree:          123456 kB\n"


def test_allocatable_is_capacity_less_eviction_thresholds(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO)
    defaults = parse_threshold_config({"memory.available": "100Mi",
                                       "nodefs.available": "10%"}).thresholds
    machine = machine_capacity(str(tmp_path / "not" / "yet"), 42, str(meminfo))
    allocatable = plan(machine, AllocatableConfig(
        hard_eviction=hard_eviction_reserves(defaults))).allocatable_map()
    assert allocatable["cpu"] == str(os.cpu_count())
    pages = sum(size for _, size in machine_capacity(str(tmp_path), 1).hugepages)
    assert parse_quantity(allocatable["memory"]) == 4030756 * 1024 - 100 * 1024 * 1024 - pages
    stat = os.statvfs(tmp_path)
    disk = stat.f_blocks * stat.f_frsize
    # Upstream keeps a percentage as a float32 (GetThresholdQuantity).
    assert parse_quantity(allocatable["ephemeral-storage"]) == disk - int(disk * float32(0.1))
    assert allocatable["pods"] == "42"


def test_capacity_of_this_machine_and_of_files(tmp_path: Path) -> None:
    """cpus online as the kernel lists them, and pidlimit's MaxPID: the smaller of
    kernel.pid_max and kernel.threads-max."""
    capacity = machine_capacity(str(tmp_path), 7)
    assert capacity.cpu == os.cpu_count() and capacity.pods == 7
    assert capacity.online_cpus and len(capacity.online_cpus) <= capacity.cpu
    (tmp_path / "online").write_text("0-2,5\n")
    assert online_cpus(str(tmp_path / "online")) == (0, 1, 2, 5)
    assert online_cpus(str(tmp_path / "missing")) == tuple(range(os.cpu_count() or 1))
    (tmp_path / "pid_max").write_text("4194304\n")
    (tmp_path / "threads-max").write_text("63704\n")
    assert pid_max(str(tmp_path)) == 63704
    (tmp_path / "threads-max").unlink()
    assert pid_max(str(tmp_path)) == 4194304
    assert pid_max(str(tmp_path / "nowhere")) is None


def test_mem_total_of_this_machine_and_a_broken_file(tmp_path: Path) -> None:
    assert mem_total() > 0
    broken = tmp_path / "meminfo"
    broken.write_text("MemFree: 1 kB\n")
    with pytest.raises(ConfigError, match="no MemTotal line"):
        mem_total(str(broken))


def test_arch_is_named_as_go_names_it() -> None:
    assert machine_arch() in ("amd64", "arm64", "arm", "ppc64le", "s390x", "riscv64", "386")
