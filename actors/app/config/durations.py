"""Go's durations (time.ParseDuration), as upstream's duration flags and KubeletConfiguration
(metav1.Duration) read them, with Go's error words (``time: unknown unit "x" in duration
"5x"``): a number and a unit each part (``90s``, ``1m30s``, ``1.5h``, ``500ms``), signed, and
``0`` alone needs no unit."""

from __future__ import annotations

import argparse

_NANOS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6,
          "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
"""Go's unitMap: each unit in nanoseconds (µs in both of its code points)."""
_MAX = 1 << 63
"""A Duration is an int64 of nanoseconds."""


def time_quote(text: str) -> str:
    """``text`` as Go's time package quotes it in its errors: a byte that is not printable
    ASCII as ``\\xHH``, quotes and backslashes escaped."""
    out: list[str] = []
    for char in text:
        if char < " " or char > "~":
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
        else:
            out.append("\\" + char if char in '"\\' else char)
    return '"' + "".join(out) + '"'


def _invalid(text: str, why: str = "invalid duration") -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"time: {why} {time_quote(text)}")


def _digits(text: str) -> str:
    end = 0
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    return text[:end]


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration(text), in seconds; refused in Go's words (as an
    ArgumentTypeError, which argparse and the config file's loader report)."""
    rest, negative = text, False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise _invalid(text)
    total = 0
    while rest:
        if not (rest[0] == "." or "0" <= rest[0] <= "9"):
            raise _invalid(text)
        whole = _digits(rest)
        rest = rest[len(whole):]
        fraction = ""
        if rest[:1] == ".":
            fraction = _digits(rest[1:])
            rest = rest[1 + len(fraction):]
            if not whole and not fraction:
                raise _invalid(text)
        value = int(whole or "0")
        if value > _MAX:  # Go's leadingInt overflows
            raise _invalid(text)
        end = 0
        while end < len(rest) and not (rest[end] == "." or "0" <= rest[end] <= "9"):
            end += 1
        if end == 0:
            raise _invalid(text, "missing unit in duration")
        unit, rest = rest[:end], rest[end:]
        if unit not in _NANOS:
            raise argparse.ArgumentTypeError(
                f"time: unknown unit {time_quote(unit)} in duration {time_quote(text)}")
        nanos = _NANOS[unit]
        if value > _MAX // nanos:
            raise _invalid(text)
        value *= nanos
        if fraction:
            # Go: float64 for the fraction, nanosecond-accurate up to hours
            value += int(int(fraction[:18]) * (nanos / 10 ** len(fraction[:18])))
            if value > _MAX:
                raise _invalid(text)
        total += value
        if total > _MAX:
            raise _invalid(text)
    if not negative and total > _MAX - 1:
        raise _invalid(text)
    return (-total if negative else total) / 1e9
