# ruff: noqa: E501  (table rows hold whole manifest fragments and upstream messages)
"""Validation as upstream's ValidatePodCreate words it.

The cases are ported from upstream's pkg/apis/core/validation/validation_test.go
(TestValidatePorts, TestValidateEnv, TestValidateEnvFrom, TestValidateVolumeMounts,
TestValidateVolumes, TestValidateResourceRequirements, TestValidateContainers,
TestValidateInitContainers, TestValidateProbe, TestValidateLifecycle,
TestValidateSecurityContext, TestValidatePodSpec, TestValidateSysctls,
TestValidateTolerations, TestValidateAffinity, ...): their inputs, written as manifest
fragments, and the error each must produce, checked through runtime.pod.manifest so the
path is the manifest's.
"""

from __future__ import annotations

import textwrap

import pytest

from runtime.errors import ManifestError
from runtime.pod.manifest import parse_manifest

C = "{name: c, image: 'busybox:1'}"


def manifest(spec: str = "", container: str = "", metadata: str = "name: p") -> bytes:
    """A pod whose spec is ``spec``; ``container`` (YAML mapping body) replaces the default
    container's extra fields when given."""
    spec = textwrap.dedent(spec)
    if not any(line.startswith("containers:") for line in spec.splitlines()):
        body = textwrap.indent(textwrap.dedent(container), "  ") if container else ""
        spec += "\ncontainers:\n- name: c\n  image: 'busybox:1'\n" + body
    return (
        "apiVersion: v1\nkind: Pod\nmetadata:\n" + textwrap.indent(metadata, "  ")
        + "\nspec:\n" + textwrap.indent(spec, "  ") + "\n"
    ).encode()


def errors(data: bytes) -> tuple[str, ...]:
    with pytest.raises(ManifestError) as info:
        parse_manifest(data, "p.yaml")
    assert info.value.source == "p.yaml"
    return info.value.errors


def case(id_: str, data: bytes, expected: str) -> object:
    return pytest.param(data, expected, id=id_)


PORTS = [
    case("name > 15 characters", manifest(container="ports: [{name: aaaaaaaaaaaaaaaa, containerPort: 80}]"),
         'spec.containers[0].ports[0].name: Invalid value: "aaaaaaaaaaaaaaaa": must be no more than 15 characters'),
    case("name contains invalid characters", manifest(container="ports: [{name: a.b.c, containerPort: 80}]"),
         'spec.containers[0].ports[0].name: Invalid value: "a.b.c": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'),
    case("name is a number", manifest(container="ports: [{name: '80', containerPort: 80}]"),
         'spec.containers[0].ports[0].name: Invalid value: "80": must contain at least one letter (a-z)'),
    case("name not unique", manifest(container="ports: [{name: http, containerPort: 80}, {name: http, containerPort: 81}]"),
         'spec.containers[0].ports[1].name: Duplicate value: "http"'),
    case("zero container port", manifest(container="ports: [{containerPort: 0}]"),
         "spec.containers[0].ports[0].containerPort: Required value"),
    case("invalid container port", manifest(container="ports: [{containerPort: 65536}]"),
         "spec.containers[0].ports[0].containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive"),
    case("invalid host port", manifest(container="ports: [{containerPort: 80, hostPort: 65536}]"),
         "spec.containers[0].ports[0].hostPort: Invalid value: 65536: must be between 1 and 65535, inclusive"),
    case("invalid protocol", manifest(container="ports: [{containerPort: 80, protocol: ICMP}]"),
         'spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'),
    case("host network: hostPort must match", manifest("hostNetwork: true", container="ports: [{containerPort: 80, hostPort: 8080}]"),
         "spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"),
    case("host port conflict", manifest("containers:\n- {name: a, image: 'b:1', ports: [{containerPort: 80, hostPort: 80}]}\n- {name: b, image: 'b:1', ports: [{containerPort: 81, hostPort: 80}]}"),
         'spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//80"'),
]

