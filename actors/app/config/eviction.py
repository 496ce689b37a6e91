"""The eviction manager's flags and KubeletConfiguration maps, checked as upstream's
ParseThresholdConfig checks them (actors.app.eviction_setup wires the manager).

The flags are upstream's: ``--eviction-hard`` (default ``memory.available<100Mi,
nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%``), ``--eviction-soft``
with ``--eviction-soft-grace-period``, ``--eviction-minimum-reclaim``,
``--eviction-max-pod-grace-period`` and ``--eviction-pressure-transition-period`` (5m), also
settable as the KubeletConfiguration fields evictionHard, evictionSoft, ... (maps there), and
``--local-storage-capacity-isolation`` (localStorageCapacityIsolation, default true): pods
over their emptyDir sizeLimit or ephemeral-storage limits are evicted, thresholds or none.
The manager decides on the stats actor's observations: with stats collection off
(``--stats-collection-period=0``) there is no eviction.
"""

from __future__ import annotations

import argparse
from typing import Any

import msgspec

from actors.app.config.durations import parse_duration
from actors.app.config.pflag import GoBool
from actors.app.config.pflag_values import (
    DURATION,
    INT32,
    LANGLE_MAP_STRING_STRING,
    MAP_STRING_STRING,
)
from runtime.errors import ConfigError
from runtime.eviction.api import (
    DEFAULT_EVICTION_HARD,
    DEFAULT_PRESSURE_TRANSITION_PERIOD,
    EvictionConfig,
)
from runtime.eviction.parse import parse_map, parse_threshold_config

DEFAULT_HARD_TEXT = ",".join(f"{k}<{v}" for k, v in DEFAULT_EVICTION_HARD.items())


def add_eviction_flags(add: Any) -> None:
    """The eviction flags, on build_parser's ``add``."""
    add("--eviction-hard", type=LANGLE_MAP_STRING_STRING, default=DEFAULT_HARD_TEXT,
        help='hard eviction thresholds, signal<value,... ("" for none)')
    add("--eviction-soft", type=LANGLE_MAP_STRING_STRING, default="",
        help="soft eviction thresholds, signal<value,...; each needs a grace period")
    add("--eviction-soft-grace-period", type=MAP_STRING_STRING, default="",
        help="how long a soft threshold must hold before pods are evicted, signal=duration,...")
    add("--eviction-minimum-reclaim", type=MAP_STRING_STRING, default="",
        help="how much more than a threshold eviction reclaims, signal=quantity,...")
    add("--eviction-max-pod-grace-period", type=INT32, default=0,
        help="the grace period, in seconds, of pods evicted for a soft threshold")
    add("--eviction-pressure-transition-period", type=DURATION,
        default=DEFAULT_PRESSURE_TRANSITION_PERIOD,
        help="how long a pressure condition stays after its threshold stops being met")
    add("--local-storage-capacity-isolation", action=GoBool, default=True,
        help="evict pods whose emptyDir or ephemeral-storage usage is over its limit")


def eviction_config(ns: argparse.Namespace) -> EvictionConfig:
    """The parsed flags' EvictionConfig (ParseThresholdConfig's checks and messages)."""
    graces: dict[str, float] = {}
    for signal, text in parse_map(ns.eviction_soft_grace_period, "=",
                                  "--eviction-soft-grace-period").items():
        try:
            graces[signal] = parse_duration(text)
        except argparse.ArgumentTypeError as err:
            raise ConfigError(f"--eviction-soft-grace-period: {err}",
                              field="evictionSoftGracePeriod", rule=str(err)) from err
    config = parse_threshold_config(
        parse_map(ns.eviction_hard, "<", "--eviction-hard"),
        parse_map(ns.eviction_soft, "<", "--eviction-soft"), graces,
        parse_map(ns.eviction_minimum_reclaim, "=", "--eviction-minimum-reclaim"),
        pressure_transition_period=ns.eviction_pressure_transition_period,
        max_pod_grace_period=ns.eviction_max_pod_grace_period)
    return msgspec.structs.replace(
        config, local_storage_capacity_isolation=ns.local_storage_capacity_isolation)


def _map_text(separator: str) -> Any:
    def convert(value: Any) -> str:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise TypeError("expected a map of eviction signals to strings")
        return ",".join(f"{k}{separator}{v}" for k, v in value.items())
    return convert


CONFIG_FIELDS: dict[str, tuple[str, Any]] = {
    "evictionHard": ("eviction_hard", _map_text("<")),
    "evictionSoft": ("eviction_soft", _map_text("<")),
    "evictionSoftGracePeriod": ("eviction_soft_grace_period", _map_text("=")),
    "evictionMinimumReclaim": ("eviction_minimum_reclaim", _map_text("=")),
}
"""The KubeletConfiguration maps, as the flags' text (the scalar fields are in FIELDS)."""
