"""Go-style durations, as upstream's flags and KubeletConfiguration write them."""

from __future__ import annotations

import argparse


def parse_duration(text: str) -> float:
    """Go-style durations as upstream's flags take them: 90s, 2m, 1m30s, 500ms, or seconds;
    signed as Go's are (-1s), so that the checks, not the parser, refuse a negative one."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    if not text.strip():
        raise argparse.ArgumentTypeError('"" is not a duration (examples: 90s, 2m)')
    try:
        return float(text)
    except ValueError:
        pass
    sign, i = (-1.0 if text[0] == "-" else 1.0), (1 if text[0] in "+-" else 0)
    total, number = 0.0, ""
    while i < len(text):
        ch = text[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = "ms" if text.startswith("ms", i) else ch
        if unit not in units or not number:
            raise argparse.ArgumentTypeError(f'"{text}" is not a duration (examples: 90s, 2m)')
        total += float(number) * units[unit]
        number = ""
        i += len(unit)
    if number or text in ("+", "-"):
        raise argparse.ArgumentTypeError(f'"{text}" is not a duration (examples: 90s, 2m)')
    return sign * total