ENV = [
    case("zero-length name", manifest(container="env: [{name: ''}]"),
         "spec.containers[0].env[0].name: Required value"),
    case("name with =", manifest(container="env: [{name: 'A=B', value: x}]"),
         "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='"),
    case("value and valueFrom specified", manifest(container="env: [{name: abc, value: foo, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]"),
         'spec.containers[0].env[0].valueFrom: Invalid value: "": may not be specified when `value` is not empty'),
    case("valueFrom without a source", manifest(container="env: [{name: abc, valueFrom: {}}]"),
         'spec.containers[0].env[0].valueFrom: Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`'),
    case("fieldRef and secretKeyRef specified", manifest(container="env: [{name: abc, valueFrom: {fieldRef: {fieldPath: metadata.name}, secretKeyRef: {name: a-secret, key: a-key}}}]"),
         'spec.containers[0].env[0].valueFrom: Invalid value: "": may not have more than one field specified at a time'),
    case("secretKeyRef.name invalid", manifest(container="env: [{name: abc, valueFrom: {secretKeyRef: {name: '$%^&*#', key: a-key}}}]"),
         'spec.containers[0].env[0].valueFrom.secretKeyRef.name: Invalid value: "$%^&*#": a lowercase RFC 1123 subdomain'),
    case("configMapKeyRef.name invalid", manifest(container="env: [{name: abc, valueFrom: {configMapKeyRef: {name: '$%^&*#', key: some-key}}}]"),
         'spec.containers[0].env[0].valueFrom.configMapKeyRef.name: Invalid value: "$%^&*#": a lowercase RFC 1123 subdomain'),
    case("missing FieldPath on ObjectFieldSelector", manifest(container="env: [{name: abc, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: ''}}}]"),
         "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Required value"),
    case("unsupported fieldPath", manifest(container="env: [{name: abc, valueFrom: {fieldRef: {fieldPath: status.phase}}}]"),
         'spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: "metadata.name"'),
    case("invalid resourceFieldRef", manifest(container="env: [{name: abc, valueFrom: {resourceFieldRef: {resource: limits.nvidia.com/gpu}}}]"),
         'spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.nvidia.com/gpu"'),
    case("envFrom zero-length name", manifest(container="envFrom: [{configMapRef: {name: ''}}]"),
         "spec.containers[0].envFrom[0].configMapRef.name: Required value"),
    case("envFrom invalid prefix", manifest(container="envFrom: [{prefix: 'a=b', secretRef: {name: abc}}]"),
         'spec.containers[0].envFrom[0].prefix: Invalid value: "a=b": a valid environment variable name'),
    case("envFrom no refs", manifest(container="envFrom: [{prefix: x}]"),
         'spec.containers[0].envFrom: Invalid value: "": must specify one of: `configMapRef` or `secretRef`'),
    case("envFrom multiple refs", manifest(container="envFrom: [{secretRef: {name: abc}, configMapRef: {name: abc}}]"),
         'spec.containers[0].envFrom: Invalid value: "": may not have more than one field specified at a time'),
]

VOL = "volumes: [{name: abc, emptyDir: {}}, {name: abc-123, emptyDir: {}}]\n"
MOUNTS = [
    case("empty name", manifest(VOL, container="volumeMounts: [{name: '', mountPath: /foo}]"),
         "spec.containers[0].volumeMounts[0].name: Required value"),
    case("name not found", manifest(VOL, container="volumeMounts: [{name: missing, mountPath: /foo}]"),
         'spec.containers[0].volumeMounts[0].name: Not found: "missing"'),
    case("empty mountpath", manifest(VOL, container="volumeMounts: [{name: abc, mountPath: ''}]"),
         "spec.containers[0].volumeMounts[0].mountPath: Required value"),
    case("mountpath collision", manifest(VOL, container="volumeMounts: [{name: abc, mountPath: /path/a}, {name: abc-123, mountPath: /path/a}]"),
         'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/path/a": must be unique'),
    case("absolute subpath", manifest(VOL, container="volumeMounts: [{name: abc, mountPath: /bar, subPath: /baz}]"),
         'spec.containers[0].volumeMounts.subPath: Invalid value: "/baz": must be a relative path'),
    case("subpath in ..", manifest(VOL, container="volumeMounts: [{name: abc, mountPath: /bar, subPath: ../baz}]"),
         "spec.containers[0].volumeMounts.subPath: Invalid value: \"../baz\": must not contain '..'"),
    case("subpath contains ..", manifest(VOL, container="volumeMounts: [{name: abc, mountPath: /bar, subPath: baz/../bat}]"),
         "spec.containers[0].volumeMounts.subPath: Invalid value: \"baz/../bat\": must not contain '..'"),
    case("subpath ends in ..", manifest(VOL, container="volumeMounts: [{name: abc, mountPath: /bar, subPath: ./..}]"),
         "spec.containers[0].volumeMounts.subPath: Invalid value: \"./..\": must not contain '..'"),
    case("bidirectional propagation unprivileged", manifest(VOL, container="volumeMounts: [{name: abc, mountPath: /bar, mountPropagation: Bidirectional}]"),
         "spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"),
    case("invalid propagation", manifest(VOL, container="volumeMounts: [{name: abc, mountPath: /bar, mountPropagation: Sideways}]"),
         'spec.containers[0].volumeMounts.mountPropagation: Unsupported value: "Sideways"'),
]

