"""A pod's volumes on the node: what upstream's volume manager sets up before a pod's
sandbox is made, for the volumes a node without an API server or volume plugins has.

emptyDir, hostPath (with upstream's type checks) and downwardAPI (the pod's metadata
and its containers' resources as files, written atomically as upstream's AtomicWriter
writes them and rewritten on each sync, so they follow the pod's labels and annotations)
are set up. Volumes whose objects come from the API server (configMap, secret,
projected configMap/secret sources) find none, as upstream's kubelet finds none when the
object does not exist: a reference marked ``optional: true`` gets an empty volume, any
other fails with upstream's message (``configmap "x" not found``). Claims
(persistentVolumeClaim, ephemeral), CSI and the in-tree cloud and network plugins fail as
upstream fails them when the claim or driver is missing. A pod with a volume that fails
is not started (no sandbox): it stays Pending with its containers ContainerCreating, and
each failure is logged as upstream's FailedMount event
(``MountVolume.SetUp failed for volume "v" : ...``).

Secret, projected and downwardAPI volumes, and emptyDirs of medium ``Memory``, are a
tmpfs; ``HugePages`` emptyDirs a hugetlbfs (runtime.kuberuntime.memory_volumes decides,
the ``VolumeMounts`` service mounts): the files are written after the mount, so they
never touch the node's disk.
"""

from __future__ import annotations

import os
import shutil
import stat

from runtime.kuberuntime.api_volumes import APIVolumeError, api_volume_payload, is_api_volume
from runtime.kuberuntime.atomic_writer import AtomicWriter, FileProjection, PayloadError
from runtime.kuberuntime.downward import volume_file_values
from runtime.kuberuntime.host_paths import HostPaths, NodeHostPaths
from runtime.kuberuntime.memory_volumes import (
    MediumError,
    set_up_medium,
    tear_down_memory_volumes,
    volume_medium,
)
from runtime.kuberuntime.object_source import ObjectSource
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.volume_mounts import NodeVolumeMounts, VolumeMounts
from runtime.kuberuntime.volume_ownership import apply_fs_group
from runtime.pod.model import DownwardAPIVolumeFile, Pod, Volume, volume_source

__all__ = ["VolumeSetupError", "set_up_volume", "set_up_volumes", "tear_down_pod_volumes",
           "volume_path"]


NODE_HOST_PATHS: HostPaths = NodeHostPaths()
"""The node's own paths, for callers that inject none."""

NODE_VOLUME_MOUNTS: VolumeMounts = NodeVolumeMounts()
"""The node's own mount table, for callers that inject none."""


class VolumeSetupError(Exception):
    """A volume could not be set up; the message is upstream's error for it."""


def _not_found(kind: str, name: str) -> str:
    """The NotFound error of upstream's configmap and secret managers."""
    return f'{kind} "{name}" not found'


def _plugin_dir(pod: Pod, plugin: str, volume: Volume, settings: NodeSettings) -> str:
    return os.path.join(settings.pod_dir(pod.metadata.uid), "volumes", f"kubernetes.io~{plugin}",
                        volume.name)


def _make_dir(path: str, mode: int) -> None:
    os.makedirs(path, mode=mode, exist_ok=True)
    # Only when the permission bits differ, as upstream's emptyDir setupDir: a chmod would
    # drop the setgid bit an fsGroup gave the volume.
    if stat.S_IMODE(os.stat(path).st_mode) & 0o777 != mode:
        os.chmod(path, mode)


def _empty_volume(pod: Pod, plugin: str, volume: Volume, settings: NodeSettings,
                  mounts: VolumeMounts, mode: int = 0o755) -> str:
    """The volume's directory, with its medium mounted on it when it has one (made
    0777 beneath the mount, as upstream's setupDir makes every emptyDir)."""
    path = _plugin_dir(pod, plugin, volume, settings)
    if not volume_medium(volume):
        _make_dir(path, mode)
        return path
    try:
        set_up_medium(pod, volume, path, settings, mounts,
                      lambda: _make_dir(path, 0o777))
    except MediumError as err:
        raise VolumeSetupError(str(err)) from err
    return path


