"""The node's allocatable resources as upstream's kubelet computes them with no
reservations: capacity less the default hard eviction thresholds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.errors import ConfigError
from runtime.machine import machine_allocatable, machine_arch, mem_total

MEMINFO = "MemTotal:        4030756 kB\nMemFree:          123456 kB\n"


def test_allocatable_is_capacity_less_eviction_thresholds(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO)
    allocatable = machine_allocatable(str(tmp_path / "not" / "yet"), 42, str(meminfo))
    assert allocatable["cpu"] == str(os.cpu_count())
    assert allocatable["memory"] == str(4030756 * 1024 - 100 * 1024 * 1024)
    stat = os.statvfs(tmp_path)
    disk = stat.f_blocks * stat.f_frsize
    assert allocatable["ephemeral-storage"] == str(disk - int(disk * 0.1))
    assert allocatable["pods"] == "42"


def test_mem_total_of_this_machine_and_a_broken_file(tmp_path: Path) -> None:
    assert mem_total() > 0
    broken = tmp_path / "meminfo"
    broken.write_text("MemFree: 1 kB\n")
    with pytest.raises(ConfigError, match="no MemTotal line"):
        mem_total(str(broken))


def test_arch_is_named_as_go_names_it() -> None:
    assert machine_arch() in ("amd64", "arm64", "arm", "ppc64le", "s390x", "riscv64", "386")
