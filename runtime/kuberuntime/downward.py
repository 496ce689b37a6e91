"""The downward API's values: a pod's own fields and its containers' resources, as env
vars (container_config) and downwardAPI volume files (volumes) show them.

As upstream: env vars may read metadata.name, namespace, uid, labels['k'],
annotations['k'], spec.nodeName, spec.serviceAccountName, status.hostIP(s) and
status.podIP(s) (podFieldSelectorRuntimeValue); volume files may read the metadata ones
and the whole labels and annotations (fieldpath.ExtractFieldPathAsString). A resource
(``limits.cpu``, ``requests.memory``, ``limits.ephemeral-storage``, hugepages) is given in
units of its divisor, rounded up; a limit the container does not set is the node's
allocatable (defaultPodLimitsForDownwardAPI, MergeContainerResourceLimits).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence

from runtime.pod.model import Container, DownwardAPIVolumeFile, Pod, ResourceFieldSelector
from runtime.pod.quantity import parse_quantity

__all__ = ["DownwardAPIError", "env_field_value", "format_map", "limits_with_allocatable",
           "metadata_value", "resource_value", "volume_file_values"]

_FIELD_INDEX = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")
# MergeContainerResourceLimits: the limits a container without one gets from the node.
_DEFAULTED_LIMITS = ("cpu", "memory", "ephemeral-storage")


class DownwardAPIError(ValueError):
    """A field or resource the downward API cannot give; the message is upstream's."""


def format_map(values: Mapping[str, str]) -> str:
    """fieldpath.FormatMap: ``key="value"`` lines in key order (Go's %q quoting)."""
    return "".join(f"{k}={json.dumps(values[k], ensure_ascii=False)}\n" for k in sorted(values))


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


def env_field_value(pod: Pod, path: str, pod_ips: Sequence[str], host_ips: Sequence[str]
                    ) -> str:
    """An env var's fieldRef value (upstream podFieldSelectorRuntimeValue)."""
    if path in ("status.hostIP", "status.hostIPs"):
        if not host_ips:
            raise DownwardAPIError("host IP unknown; known addresses: []")
        return host_ips[0] if path == "status.hostIP" else ",".join(host_ips)
    simple = {
        "spec.nodeName": pod.spec.node_name,
        "spec.serviceAccountName": pod.spec.service_account_name,
        "status.podIP": pod_ips[0] if pod_ips else "",
        "status.podIPs": ",".join(pod_ips),
    }
    if path in simple:
        return simple[path]
    # Whole label and annotation maps are for volume files only (ConvertDownwardAPIFieldLabel).
    value = metadata_value(pod, path)
    if value is None or path in ("metadata.labels", "metadata.annotations"):
        raise DownwardAPIError(f'field label not supported: {path}')
    return value


def limits_with_allocatable(container: Container, allocatable: Mapping[str, str]
                            ) -> dict[str, str]:
    """The container's limits, each of cpu, memory and ephemeral-storage it does not set
    taken from the node's allocatable (upstream MergeContainerResourceLimits)."""
    limits = dict(container.resources.limits) if container.resources is not None else {}
    for name in _DEFAULTED_LIMITS:
        if name not in limits and name in allocatable:
            limits[name] = allocatable[name]
    return {k: str(v) for k, v in limits.items()}


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _ceil_div(value: str, divisor: str, milli: bool) -> str:
    """``ceil(value / divisor)`` in milli-units for cpu (MilliValue), whole units else
    (Value), each rounded up first as resource.Quantity does."""
    scale = 1000 if milli else 1
    amount = math.ceil(parse_quantity(value) * scale)
    # A zero divisor (unset) is 1, as upstream's.
    per = max(1, math.ceil((parse_quantity(divisor) or 1) * scale))
    return str(math.ceil(amount / per) if amount >= 0 else -((-amount) // per))


def resource_value(pod: Pod, container: Container | None, ref: ResourceFieldSelector,
                   allocatable: Mapping[str, str] | None = None) -> str:
    """A container's request or limit (``ref.resource``) in units of ``ref.divisor``,
    rounded up, as upstream's ExtractContainerResourceValue; a limit it does not set is
    the node's ``allocatable``; "0" when neither has it. DownwardAPIError for a resource
    the downward API does not expose or a container the pod does not have."""
    target = pod.container(ref.container_name) if ref.container_name else container
    if target is None:
        raise DownwardAPIError(f"container {ref.container_name} not found")
    kind, _, name = ref.resource.partition(".")
    if kind not in ("limits", "requests") or not (
            name in _DEFAULTED_LIMITS or _is_hugepages(name)):
        raise DownwardAPIError(f"unsupported container resource : {ref.resource}")
    if kind == "limits":
        source = limits_with_allocatable(target, allocatable or {})
    else:
        source = ({k: str(v) for k, v in target.resources.requests.items()}
                  if target.resources is not None else {})
    return _ceil_div(source.get(name, "0"), str(ref.divisor or "1"), milli=name == "cpu")


def volume_file_values(pod: Pod, items: Sequence[DownwardAPIVolumeFile],
                       allocatable: Mapping[str, str] | None = None
                       ) -> tuple[dict[str, tuple[str, int | None]], list[str]]:
    """The files of a downwardAPI volume (or projection), as upstream's CollectData:
    path -> (content, the item's own mode or None), and the errors of the items that
    cannot be had."""
    files: dict[str, tuple[str, int | None]] = {}
    errors: list[str] = []
    for item in items:
        value = ""
        if item.field_ref is not None:
            found = metadata_value(pod, item.field_ref.field_path)
            if found is None:
                errors.append(f"unsupported fieldPath: {item.field_ref.field_path}")
            else:
                value = found
        elif item.resource_field_ref is not None:
            try:
                value = resource_value(pod, None, item.resource_field_ref, allocatable)
            except (DownwardAPIError, ValueError) as err:
                errors.append(str(err))
        files[item.path] = (value, item.mode)
    return files, errors
