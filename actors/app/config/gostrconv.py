"""Go's strconv.ParseBool, ParseUint and ParseInt, as upstream's flags and feature gates read
values, with Go's error words (``strconv.ParseBool: parsing "x": invalid syntax``)."""

from __future__ import annotations

import argparse

_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_FALSE = frozenset({"0", "f", "F", "false", "FALSE", "False"})


def go_quote(text: str) -> str:
    """``text`` as Go's %q writes it (strconv.Quote) for the text a flag is given."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c.isprintable() else c.encode("unicode_escape").decode()
                      for c in escaped)
    return f'"{escaped}"'


class NumError(argparse.ArgumentTypeError):
    """Go's *strconv.NumError: the function, the text and why (``invalid syntax`` or
    ``value out of range``), worded as its Error() is."""

    def __init__(self, func: str, text: str, why: str) -> None:
        super().__init__(f"strconv.{func}: parsing {go_quote(text)}: {why}")
        self.func, self.text, self.why = func, text, why


def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool: 1, t, T, TRUE, true, True and their false forms."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise NumError("ParseBool", text, "invalid syntax")


_PREFIXES = {"b": 2, "o": 8, "x": 16}


def _underscores_ok(text: str) -> bool:
    """Go's underscoreOK: with base 0, ``_`` only between digits (or after a base prefix)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    saw, hexadecimal, i = "^", False, 0
    if len(body) >= 2 and body[0] == "0" and body[1].lower() in _PREFIXES:
        saw, hexadecimal, i = "0", body[1].lower() == "x", 2
    for char in body[i:]:
        if char.isascii() and (char.isdigit() or (hexadecimal and char.lower() in "abcdef")):
            saw = "0"
        elif char == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def parse_int(text: str, bits: int) -> int:
    """Go's strconv.ParseInt(text, 0, bits), as pflag's int and int32 flags read theirs: a
    sign, then decimal, or 0x/0o/0b/0 prefixed, ``_`` between digits."""
    if not text:
        raise NumError("ParseInt", text, "invalid syntax")
    negative, digits = text[0] == "-", text[1:] if text[0] in "+-" else text
    if not digits:
        raise NumError("ParseInt", text, "invalid syntax")
    base = 10
    if digits[:1] == "0":
        if len(digits) >= 3 and digits[1].lower() in _PREFIXES:
            base, digits = _PREFIXES[digits[1].lower()], digits[2:]
        else:
            base, digits = 8, digits[1:]
    value = 0
    for char in digits:
        if char == "_":
            continue
        digit = int(char, 36) if char.isascii() and char.isalnum() else 99
        if digit >= base:
            raise NumError("ParseInt", text, "invalid syntax")
        value = value * base + digit
    if "_" in text and not _underscores_ok(text):
        raise NumError("ParseInt", text, "invalid syntax")
    cutoff = 1 << (bits - 1)
    if value > cutoff or (value == cutoff and not negative):
        raise NumError("ParseInt", text, "value out of range")
    return -value if negative else value


def parse_uint(text: str, bits: int) -> int:
    """Go's strconv.ParseUint(text, 10, bits): decimal digits only, no sign."""
    if not text or not text.isascii() or not text.isdigit():
        raise NumError("ParseUint", text, "invalid syntax")
    value = int(text)
    if value >= 1 << bits:
        raise NumError("ParseUint", text, "value out of range")
    return value
