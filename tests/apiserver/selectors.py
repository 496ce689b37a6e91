"""Label and field selectors, parsed and matched as k8s.io/apimachinery does.

Labels: ``k``, ``!k``, ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``,
``k>n``, ``k<n``, comma-separated (all must hold). Fields: ``k=v``, ``k==v``, ``k!=v``,
comma-separated, over the field labels each resource supports (see resources.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tests.apiserver.errors import APIError, bad_request

Matcher = Callable[[Mapping[str, str]], bool]


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # exists, !, =, !=, in, notin, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key, "")
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("=", "in"):
            return has and value in self.values
        if self.op in ("!=", "notin"):
            return not has or value not in self.values
        if not has:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        limit = int(self.values[0])
        return number > limit if self.op == "gt" else number < limit


_TERM = re.compile(
    r"\s*(?P<not>!)?\s*(?P<key>[A-Za-z0-9][-A-Za-z0-9_./]*)"
    r"(?:\s*(?P<op>==|!=|=|>|<)\s*(?P<value>[-A-Za-z0-9_.]*)"
    r"|\s+(?P<setop>in|notin)\s*\((?P<set>[^)]*)\)"
    r")?\s*(?:,|$)")


def parse_labels(text: str) -> tuple[Requirement, ...]:
    """Parse a labelSelector; a malformed one is a 400 as upstream."""
    out: list[Requirement] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _TERM.match(text, position)
        if match is None or match.end() == position:
            raise bad_request(f"unable to parse requirement: found '{text[position:]}', "
                              "expected: identifier")
        position = match.end()
        key = match["key"]
        if match["not"]:
            if match["op"] or match["setop"]:
                raise bad_request(f"unable to parse requirement: {text!r}")
            out.append(Requirement(key, "!"))
        elif match["op"]:
            op = {"==": "=", ">": "gt", "<": "lt"}.get(match["op"], match["op"])
            if op in ("gt", "lt") and not match["value"].lstrip("-").isdigit():
                raise bad_request(f"unable to parse requirement: for 'Gt', 'Lt' operators, "
                                  f"the value must be an integer: {match['value']!r}")
            out.append(Requirement(key, op, (match["value"],)))
        elif match["setop"]:
            values = tuple(v.strip() for v in match["set"].split(",") if v.strip())
            out.append(Requirement(key, match["setop"], values))
        else:
            out.append(Requirement(key, "exists"))
    return tuple(out)


@dataclass(frozen=True)
class FieldTerm:
    field: str
    value: str
    negated: bool

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.field, "") == self.value) != self.negated


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    current = ""
    escaped = False
    for char in text:
        if escaped:
            current += char
            escaped = False
        elif char == "\\":
            current += char
            escaped = True
        elif char == sep:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_fields(text: str, supported: frozenset[str], kind: str) -> tuple[FieldTerm, ...]:
    """Parse a fieldSelector, refusing fields the resource does not index (400)."""
    out: list[FieldTerm] = []
    for term in _split_unescaped(text, ","):
        if not term.strip():
            continue
        for op in ("!=", "==", "="):
            if op in term:
                field, value = term.split(op, 1)
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        field = field.strip()
        if field not in supported:
            raise APIError(400, "BadRequest",
                           f'Unable to find "{kind}" that match label selector "", field selector '
                           f'"{text}": field label not supported: {field}')
        out.append(FieldTerm(field, _unescape(value.strip()), op == "!="))
    return tuple(out)


def labels_match(requirements: tuple[Requirement, ...], labels: Mapping[str, str]) -> bool:
    return all(r.matches(labels) for r in requirements)


def fields_match(terms: tuple[FieldTerm, ...], fields: Mapping[str, str]) -> bool:
    return all(t.matches(fields) for t in terms)
