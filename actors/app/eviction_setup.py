"""Wires the eviction manager into the daemon: who talks to it (its flags are
actors.app.config.eviction's)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import msgspec
from loguru import logger

from actors.kubelet import names
from runtime.eviction.parse import add_allocatable_thresholds

if TYPE_CHECKING:
    from actors.app.config.flags import KubeletFlags
    from actors.kubelet.eviction import EvictionSettings
    from actors.kubelet.stats_collector import StatsParts
    from actors.kubelet.sync_loop import SyncLoopSettings


def wire_eviction(flags: KubeletFlags, stats: StatsParts | None, sync: SyncLoopSettings,
                  cluster: bool) -> tuple[EvictionSettings | None, StatsParts | None,
                                          SyncLoopSettings]:
    """The eviction actor's settings (None: off), and the stats parts and sync loop
    settings that feed it."""
    config = flags.eviction
    if flags.cgroups_per_qos and "pods" in flags.enforce_node_allocatable:
        # Upstream's kubelet passes enforceNodeAllocatable to ParseThresholdConfig.
        config = add_allocatable_thresholds(config)
    if not config.thresholds and not config.local_storage_capacity_isolation:
        return None, stats, sync
    if stats is None:
        logger.warning("eviction is off: it needs stats collection "
                       "(--stats-collection-period is 0)")
        return None, stats, sync
    # The actor's module, here rather than at the top: reading the flags (which add the
    # eviction flags from this module) loads no actor (see tests/unit/app/test_start_cost).
    from actors.kubelet.eviction import EvictionSettings

    notify = (names.SYNC_LOOP, names.NODE_STATUS) if cluster else (names.SYNC_LOOP,)
    # Disk pressure: the garbage collector reclaims first (it always runs in the daemon).
    settings = EvictionSettings(config, notify, reclaim=names.GC)
    logger.info("eviction thresholds: {}; local storage limits {}",
                ", ".join(t.describe() for t in config.thresholds) or "none",
                "enforced" if config.local_storage_capacity_isolation else "not enforced")
    return (settings, msgspec.structs.replace(stats, eviction=True),
            dataclasses.replace(sync, eviction=True))
