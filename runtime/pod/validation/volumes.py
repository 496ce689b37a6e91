"""Volumes (upstream's ValidateVolumes, validateVolumeSource and the source validators).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from runtime.pod.model import (
    CinderVolumeSource,
    ConfigMapVolumeSource,
    CSIVolumeSource,
    DownwardAPIVolumeFile,
    DownwardAPIVolumeSource,
    EmptyDirVolumeSource,
    EphemeralVolumeSource,
    FCVolumeSource,
    FlexVolumeSource,
    FlockerVolumeSource,
    GitRepoVolumeSource,
    HostPathVolumeSource,
    ImageVolumeSource,
    ISCSIVolumeSource,
    KeyToPath,
    NFSVolumeSource,
    PodSpec,
    ProjectedVolumeSource,
    QuobyteVolumeSource,
    SecretVolumeSource,
    StorageOSVolumeSource,
    Volume,
)
from runtime.pod.validation.containers import PULL_POLICIES
from runtime.pod.validation.fields import (
    Problem,
    _descending_path,
    _field_ref_missing,
    _no_backsteps,
    _qualified_name,
    duplicate,
    forbidden,
    invalid,
    label_faults,
    not_supported,
    required,
    subdomain_faults,
)
from runtime.pod.validation.resources import _quantity, divisor

HOST_PATH_TYPES = (
    "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
    "Socket",
)  # fmt: skip

# --- volumes -------------------------------------------------------------------------------

_MODE_MSG = "must be a number between 0 and 0777 (octal), both inclusive"
_PARTITION = "must be between 1 and 255, inclusive"  # upstream's message; it checks 0-255
_LUN = "must be between 0 and 255, inclusive"
# upstream validateVolumeSource's order, with the name each source's "more than 1 volume
# type" error is reported under (upstream's, typos included: cephFS, downwarAPI) and the
# name its own fields are reported under (gcePersistentDisk's as persistentDisk).
_SOURCES = (
    ("empty_dir", "emptyDir", "emptyDir"), ("host_path", "hostPath", "hostPath"),
    ("git_repo", "gitRepo", "gitRepo"),
    ("gce_persistent_disk", "gcePersistentDisk", "persistentDisk"),
    ("aws_elastic_block_store", "awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret", "secret"), ("nfs", "nfs", "nfs"), ("iscsi", "iscsi", "iscsi"),
    ("glusterfs", "glusterfs", "glusterfs"), ("flocker", "flocker", "flocker"),
    ("persistent_volume_claim", "persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd", "rbd"), ("cinder", "cinder", "cinder"), ("cephfs", "cephFS", "cephfs"),
    ("quobyte", "quobyte", "quobyte"), ("downward_api", "downwarAPI", "downwardAPI"),
    ("fc", "fc", "fc"), ("flex_volume", "flexVolume", "flexVolume"),
    ("config_map", "configMap", "configMap"), ("azure_file", "azureFile", "azureFile"),
    ("vsphere_volume", "vsphereVolume", "vsphereVolume"),
    ("photon_persistent_disk", "photonPersistentDisk", "photonPersistentDisk"),
    ("portworx_volume", "portworxVolume", "portworxVolume"),
    ("azure_disk", "azureDisk", "azureDisk"), ("storageos", "storageos", "storageos"),
    ("projected", "projected", "projected"), ("scale_io", "scaleIO", "scaleIO"),
    ("csi", "csi", "csi"), ("ephemeral", "ephemeral", "ephemeral"), ("image", "image", "image"),
)  # fmt: skip
# Fields a source requires, checked as upstream's field.Required("").
_REQUIRED = {
    "git_repo": (("repository", "repository"),),
    "gce_persistent_disk": (("pd_name", "pdName"),),
    "aws_elastic_block_store": (("volume_id", "volumeID"),),
    "secret": (("secret_name", "secretName"),),
    "nfs": (("server", "server"), ("path", "path")),
    "iscsi": (("target_portal", "targetPortal"), ("iqn", "iqn")),
    "glusterfs": (("endpoints", "endpoints"), ("path", "path")),
    "persistent_volume_claim": (("claim_name", "claimName"),),
    "rbd": (("monitors", "monitors"), ("image", "image")),
    "cinder": (("volume_id", "volumeID"),),
    "cephfs": (("monitors", "monitors"),),
    "flex_volume": (("driver", "driver"),),
    "config_map": (("name", "name"),),
    "azure_file": (("secret_name", "secretName"), ("share_name", "shareName")),
    "vsphere_volume": (("volume_path", "volumePath"),),
    "photon_persistent_disk": (("pd_id", "pdID"),),
    "portworx_volume": (("volume_id", "volumeID"),),
    "azure_disk": (("disk_name", "diskName"), ("disk_uri", "diskURI")),
    "scale_io": (("gateway", "gateway"), ("system", "system"), ("volume_name", "volumeName")),
    "image": (("reference", "reference"),),
}
_IQN = re.compile(r"iqn\.\d{4}-\d{2}\.([A-Za-z0-9.-]+)(:[^,;*&$|\s]+)\Z")  # unanchored at start
_EUI = re.compile(r"eui.[A-Za-z0-9]{16}")
_NAA = re.compile(r"naa.[A-Za-z0-9]{32}")
_VOLUME_FIELD_PATHS = ("metadata.annotations", "metadata.labels", "metadata.name",
                       "metadata.namespace", "metadata.uid")
_RESOURCE_FIELD_PATHS = ("limits.cpu", "limits.ephemeral-storage", "limits.memory",
                         "requests.cpu", "requests.ephemeral-storage", "requests.memory")


def _mode(mode: int | None, path: str) -> Iterator[Problem]:
    if mode is not None and not 0 <= mode <= 0o777:
        yield invalid(path, mode, _MODE_MSG)


def _local_path(value: str, path: str) -> Iterator[Problem]:
    """upstream ValidateLocalNonReservedPath."""
    yield from _descending_path(value, path)
    if value.startswith("..") and not value.startswith("../"):
        yield invalid(path, value, "must not start with '..'")


def volumes(spec: PodSpec, pod_name: str) -> tuple[set[str], list[Problem]]:
    """upstream ValidateVolumes: the names of the volumes containers may use (those without
    a fault, as upstream's), and the faults."""
    problems: list[Problem] = []
    good: set[str] = set()
    names: set[str] = set()
    created = {f"{pod_name}-{v.name}" for v in spec.volumes if v.ephemeral is not None}
    for i, v in enumerate(spec.volumes):
        path = f"spec.volumes[{i}]"
        found = list(_volume_source(v, path, pod_name))
        if not v.name:
            found.append(required(f"{path}.name"))
        else:
            found += [invalid(f"{path}.name", v.name, why) for why in label_faults(v.name)]
        if v.name in names:
            found.append(duplicate(f"{path}.name", v.name))
        if not found:
            good.add(v.name)
        names.add(v.name)
        problems += found
        pvc = v.persistent_volume_claim
        if pod_name and pvc is not None and pvc.claim_name in created:
            problems.append(invalid(f"{path}.persistentVolumeClaim.claimName", pvc.claim_name,
                                    "must not reference a PVC that gets created for an "
                                    "ephemeral volume"))
    return good, problems


def _volume_source(v: Volume, path: str, pod_name: str) -> Iterator[Problem]:
    count = 0
    for attr, name, child in _SOURCES:
        source = getattr(v, attr)
        if source is None:
            continue
        if count:
            yield forbidden(f"{path}.{name}", "may not specify more than 1 volume type")
            continue
        count += 1
        p = f"{path}.{child}"
        for field, json_name in _REQUIRED.get(attr, ()):
            if not getattr(source, field):
                yield required(f"{p}.{json_name}")
        yield from _SOURCE_CHECKS.get(attr, _nothing)(source, p)
        if attr == "ephemeral" and pod_name and v.name and source.volume_claim_template:
            claim = f"{pod_name}-{v.name}"
            for why in subdomain_faults(claim):
                yield invalid(f"{p}.name", v.name, f'PVC name "{claim}": {why}')
    if not count:
        yield required(path, "must specify a volume type")


def _nothing(source: Any, path: str) -> Iterator[Problem]:
    return iter(())


def _empty_dir(source: EmptyDirVolumeSource, path: str) -> Iterator[Problem]:
    if source.size_limit is not None:
        q, errors = _quantity(source.size_limit, f"{path}.sizeLimit")
        yield from errors
        if q is not None and q < 0:
            yield forbidden(f"{path}.sizeLimit",
                            "SizeLimit field must be a valid resource quantity")


def _host_path(source: HostPathVolumeSource, path: str) -> Iterator[Problem]:
    if not source.path:
        yield required(f"{path}.path")
        return
    yield from _no_backsteps(source.path, f"{path}.path")
    if source.type not in HOST_PATH_TYPES:
        yield not_supported(f"{path}.type", source.type, HOST_PATH_TYPES)


def _git_repo(source: GitRepoVolumeSource, path: str) -> Iterator[Problem]:
    yield from _descending_path(source.directory, f"{path}.directory")


def _partition(source: Any, path: str) -> Iterator[Problem]:
    if source.partition is not None and not 0 <= source.partition <= 255:
        yield invalid(f"{path}.partition", source.partition, _PARTITION)


def _secret(source: SecretVolumeSource, path: str) -> Iterator[Problem]:
    yield from _mode(source.default_mode, f"{path}.defaultMode")
    for i, item in enumerate(source.items):
        yield from _key_to_path(item, f"{path}.items[{i}]")


def _config_map(source: ConfigMapVolumeSource, path: str) -> Iterator[Problem]:
    yield from _mode(source.default_mode, f"{path}.defaultMode")
    for i, item in enumerate(source.items):
        yield from _key_to_path(item, f"{path}.items[{i}]")


def _key_to_path(item: KeyToPath, path: str) -> Iterator[Problem]:
    if not item.key:
        yield required(f"{path}.key")
    if not item.path:
        yield required(f"{path}.path")
    yield from _local_path(item.path, f"{path}.path")
    yield from _mode(item.mode, f"{path}.mode")


def _nfs(source: NFSVolumeSource, path: str) -> Iterator[Problem]:
    if not source.path.startswith("/"):
        yield invalid(f"{path}.path", source.path, "must be an absolute path")


def _iqn(value: str, path: str, unknown: str) -> Iterator[Problem]:
    if not value.startswith(("iqn", "eui", "naa")):
        yield invalid(path, value, unknown)
    elif not (_IQN.search(value) if value.startswith("iqn")
              else (_EUI if value.startswith("eui") else _NAA).fullmatch(value)):
        yield invalid(path, value, "must be valid format")


def _iscsi(source: ISCSIVolumeSource, path: str) -> Iterator[Problem]:
    if source.iqn:
        yield from _iqn(source.iqn, f"{path}.iqn",
                        "must be valid format starting with iqn, eui, or naa")
    if not 0 <= source.lun <= 255:
        yield invalid(f"{path}.lun", source.lun, _LUN)
    if (source.chap_auth_discovery or source.chap_auth_session) and source.secret_ref is None:
        yield required(f"{path}.secretRef")
    if source.initiator_name:
        yield from _iqn(source.initiator_name, f"{path}.initiatorname",
                        "must be valid format starting with iqn, eui, or naa")


def _flocker(source: FlockerVolumeSource, path: str) -> Iterator[Problem]:
    if not source.dataset_name and not source.dataset_uuid:
        yield required(path, "one of datasetName and datasetUUID is required")
    if source.dataset_name and source.dataset_uuid:
        yield invalid(path, "resource", "datasetName and datasetUUID can not be specified "
                      "simultaneously")
    if "/" in source.dataset_name:
        yield invalid(f"{path}.datasetName", source.dataset_name, "must not contain '/'")


def _cinder(source: CinderVolumeSource, path: str) -> Iterator[Problem]:
    if source.secret_ref is not None and not source.secret_ref.name:
        yield required(f"{path}.secretRef.name")


def _quobyte(source: QuobyteVolumeSource, path: str) -> Iterator[Problem]:
    why = "must be a host:port pair or multiple pairs separated by commas"
    if not source.registry:
        yield required(f"{path}.registry", why)
    elif len(source.tenant) >= 65:
        yield required(f"{path}.tenant", "must be a UUID and may not exceed a length of 64 "
                       "characters")
    else:
        for pair in source.registry.split(","):
            if ":" not in pair:  # Go's net.SplitHostPort: "missing port in address"
                yield invalid(f"{path}.registry", source.registry, why)
    if not source.volume:
        yield required(f"{path}.volume")


def _downward_file(item: DownwardAPIVolumeFile, path: str) -> Iterator[Problem]:
    """upstream validateDownwardAPIVolumeFile (upstream reports at the volume's or the
    projection's path, not the item's)."""
    if not item.path:
        yield required(f"{path}.path")
    yield from _local_path(item.path, f"{path}.path")
    if item.field_ref is not None:
        yield from _volume_field_ref(item.field_ref.api_version, item.field_ref.field_path,
                                     f"{path}.fieldRef")
        if item.resource_field_ref is not None:
            yield invalid(path, "resource", "fieldRef and resourceFieldRef can not be "
                          "specified simultaneously")
    elif item.resource_field_ref is not None:
        ref = item.resource_field_ref
        rp = f"{path}.resourceFieldRef"
        if not ref.container_name:
            yield required(f"{rp}.containerName")
        elif not ref.resource:
            yield required(f"{rp}.resource")
        elif ref.resource not in _RESOURCE_FIELD_PATHS and not ref.resource.startswith(
                ("requests.hugepages-", "limits.hugepages-")):
            yield not_supported(f"{rp}.resource", ref.resource, _RESOURCE_FIELD_PATHS)
        yield from divisor(ref.resource, ref.divisor, rp)
    else:
        yield required(path, "one of fieldRef and resourceFieldRef is required")
    yield from _mode(item.mode, f"{path}.mode")


def _volume_field_ref(api_version: str, field_path: str, path: str) -> Iterator[Problem]:
    if (missing := _field_ref_missing(api_version, field_path, path)) is not None:
        yield missing
        return
    name, bracket, subscript = field_path.partition("[")
    if bracket and subscript.endswith("]"):
        key = subscript[:-1].strip("'")
        if name == "metadata.annotations":
            for why in _qualified_name(key.lower()):
                yield invalid(path, key.lower(), why)
        elif name == "metadata.labels":
            for why in _qualified_name(key):
                yield invalid(path, key, why)
        else:
            yield invalid(path, name, "does not support subscript")
    elif field_path not in _VOLUME_FIELD_PATHS:
        yield not_supported(f"{path}.fieldPath", field_path, _VOLUME_FIELD_PATHS)


def _downward_api(source: DownwardAPIVolumeSource, path: str) -> Iterator[Problem]:
    yield from _mode(source.default_mode, f"{path}.defaultMode")
    for item in source.items:
        yield from _downward_file(item, path)


def _fc(source: FCVolumeSource, path: str) -> Iterator[Problem]:
    if not source.target_wwns and not source.wwids:
        yield required(f"{path}.targetWWNs", "must specify either targetWWNs or wwids, but "
                       "not both")
    if source.target_wwns and source.wwids:
        yield invalid(f"{path}.targetWWNs", ",".join(source.target_wwns),
                      "targetWWNs and wwids can not be specified simultaneously")
    if source.target_wwns:
        if source.lun is None:
            yield required(f"{path}.lun", "lun is required if targetWWNs is specified")
        elif not 0 <= source.lun <= 255:
            yield invalid(f"{path}.lun", source.lun, _LUN)


def _flex_volume(source: FlexVolumeSource, path: str) -> Iterator[Problem]:
    for key in source.options:
        namespace = key.split("/", 1)[0] if "/" in key else key
        if ("." + namespace.lower()).endswith((".kubernetes.io", ".k8s.io")):
            yield invalid(f"{path}.options[{key}]", key,
                          "kubernetes.io and k8s.io namespaces are reserved")


def _storageos(source: StorageOSVolumeSource, path: str) -> Iterator[Problem]:
    if not source.volume_name:
        yield required(f"{path}.volumeName")
    for why in label_faults(source.volume_name) if source.volume_name else ():
        yield invalid(f"{path}.volumeName", source.volume_name, why)
    for why in label_faults(source.volume_namespace) if source.volume_namespace else ():
        yield invalid(f"{path}.volumeNamespace", source.volume_namespace, why)
    if source.secret_ref is not None and not source.secret_ref.name:
        yield required(f"{path}.secretRef.name")


def _projected(source: ProjectedVolumeSource, path: str) -> Iterator[Problem]:
    """upstream validateProjectedVolumeSource and validateProjectionSources."""
    yield from _mode(source.default_mode, f"{path}.defaultMode")
    paths: set[str] = set()

    def once(value: str, shown: str) -> Iterator[Problem]:
        if value in paths:
            yield invalid(path, shown, "conflicting duplicate paths")
        paths.add(value)

    for i, s in enumerate(source.sources):
        sp = f"{path}.sources[{i}]"
        kinds = 0
        for name, ref in (("secret", s.secret), ("configMap", s.config_map)):
            if ref is None:
                continue
            kinds += 1
            if not ref.name:
                yield required(f"{sp}.{name}.name")
            for j, item in enumerate(ref.items):
                yield from _key_to_path(item, f"{sp}.{name}.items[{j}]")
                if item.path:
                    yield from once(item.path, ref.name)
        if s.downward_api is not None:
            kinds += 1
            for file in s.downward_api.items:
                yield from _downward_file(file, f"{sp}.downwardAPI")
                if file.path:
                    yield from once(file.path, file.path)
        if (token := s.service_account_token) is not None:
            kinds += 1
            seconds = 3600 if token.expiration_seconds is None else token.expiration_seconds
            if seconds < 600:
                yield invalid(f"{sp}.serviceAccountToken.expirationSeconds", seconds,
                              "may not specify a duration less than 10 minutes")
            if seconds > 1 << 32:
                yield invalid(f"{sp}.serviceAccountToken.expirationSeconds", seconds,
                              "may not specify a duration larger than 2^32 seconds")
            if not token.path:
                yield required(f"{path}.path")
            else:
                yield from _local_path(token.path, f"{path}.path")
        if (bundle := s.cluster_trust_bundle) is not None:
            kinds += 1
            bp = f"{sp}.clusterTrustBundle"
            if bundle.name and bundle.signer_name:
                yield invalid(bp, "", "only one of name and signerName may be used")
            elif not bundle.name and not bundle.signer_name:
                yield required(bp, "either name or signerName must be specified")
            elif bundle.name and bundle.label_selector is not None:
                yield invalid(f"{bp}.labelSelector", "",
                              "labelSelector must be unset if name is specified")
            if not bundle.path:
                yield required(f"{bp}.path")
            yield from _local_path(bundle.path, f"{bp}.path")
            yield from once(bundle.path, bundle.path)
        if kinds > 1:
            yield forbidden(sp, "may not specify more than 1 volume type per source")


def _csi(source: CSIVolumeSource, path: str) -> Iterator[Problem]:
    """upstream validateCSIVolumeSource and ValidateCSIDriverName."""
    driver = source.driver
    if not driver:
        yield required(f"{path}.driver")
    if len(driver) > 63:
        yield f"{path}.driver", "Too long: may not be more than 63 bytes"
    for why in subdomain_faults(driver.lower()):
        yield invalid(f"{path}.driver", driver, why)
    ref = source.node_publish_secret_ref
    if ref is not None:
        if not ref.name:
            yield required(f"{path}.nodePublishSecretRef.name")
        for why in subdomain_faults(ref.name) if ref.name else ():
            yield invalid(f"{path}.name", ref.name, why)  # upstream's path


def _ephemeral(source: EphemeralVolumeSource, path: str) -> Iterator[Problem]:
    template = source.volume_claim_template
    if template is None:
        yield required(f"{path}.volumeClaimTemplate")
        return
    spec, sp = template.spec, f"{path}.volumeClaimTemplate.spec"
    if not spec.access_modes:
        yield required(f"{sp}.accessModes", "at least 1 access mode is required")
    for mode in spec.access_modes:
        if mode not in ACCESS_MODES:
            yield not_supported(f"{sp}.accessModes", mode, ACCESS_MODES)
    if "ReadWriteOncePod" in spec.access_modes and len(set(spec.access_modes)) > 1:
        yield forbidden(f"{sp}.accessModes", "may not use ReadWriteOncePod with other access "
                        "modes")
    storage = spec.resources.requests.get("storage") if spec.resources else None
    if storage is None:
        yield required(f"{sp}.resources[storage]")
    else:
        q, errors = _quantity(storage, f"{sp}.resources[storage]")
        yield from errors
        if q is not None and q <= 0:
            yield invalid(f"{sp}.resources[storage]", str(storage), "must be greater than zero")
    if spec.volume_mode is not None and spec.volume_mode not in ("Block", "Filesystem"):
        yield not_supported(f"{sp}.volumeMode", spec.volume_mode, ("Block", "Filesystem"))


def _image(source: ImageVolumeSource, path: str) -> Iterator[Problem]:
    if source.pull_policy and source.pull_policy not in PULL_POLICIES:
        yield not_supported(f"{path}.pullPolicy", source.pull_policy, PULL_POLICIES)


ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_SOURCE_CHECKS: dict[str, Callable[[Any, str], Iterator[Problem]]] = {
    "empty_dir": _empty_dir, "host_path": _host_path, "git_repo": _git_repo,
    "gce_persistent_disk": _partition, "aws_elastic_block_store": _partition,
    "secret": _secret, "nfs": _nfs, "iscsi": _iscsi, "flocker": _flocker, "cinder": _cinder,
    "quobyte": _quobyte, "downward_api": _downward_api, "fc": _fc,
    "flex_volume": _flex_volume, "config_map": _config_map, "storageos": _storageos,
    "projected": _projected, "csi": _csi, "ephemeral": _ephemeral, "image": _image,
}  # fmt: skip
