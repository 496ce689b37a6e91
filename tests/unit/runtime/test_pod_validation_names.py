# ruff: noqa: E501  (table rows hold whole manifest fragments and upstream messages)
"""Names as upstream's apimachinery validation words them: IsDNS1123Label,
IsDNS1123Subdomain and IsQualifiedName return every cause (the length and the form apart),
and upstream reports each as its own error; lengths are Go's, in bytes."""

from __future__ import annotations

import pytest

from runtime.pod.validation.fields import label_faults, subdomain_faults
from tests.unit.runtime.test_pod_validation import errors, manifest

LABEL = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
QUALIFIED_NAME = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
LONG_BAD_LABEL = "A" * 64
LONG_BAD_SUBDOMAIN = "A" * 254


def both(path: str, value: str, *why: str) -> tuple[str, ...]:
    return tuple(f'{path}: Invalid value: "{value}": {w}' for w in why)


CASES = [
    pytest.param(manifest(f"containers:\n- {{name: {LONG_BAD_LABEL}, image: 'b:1'}}"),
                 both("spec.containers[0].name", LONG_BAD_LABEL, "must be no more than 63 characters", LABEL), id="container name"),
    pytest.param(manifest(f"volumes: [{{name: {LONG_BAD_LABEL}, emptyDir: {{}}}}]"),
                 both("spec.volumes[0].name", LONG_BAD_LABEL, "must be no more than 63 characters", LABEL), id="volume name"),
    pytest.param(manifest(f"hostname: {LONG_BAD_LABEL}"),
                 both("spec.hostname", LONG_BAD_LABEL, "must be no more than 63 characters", LABEL), id="hostname"),
    pytest.param(manifest(metadata=f"name: p\nnamespace: {LONG_BAD_LABEL}"),
                 both("metadata.namespace", LONG_BAD_LABEL, "must be no more than 63 characters", LABEL), id="namespace"),
    pytest.param(manifest(metadata=f"name: {LONG_BAD_SUBDOMAIN}"),
                 both("metadata.name", LONG_BAD_SUBDOMAIN, "must be no more than 253 characters", SUBDOMAIN), id="pod name"),
    pytest.param(manifest(f"nodeName: {LONG_BAD_SUBDOMAIN}"),
                 both("spec.nodeName", LONG_BAD_SUBDOMAIN, "must be no more than 253 characters", SUBDOMAIN), id="node name"),
    pytest.param(manifest(metadata="name: p\nlabels: {'example.com/': v}"),
                 both("metadata.labels", "example.com/", "name part must be non-empty", QUALIFIED_NAME), id="label key with an empty name part"),
    pytest.param(manifest(metadata=f"name: p\nlabels: {{'{'A' * 64}_': v}}"),
                 both("metadata.labels", "A" * 64 + "_", "name part must be no more than 63 characters", QUALIFIED_NAME), id="label key too long and ill-formed"),
]


@pytest.mark.parametrize(("data", "expected"), CASES)
def test_length_and_form_are_two_errors(data: bytes, expected: tuple[str, ...]) -> None:
    found = errors(data)
    at = found.index(expected[0])
    assert found[at:at + len(expected)] == expected, found


def test_a_label_prefix_reports_each_subdomain_fault() -> None:
    """IsQualifiedName's prefix: each of IsDNS1123Subdomain's causes, prefixed."""
    prefix = "P" * 254
    found = errors(manifest(metadata=f"name: p\nlabels: {{'{prefix}/a': v}}"))
    assert both("metadata.labels", f"{prefix}/a", "prefix part must be no more than 253 characters",
                f"prefix part {SUBDOMAIN}") == found[:2], found


def test_lengths_are_counted_in_bytes() -> None:
    """Go's len() is bytes: 32 two-byte letters are too long for a label, 127 for a
    subdomain, though Python counts fewer characters."""
    assert label_faults("é" * 32) == ("must be no more than 63 characters", LABEL)
    assert subdomain_faults("é" * 127) == ("must be no more than 253 characters", SUBDOMAIN)
    assert label_faults("a" * 63) == ()
    assert label_faults("a.b") == ("must not contain dots",)
