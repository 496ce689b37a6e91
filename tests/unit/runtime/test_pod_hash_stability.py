"""The container hash and the static-pod UID of pods that decoded before the generated
model (issue 9) must not change: a changed container hash restarts every running
container after an upgrade, a changed pod JSON gives every static pod a new UID.

The figures (tests/data/hash/pinned.json) were computed with the hand-written model,
before the change.
"""

from __future__ import annotations

import hashlib
import json as jsonlib
from pathlib import Path

import pytest

from runtime.kuberuntime.labels import hash_container
from runtime.pod.manifest import parse_manifest
from runtime.pod.model import container_to_json, pod_to_json

ROOT = Path(__file__).resolve().parents[3]

PINNED = jsonlib.loads((ROOT / "tests/data/hash/pinned.json").read_text())
CONTAINERS = [(r["file"], r["container"], r["hash"], r["json"]) for r in PINNED["containers"]]
PODS = [(r["file"], r["md5"]) for r in PINNED["pods"]]


@pytest.mark.parametrize(("path", "name", "hash_", "json"), CONTAINERS)
def test_container_json_and_hash_unchanged(path: str, name: str, hash_: str, json: str) -> None:
    (pod,) = parse_manifest((ROOT / path).read_bytes(), path)
    container = pod.container(name)
    assert container is not None
    assert container_to_json(container).decode() == json
    assert hash_container(container) == hash_


@pytest.mark.parametrize(("path", "md5"), PODS)
def test_pod_json_unchanged(path: str, md5: str) -> None:
    (pod,) = parse_manifest((ROOT / path).read_bytes(), path)
    assert hashlib.md5(pod_to_json(pod), usedforsecurity=False).hexdigest() == md5
