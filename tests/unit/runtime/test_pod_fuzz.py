"""Mutation fuzzing of the manifest corpora through parsing, defaulting and validation.

Each corpus manifest (tests/data/manifests, examples/) is decoded, mutated at random
inside metadata and spec (a field dropped, retyped, emptied, made huge or negative, an
unknown field added, a list entry duplicated...), written back as YAML and parsed. The
only exception allowed is ManifestError, and it must name the file and a field. The
random generator is seeded, so a failure reproduces.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtime.errors import ManifestError
from runtime.pod.defaults import api_defaults, to_api_object
from runtime.pod.manifest import parse_manifest

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted(
    [*(ROOT / "tests/data/manifests").glob("*/*.yaml"), *(ROOT / "examples").glob("*.yaml")]
)
MUTATIONS_PER_FILE = 25

ODD_VALUES: list[Any] = [
    None, "", " ", 0, -1, 2**31, 2**63, -(2**63), 1.5, True, [], {}, "x" * 300, "ünïcödé",
    "../..", "/", "a=b", "-1", "1e9999", "0.0001m", "NaN", {"unknown": 1}, [None], ["x"],
]  # fmt: skip


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if path else []
    if isinstance(node, dict):
        for k, v in node.items():
            found += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _paths(v, (*path, i))
    return found


def _mutate(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    roots = [k for k in ("metadata", "spec") if isinstance(doc.get(k), dict)]
    if not roots:
        return doc
    root = rng.choice(roots)
    paths = [(root, *p) for p in _paths(doc[root])] or [(root,)]
    path = rng.choice(paths)
    parent: Any = doc
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    action = rng.randrange(6)
    if action == 0 and isinstance(parent, dict):
        del parent[key]
    elif action == 1 and isinstance(parent, dict):
        parent[rng.choice(["bogus", "imagee", "Name", "x-y"])] = rng.choice(ODD_VALUES)
    elif action == 2 and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
    elif action == 3 and isinstance(parent[key], int) and not isinstance(parent[key], bool):
        parent[key] = rng.choice([-parent[key] - 1, parent[key] * 10**12, str(parent[key])])
    else:
        parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return doc


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_mutated_manifests_fail_only_with_manifest_errors(path: Path) -> None:
    rng = random.Random(path.name)
    documents = _documents(path)
    for _ in range(MUTATIONS_PER_FILE):
        mutated = [_mutate(d, rng) for d in documents]
        data = yaml.safe_dump_all(mutated, allow_unicode=True).encode()
        try:
            pods = parse_manifest(data, str(path))
        except ManifestError as err:
            assert err.source == str(path)
            assert err.path, f"no field named: {err} (from {mutated})"
            assert all(e.split(":", 1)[0] for e in err.errors), err.errors
            continue
        for pod in pods:  # what parses must also default and render
            to_api_object(api_defaults(pod))
