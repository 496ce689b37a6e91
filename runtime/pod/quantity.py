"""Kubernetes resource quantities ("100m", "64Mi", "1.5", 2) as numbers."""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
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


# --- Go's Quantity.String() -----------------------------------------------------------------

_DECIMAL_SUFFIXES = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""),
                     (-3, "m"), (-6, "u"), (-9, "n"))
_BINARY_SUFFIXES = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


def canonical(q: Decimal, *, binary: bool, exponent: bool = False) -> str:
    """upstream Quantity.String (CanonicalizeBytes) of a quantity in base units: binary form
    (``binary``, as parsed from Ki..Ei or summed from such) with the largest suffix that
    divides it (below 1024, or fractional, it turns decimal), else decimal with the largest
    power of a thousand that leaves a whole number, written as a suffix or, for a quantity
    written with an exponent (``1e3``), as ``e<n>``; what is finer than 1n rounds up."""
    if q == 0:
        return "0"
    if binary and 1024 <= abs(q) < 2**70 and q == q.to_integral_value():
        whole = int(q)
        for bits, suffix in _BINARY_SUFFIXES:
            if whole % (1 << bits) == 0:
                return f"{whole >> bits}{suffix}"
        return str(whole)
    for power, suffix in _DECIMAL_SUFFIXES:
        scaled = q.scaleb(-power)
        if scaled == scaled.to_integral_value():
            # formatted, not int(): a fuzzed quantity may have thousands of digits
            return f"{scaled.to_integral_value():f}{_exponent(power) if exponent else suffix}"
    nanos = q.scaleb(9).to_integral_value(ROUND_CEILING)
    return f"{nanos:f}{_exponent(-9) if exponent else 'n'}"


def _exponent(power: int) -> str:
    return f"e{power}" if power else ""


def quantity_string(value: str | int | float) -> str:
    """A written quantity as upstream prints it once parsed (``1.5`` as ``1500m``, ``2048Ki``
    as ``2Mi``, ``1e3`` as ``1e3``), its format the one its suffix names; the text itself
    when it is no quantity."""
    try:
        q = parse_quantity(value)
    except ValueError:
        return str(value)
    text = str(value).strip()
    return canonical(q, binary=text.endswith("i"),
                     exponent=not isinstance(value, int) and bool(_EXPONENT.search(text)))


_EXPONENT = re.compile(r"[0-9.][eE][+-]?[0-9]+$")
