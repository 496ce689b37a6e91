# ruff: noqa: E501  (table rows hold whole manifest fragments and upstream messages)
"""Volume rules of upstream's ValidatePodCreate, each refusal exact.

Ported from upstream's validation_test.go TestValidateVolumes, TestValidateVolumeMounts,
TestValidateVolumeDevices, TestValidateProjectedVolume*, TestValidateMountPropagation and
TestValidateRecursiveReadOnly: a manifest fragment and the one error upstream prints for it,
its path (upstream's, including the paths that name the list rather than the entry) exact.
"""

from __future__ import annotations

import pytest

from runtime.pod.manifest import parse_manifest
from tests.unit.runtime.test_pod_validation import errors, manifest


def case(id_: str, data: bytes, expected: str) -> object:
    return pytest.param(data, expected, id=id_)


def vol(source: str) -> bytes:
    return manifest("volumes: [{name: v, " + source + "}]")


def mounted(source: str, mounts: str) -> bytes:
    return manifest("volumes: [{name: v, " + source + "}]", container=mounts)


VOLUMES = [
    case("two sources, upstream's order", vol("hostPath: {path: /a}, emptyDir: {}"), "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"),
    case("downwardAPI as a second source, upstream's typo", vol("configMap: {name: c}, downwardAPI: {}"), "spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type"),
    case("hostPath empty", vol("hostPath: {path: ''}"), "spec.volumes[0].hostPath.path: Required value"),
    case("gitRepo without repository", vol("gitRepo: {repository: ''}"), "spec.volumes[0].gitRepo.repository: Required value"),
    case("gitRepo directory escaping", vol("gitRepo: {repository: r, directory: ../x}"), "spec.volumes[0].gitRepo.directory: Invalid value: \"../x\": must not contain '..'"),
    case("gcePersistentDisk partition", vol("gcePersistentDisk: {pdName: d, partition: 256}"), "spec.volumes[0].persistentDisk.partition: Invalid value: 256: must be between 1 and 255, inclusive"),
    case("gcePersistentDisk without name", vol("gcePersistentDisk: {pdName: ''}"), "spec.volumes[0].persistentDisk.pdName: Required value"),
    case("awsElasticBlockStore without volumeID", vol("awsElasticBlockStore: {volumeID: ''}"), "spec.volumes[0].awsElasticBlockStore.volumeID: Required value"),
    case("nfs without path", vol("nfs: {server: s, path: ''}"), "spec.volumes[0].nfs.path: Required value"),
    case("iscsi bad iqn prefix", vol("iscsi: {targetPortal: 127.0.0.1, iqn: foo, lun: 1}"), 'spec.volumes[0].iscsi.iqn: Invalid value: "foo": must be valid format starting with iqn, eui, or naa'),
    case("iscsi bad iqn format", vol("iscsi: {targetPortal: 127.0.0.1, iqn: iqn.2015-02.example, lun: 1}"), 'spec.volumes[0].iscsi.iqn: Invalid value: "iqn.2015-02.example": must be valid format'),
    case("iscsi lun", vol("iscsi: {targetPortal: 127.0.0.1, iqn: 'iqn.2015-02.example.com:test', lun: 256}"), "spec.volumes[0].iscsi.lun: Invalid value: 256: must be between 0 and 255, inclusive"),
    case("iscsi chap without secret", vol("iscsi: {targetPortal: 127.0.0.1, iqn: 'iqn.2015-02.example.com:test', lun: 1, chapAuthSession: true}"), "spec.volumes[0].iscsi.secretRef: Required value"),
    case("glusterfs without endpoints", vol("glusterfs: {endpoints: '', path: p}"), "spec.volumes[0].glusterfs.endpoints: Required value"),
    case("flocker neither", vol("flocker: {}"), "spec.volumes[0].flocker: Required value: one of datasetName and datasetUUID is required"),
    case("flocker both", vol("flocker: {datasetName: a, datasetUUID: b}"), 'spec.volumes[0].flocker: Invalid value: "resource": datasetName and datasetUUID can not be specified simultaneously'),
    case("flocker name with slash", vol("flocker: {datasetName: a/b}"), "spec.volumes[0].flocker.datasetName: Invalid value: \"a/b\": must not contain '/'"),
    case("rbd without monitors", vol("rbd: {monitors: [], image: i}"), "spec.volumes[0].rbd.monitors: Required value"),
    case("cinder secretRef without name", vol("cinder: {volumeID: v, secretRef: {}}"), "spec.volumes[0].cinder.secretRef.name: Required value"),
    case("cephfs without monitors", vol("cephfs: {monitors: []}"), "spec.volumes[0].cephfs.monitors: Required value"),
    case("quobyte registry without port", vol("quobyte: {registry: host, volume: v}"), 'spec.volumes[0].quobyte.registry: Invalid value: "host": must be a host:port pair or multiple pairs separated by commas'),
    case("downwardAPI item without a source", vol("downwardAPI: {items: [{path: x}]}"), "spec.volumes[0].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required"),
    case("downwardAPI item path starting with ..", vol("downwardAPI: {items: [{path: ..x, fieldRef: {fieldPath: metadata.name}}]}"), "spec.volumes[0].downwardAPI.path: Invalid value: \"..x\": must not start with '..'"),
    case("downwardAPI unsupported fieldPath", vol("downwardAPI: {items: [{path: x, fieldRef: {fieldPath: spec.nodeName}}]}"), 'spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"'),
    case("downwardAPI resourceFieldRef without container", vol("downwardAPI: {items: [{path: x, resourceFieldRef: {resource: limits.cpu}}]}"), "spec.volumes[0].downwardAPI.resourceFieldRef.containerName: Required value"),
    case("downwardAPI both refs", vol("downwardAPI: {items: [{path: x, fieldRef: {fieldPath: metadata.name}, resourceFieldRef: {containerName: c, resource: limits.cpu}}]}"), 'spec.volumes[0].downwardAPI: Invalid value: "resource": fieldRef and resourceFieldRef can not be specified simultaneously'),
    case("fc without targets", vol("fc: {}"), "spec.volumes[0].fc.targetWWNs: Required value: must specify either targetWWNs or wwids, but not both"),
    case("fc targets without lun", vol("fc: {targetWWNs: [w]}"), "spec.volumes[0].fc.lun: Required value: lun is required if targetWWNs is specified"),
    case("flexVolume reserved option", vol("flexVolume: {driver: d, options: {kubernetes.io/x: y}}"), 'spec.volumes[0].flexVolume.options[kubernetes.io/x]: Invalid value: "kubernetes.io/x": kubernetes.io and k8s.io namespaces are reserved'),
    case("configMap item path starting with ..", vol("configMap: {name: c, items: [{key: k, path: ..a}]}"), "spec.volumes[0].configMap.items[0].path: Invalid value: \"..a\": must not start with '..'"),
    case("azureFile without share", vol("azureFile: {secretName: s, shareName: ''}"), "spec.volumes[0].azureFile.shareName: Required value"),
    case("storageos bad volume name", vol("storageos: {volumeName: Bad_Name}"), 'spec.volumes[0].storageos.volumeName: Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \'-\', and must start and end with an alphanumeric character (e.g. \'my-name\',  or \'123-abc\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?\')'),
    case("scaleIO without system", vol("scaleIO: {gateway: g, system: '', volumeName: v, secretRef: {name: s}}"), "spec.volumes[0].scaleIO.system: Required value"),
    case("projected duplicate paths", vol("projected: {sources: [{configMap: {name: a, items: [{key: k, path: p}]}}, {secret: {name: b, items: [{key: k, path: p}]}}]}"), 'spec.volumes[0].projected: Invalid value: "b": conflicting duplicate paths'),
    case("projected two kinds in one source", vol("projected: {sources: [{configMap: {name: a}, secret: {name: b}}]}"), "spec.volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source"),
    case("projected token too short", vol("projected: {sources: [{serviceAccountToken: {path: t, expirationSeconds: 60}}]}"), "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"),
    case("projected token path absolute", vol("projected: {sources: [{serviceAccountToken: {path: /t}}]}"), 'spec.volumes[0].projected.path: Invalid value: "/t": must be a relative path'),
    case("projected configMap without name", vol("projected: {sources: [{configMap: {}}]}"), "spec.volumes[0].projected.sources[0].configMap.name: Required value"),
    case("csi driver not a subdomain", vol("csi: {driver: 'a_b'}"), 'spec.volumes[0].csi.driver: Invalid value: "a_b": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. \'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')'),
    case("csi secretRef without name", vol("csi: {driver: d.example.com, nodePublishSecretRef: {}}"), "spec.volumes[0].csi.nodePublishSecretRef.name: Required value"),
    case("ephemeral without template", vol("ephemeral: {}"), "spec.volumes[0].ephemeral.volumeClaimTemplate: Required value"),
    case("ephemeral without access modes", vol("ephemeral: {volumeClaimTemplate: {spec: {resources: {requests: {storage: 1Gi}}}}}"), "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: Required value: at least 1 access mode is required"),
    case("ephemeral without storage", vol("ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce]}}}"), "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]: Required value"),
    case("pvc naming an ephemeral volume's claim", manifest("volumes: [{name: e, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}, {name: c, persistentVolumeClaim: {claimName: p-e}}]"),
         'spec.volumes[1].persistentVolumeClaim.claimName: Invalid value: "p-e": must not reference a PVC that gets created for an ephemeral volume'),
    case("image volume bad pull policy", vol("image: {reference: 'b:1', pullPolicy: Sometimes}"), 'spec.volumes[0].image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"'),
]

