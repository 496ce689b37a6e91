"""Upstream's API defaults (pkg/apis/core/v1/defaults.go) for a manifest pod."""

from __future__ import annotations

import textwrap
from typing import Any

from runtime.pod.defaults import api_defaults, to_api_object
from runtime.pod.manifest import parse_manifest


def pod(spec: str) -> bytes:
    return ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
            + textwrap.indent(textwrap.dedent(spec), "  ")).encode()


def api(spec: str) -> dict[str, Any]:
    (kept,) = parse_manifest(pod(spec), "p.yaml")
    obj: dict[str, Any] = to_api_object(api_defaults(kept))
    return obj


def test_a_minimal_pod_shows_what_the_api_server_stores() -> None:
    obj = api("""
        containers:
        - name: c
          image: busybox
          ports: [{containerPort: 80}]
          livenessProbe: {httpGet: {port: 80}}
          resources: {limits: {cpu: "1"}}
        volumes:
        - name: s
          secret: {secretName: s}
        - name: plain
    """)
    spec = obj["spec"]
    assert obj["metadata"]["namespace"] == "default"
    assert spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["enableServiceLinks"] is True
    assert spec["securityContext"] == {}
    c = spec["containers"][0]
    assert c["imagePullPolicy"] == "Always"
    assert c["terminationMessagePath"] == "/dev/termination-log"
    assert c["terminationMessagePolicy"] == "File"
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3,
    }
    assert c["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    assert spec["volumes"] == [
        {"name": "s", "secret": {"secretName": "s", "defaultMode": 420}},
        {"name": "plain", "emptyDir": {}},
    ]


def test_pull_policy_from_the_tag() -> None:
    spec = api("""
        containers:
        - {name: a, image: "busybox:latest"}
        - {name: b, image: "busybox:1.36"}
        - {name: c, image: "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123"}
        - {name: d, image: "busybox:1.36", imagePullPolicy: Never}
    """)["spec"]
    assert [c["imagePullPolicy"] for c in spec["containers"]] == [
        "Always", "IfNotPresent", "IfNotPresent", "Never"]


def test_host_network_ports_and_grpc_service() -> None:
    spec = api("""
        hostNetwork: true
        containers:
        - name: c
          image: busybox:1
          ports: [{containerPort: 53, protocol: UDP}]
          readinessProbe: {grpc: {port: 9090}, periodSeconds: 0}
    """)["spec"]
    c = spec["containers"][0]
    assert c["ports"] == [{"containerPort": 53, "hostPort": 53, "protocol": "UDP"}]
    assert c["readinessProbe"]["grpc"] == {"port": 9090, "service": ""}
    assert c["readinessProbe"]["periodSeconds"] == 10


def test_volume_marker_defaults() -> None:
    spec = api("""
        containers: [{name: c, image: "busybox:1"}]
        volumes:
        - {name: a, configMap: {name: x}}
        - {name: b, projected: {sources: [{serviceAccountToken: {path: t}}]}}
        - {name: c, rbd: {monitors: [m], image: i}}
        - name: d
          ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce],
                                                   resources: {requests: {storage: 1Gi}}}}}
    """)["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["a"]["configMap"]["defaultMode"] == 420
    assert volumes["b"]["projected"] == {
        "defaultMode": 420, "sources": [{"serviceAccountToken": {
            "path": "t", "expirationSeconds": 3600}}]}
    assert volumes["c"]["rbd"]["pool"] == "rbd"
    assert volumes["c"]["rbd"]["keyring"] == "/etc/ceph/keyring"
    template = volumes["d"]["ephemeral"]["volumeClaimTemplate"]
    assert template["spec"]["volumeMode"] == "Filesystem"
