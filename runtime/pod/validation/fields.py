"""upstream's field.Error wording and the name rules of k8s.io/apimachinery/pkg/util/validation.

Every check of the package reports ``(path, cause)`` pairs built by the helpers here, worded
as upstream's field.ErrorList prints them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator
from decimal import Decimal
from functools import lru_cache

from runtime.pod.model import (
    Container,
    EphemeralContainer,
)
from runtime.pod.quantity import FORMAT_WRONG

"""A field path (``spec.containers[1].image``) and what is wrong with it."""

Problem = tuple[str, str]
"""A field path (``spec.containers[1].image``) and what is wrong with it."""

AnyContainer = Container | EphemeralContainer

# --- upstream's field.Error wording --------------------------------------------------------


class Raw(str):
    """A value upstream prints bare: a Go Stringer (a Quantity) or a Go value dump."""


def _show(value: object) -> str:
    """A value as upstream's field errors print it: strings quoted, numbers bare."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return str(value)
    if value is None:
        return "null"
    return go_quote(str(value))


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def go_quote(text: str) -> str:
    """Go's strconv.Quote (the %q upstream's field errors print a string with): printable
    characters as they are (Go's IsPrint is Python's isprintable), the C escapes, other
    control characters as \\x.., any other unprintable one as \\u.... or \\U........"""
    out = ['"']
    for char in text:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif char < " " or char == "\x7f":
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


def required(path: str, detail: str = "") -> Problem:
    return path, f"Required value: {detail}" if detail else "Required value"


def invalid(path: str, value: object, detail: str) -> Problem:
    return path, f"Invalid value: {_show(value)}: {detail}"


def duplicate(path: str, value: object) -> Problem:
    return path, f"Duplicate value: {_show(value)}"


def not_supported(path: str, value: object, supported: Iterable[str]) -> Problem:
    values = ", ".join(_show(s) for s in supported)
    return path, f"Unsupported value: {_show(value)}: supported values: {values}"


def forbidden(path: str, detail: str) -> Problem:
    return path, f"Forbidden: {detail}"


def not_found(path: str, value: object) -> Problem:
    return path, f"Not found: {_show(value)}"


def too_long(path: str, limit: int) -> Problem:
    """upstream field.TooLong: the value itself is not shown."""
    return path, f"Too long: may not be more than {limit} bytes"


# --- names (k8s.io/apimachinery/pkg/util/validation) ---------------------------------------

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL)
_SUBDOMAIN = rf"{_LABEL}(\.{_LABEL})*"
_DNS1123_SUBDOMAIN = re.compile(_SUBDOMAIN)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{_LABEL}')"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    f"regex used for validation is '{_SUBDOMAIN}')"
)
_QUALIFIED = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME = re.compile(_QUALIFIED)
_QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    f"used for validation is '{_QUALIFIED}')"
)
_LABEL_VALUE = re.compile(rf"({_QUALIFIED})?")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '({_QUALIFIED})?')"
)
_UNDERSCORE_LABEL = r"_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_UNDERSCORE = rf"{_UNDERSCORE_LABEL}(\.{_UNDERSCORE_LABEL})*"
_SUBDOMAIN_UNDERSCORE_RE = re.compile(_SUBDOMAIN_UNDERSCORE)
_SUBDOMAIN_UNDERSCORE_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    f"regex used for validation is '{_SUBDOMAIN_UNDERSCORE}')"
)
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)
IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_SLOPPY_IPV4 = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)")
_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+")
_ENV_NAME_MSG = (
    "a valid environment variable name must consist only of printable ASCII characters "
    "other than '='"
)
_ENV_NAME_BAD = re.compile(r"[^\x20-\x7e]|=")  # not printable ASCII, or '='
_HEADER = re.compile(r"[-A-Za-z0-9]+")
_HEADER_MSG = (
    "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. "
    "'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')"
)
_SYSCTL = r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_NAME = re.compile(_SYSCTL)
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_ID_RANGE = "must be between 0 and 2147483647, inclusive"
_NON_NEGATIVE = "must be greater than or equal to 0"
_PLAIN_INIT = "may not be set for init containers without restartPolicy=Always"
_QUANTITY_MSG = FORMAT_WRONG


def _field_ref_missing(api_version: str, field_path: str, path: str) -> Problem | None:
    """upstream's validateObjectFieldSelector starts with its two required parts: the
    first one missing is the only problem reported (env and downwardAPI volume alike)."""
    if not api_version:
        return required(f"{path}.apiVersion")
    if not field_path:
        return required(f"{path}.fieldPath")
    return None
_MAX_INT32 = 2**31 - 1


@lru_cache(maxsize=4096)  # names repeat across a pod's containers
def label_faults(value: str) -> tuple[str, ...]:
    """upstream IsDNS1123Label (container, volume, namespace names): every cause, as upstream
    reports each as its own error, the length (in bytes, as Go counts) and the form apart."""
    why: list[str] = []
    if len(value.encode()) > 63:
        why.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.fullmatch(value):
        # a subdomain of the right length can only have failed on its dots
        why.append("must not contain dots" if _DNS1123_SUBDOMAIN.fullmatch(value)
                   else _LABEL_MSG)
    return tuple(why)


