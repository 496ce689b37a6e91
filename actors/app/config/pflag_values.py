"""pflag's value types, as upstream's kubelet declares its flags (Int32Var, DurationVar,
StringSliceVar, component-base's MapStringString, the kubelet's IPVar, ...): each a
``FlagType`` with the name pflag's help shows (its Value's Type()) and the reading its Set
does, refusing a value with the Set's own error words; ``FlagParser`` puts pflag's
``invalid argument "x" for "--flag" flag: `` in front.

A map or list flag keeps the text (or list) as typed after its syntax is checked: the
flag's own parser (eviction, node labels, feature gates) reads it as it reads the
KubeletConfiguration file's value, with its checks in upstream's words.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.app.config.durations import parse_duration
from actors.app.config.gostrconv import NumError, parse_bool, parse_int, parse_uint

VERBOSITY_BITS = 31
"""component-base's verbosity: strconv.ParseUint(text, 10, 31), to fit klog's int32."""


@dataclass(frozen=True)
class FlagType:
    """A pflag Value: ``name`` is its Type() (the help's metavar), ``parse`` its Set, raising
    ``argparse.ArgumentTypeError`` with the Set's error."""

    name: str
    parse: Callable[[str], Any]
    # Set called again adds to the value instead of replacing it (pflag's StringSlice,
    # component-base's MapStringString and MapStringBool): the first Set replaces the
    # default, every later one adds its entries.
    accumulates: bool = False

    def __call__(self, text: str) -> Any:
        return self.parse(text)


def _csv_fields(text: str) -> list[str]:
    """pflag's stringSlice: the value read as one line of CSV (encoding/csv's Reader), its
    errors in Go's words; ``""`` is no element."""
    if not text:
        return []
    fields: list[str] = []
    i, size = 0, len(text)
    while True:
        column = len(text[:i].encode()) + 1  # Go counts columns in bytes, from 1
        if text[i:i + 1] != '"':
            end = text.find(",", i)
            field = text[i:] if end < 0 else text[i:end]
            if (quote := field.find('"')) >= 0:
                raise _csv_error(column + len(field[:quote].encode()),
                                 'bare " in non-quoted-field')
            fields.append(field)
        else:
            value, i = "", i + 1
            while True:
                quote = text.find('"', i)
                if quote < 0:
                    raise _csv_error(len(text.encode()) + 1, 'extraneous or missing " in '
                                     "quoted-field")
                value += text[i:quote]
                if text[quote + 1:quote + 2] == '"':  # "" is a quote inside
                    value, i = value + '"', quote + 2
                    continue
                end = quote + 1
                if end < size and text[end] != ",":
                    raise _csv_error(len(text[:quote].encode()) + 1, 'extraneous or missing " '
                                     "in quoted-field")
                break
            fields.append(value)
        if end < 0 or end >= size:
            return fields
        i = end + 1
        if i == size:
            return [*fields, ""]


def _csv_error(column: int, why: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"parse error on line 1, column {column}: {why}")


def _map_checked(separator: str, value_kind: str = "string") -> Callable[[str], str]:
    """component-base's MapStringString (``=``) and LangleSeparatedMapStringString (``<``):
    comma-separated pairs; the text is returned as typed."""

    def check(text: str) -> str:
        for pair in text.split(","):
            if separator == "=":
                pair = pair.strip()
            if pair and separator not in pair:
                raise argparse.ArgumentTypeError(
                    f"malformed pair, expect string{separator}{value_kind}")
        return text

    return check


def _map_string_bool(text: str) -> str:
    """component-base's MapStringBool (``--feature-gates``): ``Gate=true,...``."""
    for pair in text.split(","):
        if not pair:
            continue
        key, equals, value = pair.partition("=")
        if not equals:
            raise argparse.ArgumentTypeError("malformed pair, expect string=bool")
        try:
            parse_bool(value.strip())
        except NumError as err:
            raise argparse.ArgumentTypeError(
                f"invalid value of {key.strip()}: {value.strip()}, err: {err}") from None
    return text


_LEADING_ZEROS = re.compile(r"(?<![\d.])0+(?=\d)")


def _ip(text: str) -> str:
    """The kubelet's IPVar (``--address``): empty, or an IP address as netutils'
    ParseIPSloppy reads it (IPv4 parts may have leading zeros; no IPv6 zone)."""
    if text:
        try:
            if "%" in text:
                raise ValueError(text)
            ipaddress.ip_address(_LEADING_ZEROS.sub("", text) if "." in text else text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'"{text}" is not a valid IP address') from None
    return text


def parse_vmodule(text: str) -> tuple[tuple[str, int], ...]:
    """component-base's VModuleConfiguration (``--vmodule pattern=N,...``), as klog keeps
    it: a pattern at verbosity 0 is dropped (klog: "harmless but no point")."""
    patterns: list[tuple[str, int]] = []
    for item in filter(None, text.split(",")):
        pattern, *levels = item.split("=")
        if len(levels) != 1 or not pattern or not levels[0]:
            raise argparse.ArgumentTypeError(
                f'"{item}" does not have the pattern=N format')
        try:
            verbosity = parse_uint(levels[0], VERBOSITY_BITS)
        except NumError as err:
            raise argparse.ArgumentTypeError(
                f'parsing verbosity in "{item}": {err}') from None
        if verbosity:
            patterns.append((pattern, verbosity))
    return tuple(patterns)


STRING = FlagType("string", str)
BOOL = FlagType("bool", parse_bool)
INT = FlagType("int", lambda text: parse_int(text, 64))
INT32 = FlagType("int32", lambda text: parse_int(text, 32))
LEVEL = FlagType("Level", lambda text: parse_uint(text, VERBOSITY_BITS))
DURATION = FlagType("duration", parse_duration)
IP = FlagType("ip", _ip)
STRINGS = FlagType("strings", _csv_fields, accumulates=True)
MAP_STRING_STRING = FlagType("mapStringString", _map_checked("="), accumulates=True)
LANGLE_MAP_STRING_STRING = FlagType("mapStringString", _map_checked("<"), accumulates=True)
MAP_STRING_BOOL = FlagType("mapStringBool", _map_string_bool, accumulates=True)
VMODULE = FlagType("pattern=N,...", parse_vmodule)
UPPER_STRING = FlagType("string", str.upper)
"""A string read case-blind (this project's --log-level, whose choices are upper case)."""
