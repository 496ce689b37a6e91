# ruff: noqa: E501  (table rows hold whole manifest fragments and upstream messages)
"""Compute resources as upstream refuses them (validation_test.go's
TestValidateResourceRequirements, TestValidateResizePolicy, TestValidatePodResourceConsistency,
TestValidatePodSpec's overhead, preemption and resource claim cases,
TestValidateResourceClaimNames): the names, whole hugepages, the resize policy, the pod's own
resources and overhead, each refusal exact."""

from __future__ import annotations

import pytest

from runtime.pod.manifest import parse_manifest
from tests.unit.runtime.test_pod_validation import errors, manifest


def case(id_: str, data: bytes, expected: str) -> object:
    return pytest.param(data, expected, id=id_)


QUALIFIED = "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
R = "spec.containers[0].resources"
POD_RES = "resources: {requests: {cpu: '1', memory: 1Gi}, limits: {cpu: '2', memory: 2Gi}}"


def resources(text: str) -> bytes:
    return manifest(container="resources: " + text)


def resize(text: str, spec: str = "") -> bytes:
    return manifest(spec, container="resizePolicy: " + text)


def res_divisor(divisor: str) -> bytes:
    return manifest(container=f"env: [{{name: A, valueFrom: {{resourceFieldRef: {{resource: limits.cpu, divisor: '{divisor}'}}}}}}]")


