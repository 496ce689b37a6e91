"""The three PATCH formats kube-apiserver accepts for built-in types.

- strategic merge patch: a port of k8s.io/apimachinery/pkg/util/strategicpatch's apply side
  (``StrategicMergeMapPatch`` with MergeParallelList and IgnoreUnmatchedNulls, as the server
  calls it): merge keys from :mod:`tests.apiserver.patchmeta`, ``$patch: delete/replace/merge``,
  ``$setElementOrder/<list>``, ``$deleteFromPrimitiveList/<list>``, ``$retainKeys``, and the
  element ordering of upstream's normalizeElementOrder/mergeSortedSlice;
- JSON merge patch (RFC 7386);
- JSON patch (RFC 6902).

Results pass through :func:`typed_roundtrip`, standing in for the decode into Go structs the
server does: directive keys and nulls do not survive it.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.apiserver.patchmeta import Field, Schema

DIRECTIVE = "$patch"
SET_ORDER = "$setElementOrder/"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
RETAIN_KEYS = "$retainKeys"


class PatchError(ValueError):
    """The patch cannot be applied (the server answers 400 or 422)."""


# --- strategic merge patch ----------------------------------------------------------------


def strategic_merge(original: dict[str, Any], patch: dict[str, Any],
                    schema: Schema) -> dict[str, Any]:
    """Apply a strategic merge patch to a copy of ``original``."""
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object")
    return _merge_map(copy.deepcopy(original), copy.deepcopy(patch), schema)


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any],
               schema: Schema) -> dict[str, Any]:
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            del patch[DIRECTIVE]
            return patch
        if directive == "delete":
            return {}
        raise PatchError(f"Unknown patch type: {directive} in map: {patch}")
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, schema)
    for key in list(patch):
        value = patch[key]
        is_delete_list = key.startswith(DELETE_PRIMITIVE)
        if is_delete_list:
            key = key[len(DELETE_PRIMITIVE):]
        if value is None:
            original.pop(key, None)
            continue
        if key not in original:
            if not is_delete_list:
                original[key] = _discard_nulls(value)
            continue
        current = original[key]
        if _kind(current) != _kind(value):
            if not is_delete_list:
                original[key] = _discard_nulls(value)
            continue
        fld = schema.lookup(key)
        sub = fld.schema or Schema()
        if isinstance(current, dict):
            original[key] = value if fld.strategy == "replace" else _merge_map(current, value, sub)
        elif isinstance(current, list):
            original[key] = _merge_slice_handler(current, value, sub, fld, is_delete_list)
        else:
            original[key] = value
    return original


def _kind(value: Any) -> type:
    # Go compares reflect types: map, slice, or the scalar's own type (JSON numbers are float64).
    if isinstance(value, bool):
        return bool
    if isinstance(value, int | float):
        return float
    return type(value)


def _discard_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _discard_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_discard_nulls(v) for v in value]
    return value


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise PatchError(f"$retainKeys must be a list, got {retain!r}")
    for key in patch:
        if not key.startswith("$") and key not in retain:
            raise PatchError(f"all fields in the patch must be present in $retainKeys: {key}")
    for key in list(original):
        if key not in retain:
            del original[key]


def _merge_slice_handler(original: list[Any], patch: Any, schema: Schema, fld: Field,
                         is_delete_list: bool) -> list[Any]:
    if not isinstance(patch, list):
        raise PatchError(f"expected a list, got {patch!r}")
    if fld.merges:
        return _merge_slice(original, patch, schema, fld.key, is_delete_list)
    return patch


def _element_kind(*lists: list[Any]) -> type:
    kinds = {_kind(v) for items in lists for v in items}
    if not kinds:
        raise PatchError("no elements in any of the given slices")
    if len(kinds) > 1 or list in kinds:
        raise PatchError("lists of mixed or nested types cannot be merged")
    return kinds.pop()


def _merge_slice(original: list[Any], patch: list[Any], schema: Schema, key: str,
                 is_delete_list: bool) -> list[Any]:
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    if kind is not dict:
        if is_delete_list:
            return [v for v in original if v not in patch]
        merged = _dedupe_scalars(original + patch)
        patch_items = [v for v in merged if v in patch]
        server_only = [v for v in merged if v not in patch]
    else:
        if not key:
            raise PatchError("cannot merge lists without merge key")
        original, patch = _special_elements(original, patch, key)
        server_order = [copy.copy(v) for v in original]
        merged = _merge_without_special(original, patch, key, schema)
        original = server_order
        patch_items, server_only = _partition_maps(merged, patch, key)
    return _normalize_order(patch_items, server_only, patch, original, key, kind)


def _dedupe_scalars(items: list[Any]) -> list[Any]:
    # Upstream's deduplicateScalars moves the last element into a duplicate's place; the
    # order is normalized afterwards anyway, but copying it keeps ties identical.
    s = list(items)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if s[i] == s[j]:
                s[j] = s[length]
                s = s[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def _special_elements(original: list[Any], patch: list[Any],
                      key: str) -> tuple[list[Any], list[Any]]:
    plain: list[Any] = []
    replace = False
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"expected a map in list, got {item!r}")
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == "delete":
            if key not in item:
                raise PatchError(f"map: {item} does not contain declared merge key: {key}")
            original = [v for v in original
                        if not (isinstance(v, dict) and v.get(key) == item[key])]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"Unknown patch type: {directive} in map: {item}")
    if replace:
        return plain, []
    return original, plain


def _merge_without_special(original: list[Any], patch: list[Any], key: str,
                           schema: Schema) -> list[Any]:
    merged = list(original)
    for item in patch:
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        for index, existing in enumerate(merged):
            if isinstance(existing, dict) and existing.get(key) == item[key]:
                merged[index] = _merge_map(existing, item, schema)
                break
        else:
            merged.append(item)
    return merged


def _partition_maps(merged: list[Any], by: list[Any], key: str) -> tuple[list[Any], list[Any]]:
    keys = [v.get(key) for v in by if isinstance(v, dict)]
    patch_items: list[Any] = []
    server_only: list[Any] = []
    for item in merged:
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        (patch_items if item[key] in keys else server_only).append(item)
    return patch_items, server_only


def _index(items: list[Any], value: Any, key: str, kind: type) -> int:
    def get(item: Any) -> Any:
        if kind is dict:
            return item.get(key) if isinstance(item, dict) else None
        return item

    wanted = get(value)
    for i, item in enumerate(items):
        if get(item) == wanted:
            return i
    return -1


def _normalize_order(patch_items: list[Any], server_only: list[Any], patch_order: list[Any],
                     server_order: list[Any], key: str, kind: type) -> list[Any]:
    def by(order: list[Any]) -> Any:
        return lambda item: _index(order, item, key, kind)

    left = sorted(server_only, key=by(server_order))
    right = sorted(patch_items, key=by(patch_order))
    # mergeSortedSlice: interleave, a server-only item going first only when both items are
    # in the live list and it came first there.
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], key, kind)
            ri = _index(server_order, right[j], key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _merge_ordered_lists(original: dict[str, Any], patch: dict[str, Any], schema: Schema) -> None:
    for directive in [k for k in patch if k.startswith(SET_ORDER)]:
        order = patch.pop(directive)
        if not isinstance(order, list):
            raise PatchError(f"{directive} must be a list")
        name = directive[len(SET_ORDER):]
        fld = schema.lookup(name)
        found_original = name in original
        found_patch = name in patch
        live = original.get(name) or []
        patch_list = patch.get(name) or []
        if not isinstance(live, list) or not isinstance(patch_list, list):
            raise PatchError(f"{name} must be a list")
        _check_order(patch_list, order, fld.key)
        if found_original and not found_patch:
            merged = live
        elif found_patch and not found_original:
            merged = [v for v in patch_list if not (isinstance(v, dict) and DIRECTIVE in v)]
        elif found_original and found_patch:
            merged = _merge_slice_handler(live, patch_list, fld.schema or Schema(), fld, False)
        else:
            continue
        kind = _element_kind(live, patch_list)
        if fld.key:
            patch_items, server_only = _partition_maps(merged, order, fld.key)
        else:
            patch_items = [v for v in merged if v in order]
            server_only = [v for v in merged if v not in order]
        original[name] = _normalize_order(patch_items, server_only, order, live, fld.key, kind)
        patch.pop(name, None)


def _check_order(patch_list: list[Any], order: list[Any], key: str) -> None:
    # validatePatchWithSetOrderList: the patch's items appear in $setElementOrder, in order.
    def ident(v: Any) -> Any:
        return v.get(key) if key and isinstance(v, dict) else v

    order_ids = [ident(v) for v in order]
    last = -1
    for item in patch_list:
        if isinstance(item, dict) and DIRECTIVE in item:
            continue
        ident_ = ident(item)
        if ident_ not in order_ids:
            raise PatchError(f"error: cannot find {ident_!r} in $setElementOrder list {order}")
        position = order_ids.index(ident_)
        if position < last:
            raise PatchError("error: the order of the patch list and $setElementOrder differ")
        last = position


# --- JSON merge patch and JSON patch ----------------------------------------------------


def json_merge(original: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise PatchError(f"doc is missing path: /{'/'.join(parts)}")
    return node, parts[-1]


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    node, last = _parent(doc, parts)
    if isinstance(node, dict) and last in node:
        return node[last]
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        return node[int(last)]
    raise PatchError(f"doc is missing path: {path}")


def _remove(doc: Any, path: str) -> Any:
    node, last = _parent(doc, _pointer(path))
    if isinstance(node, dict) and last in node:
        return node.pop(last)
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        return node.pop(int(last))
    raise PatchError(f"Unable to remove nonexistent key: {last}: missing value")


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    node, last = _parent(doc, parts)
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list):
        if last == "-":
            node.append(value)
        elif last.isdigit() and int(last) <= len(node):
            node.insert(int(last), value)
        else:
            raise PatchError(f"Unable to access invalid index: {last}")
    else:
        raise PatchError(f"doc is missing path: {path}")
    return doc


def json_patch(original: Any, operations: Any) -> Any:
    """RFC 6902: add, remove, replace, move, copy, test."""
    if not isinstance(operations, list):
        raise PatchError("json patch must be a list of operations")
    doc = copy.deepcopy(original)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid JSON patch operation: {op!r}")
        kind, path = op["op"], op["path"]
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            if _pointer(path):
                _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "move":
            value = _remove(doc, op["from"])
            doc = _add(doc, path, value)
        elif kind == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op["from"])))
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {kind}")
    return doc


def typed_roundtrip(obj: Any) -> Any:
    """Drop what decoding into Go structs drops: ``$``-directives and null fields."""
    if isinstance(obj, dict):
        return {k: typed_roundtrip(v) for k, v in obj.items()
                if v is not None and not k.startswith("$")}
    if isinstance(obj, list):
        return [typed_roundtrip(v) for v in obj]
    return obj
