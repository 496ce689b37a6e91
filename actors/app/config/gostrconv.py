"""Go's strconv.ParseBool and ParseUint, as upstream's flags and feature gates read values,
with Go's error words (``strconv.ParseBool: parsing "x": invalid syntax``)."""

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


def parse_uint(text: str, bits: int) -> int:
    """Go's strconv.ParseUint(text, 10, bits): decimal digits only, no sign."""
    if not text or not text.isascii() or not text.isdigit():
        raise NumError("ParseUint", text, "invalid syntax")
    value = int(text)
    if value >= 1 << bits:
        raise NumError("ParseUint", text, "value out of range")
    return value
