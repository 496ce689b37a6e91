"""The manifest corpora (tests/data/manifests): real pods parse, broken pods fail as named.

valid/ holds pod manifests written by others (the Kubernetes documentation's examples,
kubernetes/examples), each with a header naming its source and license. invalid/ holds
pods that each break one upstream validation rule, named in a ``# Breaks:`` line, with
the exact error expected in a ``# Expect:`` line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.errors import ManifestError
from runtime.pod.defaults import api_defaults, to_api_object
from runtime.pod.manifest import parse_manifest_with_warnings

CORPUS = Path(__file__).resolve().parents[2] / "data" / "manifests"
VALID = sorted((CORPUS / "valid").glob("*.yaml"))
INVALID = sorted((CORPUS / "invalid").glob("*.yaml"))


def test_the_corpora_are_big_enough() -> None:
    assert len(VALID) >= 60
    assert len(INVALID) >= 30


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_manifest_parses(path: Path) -> None:
    header = path.read_text().splitlines()[:3]
    assert header[0].startswith("# Source: https://github.com/"), "name the source"
    assert header[2].startswith("# License: "), "name the license"
    pods, _ = parse_manifest_with_warnings(path.read_bytes(), str(path))
    assert pods
    for pod in pods:
        assert to_api_object(api_defaults(pod))["spec"]["containers"]


def _expectation(path: Path) -> tuple[str, str]:
    lines = path.read_text().splitlines()
    rule = next(line for line in lines if line.startswith("# Breaks: "))
    expect = next(line for line in lines if line.startswith("# Expect: "))
    return rule.removeprefix("# Breaks: "), expect.removeprefix("# Expect: ")


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_manifest_fails_with_its_rule(path: Path) -> None:
    rule, expect = _expectation(path)
    assert rule
    with pytest.raises(ManifestError) as info:
        parse_manifest_with_warnings(path.read_bytes(), str(path))
    err = info.value
    assert err.source == str(path)
    assert len(err.errors) == 1, err.errors
    assert err.errors[0].startswith(expect), err.errors