VOLUMES = [
    case("zero-length name", manifest("volumes: [{name: '', emptyDir: {}}]"),
         "spec.volumes[0].name: Required value"),
    case("name > 63 characters", manifest("volumes: [{name: " + "a" * 64 + ", emptyDir: {}}]"),
         "spec.volumes[0].name: Invalid value: \"" + "a" * 64 + "\": must be no more than 63 characters"),
    case("name not a DNS label", manifest("volumes: [{name: a.b.c, emptyDir: {}}]"),
         'spec.volumes[0].name: Invalid value: "a.b.c": must not contain dots'),
    case("name with an underscore", manifest("volumes: [{name: a_b, emptyDir: {}}]"),
         'spec.volumes[0].name: Invalid value: "a_b": a lowercase RFC 1123 label must consist of'),
    case("name not unique", manifest("volumes: [{name: abc, emptyDir: {}}, {name: abc, emptyDir: {}}]"),
         'spec.volumes[1].name: Duplicate value: "abc"'),
    case("more than one source", manifest("volumes: [{name: abc, emptyDir: {}, hostPath: {path: /tmp}}]"),
         "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"),
    case("hostPath with ..", manifest("volumes: [{name: abc, hostPath: {path: /mnt/path/../etc}}]"),
         "spec.volumes[0].hostPath.path: Invalid value: \"/mnt/path/../etc\": must not contain '..'"),
    case("hostPath bad type", manifest("volumes: [{name: abc, hostPath: {path: /a, type: Pipe}}]"),
         'spec.volumes[0].hostPath.type: Unsupported value: "Pipe"'),
    case("secret without name", manifest("volumes: [{name: s, secret: {}}]"),
         "spec.volumes[0].secret.secretName: Required value"),
    case("secret bad defaultMode", manifest("volumes: [{name: s, secret: {secretName: s, defaultMode: 01000}}]"),
         "spec.volumes[0].secret.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive"),
    case("secret item absolute path", manifest("volumes: [{name: s, secret: {secretName: s, items: [{key: k, path: /abs}]}}]"),
         'spec.volumes[0].secret.items[0].path: Invalid value: "/abs": must be a relative path'),
    case("configMap item with ..", manifest("volumes: [{name: s, configMap: {name: c, items: [{key: k, path: ../x}]}}]"),
         "spec.volumes[0].configMap.items[0].path: Invalid value: \"../x\": must not contain '..'"),
    case("configMap without name", manifest("volumes: [{name: s, configMap: {}}]"),
         "spec.volumes[0].configMap.name: Required value"),
    case("PVC without claimName", manifest("volumes: [{name: s, persistentVolumeClaim: {claimName: ''}}]"),
         "spec.volumes[0].persistentVolumeClaim.claimName: Required value"),
    case("NFS relative path", manifest("volumes: [{name: s, nfs: {server: my-server, path: tmp}}]"),
         'spec.volumes[0].nfs.path: Invalid value: "tmp": must be an absolute path'),
    case("CSI without driver", manifest("volumes: [{name: s, csi: {driver: ''}}]"),
         "spec.volumes[0].csi.driver: Required value"),
    case("downwardAPI absolute path", manifest("volumes: [{name: s, downwardAPI: {items: [{path: /x, fieldRef: {fieldPath: metadata.name}}]}}]"),
         'spec.volumes[0].downwardAPI.path: Invalid value: "/x": must be a relative path'),
]

