"""Every manifest shipped in examples/ parses, validates and becomes a static pod cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.pod.manifest import parse_manifest_with_warnings
from runtime.pod.static import read_manifest_dir

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
FILES = sorted(p for p in EXAMPLES.iterdir() if p.is_file() and not p.name.startswith("."))


def test_there_are_examples() -> None:
    assert {p.name for p in FILES} >= {"hello.yaml", "web.yaml"}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_example_parses_without_errors_or_warnings(path: Path) -> None:
    pods, warnings = parse_manifest_with_warnings(path.read_bytes(), str(path))
    assert pods
    assert warnings == ()
    for pod in pods:
        for c in pod.all_containers():
            assert c.image == "localhost:5000/kubelet-actors/busybox:1.35"
            assert c.image_pull_policy == "IfNotPresent"


def test_examples_directory_loads_as_static_pods() -> None:
    result = read_manifest_dir(EXAMPLES, "node1")
    assert result.errors == ()
    names = {s.pod.metadata.name for s in result.pods}
    assert {"hello-node1", "web-node1"} <= names


def test_web_example_shape() -> None:
    (pod,), _ = parse_manifest_with_warnings((EXAMPLES / "web.yaml").read_bytes(), "web.yaml")
    assert [c.name for c in pod.spec.init_containers] == ["content"]
    web, poller = pod.spec.containers
    assert web.readiness_probe is not None and web.readiness_probe.http_get is not None
    assert web.readiness_probe.http_get.port == 8080
    assert pod.spec.volumes[0].empty_dir is not None
    assert "wget -q -O- http://127.0.0.1:8080/" in poller.command[-1]
