# ruff: noqa: E501  (table rows hold whole manifest fragments and upstream messages)
"""A container's environment as upstream refuses it (validation_test.go's TestValidateEnv,
TestValidateEnvFrom, TestValidateContainerResourceDivisor, TestValidatePodSpec's
serviceAccountName and nodeName cases): key selectors, divisors, one error for the number of
sources, each refusal exact."""

from __future__ import annotations

import pytest

from runtime.pod.manifest import parse_manifest
from tests.unit.runtime.test_pod_validation import errors, manifest


def case(id_: str, data: bytes, expected: str) -> object:
    return pytest.param(data, expected, id=id_)


SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
KEY = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
LABEL = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
E = "spec.containers[0].env[0].valueFrom"


def env(value_from: str, extra: str = "") -> bytes:
    return manifest(container=f"env: [{{name: a{extra}, valueFrom: {value_from}}}]")


def files(ref: str, volume: str = "v", source: str = "emptyDir: {}") -> bytes:
    """An env var from a file in the pod's volume ``volume`` (upstream's EnvFiles)."""
    return manifest(f"volumes: [{{name: {volume}, {source}}}]",
                    container=f"env: [{{name: A, valueFrom: {{fileKeyRef: {ref}}}}}]")


def res(resource: str, divisor: str) -> bytes:
    return env(f"{{resourceFieldRef: {{resource: {resource}, divisor: '{divisor}'}}}}")


CASES = [
    case("configMapKeyRef key with a space", env("{configMapKeyRef: {name: cm, key: 'a b'}}"), f'{E}.configMapKeyRef.key: Invalid value: "a b": ' + KEY),
    case("secretKeyRef key '..'", env("{secretKeyRef: {name: s, key: '..'}}"), f"{E}.secretKeyRef.key: Invalid value: \"..\": must not be '..'"),
    case("secretKeyRef key starting with '..'", env("{secretKeyRef: {name: s, key: '..a'}}"), f"{E}.secretKeyRef.key: Invalid value: \"..a\": must not start with '..'"),
    case("configMapKeyRef key too long", env("{configMapKeyRef: {name: cm, key: " + "k" * 254 + "}}"), f'{E}.configMapKeyRef.key: Invalid value: "{"k" * 254}": must be no more than 253 characters'),
    case("configMapKeyRef without a name", env("{configMapKeyRef: {key: k}}"), f'{E}.configMapKeyRef.name: Invalid value: "": ' + SUBDOMAIN),
    case("secretKeyRef name with capitals", env("{secretKeyRef: {name: Secret, key: k}}"), f'{E}.secretKeyRef.name: Invalid value: "Secret": ' + SUBDOMAIN),
    case("cpu divisor", res("limits.cpu", "1Mi"), f'{E}.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor\'s values 1m and 1 are supported with the cpu resource'),
    case("memory divisor", res("requests.memory", "2Mi"), f'{E}.resourceFieldRef.divisor: Invalid value: "requests.memory": only divisor\'s values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource'),
    case("ephemeral storage divisor", res("limits.ephemeral-storage", "1m"), f'{E}.resourceFieldRef.divisor: Invalid value: "limits.ephemeral-storage": only divisor\'s values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource'),
    case("hugepages divisor", res("limits.hugepages-2Mi", "3"), f'{E}.resourceFieldRef.divisor: Invalid value: "limits.hugepages-2Mi": only divisor\'s values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource'),
    case("volume divisor", manifest("volumes: [{name: d, downwardAPI: {items: [{path: p, resourceFieldRef: {containerName: c, resource: limits.cpu, divisor: 10m}}]}}]"),
         'spec.volumes[0].downwardAPI.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor\'s values 1m and 1 are supported with the cpu resource'),
    case("fieldRef of another API version", env("{fieldRef: {apiVersion: v2, fieldPath: metadata.name}}"), f'{E}.fieldRef.fieldPath: Invalid value: "metadata.name": error converting fieldPath: unsupported pod version: v2'),
    case("annotation subscript, in any case", env("{fieldRef: {fieldPath: \"metadata.annotations['A/B/C']\"}}"), f'{E}.fieldRef: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, \'-\', \'_\' or \'.\', and must start and end with an alphanumeric character (e.g. \'MyName\',  or \'my.name\',  or \'123-abc\', regex used for validation is \'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\') with an optional DNS subdomain prefix and \'/\' (e.g. \'example.com/MyName\')'),
    case("envFrom name with capitals", manifest(container="envFrom: [{configMapRef: {name: Cm}}]"), 'spec.containers[0].envFrom[0].configMapRef.name: Invalid value: "Cm": ' + SUBDOMAIN),
    case("fileKeyRef key not an env name", files("{volumeName: v, path: a.env, key: 'A=B'}"), f"{E}.fileKeyRef.key: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='"),
    case("fileKeyRef empty key", files("{volumeName: v, path: a.env, key: ''}"), f"{E}.fileKeyRef.key: Required value"),
    case("fileKeyRef volumeName not a label", files("{volumeName: V_1, path: a.env, key: K}", volume="V_1"), f'{E}.fileKeyRef.volumeName: Invalid value: "V_1": ' + LABEL),
    case("fileKeyRef empty volumeName", files("{volumeName: '', path: a.env, key: K}"), f"{E}.fileKeyRef.volumeName: Required value"),
    case("fileKeyRef empty path", files("{volumeName: v, path: '', key: K}"), f"{E}.fileKeyRef.path: Required value"),
    case("fileKeyRef path with a backstep", files("{volumeName: v, path: 'a/../b.env', key: K}"), f'{E}.fileKeyRef.path: Invalid value: "a/../b.env": must not contain \'..\''),
    case("fileKeyRef volume not in the pod", files("{volumeName: w, path: a.env, key: K}"), f'{E}.fileKeyRef.volumeName: Not found: "w"'),
    case("fileKeyRef volume not an emptyDir", files("{volumeName: v, path: a.env, key: K}", source="hostPath: {path: /tmp}"), f'{E}.fileKeyRef.volumeName: Invalid value: "v": referenced volume must be of type emptyDir'),
    case("fileKeyRef in an init container", manifest("volumes: [{name: v, hostPath: {path: /tmp}}]\ninitContainers:\n- {name: i, image: 'b:1', env: [{name: A, valueFrom: {fileKeyRef: {volumeName: v, path: a.env, key: K}}}]}"),
         'spec.initContainers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "v": referenced volume must be of type emptyDir'),
    case("fileKeyRef with another source", files("{volumeName: v, path: a.env, key: K}, secretKeyRef: {name: s, key: k}"), f'{E}: Invalid value: "": may not have more than one field specified at a time'),
    case("serviceAccountName not a subdomain", manifest("serviceAccountName: Bad_Name"), 'spec.serviceAccountName: Invalid value: "Bad_Name": ' + SUBDOMAIN),
    case("nodeName not a subdomain", manifest("nodeName: node_1"), 'spec.nodeName: Invalid value: "node_1": ' + SUBDOMAIN),
]


