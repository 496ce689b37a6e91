# ruff: noqa: E501  (table rows hold upstream's messages whole)
"""Node admission (runtime.pod.admission), after upstream's kubelet admit handlers
(pkg/kubelet/lifecycle/predicate.go, pkg/kubelet/sysctl): table tests."""

from __future__ import annotations

import textwrap
from decimal import Decimal

import pytest

from runtime.pod.admission import Node, admit, node_labels, pod_requests
from runtime.pod.manifest import parse_manifest
from runtime.pod.model import Pod

NODE = Node(
    name="node1",
    labels=node_labels("node1", "linux", "amd64", {"disktype": "ssd", "zone-rank": "3"}),
    allocatable={"cpu": "2", "memory": "1Gi", "pods": 3, "ephemeral-storage": "10Gi",
                 "example.com/dongle": 2},
)


def pod(spec: str = "", container: str = "", metadata: str = "name: p") -> Pod:
    body = textwrap.indent(textwrap.dedent(container), "  ") if container else ""
    spec = textwrap.dedent(spec)
    if not any(line.startswith("containers:") for line in spec.splitlines()):
        spec += "\ncontainers:\n- name: c\n  image: 'busybox:1'\n" + body
    text = ("apiVersion: v1\nkind: Pod\nmetadata:\n" + textwrap.indent(metadata, "  ")
            + "\nspec:\n" + textwrap.indent(spec, "  ") + "\n")
    (parsed,) = parse_manifest(text.encode(), "p.yaml")
    return parsed


def requesting(cpu: str = "0", memory: str = "0") -> Pod:
    return pod(container=f"resources: {{requests: {{cpu: '{cpu}', memory: '{memory}'}}}}")