CASES = [
    case("unknown unprefixed resource", resources("{limits: {foo: '1'}}"),
         f'{R}.limits[foo]: Invalid value: "foo": must be a standard resource type or fully qualified'),
    case("unknown unprefixed resource, for containers", resources("{limits: {foo: '1'}}"),
         f'{R}.limits[foo]: Invalid value: "foo": must be a standard resource for containers'),
    case("a quota resource in a container", resources("{requests: {requests.cpu: '1'}}"),
         f'{R}.requests[requests.cpu]: Invalid value: "requests.cpu": must be a standard resource for containers'),
    case("extended resource named as a request", resources("{limits: {requests.example.com/foo: '1'}}"),
         f'{R}.limits[requests.example.com/foo]: Invalid value: "requests.example.com/foo": doesn\'t follow extended resource name standard'),
    case("hugepages not whole pages", resources("{limits: {hugepages-2Mi: 3Mi, memory: 1Gi}, requests: {hugepages-2Mi: 3Mi, memory: 1Gi}}"),
         f'{R}.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi'),
    case("hugepages of no size", resources("{limits: {hugepages-foo: 2Mi, memory: 1Gi}, requests: {hugepages-foo: 2Mi, memory: 1Gi}}"),
         f'{R}.requests[hugepages-foo]: Invalid value: "2Mi": 2Mi is not positive integer multiple of hugepages-foo'),
    case("resize policy twice", resize("[{resourceName: cpu, restartPolicy: NotRequired}, {resourceName: cpu, restartPolicy: RestartContainer}]"),
         'spec.containers[0].resizePolicy[1]: Duplicate value: "cpu"'),
    case("resize policy of an unknown resource", resize("[{resourceName: storage, restartPolicy: NotRequired}]"),
         'spec.containers[0].resizePolicy: Unsupported value: "storage": supported values: "cpu", "memory"'),
    case("resize policy without a resource", resize("[{resourceName: '', restartPolicy: NotRequired}]"),
         "spec.containers[0].resizePolicy: Required value"),
    case("resize policy of an unknown policy", resize("[{resourceName: memory, restartPolicy: Restart}]"),
         'spec.containers[0].resizePolicy: Unsupported value: "Restart": supported values: "NotRequired", "RestartContainer"'),
    case("restarting resize in a never-restarting pod", resize("[{resourceName: memory, restartPolicy: RestartContainer}]", "restartPolicy: Never"),
         "spec.containers[0].resizePolicy: Invalid value: \"RestartContainer\": must be 'NotRequired' when pod `restartPolicy` is 'Never'"),
    case("restarting resize in a plain init container", manifest("initContainers: [{name: i, image: 'b:1', resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}, {resourceName: memory, restartPolicy: RestartContainer}]}]"),
         "spec.initContainers[0].resizePolicy[1].restartPolicy: Invalid value: \"RestartContainer\": must not be set to 'RestartContainer' for non-sidecar initContainers"),
    case("negative quantity, canonical", resources("{limits: {cpu: '-0.5'}}"),
         f'{R}.limits[cpu]: Invalid value: "-500m": must be greater than or equal to 0'),
    case("request above its limit, canonical", resources("{limits: {cpu: '0.5'}, requests: {cpu: '1000m'}}"),
         f'{R}.requests: Invalid value: "1": must be less than or equal to cpu limit of 500m'),
    case("hugepages request unlike its limit, canonical", resources("{limits: {hugepages-2Mi: 4096Ki, memory: 1Gi}, requests: {hugepages-2Mi: 2Mi, memory: 1Gi}}"),
         f'{R}.requests: Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi'),
    case("hugepages not whole pages, canonical", resources("{limits: {hugepages-2Mi: 3072Ki, memory: 1Gi}, requests: {hugepages-2Mi: 3072Ki, memory: 1Gi}}"),
         f'{R}.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi'),
    case("extended resource not whole, canonical", resources("{limits: {example.com/dongle: '1.5'}, requests: {example.com/dongle: '1.5'}}"),
         f"{R}.limits[example.com/dongle]: Invalid value: 1500m: must be an integer"),
    case("pod-level request under the containers', canonical", manifest("resources: {requests: {cpu: '0.1'}}", container="resources: {requests: {cpu: 200m}}"),
         'spec.resources.requests[cpu]: Invalid value: "100m": must be greater than or equal to aggregate container requests of 200m'),
    case("a container limit above the pod's, canonical", manifest("resources: {limits: {memory: 1048576Ki}}", container="resources: {limits: {memory: 2048Mi}}"),
         'spec.resources.containers[0][memory].limits: Invalid value: "2Gi": must be less than or equal to pod limits of 1Gi'),
    case("divisor written with an exponent", res_divisor("1e-3"),
         'spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor\'s values 1m and 1 are supported with the cpu resource'),
    case("pod-level claims", manifest("resources: {claims: [{name: a}]}"),
         "spec.resources.claims: Forbidden: claims cannot be set for Resources at pod-level"),
    case("pod-level storage", manifest("resources: {limits: {ephemeral-storage: 1Gi}}"),
         'spec.resources.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "memory"'),
    case("pod-level request above its limit", manifest("resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}"),
         'spec.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'),
    case("containers requesting more than the pod", manifest(POD_RES + "\ncontainers: [{name: a, image: 'b:1', resources: {requests: {cpu: 600m}}}, {name: b, image: 'b:1', resources: {requests: {cpu: 500m}}}]"),
         'spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container requests of 1100m'),
    case("an init container requesting more than the pod", manifest(POD_RES + "\ninitContainers: [{name: i, image: 'b:1', resources: {requests: {memory: 3Gi}}}]"),
         'spec.resources.requests[memory]: Invalid value: "1Gi": must be greater than or equal to aggregate container requests of 3Gi'),
    case("a container limit above the pod's", manifest(POD_RES, container="resources: {limits: {memory: 3Gi}}"),
         'spec.resources.containers[0][memory].limits: Invalid value: "3Gi": must be less than or equal to pod limits of 2Gi'),
    case("overhead not a resource", manifest("overhead: {'a/b/c': '1'}"),
         'spec.overhead.limits[a/b/c]: Invalid value: "a/b/c": ' + QUALIFIED),
    case("negative overhead", manifest("overhead: {cpu: '-1'}"),
         'spec.overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0'),
    case("empty preemption policy", manifest("preemptionPolicy: ''"), "spec.preemptionPolicy: Required value"),
    case("unknown preemption policy", manifest("preemptionPolicy: Always"),
         'spec.preemptionPolicy: Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"'),
    case("pod claim without a name", manifest("resourceClaims: [{name: '', resourceClaimName: x}]"),
         "spec.resourceClaims[0].name: Required value"),
    case("pod claim twice", manifest("resourceClaims: [{name: a, resourceClaimName: x}, {name: a, resourceClaimName: y}]"),
         'spec.resourceClaims[1].name: Duplicate value: "a"'),
    case("pod claim name with dots", manifest("resourceClaims: [{name: a.b, resourceClaimName: x}]"),
         'spec.resourceClaims[0].name: Invalid value: "a.b": must not contain dots'),
    case("pod claim naming both", manifest("resourceClaims: [{name: a, resourceClaimName: x, resourceClaimTemplateName: y}]"),
         'spec.resourceClaims[0]: Invalid value: "": at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified'),
    case("pod claim naming neither", manifest("resourceClaims: [{name: a}]"),
         'spec.resourceClaims[0]: Invalid value: "": must specify one of: `resourceClaimName`, `resourceClaimTemplateName`'),
    case("pod claim naming a bad template", manifest("resourceClaims: [{name: a, resourceClaimTemplateName: X_Y}]"),
         'spec.resourceClaims[0].resourceClaimTemplateName: Invalid value: "X_Y": ' + SUBDOMAIN),
    case("whole claim after one of its requests", manifest("resourceClaims: [{name: a, resourceClaimName: x}]", container="resources: {claims: [{name: a, request: r}, {name: a}]}"),
         'spec.containers[0].resources.claims[1]: Duplicate value: "a"'),
    case("a request after the whole claim", manifest("resourceClaims: [{name: a, resourceClaimName: x}]", container="resources: {claims: [{name: a}, {name: a, request: r}]}"),
         'spec.containers[0].resources.claims[1]: Duplicate value: "a"'),
    case("the same request twice", manifest("resourceClaims: [{name: a, resourceClaimName: x}]", container="resources: {claims: [{name: a, request: r}, {name: a, request: r}]}"),
         'spec.containers[0].resources.claims[1]: Duplicate value: "a/r"'),
    case("request with dots", manifest("resourceClaims: [{name: a, resourceClaimName: x}]", container="resources: {claims: [{name: a, request: r.s}]}"),
         'spec.containers[0].resources.claims[0].request: Invalid value: "r.s": must not contain dots'),
]


