# ruff: noqa: E501  (table rows hold whole manifest fragments and upstream messages)
"""The deprecated scheduler.alpha.kubernetes.io/tolerations annotation, as upstream's
ValidatePodSpecificAnnotations still checks it on create (ValidateTolerationsInPodAnnotations):
json.Unmarshal into []core.Toleration, whose failure is reported at the annotations with the
key as the value and Go's own words, then ValidateTolerations at ``annotations.<key>``."""

from __future__ import annotations

import json

import pytest

from runtime.pod.manifest import parse_manifest
from tests.unit.runtime.test_pod_validation import errors, manifest

KEY = "scheduler.alpha.kubernetes.io/tolerations"
AT = f'metadata.annotations: Invalid value: "{KEY}": '
T = f"metadata.annotations.{KEY}[0]"


def annotated(text: str) -> bytes:
    return manifest(metadata=f"name: p\nannotations: {{{KEY}: {json.dumps(text)}}}")


CASES = [
    pytest.param('[{"key": "k", "operator": "Exists", "value": "v"}]', f"{T}.operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'", id="Exists with a value"),
    pytest.param('[{"operator": "Equal"}]', f'{T}.operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"', id="no key, not Exists"),
    pytest.param('[{"KEY": "k", "Effect": "Evict"}]', f'{T}.effect: Unsupported value: "Evict": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"', id="keys in any case"),
    pytest.param('[{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]', f"{T}.effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set", id="seconds without NoExecute"),
    pytest.param('{"key": "k"}', AT + "json: cannot unmarshal object into Go value of type []core.Toleration", id="an object, not a list"),
    pytest.param('["k"]', AT + "json: cannot unmarshal string into Go value of type core.Toleration", id="a string element"),
    pytest.param('[{"key": 1}]', AT + "json: cannot unmarshal number into Go struct field Toleration.Key of type string", id="a number key"),
    pytest.param('[{"operator": true}]', AT + "json: cannot unmarshal bool into Go struct field Toleration.Operator of type core.TolerationOperator", id="a bool operator"),
    pytest.param('[{"tolerationSeconds": 1.5}]', AT + "json: cannot unmarshal number 1.5 into Go struct field Toleration.TolerationSeconds of type int64", id="fractional seconds"),
    pytest.param('[{"tolerationSeconds": "5"}]', AT + "json: cannot unmarshal string into Go struct field Toleration.TolerationSeconds of type int64", id="seconds as a string"),
    pytest.param('[{"key": "k"}', AT + "unexpected end of JSON input", id="truncated"),
    pytest.param("[{'key': 'k'}]", AT + "invalid character '\\'' looking for beginning of object key string", id="single quotes"),
    pytest.param('[{"key" "k"}]', AT + "invalid character '\"' after object key", id="no colon"),
    pytest.param('[{"key": "k" "effect": "NoSchedule"}]', AT + "invalid character '\"' after object key:value pair", id="no comma in an object"),
    pytest.param('[{"key": "k"} {}]', AT + "invalid character '{' after array element", id="no comma in a list"),
    pytest.param("[NaN]", AT + "invalid character 'N' looking for beginning of value", id="NaN"),
    pytest.param("[tru]", AT + "invalid character ']' in literal true (expecting 'e')", id="a broken literal"),
    pytest.param("[1.]", AT + "invalid character ']' after decimal point in numeric literal", id="a broken number"),
    pytest.param('[{"key": "a\\q"}]', AT + "invalid character 'q' in string escape code", id="a bad escape"),
    pytest.param("[] x", AT + "invalid character 'x' after top-level value", id="text after the list"),
    pytest.param('[null, {"operator": "Exists"}]', f'{T}.operator: Invalid value: "": operator must be Exists when `key` is empty, which means "match all values and all keys"', id="a null element is a zero toleration"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_upstream_refusal(text: str, expected: str) -> None:
    found = errors(annotated(text))
    assert found == (expected,), found


@pytest.mark.parametrize("text", [
    "", "null", "[]",
    '[{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300, "unknown": [1]}]',
])
def test_upstream_accepts(text: str) -> None:
    parse_manifest(annotated(text), "p.yaml")


def test_a_deeply_nested_annotation_is_refused_not_a_crash() -> None:
    assert errors(annotated("[" * 20000)) == (AT + "exceeded max depth",)
