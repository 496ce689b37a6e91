"""Kubernetes resource quantities ("100m", "64Mi", "1.5", 2) as numbers."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

_SUFFIX = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
FORMAT_WRONG = ("quantities must match the regular expression "
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
"""Upstream resource.ErrFormatWrong: what ParseQuantity says of text that is no quantity."""

_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")


@lru_cache(maxsize=4096, typed=True)  # quantities repeat; Decimals are immutable; True is not 1
def parse_quantity(value: str | int | float) -> Decimal:
    """The quantity's value in base units; ValueError names what is wrong."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(f'"{value}" is not a quantity (examples: 100m, 0.5, 64Mi, 1G)')
    number, suffix = match.groups()
    try:
        return Decimal(number) * _SUFFIX[suffix or ""]
    except InvalidOperation as err:
        raise ValueError(f'"{value}" is not a quantity') from err


def milli_cpu(value: str | int | float) -> int:
    return int(parse_quantity(value) * 1000)


def bytes_of(value: str | int | float) -> int:
    return int(parse_quantity(value))
