# ruff: noqa: E501  (table rows hold whole manifest fragments and upstream messages)
"""Readiness and scheduling gates, host aliases and topology spread constraints, as upstream's
ValidatePodCreate refuses them (validation_test.go's TestValidateReadinessGates,
TestValidateSchedulingGates, TestValidateHostAliases / TestValidatePodSpec's host alias
cases, TestValidateTopologySpreadConstraints), each refusal exact."""

from __future__ import annotations

import pytest

from runtime.pod.manifest import parse_manifest
from tests.unit.runtime.test_pod_validation import errors, manifest


def case(id_: str, data: bytes, expected: str) -> object:
    return pytest.param(data, expected, id=id_)


TSC = "topologySpreadConstraints: "

CASES = [
    case("readiness gate not a qualified name", manifest("readinessGates: [{conditionType: 'invalid/condition/type'}]"),
         "spec.readinessGates[0].conditionType: Invalid value: \"invalid/condition/type\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
    case("scheduling gate duplicated", manifest("schedulingGates: [{name: foo}, {name: foo}]"), 'spec.schedulingGates[1]: Duplicate value: "foo"'),
    case("scheduling gate with a nodeName", manifest("nodeName: node-1\nschedulingGates: [{name: foo}]"), "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"),
    case("host alias bad IP", manifest("hostAliases: [{ip: 999.1.1.1, hostnames: [h]}]"), 'spec.hostAliases[0].ip: Invalid value: "999.1.1.1": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
    case("host alias bad hostname", manifest("hostAliases: [{ip: 10.0.0.1, hostnames: [Host_1]}]"),
         "spec.hostAliases[0].hostnames[0]: Invalid value: \"Host_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    case("maxSkew zero", manifest(TSC + "[{maxSkew: 0, topologyKey: k8s.io/zone, whenUnsatisfiable: DoNotSchedule}]"), "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"),
    case("empty topologyKey", manifest(TSC + "[{maxSkew: 1, topologyKey: '', whenUnsatisfiable: DoNotSchedule}]"), "spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty"),
    case("bad whenUnsatisfiable", manifest(TSC + "[{maxSkew: 1, topologyKey: k8s.io/zone, whenUnsatisfiable: N/A}]"), 'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "N/A": supported values: "DoNotSchedule", "ScheduleAnyway"'),
    case("repeated constraint", manifest(TSC + "[{maxSkew: 1, topologyKey: k8s.io/zone, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: k8s.io/zone, whenUnsatisfiable: DoNotSchedule}]"),
         'spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{k8s.io/zone, DoNotSchedule}"'),
    case("minDomains zero", manifest(TSC + "[{maxSkew: 1, minDomains: 0, topologyKey: k8s.io/zone, whenUnsatisfiable: DoNotSchedule}]"), "spec.topologySpreadConstraints[0].minDomains: Invalid value: 0: must be greater than zero"),
    case("minDomains with ScheduleAnyway", manifest(TSC + "[{maxSkew: 1, minDomains: 3, topologyKey: k8s.io/zone, whenUnsatisfiable: ScheduleAnyway}]"), "spec.topologySpreadConstraints[0].minDomains: Invalid value: 3: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"),
    case("bad nodeAffinityPolicy", manifest(TSC + "[{maxSkew: 1, topologyKey: k8s.io/zone, whenUnsatisfiable: DoNotSchedule, nodeAffinityPolicy: Always}]"), 'spec.topologySpreadConstraints[0].nodeAffinityPolicy: Unsupported value: "Always": supported values: "Honor", "Ignore"'),
    case("matchLabelKeys without a selector", manifest(TSC + "[{maxSkew: 1, topologyKey: k8s.io/zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [foo]}]"), "spec.topologySpreadConstraints[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
    case("matchLabelKeys in the selector", manifest(TSC + "[{maxSkew: 1, topologyKey: k8s.io/zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [foo], labelSelector: {matchLabels: {foo: bar}}}]"), 'spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: "foo": exists in both matchLabelKeys and labelSelector'),
]


@pytest.mark.parametrize(("data", "expected"), CASES)
def test_upstream_refusal(data: bytes, expected: str) -> None:
    found = errors(data)
    assert expected in found, found


VALID = [
    pytest.param(manifest("readinessGates: [{conditionType: example.com/feature-1}]\nschedulingGates: [{name: example.com/foo}]\nhostAliases: [{ip: '::1', hostnames: [a.b]}]"), id="gates and aliases"),
    pytest.param(manifest(TSC + "[{maxSkew: 1, minDomains: 2, topologyKey: k8s.io/zone, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Honor, matchLabelKeys: [pod-template-hash], labelSelector: {matchLabels: {app: a}}}, {maxSkew: 1, topologyKey: k8s.io/zone, whenUnsatisfiable: ScheduleAnyway}]"), id="topology spread"),
]


@pytest.mark.parametrize("data", VALID)
def test_upstream_accepts(data: bytes) -> None:
    parse_manifest(data, "p.yaml")