CASES = [
    # (id, pod, already admitted, allowed unsafe sysctls, expected result)
    ("plain pod", pod(), [], [], None),
    ("nodeSelector matches", pod("nodeSelector: {disktype: ssd}"), [], [], None),
    ("nodeSelector mismatch", pod("nodeSelector: {disktype: hdd}"), [], [],
     ("NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")),
    ("hostname selector", pod("nodeSelector: {kubernetes.io/hostname: node2}"), [], [],
     ("NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")),
    ("required affinity In matches", pod("affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}]}]}}}"), [], [], None),
    ("required affinity NotIn fails", pod("affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: disktype, operator: NotIn, values: [ssd]}]}]}}}"), [], [],
     ("NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")),
    ("required affinity: one of the terms", pod("affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: gpu, operator: Exists}]}, {matchFields: [{key: metadata.name, operator: In, values: [node1]}]}]}}}"), [], [], None),
    ("required affinity Gt", pod("affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone-rank, operator: Gt, values: ['5']}]}]}}}"), [], [],
     ("NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")),
    ("preferred affinity never rejects", pod("affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: gpu, operator: Exists}]}}]}}"), [], [], None),
    ("OS label mismatch", pod(metadata="name: p\nlabels: {kubernetes.io/os: windows}"), [], [],
     ("PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")),
    ("OS field mismatch", pod("os: {name: windows}"), [], [],
     ("PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS")),
    ("OS field matches", pod("os: {name: linux}"), [], [], None),
    ("node name mismatch", pod("nodeName: node2"), [], [],
     ("NodeName", "Predicate NodeName failed: node(s) didn't match the requested node name")),
    ("cpu fits", requesting(cpu="1500m"), [requesting(cpu="500m")], [], None),
    ("out of cpu", requesting(cpu="2"), [requesting(cpu="500m")], [],
     ("OutOfcpu", "Node didn't have enough resource: cpu, requested: 2000, used: 500, capacity: 2000")),
    ("out of memory", requesting(memory="1Gi"), [requesting(memory="1")], [],
     ("OutOfmemory", "Node didn't have enough resource: memory, requested: 1073741824, used: 1, capacity: 1073741824")),
    ("out of ephemeral storage", pod(container="resources: {requests: {ephemeral-storage: 11Gi}}"), [], [],
     ("OutOfephemeral-storage", "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240")),
    ("limits count as requests", pod(container="resources: {limits: {cpu: '3'}}"), [], [],
     ("OutOfcpu", "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000")),
    ("out of an extended resource", pod(container="resources: {limits: {example.com/dongle: 3}}"), [], [],
     ("OutOfexample.com/dongle", "Node didn't have enough resource: example.com/dongle, requested: 3, used: 0, capacity: 2")),
    ("unknown extended resource is not checked", pod(container="resources: {limits: {example.com/gizmo: 3}}"), [], [], None),
    ("max pods", pod(), [pod(), pod(), pod()], [],
     ("OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3")),
    ("host port free", pod(container="ports: [{containerPort: 80, hostPort: 8080}]"), [pod(container="ports: [{containerPort: 80, hostPort: 8081}]")], [], None),
    ("host port taken", pod(container="ports: [{containerPort: 80, hostPort: 8080}]"), [pod(container="ports: [{containerPort: 81, hostPort: 8080}]")], [],
     ("NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports")),
    ("host port other protocol", pod(container="ports: [{containerPort: 53, hostPort: 53, protocol: UDP}]"), [pod(container="ports: [{containerPort: 53, hostPort: 53}]")], [], None),
    ("host port other IP", pod(container="ports: [{containerPort: 80, hostPort: 80, hostIP: 10.0.0.1}]"), [pod(container="ports: [{containerPort: 80, hostPort: 80, hostIP: 10.0.0.2}]")], [], None),
    ("host port wildcard IP", pod(container="ports: [{containerPort: 80, hostPort: 80}]"), [pod(container="ports: [{containerPort: 80, hostPort: 80, hostIP: 10.0.0.2}]")], [],
     ("NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports")),
    ("host network takes container ports", pod("hostNetwork: true", container="ports: [{containerPort: 80}]"), [pod("hostNetwork: true", container="ports: [{containerPort: 80}]")], [],
     ("NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports")),
    ("safe sysctl", pod("securityContext: {sysctls: [{name: net.ipv4.ip_local_port_range, value: '1024 65000'}]}"), [], [], None),
    ("safe sysctl with slashes", pod("securityContext: {sysctls: [{name: net/ipv4/tcp_syncookies, value: '1'}]}"), [], [], None),
    ("unsafe sysctl", pod("securityContext: {sysctls: [{name: net.core.somaxconn, value: '1024'}]}"), [], [],
     ("SysctlForbidden", 'forbidden sysctl: "net.core.somaxconn" not allowlisted')),
    ("unsafe sysctl allowed", pod("securityContext: {sysctls: [{name: net.core.somaxconn, value: '1024'}]}"), [], ["net.core.somaxconn"], None),
    ("unsafe sysctl allowed by prefix", pod("securityContext: {sysctls: [{name: kernel.msgmax, value: '65536'}]}"), [], ["kernel.msg*"], None),
    ("net sysctl with host network", pod("hostNetwork: true\nsecurityContext: {sysctls: [{name: net.ipv4.tcp_syncookies, value: '1'}]}"), [], [],
     ("SysctlForbidden", 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled')),
    ("ipc sysctl with host IPC", pod("hostIPC: true\nsecurityContext: {sysctls: [{name: kernel.shm_rmid_forced, value: '1'}]}"), [], [],
     ("SysctlForbidden", 'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled')),
]


@pytest.mark.parametrize(("pod_", "admitted", "unsafe", "expected"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_admit(pod_: Pod, admitted: list[Pod], unsafe: list[str], expected: tuple[str, str] | None) -> None:
    assert admit(pod_, NODE, admitted, unsafe) == expected


def test_pod_requests_count_init_containers_and_sidecars_as_upstream() -> None:
    p = pod("""
        initContainers:
        - {name: init-big, image: 'b:1', resources: {requests: {cpu: '3'}}}
        - {name: sidecar, image: 'b:1', restartPolicy: Always, resources: {requests: {cpu: 500m}}}
        - {name: init-after, image: 'b:1', resources: {requests: {cpu: '1'}}}
        containers:
        - {name: app, image: 'b:1', resources: {requests: {cpu: '1'}}}
    """)
    # max(app 1 + sidecar 0.5, init-big 3, init-after 1 + sidecar 0.5) = 3
    assert pod_requests(p)["cpu"] == Decimal(3)


def test_pod_level_resources_win() -> None:
    p = pod("resources: {requests: {cpu: '1'}}",
            container="resources: {requests: {cpu: 200m}}")
    assert pod_requests(p)["cpu"] == Decimal(1)


def test_node_labels() -> None:
    assert node_labels("Node1", "linux", "arm64", {"a": "b"}) == {
        "kubernetes.io/hostname": "node1", "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64", "a": "b"}
