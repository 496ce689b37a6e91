"""The downward API's values: a pod's own fields and its containers' resources, as env
vars (container_config) and downwardAPI volume files (volumes) show them."""

from __future__ import annotations

import json
import re

from runtime.pod.model import Container, Pod, ResourceFieldSelector
from runtime.pod.quantity import bytes_of, milli_cpu

__all__ = ["format_map", "metadata_value", "resource_value"]

_FIELD_INDEX = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")


def format_map(values: dict[str, str]) -> str:
    """fieldpath.FormatMap: ``key="value"`` lines in key order (Go's %q quoting)."""
    return "".join(f"{k}={json.dumps(values[k])}\n" for k in sorted(values))


def metadata_value(pod: Pod, path: str) -> str | None:
    """The value of a ``metadata.*`` field path (None when ``path`` is not one): a
    downwardAPI volume's fields, and those of env vars."""
    meta = pod.metadata
    simple = {"metadata.name": meta.name, "metadata.namespace": meta.namespace,
              "metadata.uid": meta.uid}
    if path in simple:
        return simple[path]
    if path == "metadata.labels":
        return format_map(dict(meta.labels))
    if path == "metadata.annotations":
        return format_map(dict(meta.annotations))
    match = _FIELD_INDEX.match(path)
    if match:
        source = meta.labels if match.group(1) == "labels" else meta.annotations
        return source.get(match.group(2), "")
    return None


def resource_value(pod: Pod, container: Container | None, ref: ResourceFieldSelector) -> str:
    """A container's request or limit (``ref.resource``) in units of ``ref.divisor``,
    rounded up as upstream's ExtractResourceValueByContainerName; "0" when unset."""
    target = pod.container(ref.container_name) if ref.container_name else container
    if target is None or target.resources is None:
        return "0"
    kind, _, name = ref.resource.partition(".")
    source = target.resources.limits if kind == "limits" else target.resources.requests
    if name not in source:
        return "0"
    if name == "cpu":
        return str(max(1, -(-milli_cpu(source[name]) // milli_cpu(ref.divisor))))
    # Upstream convertResourceMemoryToString rounds up, like the cpu case.
    return str(-(-bytes_of(source[name]) // max(1, bytes_of(ref.divisor))))
