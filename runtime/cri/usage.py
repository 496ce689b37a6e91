"""Resource usage samples as CRI v1 reports them (CpuUsage, MemoryUsage, NetworkUsage).

Shared by container stats (runtime.cri.types.ContainerStats) and pod sandbox stats
(runtime.cri.sandbox_stats). A value the runtime left out is None, not zero, so "not
measured" stays distinct from "measured zero" (upstream's ``*uint64``). Times are seconds
since the epoch.
"""

from __future__ import annotations

from msgspec import Struct


class CpuUsage(Struct, frozen=True):
    timestamp: float
    usage_core_nanoseconds: int | None = None
    usage_nano_cores: int | None = None


class MemoryUsage(Struct, frozen=True):
    timestamp: float
    working_set_bytes: int | None = None
    available_bytes: int | None = None
    usage_bytes: int | None = None
    rss_bytes: int | None = None
    page_faults: int | None = None
    major_page_faults: int | None = None


class InterfaceUsage(Struct, frozen=True):
    name: str
    rx_bytes: int | None = None
    rx_errors: int | None = None
    tx_bytes: int | None = None
    tx_errors: int | None = None


class NetworkUsage(Struct, frozen=True):
    timestamp: float
    default_interface: InterfaceUsage | None = None
    interfaces: tuple[InterfaceUsage, ...] = ()
