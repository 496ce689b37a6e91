# ruff: noqa: E501  (table rows hold whole manifest fragments and upstream messages)
"""The pod's metadata as upstream's ValidateObjectMeta refuses it (apimachinery's
objectmeta_test.go: TestValidateObjectMetaOwnerReferences, TestValidateFinalizersUpdate's
create cases, TestValidateAnnotations; core's validateKubeFinalizerName), each refusal
exact."""

from __future__ import annotations

import pytest

from runtime.pod.manifest import parse_manifest
from tests.unit.runtime.test_pod_validation import errors, manifest


def case(id_: str, data: bytes, expected: str) -> object:
    return pytest.param(data, expected, id=id_)


def meta(text: str) -> bytes:
    return manifest(metadata="name: p\n" + text)


OWNER = "ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u1"
SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
QUALIFIED = "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"

CASES = [
    case("generateName not a subdomain", meta("generateName: Foo-"),
         "metadata.generateName: Invalid value: \"Foo-\": " + SUBDOMAIN),
    case("negative generation", meta("generation: -1"),
         "metadata.generation: Invalid value: -1: must be greater than or equal to 0"),
    case("annotations over 256 KiB", meta("annotations: {a: '" + "x" * (256 * 1024) + "'}"),
         "metadata.annotations: Too long: may not be more than 262144 bytes"),
    case("annotation key with two slashes", meta("annotations: {'a/b/c': x}"),
         'metadata.annotations: Invalid value: "a/b/c": ' + QUALIFIED),
    case("owner without a version", meta("ownerReferences: [{apiVersion: apps/, kind: ReplicaSet, name: rs, uid: u1}]"),
         'metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty'),
    case("owner with a bad apiVersion", meta("ownerReferences: [{apiVersion: a/b/c, kind: ReplicaSet, name: rs, uid: u1}]"),
         'metadata.ownerReferences.apiVersion: Invalid value: "a/b/c": version must not be empty'),
    case("owner without a kind", meta("ownerReferences: [{apiVersion: v1, kind: '', name: rs, uid: u1}]"),
         'metadata.ownerReferences.kind: Invalid value: "": must not be empty'),
    case("owner without a name", meta("ownerReferences: [{apiVersion: v1, kind: Node, name: '', uid: u1}]"),
         'metadata.ownerReferences.name: Invalid value: "": must not be empty'),
    case("owner without a uid", meta("ownerReferences: [{apiVersion: v1, kind: Node, name: n, uid: ''}]"),
         'metadata.ownerReferences.uid: Invalid value: "": must not be empty'),
    case("an Event as owner", meta("ownerReferences: [{apiVersion: v1, kind: Event, name: e, uid: u1}]"),
         'metadata.ownerReferences: Invalid value: "": /v1, Kind=Event is disallowed from being an owner'),
    case("two controllers", meta(OWNER + ", controller: true}, {apiVersion: apps/v1, kind: ReplicaSet, name: rs2, uid: u2, controller: true}]"),
         'metadata.ownerReferences: Invalid value: "": Only one reference can have Controller set to true. Found "true" in references for ReplicaSet/rs and ReplicaSet/rs2'),
    case("finalizer not a qualified name", meta("finalizers: ['a/b/c']"),
         'metadata.finalizers: Invalid value: "a/b/c": ' + QUALIFIED),
    case("finalizer without a domain", meta("finalizers: [cleanup]"),
         'metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified'),
    case("orphan and foregroundDeletion", meta("finalizers: [orphan, foregroundDeletion]"),
         'metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and foregroundDeletion cannot be both set'),
    case("managedFields operation unknown", meta("managedFields: [{manager: kubectl, operation: Patch}]"),
         'metadata.managedFields[0].operation: Invalid value: "Patch": must be `Apply` or `Update`'),
    case("managedFields operation missing", meta("managedFields: [{manager: kubectl}]"),
         'metadata.managedFields[0].operation: Invalid value: "": must be `Apply` or `Update`'),
    case("managedFields fieldsType other than FieldsV1", meta("managedFields: [{manager: m, operation: Apply}, {manager: m, operation: Update, fieldsType: FieldsV2}]"),
         'metadata.managedFields[1].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`'),
    case("managedFields manager too long", meta(f"managedFields: [{{manager: {'m' * 129}, operation: Apply}}]"),
         "metadata.managedFields[0].manager: Too long: may not be more than 128 bytes"),
    case("managedFields manager with a control character", meta('managedFields: [{manager: "k\\u00e9\\u0007", operation: Apply}]'),
         'metadata.managedFields[0].manager: Invalid value: "k\u00e9\\a": invalid character U+0007 (at position 3)'),
    case("managedFields manager with a no-break space", meta('managedFields: [{manager: "a\\u00a0b", operation: Apply}]'),
         'metadata.managedFields[0].manager: Invalid value: "a\\u00a0b": invalid character U+00A0 (at position 1)'),
    case("managedFields subresource too long", meta(f"managedFields: [{{manager: m, operation: Update, subresource: {'s' * 257}}}]"),
         "metadata.managedFields[0].subresource: Too long: may not be more than 256 bytes"),
    case("namespace with dots", meta("namespace: a.b"), 'metadata.namespace: Invalid value: "a.b": must not contain dots'),
]


@pytest.mark.parametrize(("data", "expected"), CASES)
def test_upstream_refusal(data: bytes, expected: str) -> None:
    found = errors(data)
    assert expected in found, found


VALID = [
    pytest.param(meta("generateName: web-"), id="generateName ending in a dash"),
    pytest.param(meta("annotations: {Example.COM/Key: v}"), id="annotation key in capitals"),
    pytest.param(meta(OWNER + ", controller: true, blockOwnerDeletion: true}]"), id="owner reference"),
    pytest.param(meta("finalizers: [kubernetes, orphan, example.com/cleanup]"), id="finalizers"),
]


@pytest.mark.parametrize("data", VALID)
def test_upstream_accepts(data: bytes) -> None:
    parse_manifest(data, "p.yaml")