RESOURCES = [
    case("negative cpu limit", manifest(container="resources: {limits: {cpu: '-10'}}"),
         'spec.containers[0].resources.limits[cpu]: Invalid value: "-10": must be greater than or equal to 0'),
    case("request above limit", manifest(container="resources: {limits: {cpu: '1'}, requests: {cpu: '2'}}"),
         'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'),
    case("memory request above limit", manifest(container="resources: {limits: {memory: 1Gi}, requests: {memory: 2Gi}}"),
         'spec.containers[0].resources.requests: Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi'),
    case("non-standard resource", manifest(container="resources: {limits: {disk: '1'}}"),
         'spec.containers[0].resources.limits[disk]: Invalid value: "disk": must be a standard resource for containers'),
    case("extended request must equal limit", manifest(container="resources: {limits: {nvidia.com/gpu: 2}, requests: {nvidia.com/gpu: 1}}"),
         'spec.containers[0].resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'),
    case("extended request without limit", manifest(container="resources: {requests: {nvidia.com/gpu: 1}}"),
         "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"),
    case("extended resources are integers", manifest(container="resources: {limits: {example.com/foo: 500m}}"),
         'spec.containers[0].resources.limits[example.com/foo]: Invalid value: 500m: must be an integer'),
    case("hugepages need cpu or memory", manifest(container="resources: {limits: {hugepages-2Mi: 2Mi}}"),
         "spec.containers[0].resources: Forbidden: HugePages require cpu or memory"),
    case("not a quantity", manifest(container="resources: {limits: {cpu: lots}}"),
         'spec.containers[0].resources.limits[cpu]: Invalid value: "lots": quantities must match the regular expression'),
]

CONTAINERS = [
    case("zero-length name", manifest(container="", spec="containers: [{name: '', image: 'b:1'}]"),
         "spec.containers[0].name: Required value"),
    case("name > 63 characters", manifest("containers: [{name: " + "a" * 64 + ", image: 'b:1'}]"),
         "spec.containers[0].name: Invalid value: \"" + "a" * 64 + "\": must be no more than 63 characters"),
    case("name not a DNS label", manifest("containers: [{name: a.b.c, image: 'b:1'}]"),
         'spec.containers[0].name: Invalid value: "a.b.c": must not contain dots'),
    case("name not unique", manifest(f"containers: [{C}, {C}]"),
         'spec.containers[1].name: Duplicate value: "c"'),
    case("name shared with an init container", manifest(f"initContainers: [{C}]\ncontainers: [{C}]"),
         'spec.containers[0].name: Duplicate value: "c"'),
    case("zero-length image", manifest("containers: [{name: c, image: ''}]"),
         "spec.containers[0].image: Required value"),
    case("image with leading whitespace", manifest("containers: [{name: c, image: ' b:1'}]"),
         'spec.containers[0].image: Invalid value: " b:1": must not have leading or trailing whitespace'),
    case("invalid image pull policy", manifest(container="imagePullPolicy: Sometimes"),
         'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"'),
    case("invalid terminationMessagePolicy", manifest(container="terminationMessagePolicy: Bad"),
         'spec.containers[0].terminationMessagePolicy: Unsupported value: "Bad": supported values: "FallbackToLogsOnError", "File"'),
    case("restartPolicy on a regular container", manifest(container="restartPolicy: Always"),
         "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers"),
    case("init container restartPolicy Never", manifest("initContainers: [{name: i, image: 'b:1', restartPolicy: Never}]"),
         'spec.initContainers[0].restartPolicy: Unsupported value: "Never": supported values: "Always"'),
    case("init container with a probe", manifest("initContainers: [{name: i, image: 'b:1', readinessProbe: {exec: {command: [a]}}}]"),
         "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"),
    case("init container with lifecycle", manifest("initContainers: [{name: i, image: 'b:1', lifecycle: {postStart: {exec: {command: [a]}}}}]"),
         "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always"),
    case("no containers", manifest("containers: []"), "spec.containers: Required value"),
    case("ephemeral containers on create", manifest(f"ephemeralContainers: [{{name: e, image: 'b:1'}}]\ncontainers: [{C}]"),
         "spec.ephemeralContainers: Forbidden: cannot be set on create"),
]

