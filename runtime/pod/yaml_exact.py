"""The exact YAML reader of manifests: PyYAML on libyaml, reading YAML 1.1 as Kubernetes
does, with its errors worded for the person who wrote the manifest.

runtime.pod.manifest reads JSON, and the common YAML manifest (runtime.pod.yaml_fast),
without it; this module (and PyYAML, some 10 ms of a start) is imported by the first
manifest that needs it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml

from runtime.errors import ManifestError

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # PyYAML built without libyaml: same behaviour, slower
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

MAX_ALIASES = 100
"""YAML aliases allowed in one manifest: real ones have few; a few lines with many can
expand to gigabytes (an alias bomb), so more are refused before anything is built."""

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"


class Loader(_BaseLoader):
    """Safe YAML loading as Kubernetes reads it.

    Timestamps stay strings (the model's timestamps are RFC 3339 strings, as in JSON), and
    a key repeated in one mapping is an error: PyYAML would silently keep the last one, so
    a second ``command:`` would quietly replace the first.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
                continue
            key = (key_node.tag, key_node.value)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f'duplicate key "{key_node.value}"', key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_BOOLS = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}


def load_all(text: str) -> list[object]:
    """yaml.load_all with Loader, faster: libyaml (the C parser) composes each document
    and _build turns its nodes into Python values directly, instead of PyYAML's generic
    constructor (which made up most of a manifest's parse time)."""
    loader = Loader(text)
    try:
        documents: list[object] = []
        while loader.check_node():
            node = loader.get_node()
            documents.append(None if node is None else _build(loader, node))
        return documents
    finally:
        loader.dispose()


def _build(loader: Loader, node: yaml.Node) -> object:
    """The value of a composed node, as Loader would construct it; what is rare in a
    manifest (merge keys, explicit tags, YAML 1.1 number forms) goes to Loader itself."""
    tag = node.tag
    if isinstance(node, yaml.ScalarNode):
        value: str = node.value
        if tag == _STR:
            return value
        if tag == _INT and value.isdigit() and (value[0] != "0" or value == "0"):
            return int(value)  # plain decimal (YAML 1.1 reads 010 as octal: Loader does)
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return _BOOLS[value.lower()]
        return loader.construct_object(node, deep=True)
    if isinstance(node, yaml.SequenceNode) and tag == _SEQ:
        return [_build(loader, item) for item in node.value]
    if isinstance(node, yaml.MappingNode) and tag == _MAP and not any(
            k.tag == _MERGE for k, _ in node.value):
        mapping: dict[Hashable, object] = {}
        for key_node, value_node in node.value:
            key = _build(loader, key_node)
            if not isinstance(key, Hashable):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, "found unhashable key",
                    key_node.start_mark)
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    None, None, f'duplicate key "{key_node.value}"', key_node.start_mark)
            mapping[key] = _build(loader, value_node)
        return mapping
    return loader.construct_object(node, deep=True)


def exact_load(text: str, source: str) -> list[object]:
    """The YAML documents of ``text`` (None for an empty one); ManifestError naming
    ``source``, the line and the column of what is wrong."""
    try:
        # An alias is written "*name": without a '*' there is none, and the event scan
        # (a second pass over the whole text) is skipped.
        aliases = 0 if "*" not in text else sum(
            1 for e in yaml.parse(text, Loader=Loader) if isinstance(e, yaml.AliasEvent))
        if aliases > MAX_ALIASES:
            raise ManifestError(source, "", f"{aliases} YAML aliases (at most {MAX_ALIASES}): "
                                "refused, it could expand without bound")
        documents = load_all(text)
    except RecursionError as err:
        raise ManifestError(source, "", "invalid YAML: nested too deeply") from err
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "invalid YAML"
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        context = f" ({err.context})" if err.context and err.problem else ""
        raise ManifestError(source, "", f"invalid YAML{where}: {problem}{context}") from err
    except yaml.reader.ReaderError as err:
        line = text.count("\n", 0, err.position) + 1
        column = err.position - (text.rfind("\n", 0, err.position) + 1) + 1
        raise ManifestError(
            source, "", f"invalid YAML at line {line}, column {column}: {err.reason}"
        ) from err
    except yaml.YAMLError as err:
        raise ManifestError(source, "", f"invalid YAML: {err}") from err
    return documents
