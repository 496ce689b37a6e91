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

NA = "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [%s]}}}"
NAP = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
PA = "affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [%s]}}"
PAP = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
LABEL_VALUE = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
QUALIFIED = "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
SEARCH = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')"

CASES += [
    case("toleration Gt with its gate off", manifest("tolerations: [{key: k, operator: Gt, value: '5', effect: NoSchedule}]"), 'spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", "Exists"'),
    case("toleration Equal value not a label value", manifest("tolerations: [{key: k, operator: Equal, value: 'a b'}]"), 'spec.tolerations[0].operator: Invalid value: "a b": ' + LABEL_VALUE),
    case("toleration bad effect", manifest("tolerations: [{key: k, operator: Exists, effect: NoAdmit}]"), 'spec.tolerations[0].effect: Unsupported value: "NoAdmit": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'),
    case("required node affinity value not a label value", manifest(NA % "{matchExpressions: [{key: k, operator: In, values: ['a b']}]}"), f'{NAP}.matchExpressions[0].values[0]: Invalid value: "a b": ' + LABEL_VALUE),
    case("matchFields on a label", manifest(NA % "{matchFields: [{key: metadata.labels, operator: In, values: [n]}]}"), f'{NAP}.matchFields[0].key: Invalid value: "metadata.labels": not a valid field selector key'),
    case("matchFields with two values", manifest(NA % "{matchFields: [{key: metadata.name, operator: In, values: [a, b]}]}"), f"{NAP}.matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"),
    case("matchFields with Exists", manifest(NA % "{matchFields: [{key: metadata.name, operator: Exists}]}"), f'{NAP}.matchFields[0].operator: Invalid value: "Exists": not a valid selector operator'),
    case("matchFields naming no node", manifest(NA % "{matchFields: [{key: metadata.name, operator: In, values: [Node_1]}]}"), f'{NAP}.matchFields[0].values[0]: Invalid value: "Node_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. \'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')'),
    case("pod affinity without a topologyKey", manifest(PA % "{labelSelector: {matchLabels: {a: b}}, topologyKey: ''}"), f"{PAP}.topologyKey: Required value: can not be empty"),
    case("pod affinity topologyKey not a qualified name", manifest(PA % "{topologyKey: 'a/b/c'}"), f'{PAP}.topologyKey: Invalid value: "a/b/c": ' + QUALIFIED),
    case("pod affinity selector operator", manifest(PA % "{labelSelector: {matchExpressions: [{key: a, operator: Gt, values: ['1']}]}, topologyKey: zone}"), f'{PAP}.labelSelector.matchExpressions[0].operator: Invalid value: "Gt": not a valid selector operator'),
    case("pod affinity selector In without values", manifest(PA % "{labelSelector: {matchExpressions: [{key: a, operator: In}]}, topologyKey: zone}"), f"{PAP}.labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    case("pod affinity selector value", manifest(PA % "{labelSelector: {matchLabels: {a: 'b c'}}, topologyKey: zone}"), f'{PAP}.labelSelector.matchLabels: Invalid value: "b c": ' + LABEL_VALUE),
    case("pod affinity namespace selector Exists with values", manifest(PA % "{namespaceSelector: {matchExpressions: [{key: a, operator: Exists, values: [x]}]}, topologyKey: zone}"), f"{PAP}.namespaceSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
    case("pod affinity namespace not a label", manifest(PA % "{namespaces: [a.b], topologyKey: zone}"), f'{PAP}.namespace: Invalid value: "a.b": must not contain dots'),
    case("pod affinity matchLabelKeys without selector", manifest(PA % "{matchLabelKeys: [a], topologyKey: zone}"), f"{PAP}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
    case("pod affinity key in both lists", manifest(PA % "{labelSelector: {matchLabels: {x: y}}, matchLabelKeys: [a], mismatchLabelKeys: [a], topologyKey: zone}"), f'{PAP}.matchLabelKeys[0]: Invalid value: "a": exists in both matchLabelKeys and mismatchLabelKeys'),
    case("pod affinity key in list and selector", manifest(PA % "{labelSelector: {matchLabels: {a: y}, matchExpressions: [{key: a, operator: In, values: [z]}]}, matchLabelKeys: [a], topologyKey: zone}"), f'{PAP}[0]: Invalid value: "a": exists in both matchLabelKeys and labelSelector'),
    case("pod anti-affinity weight", manifest("affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 101, podAffinityTerm: {topologyKey: zone}}]}}"), "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100"),
    case("topology spread selector value", manifest(TSC + "[{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchExpressions: [{key: a, operator: In, values: ['-x']}]}}]"), 'spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].values[0]: Invalid value: "-x": ' + LABEL_VALUE),
    case("search list over 2048 characters", manifest("dnsConfig: {searches: [" + ", ".join(["a" * 253] * 9) + "]}"), "spec.dnsConfig.searches: Invalid value: []string{" + ", ".join(['"' + "a" * 253 + '"'] * 9) + "}: must not have more than 2048 characters (including spaces) in the search list"),
    case("search with a capital", manifest("dnsConfig: {searches: [Example.com.]}"), 'spec.dnsConfig.searches[0]: Invalid value: "Example.com": ' + SEARCH),
    case("dns option without a name", manifest("dnsConfig: {options: [{value: '2'}]}"), "spec.dnsConfig.options[0]: Required value: must not be empty"),
    case("dnsPolicy None without nameservers stops there", manifest("dnsPolicy: None\ndnsConfig: {searches: [Bad]}"), "spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"),
]


def test_dns_none_without_nameservers_is_one_error() -> None:
    assert len(errors(manifest("dnsPolicy: None\ndnsConfig: {searches: [Bad]}"))) == 1


@pytest.mark.parametrize(("data", "expected"), CASES)
def test_upstream_refusal(data: bytes, expected: str) -> None:
    found = errors(data)
    assert expected in found, found


VALID = [
    pytest.param(manifest("readinessGates: [{conditionType: example.com/feature-1}]\nschedulingGates: [{name: example.com/foo}]\nhostAliases: [{ip: '::1', hostnames: [a.b]}]"), id="gates and aliases"),
    pytest.param(manifest("tolerations: [{key: k, operator: Equal, value: v}, {operator: Exists}]\ndnsConfig: {nameservers: ['010.0.0.1', '::1'], searches: [., _sip._tcp.example.com, example.com.], options: [{name: ndots, value: '2'}]}"), id="tolerations and relaxed DNS"),
    pytest.param(manifest((NA % "{matchExpressions: [{key: k, operator: Gt, values: ['5']}], matchFields: [{key: metadata.name, operator: NotIn, values: [node-1]}]}") + "\n"), id="node affinity"),
    pytest.param(manifest("affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchExpressions: [{key: app, operator: In, values: [web]}]}, namespaces: [default], matchLabelKeys: [pod-template-hash], mismatchLabelKeys: [tenant], topologyKey: topology.kubernetes.io/zone}]}, podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: {namespaceSelector: {}, topologyKey: kubernetes.io/hostname}}]}}"), id="pod affinity"),
    pytest.param(manifest("affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: k, operator: In, values: ['a b']}]}}]}}"), id="preferred term value unchecked"),
    pytest.param(manifest(TSC + "[{maxSkew: 1, minDomains: 2, topologyKey: k8s.io/zone, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Honor, matchLabelKeys: [pod-template-hash], labelSelector: {matchLabels: {app: a}}}, {maxSkew: 1, topologyKey: k8s.io/zone, whenUnsatisfiable: ScheduleAnyway}]"), id="topology spread"),
]


@pytest.mark.parametrize("data", VALID)
def test_upstream_accepts(data: bytes) -> None:
    parse_manifest(data, "p.yaml")
