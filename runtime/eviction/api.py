"""Eviction signals, thresholds and quantities (upstream's pkg/kubelet/eviction/api).

A threshold is ``<signal> < <value>``: the value a quantity (``100Mi``) or a percentage of
the signal's capacity (``10%``). A threshold with a grace period is soft; without, hard.
Amounts are integers in the signal's unit (bytes, inodes, process IDs).
"""

from __future__ import annotations

import struct
from decimal import Decimal
from typing import Final

from msgspec import Struct

from runtime.pod.quantity import canonical

MEMORY_AVAILABLE: Final = "memory.available"
ALLOCATABLE_MEMORY_AVAILABLE: Final = "allocatableMemory.available"
NODEFS_AVAILABLE: Final = "nodefs.available"
NODEFS_INODES_FREE: Final = "nodefs.inodesFree"
IMAGEFS_AVAILABLE: Final = "imagefs.available"
IMAGEFS_INODES_FREE: Final = "imagefs.inodesFree"
CONTAINERFS_AVAILABLE: Final = "containerfs.available"
CONTAINERFS_INODES_FREE: Final = "containerfs.inodesFree"
PID_AVAILABLE: Final = "pid.available"

# Resources a signal starves (signalToResource); inodes and pids are the module's own.
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
INODES: Final = "inodes"
PIDS: Final = "pids"

SIGNAL_RESOURCE: Final[dict[str, str]] = {
    MEMORY_AVAILABLE: MEMORY,
    ALLOCATABLE_MEMORY_AVAILABLE: MEMORY,
    IMAGEFS_AVAILABLE: EPHEMERAL_STORAGE,
    IMAGEFS_INODES_FREE: INODES,
    CONTAINERFS_AVAILABLE: EPHEMERAL_STORAGE,
    CONTAINERFS_INODES_FREE: INODES,
    NODEFS_AVAILABLE: EPHEMERAL_STORAGE,
    NODEFS_INODES_FREE: INODES,
    PID_AVAILABLE: PIDS,
}
"""Every signal upstream knows (validSignal), and the resource it reclaims."""

MEMORY_PRESSURE: Final = "MemoryPressure"
DISK_PRESSURE: Final = "DiskPressure"
PID_PRESSURE: Final = "PIDPressure"
CONDITIONS: Final = (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE)
"""The node conditions eviction reports, in the order the node status lists them."""

SIGNAL_CONDITION: Final[dict[str, str]] = {
    MEMORY_AVAILABLE: MEMORY_PRESSURE,
    ALLOCATABLE_MEMORY_AVAILABLE: MEMORY_PRESSURE,
    IMAGEFS_AVAILABLE: DISK_PRESSURE,
    CONTAINERFS_AVAILABLE: DISK_PRESSURE,
    NODEFS_AVAILABLE: DISK_PRESSURE,
    IMAGEFS_INODES_FREE: DISK_PRESSURE,
    NODEFS_INODES_FREE: DISK_PRESSURE,
    CONTAINERFS_INODES_FREE: DISK_PRESSURE,
    PID_AVAILABLE: PID_PRESSURE,
}

DECIMAL_SIGNALS: Final = frozenset({NODEFS_INODES_FREE, IMAGEFS_INODES_FREE,
                                    CONTAINERFS_INODES_FREE, PID_AVAILABLE})
"""Signals counted in units (upstream's DecimalSI quantities), not bytes."""

DEFAULT_EVICTION_HARD: Final[dict[str, str]] = {
    MEMORY_AVAILABLE: "100Mi",
    NODEFS_AVAILABLE: "10%",
    NODEFS_INODES_FREE: "5%",
    IMAGEFS_AVAILABLE: "15%",
}
"""KubeletConfiguration evictionHard's default (Linux)."""
DEFAULT_PRESSURE_TRANSITION_PERIOD: Final = 300.0
"""--eviction-pressure-transition-period's default (5m)."""
MONITORING_INTERVAL: Final = 10.0
"""How often upstream's eviction manager synchronizes (evictionMonitoringPeriod)."""
IMMEDIATE_GRACE_PERIOD: Final = 1
"""immediateEvictionGracePeriodSeconds: the grace of a pod evicted for a hard threshold."""
CRITICAL_PRIORITY: Final = 2_000_000_000
"""scheduling.SystemCriticalPriority: pods at or above it are critical."""


def float32(value: float) -> float:
    """``value`` rounded to a Go float32 (upstream keeps percentages as float32)."""
    rounded: float = struct.unpack("f", struct.pack("f", value))[0]
    return rounded


class Quantity(Struct, frozen=True):
    """An integer amount and how Go prints it (BinarySI ``Mi`` or DecimalSI ``k``)."""

    value: int
    binary: bool = True

    def __str__(self) -> str:
        return format_quantity(self.value, self.binary)


def format_quantity(value: int, binary: bool = True) -> str:
    """An integer quantity in Go's canonical form: ``100Mi``, ``1536``, ``5k``, ``0``
    (runtime.pod.quantity.canonical: BinarySI takes the largest power of 1024 that divides
    the value, and below 1024 prints as DecimalSI does; DecimalSI the largest power of
    1000)."""
    return canonical(Decimal(value), binary=binary)


class ThresholdValue(Struct, frozen=True):
    """A quantity, or a percentage (a fraction, as float32) of the signal's capacity."""

    quantity: Quantity | None = None
    percentage: float = 0.0

    def amount(self, capacity: int) -> Quantity:
        """GetThresholdQuantity: the quantity, or the percentage of ``capacity``."""
        if self.quantity is not None:
            return self.quantity
        return Quantity(int(float(capacity) * self.percentage), True)

    def __str__(self) -> str:
        if self.quantity is not None:
            return str(self.quantity)
        return f"{self.percentage * 100:.6g}%"  # a float32's digits


class Threshold(Struct, frozen=True):
    """``signal < value``, met for ``grace_period`` seconds before it counts (0: hard)."""

    signal: str
    value: ThresholdValue
    grace_period: float = 0.0
    min_reclaim: ThresholdValue | None = None

    @property
    def hard(self) -> bool:
        return self.grace_period == 0

    def describe(self) -> str:
        return f"{self.signal}<{self.value}" + (
            f" for {self.grace_period:g}s" if self.grace_period else "")


class EvictionConfig(Struct, frozen=True):
    """The eviction manager's settings (upstream's eviction.Config)."""

    thresholds: tuple[Threshold, ...] = ()
    pressure_transition_period: float = DEFAULT_PRESSURE_TRANSITION_PERIOD
    max_pod_grace_period: int = 0
    monitoring_interval: float = MONITORING_INTERVAL
    # --local-storage-capacity-isolation: evict pods over their local storage limits
    # (emptyDir sizeLimit, ephemeral-storage limits), with or without thresholds.
    local_storage_capacity_isolation: bool = True