MOUNTS = [
    case("mount of a volume with a fault", mounted("hostPath: {path: ''}", "volumeMounts: [{name: v, mountPath: /v}]"), 'spec.containers[0].volumeMounts[0].name: Not found: "v"'),
    case("bidirectional propagation unprivileged", mounted("emptyDir: {}", "volumeMounts: [{name: v, mountPath: /v, mountPropagation: Bidirectional}]"),
         "spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"),
    case("subPathExpr escaping", mounted("emptyDir: {}", "volumeMounts: [{name: v, mountPath: /v, subPathExpr: '../$(POD)'}]"), "spec.containers[0].volumeMounts.subPathExpr: Invalid value: \"../$(POD)\": must not contain '..'"),
    case("subPath and subPathExpr", mounted("emptyDir: {}", "volumeMounts: [{name: v, mountPath: /v, subPath: a, subPathExpr: b}]"), 'spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: "b": subPathExpr and subPath are mutually exclusive'),
    case("recursiveReadOnly without readOnly", mounted("emptyDir: {}", "volumeMounts: [{name: v, mountPath: /v, recursiveReadOnly: Enabled}]"), "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true"),
    case("recursiveReadOnly with propagation", mounted("emptyDir: {}", "volumeMounts: [{name: v, mountPath: /v, readOnly: true, recursiveReadOnly: IfPossible, mountPropagation: HostToContainer}]"), "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified"),
    case("recursiveReadOnly unsupported", mounted("emptyDir: {}", "volumeMounts: [{name: v, mountPath: /v, readOnly: true, recursiveReadOnly: Always}]"), 'spec.containers[0].volumeMounts.recursiveReadOnly: Unsupported value: "Always": supported values: "Disabled", "Enabled", "IfPossible"'),
    case("block device from an emptyDir", mounted("emptyDir: {}", "volumeDevices: [{name: v, devicePath: /dev/x}]"), 'spec.containers[0].volumeDevices[0].name: Invalid value: "v": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode'),
    case("block device also mounted", mounted("persistentVolumeClaim: {claimName: c}", "volumeMounts: [{name: v, mountPath: /v}]\nvolumeDevices: [{name: v, devicePath: /dev/x}]"), 'spec.containers[0].volumeDevices[0].name: Invalid value: "v": must not already exist in volumeMounts'),
    case("block device path escaping", mounted("persistentVolumeClaim: {claimName: c}", "volumeDevices: [{name: v, devicePath: /dev/../x}]"), "spec.containers[0].volumeDevices[0].devicePath: Invalid value: \"/dev/../x\": can not contain backsteps ('..')"),
    case("block device of no volume", mounted("persistentVolumeClaim: {claimName: c}", "volumeDevices: [{name: w, devicePath: /dev/x}]"), 'spec.containers[0].volumeDevices[0].name: Not found: "w"'),
]