@pytest.mark.parametrize(("data", "expected"), CASES)
def test_upstream_refusal(data: bytes, expected: str) -> None:
    found = errors(data)
    assert expected in found, found


def test_value_and_two_sources_is_one_error() -> None:
    """upstream reports the value first and stops there."""
    found = errors(manifest(container="env: [{name: a, value: x, valueFrom: {fieldRef: {fieldPath: metadata.name}, secretKeyRef: {name: s, key: k}}}]"))
    assert found == (f'{E}: Invalid value: "": may not be specified when `value` is not empty',)


def test_an_empty_key_is_only_required() -> None:
    """upstream checks the key's form only when there is a key."""
    found = errors(env("{configMapKeyRef: {name: cm, key: ''}}"))
    assert found == (f"{E}.configMapKeyRef.key: Required value",)


VALID = [
    pytest.param(res("limits.memory", "1Mi"), id="memory divisor"),
    pytest.param(res("requests.cpu", "1000m"), id="cpu divisor written long"),
    pytest.param(env("{secretKeyRef: {name: s, key: .dotfile}}"), id="key starting with a dot"),
    pytest.param(manifest(container="envFrom: [{configMapRef: {name: cm-}, prefix: P_}]"), id="envFrom name ending in a dash"),
    pytest.param(manifest("imagePullSecrets: [{}]"), id="pull secret without a name"),
    pytest.param(files("{volumeName: v, path: /abs/a.env, key: 'lower.case-key'}"), id="fileKeyRef with an absolute path and a relaxed key"),
    pytest.param(files("{volumeName: v, path: 'a\\\\..\\\\b', key: K}"), id="fileKeyRef path with backslashes (no separator on Linux)"),
]


@pytest.mark.parametrize("data", VALID)
def test_upstream_accepts(data: bytes) -> None:
    parse_manifest(data, "p.yaml")
