"""A KubeletConfiguration file's text read as upstream's strict decoder reads it: the
document, and every key its file sets twice (top level or nested) in the words of the
decoder that would have read it (k8s.io/apimachinery's strict serializer).

PyYAML keeps the last of two equal keys without a word; upstream's YAML path
(sigs.k8s.io/yaml's YAMLToJSONStrict, on go-yaml v2's strict mode) reports each as
``line N: key "maxPods" already set in map`` (N: the line of the repeated key's value,
from 1) under ``yaml: unmarshal errors:``, and its JSON path (a file whose text starts
with ``{``, read by sigs.k8s.io/json) as ``duplicate field "authentication.anonymous"``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from msgspec import Struct

if TYPE_CHECKING:
    import yaml

MERGE_TAG = "tag:yaml.org,2002:merge"


class Duplicate(Struct, frozen=True):
    """A key set twice in one mapping: its dotted field, the key, the repeat's line."""

    field: str
    key: Any
    line: int


class StrictDocument(Struct, frozen=True):
    """A file's document (the last value of a repeated key kept, as a lenient reader
    would) and the keys it repeats, in document order."""

    document: Any
    duplicates: tuple[Duplicate, ...]
    is_json: bool


def _go_value(key: Any) -> str:
    """A key as Go's ``%#v`` prints it: strings quoted, other scalars as written."""
    if isinstance(key, str):
        return json.dumps(key)
    if isinstance(key, bool):
        return str(key).lower()
    return str(key)


def duplicate_rules(found: StrictDocument) -> list[tuple[str, str]]:
    """(field, the strict decoder's words) per repeated key; for YAML one rule naming them
    all, as go-yaml gathers its unmarshal errors into one."""
    if not found.duplicates:
        return []
    if found.is_json:
        return [(d.field, f'duplicate field "{d.field}"') for d in found.duplicates]
    lines = "".join(f"\n  line {d.line}: key {_go_value(d.key)} already set in map"
                    for d in found.duplicates)
    return [(found.duplicates[0].field, f"yaml: unmarshal errors:{lines}")]


def _duplicates(loader: yaml.SafeLoader, root: yaml.Node) -> list[Duplicate]:
    import yaml

    found: list[Duplicate] = []
    seen_nodes: set[int] = set()

    def walk(node: yaml.Node, prefix: str) -> None:
        if id(node) in seen_nodes:  # an alias: its anchor was walked
            return
        seen_nodes.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, f"{prefix}[{i}]")
        elif isinstance(node, yaml.MappingNode):
            keys: set[Any] = set()
            for key_node, value_node in node.value:
                if key_node.tag == MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = loader.construct_object(key_node)
                field = f"{prefix}.{key}" if prefix else str(key)
                try:
                    repeated = key in keys
                    keys.add(key)
                except TypeError:  # an unhashable key: the decoder refuses it anyway
                    continue
                walk(value_node, field)  # go-yaml reports a value's repeats first
                if repeated:
                    found.append(Duplicate(field=field, key=key,
                                           line=value_node.start_mark.line + 1))

    walk(root, "")
    return found


def load(text: str) -> StrictDocument:
    """``text``'s single YAML (or JSON) document and its repeated keys. Raises
    yaml.YAMLError when the text is not YAML."""
    import yaml  # only with --config: a start without one need not import PyYAML

    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return StrictDocument(document=None, duplicates=(), is_json=False)
        duplicates = _duplicates(loader, root)
        document = loader.construct_document(root)
    finally:
        loader.dispose()
    return StrictDocument(document=document, duplicates=tuple(duplicates),
                          is_json=text.lstrip().startswith("{"))
