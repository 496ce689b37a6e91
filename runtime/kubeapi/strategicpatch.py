"""Two-way strategic merge patches: the smallest patch that turns ``original`` into
``modified``, as apimachinery's ``strategicpatch.CreateTwoWayMergePatch`` writes them.

Maps are diffed key by key (a removed key becomes null); lists whose field has
``patchStrategy: merge`` are diffed by their merge key (changed elements as partial maps
with the key, removed ones as ``{"$patch": "delete", key: ...}``, and a
``$setElementOrder/<field>`` listing the keys in their new order); merged lists of scalars
use ``$deleteFromPrimitiveList/<field>``; every other list is replaced whole. The merge keys
are upstream's struct tags for the fields the kubelet writes (:data:`NODE`, :data:`POD`).

:func:`pod_status_patch` is upstream's ``statusutil.PatchPodStatus`` body (the uid as a
precondition, None when only the uid would be sent). :func:`node_status_patch` is
upstream's ``nodeutil.PatchNodeStatus`` body: spec reset, and the addresses list sent whole
with ``$patch: replace`` when it changed (its merge tag is wrong upstream, and the kubelet
works around it the same way).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NODE", "POD", "MergeList", "Schema", "node_status_patch", "pod_status_patch",
           "two_way_merge_patch"]


@dataclass(frozen=True)
class MergeList:
    """A list field with ``patchStrategy: merge``; ``key`` is its patchMergeKey ("" for a
    list of scalars), ``item`` the schema of its elements."""

    key: str = ""
    item: Schema | None = None


@dataclass(frozen=True)
class Schema:
    """The tagged fields of a map: sub-maps by name, merged lists by name."""

    maps: Mapping[str, Schema] = field(default_factory=dict)
    lists: Mapping[str, MergeList] = field(default_factory=dict)


_EMPTY = Schema()

_META = Schema(lists={"ownerReferences": MergeList("uid"), "finalizers": MergeList("")})

NODE = Schema(maps={
    "metadata": _META,
    "spec": Schema(lists={"podCIDRs": MergeList("")}),
    "status": Schema(lists={"conditions": MergeList("type"), "addresses": MergeList("type"),
                            "volumesAttached": MergeList("name")}),
})
"""The merge tags of v1.Node that node status patches touch."""

POD = Schema(maps={
    "metadata": _META,
    "status": Schema(lists={"conditions": MergeList("type"), "podIPs": MergeList("ip"),
                            "hostIPs": MergeList("ip"),
                            "resourceClaimStatuses": MergeList("name")}),
})
"""The merge tags of v1.Pod that pod status patches touch."""


def two_way_merge_patch(original: Mapping[str, Any], modified: Mapping[str, Any],
                        schema: Schema = _EMPTY) -> dict[str, Any]:
    """The strategic merge patch from ``original`` to ``modified`` ({} when equal)."""
    return _diff_maps(original, modified, schema)


def _diff_maps(original: Mapping[str, Any], modified: Mapping[str, Any],
               schema: Schema) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    for key, new in modified.items():
        if key not in original:
            patch[key] = copy.deepcopy(new)
            continue
        old = original[key]
        if old == new:
            continue
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            sub = _diff_maps(old, new, schema.maps.get(key, _EMPTY))
            if sub:
                patch[key] = sub
        elif isinstance(old, list) and isinstance(new, list) and key in schema.lists:
            _diff_merged_list(key, old, new, schema.lists[key], patch)
        else:
            patch[key] = copy.deepcopy(new)
    for key in original:
        if key not in modified:
            patch[key] = None
    return patch


def _diff_merged_list(name: str, old: list[Any], new: list[Any], tags: MergeList,
                      patch: dict[str, Any]) -> None:
    if not tags.key:
        added = [v for v in new if v not in old]
        removed = [v for v in old if v not in new]
        if added:
            patch[name] = copy.deepcopy(added)
        if removed:
            patch[f"$deleteFromPrimitiveList/{name}"] = copy.deepcopy(removed)
        patch[f"$setElementOrder/{name}"] = copy.deepcopy(new)
        return
    key = tags.key
    old_by = {item.get(key): item for item in old if isinstance(item, Mapping)}
    new_keys = [item.get(key) for item in new if isinstance(item, Mapping)]
    items: list[Any] = []
    for item in new:
        if not isinstance(item, Mapping):
            continue
        before = old_by.get(item.get(key))
        if before is None:
            items.append(copy.deepcopy(item))
        elif before != item:
            sub = _diff_maps(before, item, tags.item or _EMPTY)
            sub[key] = item.get(key)
            items.append(sub)
    for value, item in old_by.items():
        if value not in new_keys:
            items.append({"$patch": "delete", key: copy.deepcopy(item.get(key))})
    old_order = [item.get(key) for item in old if isinstance(item, Mapping)
                 and item.get(key) in new_keys]
    kept_order = [v for v in new_keys if v in old_by]
    if items:
        patch[name] = items
    if items or old_order != kept_order:
        patch[f"$setElementOrder/{name}"] = [{key: v} for v in new_keys]


def node_status_patch(old_node: Mapping[str, Any], new_node: Mapping[str, Any]
                      ) -> dict[str, Any]:
    """The body of upstream's PatchNodeStatus: a two-way patch of the node with spec
    reset (only status and metadata go to nodes/<name>/status)."""
    new = dict(new_node)
    if "spec" in old_node:
        new["spec"] = old_node["spec"]
    else:
        new.pop("spec", None)
    patch = two_way_merge_patch(old_node, new, NODE)
    old_addresses = (old_node.get("status") or {}).get("addresses") or []
    new_addresses = (new_node.get("status") or {}).get("addresses") or []
    if old_addresses and old_addresses != new_addresses:
        # fixupPatchForNodeStatusAddresses: the whole list, replacing the old one.
        status = patch.setdefault("status", {})
        status.pop("$setElementOrder/addresses", None)
        status["addresses"] = [*copy.deepcopy(new_addresses), {"$patch": "replace"}]
    return patch


def pod_status_patch(uid: str, old_status: Mapping[str, Any], new_status: Mapping[str, Any]
                     ) -> dict[str, Any] | None:
    """preparePatchBytesForPodStatus: a two-way patch from ``{status: old}`` to
    ``{metadata: {uid}, status: new}``, so the uid travels as a precondition (the server
    answers 409 when the pod was replaced); None when nothing but the uid differs, which
    upstream does not send."""
    patch = two_way_merge_patch({"status": dict(old_status)},
                                {"metadata": {"uid": uid}, "status": dict(new_status)}, POD)
    if patch == {"metadata": {"uid": uid}}:
        return None
    return patch