@pytest.mark.parametrize(("data", "expected"), VOLUMES + MOUNTS)
def test_upstream_refusal(data: bytes, expected: str) -> None:
    found = errors(data)
    assert expected in found, found


VALID = [
    pytest.param(mounted("persistentVolumeClaim: {claimName: c}", "volumeDevices: [{name: v, devicePath: /dev/xvda}]"), id="block device"),
    pytest.param(mounted("emptyDir: {}", "volumeMounts: [{name: v, mountPath: /v, readOnly: true, recursiveReadOnly: Enabled}]"), id="recursive read-only"),
    pytest.param(mounted("emptyDir: {}", "volumeMounts: [{name: v, mountPath: /v, subPathExpr: $(POD_NAME)}]"), id="subPathExpr"),
    pytest.param(mounted("emptyDir: {}", "volumeMounts: [{name: v, mountPath: /v, mountPropagation: Bidirectional}]\nsecurityContext: {privileged: true}"), id="bidirectional privileged"),
    pytest.param(vol("iscsi: {targetPortal: '127.0.0.1:3260', iqn: 'iqn.2015-02.example.com:test', lun: 1}"), id="iscsi"),
    pytest.param(vol("projected: {sources: [{configMap: {name: a, items: [{key: k, path: a}]}}, {downwardAPI: {items: [{path: b, fieldRef: {fieldPath: \"metadata.labels['x']\"}}]}}]}"), id="projected"),
    pytest.param(manifest("volumes: [{name: v}]"), id="no source: defaulted to emptyDir as upstream's SetDefaults_Volume"),
    pytest.param(vol("quobyte: {registry: 'h1:7861,h2:7861', volume: v}"), id="quobyte"),
]


@pytest.mark.parametrize("data", VALID)
def test_upstream_accepts(data: bytes) -> None:
    parse_manifest(data, "p.yaml")
