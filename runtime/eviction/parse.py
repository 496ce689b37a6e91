"""The eviction flags as upstream's ParseThresholdConfig reads them, with its messages.

``--eviction-hard`` and ``--eviction-soft`` are ``signal<value`` lists
(``memory.available<100Mi,nodefs.available<10%``); ``--eviction-soft-grace-period`` and
``--eviction-minimum-reclaim`` are ``signal=value`` lists. The config file gives the same
as maps. Every error is a ConfigError naming the flag.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from runtime.cm.node_allocatable import EvictionReserve
from runtime.errors import ConfigError
from runtime.eviction.api import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    DECIMAL_SIGNALS,
    DEFAULT_PRESSURE_TRANSITION_PERIOD,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    SIGNAL_RESOURCE,
    EvictionConfig,
    Quantity,
    Threshold,
    ThresholdValue,
    float32,
)
from runtime.pod.quantity import parse_quantity

_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")

CONFIG_FIELD = {
    "--eviction-hard": "evictionHard",
    "--eviction-soft": "evictionSoft",
    "--eviction-soft-grace-period": "evictionSoftGracePeriod",
    "--eviction-minimum-reclaim": "evictionMinimumReclaim",
    "--eviction-pressure-transition-period": "evictionPressureTransitionPeriod",
}
"""Each eviction flag's KubeletConfiguration field: errors carry it, so the app can say
whether the flag or the --config file set the value."""


def _error(flag: str, rule: str) -> ConfigError:
    return ConfigError(f"{flag}: {rule}", field=CONFIG_FIELD.get(flag, ""), rule=rule)


def parse_map(text: str, separator: str, flag: str) -> dict[str, str]:
    """``k<v,k2<v2`` (upstream's LangleSeparatedMapStringString) or ``k=v,k2=v2``."""
    out: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = pair.partition(separator)
        if not sep:
            rule = f'"{text}": malformed pair "{pair}", expect string{separator}string'
            raise ConfigError(f"{flag} {rule}", field=CONFIG_FIELD.get(flag, ""), rule=rule)
        out[key.strip()] = value.strip()
    return out


def _unsupported(signal: str) -> str:
    return f"unsupported eviction signal {signal}"


def _percentage(text: str) -> float:
    """parsePercentage: ``10%`` -> 0.1 (a float32, as upstream)."""
    try:
        return float32(float32(float(text.rstrip("%"))) / 100)
    except ValueError as err:
        raise ValueError(f'strconv.ParseFloat: parsing "{text.rstrip("%")}": invalid syntax'
                         ) from err


def _quantity(signal: str, text: str) -> Quantity:
    try:
        amount = parse_quantity(text)
    except ValueError as err:
        raise ValueError("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'") from err
    binary = text.strip().endswith(_BINARY_SUFFIXES) and signal not in DECIMAL_SIGNALS
    return Quantity(int(amount), binary)


def parse_threshold(signal: str, text: str) -> Threshold | None:
    """parseThresholdStatement: None for 0% and 100% (ignored, as upstream)."""
    if signal not in SIGNAL_RESOURCE:
        raise ValueError(_unsupported(signal))
    if text.endswith("%"):
        if text in ("0%", "100%"):
            return None
        percentage = _percentage(text)
        if percentage < 0:
            raise ValueError(f"eviction percentage threshold {signal} must be >= 0%: {text}")
        if percentage > 1:
            raise ValueError(f"eviction percentage threshold {signal} must be <= 100%: {text}")
        return Threshold(signal, ThresholdValue(percentage=percentage))
    quantity = _quantity(signal, text)
    if quantity.value <= 0:
        raise ValueError(f"eviction threshold {signal} must be positive: {quantity}")
    return Threshold(signal, ThresholdValue(quantity))


def _min_reclaim(signal: str, text: str) -> ThresholdValue:
    if signal not in SIGNAL_RESOURCE:
        raise ValueError(_unsupported(signal))
    if text.endswith("%"):
        percentage = _percentage(text)
        if percentage <= 0:
            raise ValueError(f"eviction percentage minimum reclaim {signal} must be positive: "
                             f"{text}")
        return ThresholdValue(percentage=percentage)
    quantity = _quantity(signal, text)
    if quantity.value < 0:
        raise ValueError(f"negative eviction minimum reclaim specified for {signal}")
    return ThresholdValue(quantity)


def _each(flag: str, statements: Mapping[str, str],
          parse: Callable[[str, str], object]) -> None:
    for signal, text in statements.items():
        try:
            parse(signal, text)
        except ValueError as err:
            raise _error(flag, str(err)) from err


def parse_threshold_config(
    hard: Mapping[str, str],
    soft: Mapping[str, str] | None = None,
    soft_grace_periods: Mapping[str, float] | None = None,
    minimum_reclaim: Mapping[str, str] | None = None,
    *,
    pressure_transition_period: float = DEFAULT_PRESSURE_TRANSITION_PERIOD,
    max_pod_grace_period: int = 0,
) -> EvictionConfig:
    """ParseThresholdConfig: hard thresholds, then soft ones (each needs a grace period),
    each with its minimum reclaim."""
    soft = soft or {}
    graces = dict(soft_grace_periods or {})
    reclaims = minimum_reclaim or {}
    _each("--eviction-hard", hard, parse_threshold)
    _each("--eviction-soft", soft, parse_threshold)
    for signal, seconds in graces.items():
        if signal not in SIGNAL_RESOURCE:
            raise _error("--eviction-soft-grace-period", _unsupported(signal))
        if seconds < 0:
            raise _error("--eviction-soft-grace-period", f"invalid eviction grace period "
                         f"specified: {seconds:g}s, must be a positive value")
    _each("--eviction-minimum-reclaim", reclaims, _min_reclaim)
    out: list[Threshold] = []
    for signal, text in hard.items():
        if (threshold := parse_threshold(signal, text)) is not None:
            out.append(threshold)
    for signal, text in soft.items():
        threshold = parse_threshold(signal, text)
        if threshold is None:
            continue
        if signal not in graces:
            raise _error("--eviction-soft-grace-period", f"grace period must be specified "
                         f"for the soft eviction threshold {signal}")
        out.append(Threshold(signal, threshold.value, graces[signal]))
    out = [Threshold(t.signal, t.value, t.grace_period,
                     _min_reclaim(t.signal, reclaims[t.signal]) if t.signal in reclaims
                     else None) for t in out]
    if pressure_transition_period < 0:
        raise _error("--eviction-pressure-transition-period",
                     f"{pressure_transition_period:g}s: must not be negative")
    return EvictionConfig(tuple(out), pressure_transition_period, max_pod_grace_period)


def add_allocatable_thresholds(config: EvictionConfig) -> EvictionConfig:
    """addAllocatableThresholds (ParseThresholdConfig with enforceNodeAllocatable "pods"):
    each hard memory.available threshold also watches allocatableMemory.available, the
    kubepods cgroup's memory left below its limit."""
    extra = tuple(Threshold(ALLOCATABLE_MEMORY_AVAILABLE, t.value, 0.0, t.min_reclaim)
                  for t in config.thresholds if t.signal == MEMORY_AVAILABLE and t.hard)
    if not extra:
        return config
    return EvictionConfig(config.thresholds + extra, config.pressure_transition_period,
                          config.max_pod_grace_period, config.monitoring_interval,
                          config.local_storage_capacity_isolation)


def hard_eviction_reserves(thresholds: tuple[Threshold, ...]) -> tuple[EvictionReserve, ...]:
    """What the hard thresholds hold back from allocatable (hardEvictionReservation):
    memory.available's of memory, nodefs.available's of ephemeral-storage; soft ones and
    the other signals none."""
    resource = {MEMORY_AVAILABLE: "memory", NODEFS_AVAILABLE: "ephemeral-storage"}
    return tuple(EvictionReserve(resource[t.signal],
                                 t.value.quantity.value if t.value.quantity is not None
                                 else None, t.value.percentage)
                 for t in thresholds if t.hard and t.signal in resource)