PROBES = [
    case("no handler", manifest(container="livenessProbe: {periodSeconds: 5}"),
         "spec.containers[0].livenessProbe: Required value: must specify a handler type"),
    case("two handlers", manifest(container="livenessProbe: {exec: {command: [a]}, httpGet: {port: 80}}"),
         "spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"),
    case("negative initialDelaySeconds", manifest(container="livenessProbe: {exec: {command: [a]}, initialDelaySeconds: -1}"),
         "spec.containers[0].livenessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0"),
    case("negative timeoutSeconds", manifest(container="readinessProbe: {exec: {command: [a]}, timeoutSeconds: -1}"),
         "spec.containers[0].readinessProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0"),
    case("liveness successThreshold", manifest(container="livenessProbe: {exec: {command: [a]}, successThreshold: 2}"),
         "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"),
    case("startup successThreshold", manifest(container="startupProbe: {exec: {command: [a]}, successThreshold: 3}"),
         "spec.containers[0].startupProbe.successThreshold: Invalid value: 3: must be 1"),
    case("readiness terminationGracePeriodSeconds", manifest(container="readinessProbe: {exec: {command: [a]}, terminationGracePeriodSeconds: 10}"),
         "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes"),
    case("liveness terminationGracePeriodSeconds 0", manifest(container="livenessProbe: {exec: {command: [a]}, terminationGracePeriodSeconds: 0}"),
         "spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0"),
    case("exec without command", manifest(container="livenessProbe: {exec: {}}"),
         "spec.containers[0].livenessProbe.exec.command: Required value"),
    case("httpGet port 0", manifest(container="livenessProbe: {httpGet: {port: 0}}"),
         "spec.containers[0].livenessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive"),
    case("httpGet port name too long", manifest(container="livenessProbe: {httpGet: {port: aaaaaaaaaaaaaaaa}}"),
         'spec.containers[0].livenessProbe.httpGet.port: Invalid value: "aaaaaaaaaaaaaaaa": must be no more than 15 characters'),
    case("httpGet bad scheme", manifest(container="livenessProbe: {httpGet: {port: 80, scheme: FTP}}"),
         'spec.containers[0].livenessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"'),
    case("httpGet bad header", manifest(container="livenessProbe: {httpGet: {port: 80, httpHeaders: [{name: 'X Y', value: z}]}}"),
         'spec.containers[0].livenessProbe.httpGet.httpHeaders: Invalid value: "X Y": a valid HTTP header must consist of alphanumeric characters'),
    case("tcpSocket port 0", manifest(container="readinessProbe: {tcpSocket: {port: 0}}"),
         "spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive"),
    case("grpc port 0", manifest(container="readinessProbe: {grpc: {port: 0}}"),
         "spec.containers[0].readinessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive"),
    case("lifecycle without handler", manifest(container="lifecycle: {preStop: {}}"),
         "spec.containers[0].lifecycle.preStop: Required value: must specify a handler type"),
    case("lifecycle two handlers", manifest(container="lifecycle: {postStart: {exec: {command: [a]}, sleep: {seconds: 1}}}"),
         "spec.containers[0].lifecycle.postStart.sleep: Forbidden: may not specify more than 1 handler type"),
    case("lifecycle exec without command", manifest(container="lifecycle: {postStart: {exec: {}}}"),
         "spec.containers[0].lifecycle.postStart.exec.command: Required value"),
    case("sleep longer than the grace period", manifest("terminationGracePeriodSeconds: 5", container="lifecycle: {preStop: {sleep: {seconds: 10}}}"),
         "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 10: must be non-negative and less than terminationGracePeriodSeconds (5)"),
    case("negative sleep", manifest(container="lifecycle: {preStop: {sleep: {seconds: -1}}}"),
         "spec.containers[0].lifecycle.preStop.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (30)"),
]