@pytest.mark.parametrize(("data", "expected"), CASES)
def test_upstream_refusal(data: bytes, expected: str) -> None:
    found = errors(data)
    assert expected in found, found


VALID = [
    pytest.param(resources("{limits: {hugepages-2Mi: 4Mi, memory: 1Gi, example.com/dongle: '2', kubernetes.io/foo: 500m}, requests: {hugepages-2Mi: 4Mi, memory: 1Gi, example.com/dongle: '2'}}"), id="hugepages and extended resources"),
    pytest.param(resize("[{resourceName: cpu, restartPolicy: NotRequired}, {resourceName: memory, restartPolicy: RestartContainer}]"), id="resize policy"),
    pytest.param(manifest("initContainers: [{name: s, image: 'b:1', restartPolicy: Always, resizePolicy: [{resourceName: memory, restartPolicy: RestartContainer}]}]"), id="a sidecar restarting to resize"),
    pytest.param(res_divisor("1000m"), id="cpu divisor 1000m is 1"),
    pytest.param(res_divisor("1e0"), id="cpu divisor 1e0 is 1"),
    pytest.param(manifest(POD_RES + "\ninitContainers: [{name: s, image: 'b:1', restartPolicy: Always, resources: {requests: {cpu: 500m}}}, {name: i, image: 'b:1', resources: {requests: {cpu: 500m}}}]\ncontainers: [{name: a, image: 'b:1', resources: {requests: {cpu: 500m, ephemeral-storage: 1Gi}, limits: {cpu: '2'}}}]"), id="pod-level resources"),
    pytest.param(manifest("overhead: {cpu: 250m, memory: 120Mi}\npreemptionPolicy: Never"), id="overhead and preemption"),
    pytest.param(manifest("resourceClaims: [{name: a, resourceClaimName: x}, {name: b, resourceClaimTemplateName: t}]"), id="pod claims"),
]


@pytest.mark.parametrize("data", VALID)
def test_upstream_accepts(data: bytes) -> None:
    parse_manifest(data, "p.yaml")