@lru_cache(maxsize=4096)  # names repeat across a pod's containers
def subdomain_faults(value: str) -> tuple[str, ...]:
    """upstream IsDNS1123Subdomain (pod names): every cause, the length and the form apart."""
    why: list[str] = []
    if len(value.encode()) > 253:
        why.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        why.append(_SUBDOMAIN_MSG)
    return tuple(why)


def dns1123_label(value: str) -> str | None:
    """The first reason ``value`` is not a DNS-1123 label, or None: for a caller that reports
    one cause (flags, the static pod's file name); a pod's fields report them all."""
    return next(iter(label_faults(value)), None)


def dns1123_subdomain(value: str) -> str | None:
    """The first reason ``value`` is not a DNS-1123 subdomain, or None (see dns1123_label)."""
    return next(iter(subdomain_faults(value)), None)


def dns1123_subdomain_with_underscore(value: str) -> tuple[str, ...]:
    """upstream IsDNS1123SubdomainWithUnderscore (relaxed DNS search domains)."""
    why: list[str] = []
    if len(value.encode()) > 253:
        why.append("must be no more than 253 characters")
    if not _SUBDOMAIN_UNDERSCORE_RE.fullmatch(value):
        why.append(_SUBDOMAIN_UNDERSCORE_MSG)
    return tuple(why)


def name_is_dns_subdomain(name: str, *, prefix: bool = False) -> tuple[str, ...]:
    """upstream NameIsDNSSubdomain: a prefix (generateName, envFrom's names) may end in '-',
    since characters are appended to it."""
    if prefix and len(name) > 1 and name.endswith("-"):
        name = name[:-1] + "a"
    return subdomain_faults(name)


def config_map_key(value: str) -> tuple[str, ...]:
    """upstream IsConfigMapKey: a key of a ConfigMap or Secret."""
    why: list[str] = []
    if len(value.encode()) > 253:
        why.append("must be no more than 253 characters")
    if not _CONFIG_KEY.fullmatch(value):
        why.append(_CONFIG_KEY_MSG)
    if value == ".":
        why.append("must not be '.'")
    elif value == "..":
        why.append("must not be '..'")
    elif value.startswith(".."):
        why.append("must not start with '..'")
    return tuple(why)


def label_value(value: str) -> tuple[str, ...]:
    """upstream IsValidLabelValue."""
    why: list[str] = []
    if len(value.encode()) > 63:
        why.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        why.append(_LABEL_VALUE_MSG)
    return tuple(why)


def valid_ip(value: str) -> bool:
    """upstream IsValidIP's netutils.ParseIPSloppy: Go's net.ParseIP of old, which reads an
    IPv4 field with leading zeros as decimal and knows no IPv6 zone."""
    if "%" in value:
        return False
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        match = _SLOPPY_IPV4.fullmatch(value)
        return match is not None and all(int(f) <= 255 for f in match.groups())


@lru_cache(maxsize=4096)
def _port_name(name: str) -> tuple[str, ...]:
    """upstream IsValidPortName: an IANA service name."""
    why: list[str] = []
    if len(name.encode()) > 15:
        why.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.fullmatch(name):
        why.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        why.append("must contain at least one letter (a-z)")
    if "--" in name:
        why.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        why.append("must not begin or end with a hyphen")
    return tuple(why)


@lru_cache(maxsize=4096)
def _qualified_name(value: str) -> tuple[str, ...]:
    """upstream IsQualifiedName: ``[prefix/]name`` (label keys, resource names)."""
    parts = value.split("/")
    if len(parts) > 2:
        return ("a qualified name " + _QUALIFIED_MSG.removeprefix("name part ")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",)
    name = parts[-1]
    why: list[str] = []
    if len(parts) == 2:
        if not parts[0]:
            why.append("prefix part must be non-empty")
        else:
            why += [f"prefix part {w}" for w in subdomain_faults(parts[0])]
    if not name:
        why.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        why.append("name part must be no more than 63 characters")
    # upstream checks the form whatever the length said: an empty name fails both
    if not _QUALIFIED_NAME.fullmatch(name):
        why.append(_QUALIFIED_MSG)
    return tuple(why)



# --- paths ---------------------------------------------------------------------------------

def _descending_path(value: str, path: str) -> Iterator[Problem]:
    if value.startswith("/"):
        yield invalid(path, value, "must be a relative path")
    yield from _no_backsteps(value, path)


def _no_backsteps(value: str, path: str) -> Iterator[Problem]:
    """upstream validatePathNoBacksteps: filepath.ToSlash on a Linux API server leaves a
    backslash alone, so only '/' separates the parts."""
    if ".." in value.split("/"):
        yield invalid(path, value, "must not contain '..'")