SECURITY = [
    case("negative runAsUser", manifest(container="securityContext: {runAsUser: -1}"),
         "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive"),
    case("negative runAsGroup", manifest(container="securityContext: {runAsGroup: -1}"),
         "spec.containers[0].securityContext.runAsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive"),
    case("pod runAsUser too large", manifest("securityContext: {runAsUser: 2147483648}"),
         "spec.securityContext.runAsUser: Invalid value: 2147483648: must be between 0 and 2147483647, inclusive"),
    case("negative fsGroup", manifest("securityContext: {fsGroup: -1}"),
         "spec.securityContext.fsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive"),
    case("negative supplementalGroup", manifest("securityContext: {supplementalGroups: [1, -1]}"),
         "spec.securityContext.supplementalGroups[1]: Invalid value: -1: must be between 0 and 2147483647, inclusive"),
    case("privileged without escalation", manifest(container="securityContext: {privileged: true, allowPrivilegeEscalation: false}"),
         'spec.containers[0].securityContext: Invalid value: "": cannot set `allowPrivilegeEscalation` to false and `privileged` to true'),
    case("CAP_SYS_ADMIN without escalation", manifest(container="securityContext: {capabilities: {add: [CAP_SYS_ADMIN]}, allowPrivilegeEscalation: false}"),
         "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"),
    case("invalid procMount", manifest(container="securityContext: {procMount: Sometimes}"),
         'spec.containers[0].securityContext.procMount: Unsupported value: "Sometimes": supported values: "Default", "Unmasked"'),
    case("procMount Unmasked with the node's users", manifest(container="securityContext: {procMount: Unmasked}"),
         'spec.containers[0].securityContext.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`'),
    case("procMount Unmasked with hostUsers true", manifest("hostUsers: true\ninitContainers: [{name: i, image: 'b:1', securityContext: {procMount: Unmasked}}]"),
         'spec.initContainers[0].securityContext.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`'),
    case("seccomp Localhost without profile", manifest("securityContext: {seccompProfile: {type: Localhost}}"),
         "spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"),
    case("seccomp bad type", manifest(container="securityContext: {seccompProfile: {type: Sometimes}}"),
         'spec.containers[0].securityContext.seccompProfile.type: Unsupported value: "Sometimes"'),
    case("bad sysctl name", manifest("securityContext: {sysctls: [{name: Net.Foo, value: '1'}]}"),
         'spec.securityContext.sysctls[0].name: Invalid value: "Net.Foo": must have at most 253 characters and match regex'),
    case("duplicate sysctl", manifest("securityContext: {sysctls: [{name: kernel.shm_rmid_forced, value: '1'}, {name: kernel.shm_rmid_forced, value: '0'}]}"),
         'spec.securityContext.sysctls[1].name: Duplicate value: "kernel.shm_rmid_forced"'),
]

CLAIMS = [
    case("container claim with no pod claims", manifest(container="resources: {claims: [{name: gpu}]}"),
         'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in pod.spec.resourceClaims which is empty'),
    case("container claim not among the pod's", manifest("resourceClaims: [{name: b, resourceClaimName: x}, {name: a, resourceClaimName: y}]", container="resources: {claims: [{name: gpu}]}"),
         'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in pod.spec.resourceClaims: a, b'),
    case("container claim without a name", manifest("resourceClaims: [{name: a, resourceClaimName: x}]", container="resources: {claims: [{name: ''}]}"),
         "spec.containers[0].resources.claims[0]: Required value"),
    case("container claim twice", manifest("resourceClaims: [{name: a, resourceClaimName: x}]", container="resources: {claims: [{name: a}, {name: a}]}"),
         'spec.containers[0].resources.claims[1]: Duplicate value: "a"'),
]