def _host_path(volume: Volume, host_paths: HostPaths) -> str:
    assert volume.host_path is not None
    path = volume.host_path.path
    error = host_paths.prepare(path, volume.host_path.type or "")
    if error:
        raise VolumeSetupError(error)
    return path


def _downward_files(pod: Pod, items: tuple[DownwardAPIVolumeFile, ...], mode: int,
                    settings: NodeSettings) -> dict[str, FileProjection]:
    """The files of downwardAPI items (runtime.kuberuntime.downward), each with its own
    mode or the source's ``mode``."""
    values, errors = volume_file_values(pod, items, dict(settings.allocatable))
    if errors:
        raise VolumeSetupError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
    return {path: FileProjection(content.encode(), mode if own is None else own)
            for path, (content, own) in values.items()}


def _projected_volume(pod: Pod, plugin: str, volume: Volume, settings: NodeSettings,
                      mounts: VolumeMounts, files: dict[str, FileProjection]) -> str:
    """Make the volume's directory (and mount its medium) then project ``files`` into it
    as upstream's AtomicWriter does: readers see the old version or the new one, never a
    mix. A write that fails tears a memory-backed volume down again, as upstream's
    plugins do when their set-up does not succeed."""
    path = _empty_volume(pod, plugin, volume, settings, mounts)
    try:
        AtomicWriter(path).write(files)
    except PayloadError as err:
        if volume_medium(volume):
            mounts.tear_down(path)
        raise VolumeSetupError(str(err)) from err
    return path


def _projected(pod: Pod, volume: Volume, settings: NodeSettings, mounts: VolumeMounts) -> str:
    """A projected volume: its downwardAPI items are written; every non-optional
    configMap or secret source is missing; a service account token needs the API
    server."""
    assert volume.projected is not None
    mode = volume.projected.default_mode
    files: dict[str, FileProjection] = {}
    errors: list[str] = []
    for source in volume.projected.sources:
        if source.config_map is not None and not source.config_map.optional:
            errors.append(_not_found("configmap", source.config_map.name))
        elif source.secret is not None and not source.secret.optional:
            errors.append(_not_found("secret", source.secret.name))
        elif source.service_account_token is not None:
            errors.append("failed to fetch token: no API server to request a service "
                          "account token from")
        elif source.downward_api is not None:
            try:
                files.update(_downward_files(pod, source.downward_api.items,
                                             0o644 if mode is None else mode, settings))
            except VolumeSetupError as err:
                errors.append(str(err))
        elif source.cluster_trust_bundle is not None and not source.cluster_trust_bundle.optional:
            errors.append("clusterTrustBundle projections need an API server")
        elif source.pod_certificate is not None:
            errors.append("podCertificate projections need an API server")
    if errors:
        # utilerrors.NewAggregate: one error alone, else "[a, b]".
        raise VolumeSetupError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
    return _projected_volume(pod, "projected", volume, settings, mounts, files)


def tear_down_pod_volumes(uid: str, settings: NodeSettings,
                          mounts: VolumeMounts = NODE_VOLUME_MOUNTS) -> tuple[str, ...]:
    """Unmount the pod's memory-backed volumes and remove their directories, as upstream's
    volume manager unmounts a terminated pod's volumes (WaitForUnmount); upstream's error
    for each that stays mounted."""
    return tear_down_memory_volumes(os.path.join(settings.pod_dir(uid), "volumes"), mounts)


def tear_down_empty_dirs(pod: Pod, settings: NodeSettings) -> None:
    """Delete what the pod's disk-backed emptyDir volumes hold (upstream's emptyDir
    TearDown), so the disk an evicted pod used is free again."""
    for volume in pod.spec.volumes:
        if volume.empty_dir is not None and not volume.empty_dir.medium:
            shutil.rmtree(_plugin_dir(pod, "empty-dir", volume, settings), ignore_errors=True)


