"""Resource URLs as the emulated API server routes them.

``/api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]]`` and
``/apis/GROUP/VERSION/...``: the resource type (resources.py), namespace, name and
subresource a request is for, or None when no resource serves the path (a 404).
"""

from __future__ import annotations

import urllib.parse

from tests.apiserver.resources import ResourceType, lookup


class Route:
    """A parsed resource URL."""

    def __init__(self, rt: ResourceType, namespace: str, name: str, subresource: str) -> None:
        self.rt = rt
        self.namespace = namespace
        self.name = name
        self.subresource = subresource

    @property
    def resource(self) -> str:
        return f"{self.rt.plural}/{self.subresource}" if self.subresource else self.rt.plural


def parse_route(path: str) -> Route | None:
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        candidate = lookup(group, version, rest[2])
        if candidate is not None and candidate.namespaced:
            namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    rt = lookup(group, version, rest[0])
    if rt is None:
        return None
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if sub and sub not in rt.subresources:
        return None
    return Route(rt, namespace, name, sub)