POD = [
    case("bad restart policy", manifest("restartPolicy: Sometimes"),
         'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
    case("bad dns policy", manifest("dnsPolicy: Nowhere"),
         'spec.dnsPolicy: Unsupported value: "Nowhere"'),
    case("dnsPolicy None without dnsConfig", manifest("dnsPolicy: None"),
         "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"),
    case("too many nameservers", manifest("dnsConfig: {nameservers: [1.1.1.1, 2.2.2.2, 3.3.3.3, 4.4.4.4]}"),
         'spec.dnsConfig.nameservers: Invalid value: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"}: must not have more than 3 nameservers'),
    case("bad nameserver", manifest("dnsConfig: {nameservers: [not-an-ip]}"),
         'spec.dnsConfig.nameservers[0]: Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
    case("bad active deadline", manifest("activeDeadlineSeconds: 0"),
         "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"),
    case("negative grace period", manifest("terminationGracePeriodSeconds: -1"),
         "spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0"),
    case("bad hostname", manifest("hostname: Bad_Host"),
         'spec.hostname: Invalid value: "Bad_Host": a lowercase RFC 1123 label'),
    case("bad subdomain", manifest("subdomain: Bad.Sub"),
         'spec.subdomain: Invalid value: "Bad.Sub": a lowercase RFC 1123 label'),
    case("bad runtimeClassName", manifest("runtimeClassName: Bad_Class"),
         'spec.runtimeClassName: Invalid value: "Bad_Class": a lowercase RFC 1123 subdomain'),
    case("bad os", manifest("os: {name: plan9}"),
         'spec.os: Unsupported value: "plan9": supported values: "linux", "windows"'),
    case("toleration bad operator", manifest("tolerations: [{key: k, operator: Maybe}]"),
         'spec.tolerations[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"'),
    case("toleration Exists with value", manifest("tolerations: [{key: k, operator: Exists, value: v}]"),
         "spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"),
    case("toleration seconds without NoExecute", manifest("tolerations: [{key: k, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]"),
         "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"),
    case("node affinity In without values", manifest("affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: In}]}]}}}"),
         "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    case("node affinity bad operator", manifest("affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Near}]}]}}}"),
         'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator'),
    case("preferred weight out of range", manifest("affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 0, preference: {}}]}}"),
         "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100"),
    case("no name", manifest(metadata="labels: {a: b}"),
         "metadata.name: Required value: name or generateName is required"),
    case("bad name", manifest(metadata="name: My_Pod"),
         'metadata.name: Invalid value: "My_Pod": a lowercase RFC 1123 subdomain'),
    case("bad label value", manifest(metadata="name: p\nlabels: {a: '-x'}"),
         'metadata.labels: Invalid value: "-x": a valid label must be an empty string'),
    case("bad label key", manifest(metadata="name: p\nlabels: {'a/b/c': x}"),
         'metadata.labels: Invalid value: "a/b/c": a qualified name'),
]


@pytest.mark.parametrize(("data", "expected"),
                         PORTS + ENV + MOUNTS + VOLUMES + RESOURCES + CONTAINERS + PROBES
                         + SECURITY + CLAIMS + POD)
def test_upstream_rule(data: bytes, expected: str) -> None:
    found = errors(data)
    assert any(e.startswith(expected) or expected in e for e in found), found


VALID = [
    pytest.param(manifest(container="ports: [{name: abc, containerPort: 80, hostPort: 80}, {name: easy, containerPort: 82}, {name: do-re-me, containerPort: 84, protocol: UDP}, {containerPort: 85}]"), id="ports"),
    pytest.param(manifest(container="env: [{name: abc, value: value}, {name: a.b.c, value: x}, {name: '1abc', value: x}, {name: abc, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['app']\"}}}, {name: sec, valueFrom: {secretKeyRef: {name: some-secret, key: k}}}]"), id="env"),
    pytest.param(manifest("hostNetwork: true", container="ports: [{containerPort: 80}]"), id="host-network-defaulted-port"),
    pytest.param(manifest(container="resources: {limits: {nvidia.com/gpu: 2, cpu: '1'}}"), id="extended-limit-only"),
    pytest.param(manifest(container="resources: {limits: {hugepages-2Mi: 2Mi, memory: 1Gi}}"), id="hugepages-with-memory"),
    pytest.param(manifest("initContainers: [{name: s, image: 'b:1', restartPolicy: Always, readinessProbe: {exec: {command: [a]}}}]"), id="sidecar-probes"),
    pytest.param(manifest("hostUsers: false", container="securityContext: {procMount: Unmasked}"), id="unmasked-in-own-user-namespace"),
    pytest.param(manifest("resourceClaims: [{name: a, resourceClaimName: x}]", container="resources: {claims: [{name: a, request: r}, {name: a, request: s}]}"), id="container-claims"),
    pytest.param(manifest(container="livenessProbe: {httpGet: {port: 80}, periodSeconds: 0, successThreshold: 0}"), id="probe-zero-means-default"),
]


@pytest.mark.parametrize("data", VALID)
def test_upstream_valid(data: bytes) -> None:
    parse_manifest(data, "p.yaml")


def test_every_fault_names_the_file() -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest(manifest(container="env: [{name: 'A=B'}]"), "/etc/kubernetes/manifests/x.yaml")
    assert str(info.value).startswith(
        '/etc/kubernetes/manifests/x.yaml: spec.containers[0].env[0].name: Invalid value: "A=B"')