def set_up_volume(pod: Pod, volume: Volume, settings: NodeSettings,
                  objects: ObjectSource | None = None,
                  host_paths: HostPaths = NODE_HOST_PATHS,
                  mounts: VolumeMounts = NODE_VOLUME_MOUNTS) -> str:
    """Set ``volume`` up on the node and return its host path; VolumeSetupError with
    upstream's message when it cannot be had. With ``objects`` (cluster mode) configMap,
    secret and projected volumes come from the API server (api_volumes); hostPath volumes
    are prepared by ``host_paths``; memory-backed ones mounted by ``mounts``."""
    if objects is not None and is_api_volume(volume):
        try:
            files = api_volume_payload(pod, volume, objects)
        except APIVolumeError as err:
            raise VolumeSetupError(str(err)) from err
        plugin = ("configmap" if volume.config_map is not None
                  else "secret" if volume.secret is not None else "projected")
        return _projected_volume(pod, plugin, volume, settings, mounts, files)
    if volume.host_path is not None:
        return _host_path(volume, host_paths)
    source = volume_source(volume)
    if source is None or source == "emptyDir":
        # Any container user may write an emptyDir, as upstream makes it.
        return _empty_volume(pod, "empty-dir", volume, settings, mounts, mode=0o777)
    if volume.config_map is not None:
        if not volume.config_map.optional:
            raise VolumeSetupError(_not_found("configmap", volume.config_map.name))
        return _empty_volume(pod, "configmap", volume, settings, mounts)
    if volume.secret is not None:
        if not volume.secret.optional:
            raise VolumeSetupError(_not_found("secret", volume.secret.secret_name))
        return _empty_volume(pod, "secret", volume, settings, mounts)
    if volume.projected is not None:
        return _projected(pod, volume, settings, mounts)
    if volume.downward_api is not None:
        source_mode = volume.downward_api.default_mode
        files = _downward_files(pod, volume.downward_api.items,
                                0o644 if source_mode is None else source_mode, settings)
        return _projected_volume(pod, "downward-api", volume, settings, mounts, files)
    claim = ""
    if volume.persistent_volume_claim is not None:
        claim = volume.persistent_volume_claim.claim_name
    elif volume.ephemeral is not None:
        claim = f"{pod.metadata.name}-{volume.name}"  # the claim the ephemeral controller makes
    if claim:
        raise VolumeSetupError(
            f"error processing PVC {pod.metadata.namespace}/{claim}: failed to fetch PVC from "
            f'API server: persistentvolumeclaims "{claim}" not found')
    if volume.csi is not None:
        raise VolumeSetupError(
            "kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name "
            f"{volume.csi.driver} not found in the list of registered CSI drivers")
    raise VolumeSetupError(
        f"no volume plugin matched: this kubelet cannot mount {source} volumes")


def set_up_volumes(pod: Pod, settings: NodeSettings, objects: ObjectSource | None = None,
                   host_paths: HostPaths = NODE_HOST_PATHS,
                   mounts: VolumeMounts = NODE_VOLUME_MOUNTS) -> tuple[tuple[str, str], ...]:
    """Set up every volume of ``pod``, as upstream's volume manager does before the pod
    starts; the (volume name, upstream's error) of each one that cannot be had."""
    failures: list[tuple[str, str]] = []
    for volume in pod.spec.volumes:
        try:
            apply_fs_group(pod, volume, set_up_volume(pod, volume, settings, objects,
                                                      host_paths, mounts), settings)
        except VolumeSetupError as err:
            failures.append((volume.name, str(err)))
        except OSError as err:
            failures.append((volume.name, f"{err.filename}: {err.strerror}"))
    return tuple(failures)


_PLUGIN_DIRS = {"emptyDir": "empty-dir", "configMap": "configmap", "secret": "secret",
                "projected": "projected", "downwardAPI": "downward-api"}
"""The plugin directory (``kubernetes.io~<plugin>``) of each volume kind set up there."""


def volume_path(pod: Pod, volume: Volume, settings: NodeSettings) -> str:
    """Where ``volume``, set up before the sandbox (set_up_volumes), is on the node: looked
    up, the node untouched, as upstream's makeMounts looks it up among the volume
    manager's mounted volumes; VolumeSetupError with its words for one never set up."""
    if volume.host_path is not None:
        return volume.host_path.path
    plugin = _PLUGIN_DIRS.get(volume_source(volume) or "emptyDir")
    if plugin is None:
        raise VolumeSetupError(f'cannot find volume "{volume.name}" to mount into container')
    return _plugin_dir(pod, plugin, volume, settings)
