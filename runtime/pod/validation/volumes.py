"""Volumes (upstream's ValidateVolumes, validateVolumeSource and the source validators).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from runtime.pod.model import (
    Volume,
    volume_sources,
)
from runtime.pod.validation.containers import (
    _quantity,
)
from runtime.pod.validation.fields import (
    Problem,
    _descending_path,
    _no_backsteps,
    dns1123_label,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)

HOST_PATH_TYPES = (
    "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
    "Socket",
)  # fmt: skip

# --- volumes -------------------------------------------------------------------------------


def _mode(mode: int | None, path: str) -> Iterator[Problem]:
    if mode is not None and not 0 <= mode <= 0o777:
        yield invalid(path, mode, "must be a number between 0 and 0777 (octal), both inclusive")


def _volume(v: Volume, path: str, names: set[str]) -> Iterator[Problem]:
    if not v.name:
        yield required(f"{path}.name")
    elif why := dns1123_label(v.name):
        yield invalid(f"{path}.name", v.name, why)
    elif v.name in names:
        yield duplicate(f"{path}.name", v.name)
    names.add(v.name)
    sources = volume_sources(v)
    if not sources:
        yield required(path, "must specify a volume type")
    for extra in sources[1:]:
        yield forbidden(f"{path}.{extra}", "may not specify more than 1 volume type")
    if v.host_path is not None:
        p = f"{path}.hostPath"
        if not v.host_path.path:
            yield required(f"{p}.path")
        else:
            yield from _no_backsteps(v.host_path.path, f"{p}.path")
        if v.host_path.type not in HOST_PATH_TYPES:
            yield not_supported(f"{p}.type", v.host_path.type, HOST_PATH_TYPES)
    if v.empty_dir is not None and v.empty_dir.size_limit is not None:
        q, errors = _quantity(v.empty_dir.size_limit, f"{path}.emptyDir.sizeLimit")
        yield from errors
        if q is not None and q < 0:
            yield forbidden(f"{path}.emptyDir.sizeLimit",
                            "SizeLimit field must be a valid resource quantity")
    if v.secret is not None:
        if not v.secret.secret_name:
            yield required(f"{path}.secret.secretName")
        yield from _mode(v.secret.default_mode, f"{path}.secret.defaultMode")
        yield from _items(v.secret.items, f"{path}.secret.items")
    if v.config_map is not None:
        if not v.config_map.name:
            yield required(f"{path}.configMap.name")
        yield from _mode(v.config_map.default_mode, f"{path}.configMap.defaultMode")
        yield from _items(v.config_map.items, f"{path}.configMap.items")
    if v.persistent_volume_claim is not None and not v.persistent_volume_claim.claim_name:
        yield required(f"{path}.persistentVolumeClaim.claimName")
    if v.downward_api is not None:
        yield from _mode(v.downward_api.default_mode, f"{path}.downwardAPI.defaultMode")
        for i, item in enumerate(v.downward_api.items):
            p = f"{path}.downwardAPI.items[{i}]"
            if not item.path:
                yield required(f"{p}.path")
            else:
                yield from _descending_path(item.path, f"{p}.path")
    if v.nfs is not None:
        if not v.nfs.server:
            yield required(f"{path}.nfs.server")
        if not v.nfs.path.startswith("/"):
            yield invalid(f"{path}.nfs.path", v.nfs.path, "must be an absolute path")
    if v.csi is not None and not v.csi.driver:
        yield required(f"{path}.csi.driver")
    if v.image is not None and not v.image.reference:
        yield required(f"{path}.image.reference")
    if v.projected is not None:
        yield from _mode(v.projected.default_mode, f"{path}.projected.defaultMode")


def _items(items: Iterable[object], path: str) -> Iterator[Problem]:
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        if not getattr(item, "key", ""):
            yield required(f"{p}.key")
        target = getattr(item, "path", "")
        if not target:
            yield required(f"{p}.path")
        else:
            yield from _descending_path(target, f"{p}.path")
        yield from _mode(getattr(item, "mode", None), f"{p}.mode")


