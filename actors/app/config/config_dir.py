"""``--config-dir``: KubeletConfiguration drop-ins merged over the ``--config`` file, as
upstream's kubelet merges them (cmd/kubelet/app/server.go mergeKubeletConfigurations).

Every file whose name ends in ``.conf`` under the directory (its subdirectories too, as
filepath.WalkDir walks them), in lexical order, is a whole KubeletConfiguration document
(kind and apiVersion), decoded as strictly as the --config file (an error names the
drop-in), and applied over what came before as a JSON merge patch (RFC 7386): a field it
sets replaces the earlier value, a list whole, while a map (featureGates, evictionHard,
...) is merged key by key; a null removes the earlier value. A drop-in is not defaulted
(upstream reads it into JSON as written): a zero there is that zero, not the default, and
a relative path stays relative (to the working directory). Flags given on the command
line win over the file and every drop-in.
"""

from __future__ import annotations

import os
from typing import Any

from msgspec import Struct

from actors.app.config.kubelet_config import (
    CONFIG,
    CONFIG_DIR,
    LEAVES,
    OBJECTS,
    config_error,
    decode,
    read_document,
)

DROP_IN_SUFFIX = ".conf"


class LoadedConfig(Struct, frozen=True):
    """The settings the --config file and the drop-ins set, by flag destination, and the
    file each came from."""

    values: dict[str, Any]
    file_of: dict[str, str]


def drop_in_files(directory: str) -> list[str]:
    """The drop-ins of ``directory``, in the order upstream applies them (WalkDir's:
    lexical, each subdirectory's files where its name sorts)."""
    files: list[str] = []

    def walk(path: str) -> None:
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError as err:
            raise config_error(directory, "", f"cannot read: {err}", CONFIG_DIR) from err
        for entry in entries:
            if entry.is_dir():
                walk(entry.path)
            elif entry.name.endswith(DROP_IN_SUFFIX):
                files.append(entry.path)

    walk(directory)
    return files


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: ``patch`` applied to ``target``."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def _fields(document: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The document's leaves by dotted field (objects flattened), nulls kept."""
    out: dict[str, Any] = {}
    for key, value in document.items():
        field = f"{prefix}{key}"
        if field in OBJECTS and isinstance(value, dict):
            out.update(_fields(value, f"{field}."))
        elif prefix or key not in ("kind", "apiVersion"):
            out[field] = value
    return out


def load_config(config: str, config_dir: str) -> LoadedConfig:
    """The --config file's settings (when given) with the drop-ins of ``config_dir`` (when
    given) merged over them."""
    documents: list[tuple[str, str, dict[str, Any]]] = []
    if config:
        documents.append((config, CONFIG, read_document(config, CONFIG)))
    if config_dir:
        documents += [(path, CONFIG_DIR, read_document(path, CONFIG_DIR))
                      for path in drop_in_files(config_dir)]
    values: dict[str, Any] = {}
    file_of: dict[str, str] = {}
    maps: dict[str, tuple[dict[str, Any], str]] = {}  # a map field merged so far, its file
    for path, flag, document in documents:
        decoded = decode(document, path, flag)
        fields = _fields(document)
        for dest in decoded.keys() - {LEAVES[f][0] for f in fields if f in LEAVES}:
            # a value the file's defaulting derives (nodeStatusReportFrequency)
            values[dest] = decoded[dest]
            file_of[dest] = path
        for field, raw in fields.items():
            if field in OBJECTS and raw is None:  # the whole object back to its defaults
                for dest in (d for f, (d, _) in LEAVES.items() if f.startswith(f"{field}.")):
                    values.pop(dest, None)
                    file_of.pop(dest, None)
                continue
            entry = LEAVES.get(field)
            if entry is None:
                continue
            dest, convert = entry
            if raw is None or (dest not in decoded and not isinstance(raw, dict)):
                # The merge patch removes it (or its zero value is upstream's default):
                # back to the default.
                values.pop(dest, None)
                file_of.pop(dest, None)
                maps.pop(field, None)
                continue
            if isinstance(raw, dict):
                merged = merge_patch(maps[field][0] if field in maps else {}, raw)
                maps[field] = (merged, path)
                values[dest] = convert(merged)  # each part was decoded: the whole decodes
            else:
                values[dest] = decoded[dest]
            file_of[dest] = path
    return LoadedConfig(values=values, file_of=file_of)
