"""The value types of KubeletConfiguration's fields, as upstream's decoder takes them: each
converter returns the field's value as this kubelet keeps it, or raises TypeError (the
YAML value has the wrong type) or ValueError (the right type, a value out of its rule)."""

from __future__ import annotations

import argparse
from typing import Any

from actors.app.config.durations import parse_duration


def string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    return value


def pids_limit(value: Any) -> int:
    """podPidsLimit: an int64 upstream's defaulting turns to -1 when negative."""
    return max(integer(value), -1)


def number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return float(value)


def duration(value: Any) -> float:
    """A metav1.Duration (``20s``, ``1m0s``), in seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise TypeError("expected a duration string such as 20s or 1m0s, got a number")
    try:
        return parse_duration(string(value))
    except argparse.ArgumentTypeError as err:
        raise ValueError(str(err)) from err


def time_or_duration(value: Any) -> float:
    """component-base's TimeOrMetaDuration (logging.flushFrequency): a duration string or
    a number of nanoseconds, in seconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value / 1e9
    return duration(value)


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {type(value).__name__}")
    return value


def strings(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    return value


def any_list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return value


def any_map(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"expected a map, got {type(value).__name__}")
    return value


def quantity_text(value: Any) -> str:
    """A resource.Quantity as written (``"0"``, ``64Ki``); YAML may give a bare number."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return string(value)
