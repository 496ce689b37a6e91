"""configMap, secret and projected volumes from the API server (cluster mode).

Upstream's plugins (pkg/volume/configmap, secret, projected): the object is read through
the kubelet's object manager (here ``ObjectSource``), turned into a payload by
``MakePayload`` (every key, or the ``items`` asked for, each with its own mode or the
volume's ``defaultMode``) and projected with the AtomicWriter, so a container sees
either the old files or the new ones (``..data`` swapped). A missing object fails the
mount with the manager's NotFound (``configmap "x" not found``) unless the reference is
``optional``; a missing key fails with ``configmap references non-existent config key:
k`` unless optional. A projected volume collects every source's error. A
serviceAccountToken source holds a TokenRequest answer bound to the pod (audience,
expirationSeconds, default 3600). Rewritten at every pod sync, so updates and rotated
tokens reach the files. The payload is made here; runtime.kuberuntime.volumes makes the
directory (a tmpfs for secret and projected volumes) and writes it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from runtime.kuberuntime.atomic_writer import FileProjection
from runtime.kuberuntime.downward import metadata_value, resource_value
from runtime.kuberuntime.object_source import Answer, ObjectSource
from runtime.pod.model import KeyToPath, Pod, Volume

__all__ = ["APIVolumeError", "api_volume_payload", "is_api_volume", "referenced_objects"]

DEFAULT_MODE = 0o644
DEFAULT_TOKEN_EXPIRATION = 3600  # the API's default for a projection's expirationSeconds


class APIVolumeError(Exception):
    """The volume cannot be set up; the message is upstream's."""


def is_api_volume(volume: Volume) -> bool:
    return (volume.config_map is not None or volume.secret is not None
            or volume.projected is not None)


def referenced_objects(pod: Pod) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ConfigMaps and Secrets the pod names (podutil.VisitPodConfigmapNames and
    VisitPodSecretNames: volumes, projections, env, envFrom, imagePullSecrets)."""
    config_maps: set[str] = set()
    secrets = {s.name for s in pod.spec.image_pull_secrets if s.name}
    for v in pod.spec.volumes:
        if v.config_map is not None:
            config_maps.add(v.config_map.name)
        if v.secret is not None:
            secrets.add(v.secret.secret_name)
        if v.projected is not None:
            for source in v.projected.sources:
                if source.config_map is not None:
                    config_maps.add(source.config_map.name)
                if source.secret is not None:
                    secrets.add(source.secret.name)
    for c in pod.all_containers():
        for f in c.env_from:
            if f.config_map_ref is not None:
                config_maps.add(f.config_map_ref.name)
            if f.secret_ref is not None:
                secrets.add(f.secret_ref.name)
        for e in c.env:
            ref = e.value_from
            if ref is not None and ref.config_map_key_ref is not None:
                config_maps.add(ref.config_map_key_ref.name)
            if ref is not None and ref.secret_key_ref is not None:
                secrets.add(ref.secret_key_ref.name)
    return tuple(sorted(config_maps - {""})), tuple(sorted(secrets - {""}))


def object_data(kind: str, obj: Mapping[str, Any], env: bool = False) -> dict[str, bytes]:
    """A ConfigMap's data and binaryData (``env``: data only, as upstream's env), or a
    Secret's data (base64 in JSON), as bytes."""
    out: dict[str, bytes] = {}
    if kind == "configmap":
        for key, value in (obj.get("data") or {}).items():
            out[key] = str(value).encode()
        for key, value in ({} if env else obj.get("binaryData") or {}).items():
            out.setdefault(key, base64.b64decode(value))
    else:
        for key, value in (obj.get("data") or {}).items():
            out[key] = base64.b64decode(value)
    return out


def fetch(objects: ObjectSource, kind: str, namespace: str, name: str, optional: bool,
          env: bool = False) -> dict[str, bytes] | None:
    """The object's data; None when it is missing and ``optional``; APIVolumeError with
    upstream's message otherwise."""
    answer: Answer = objects.get(kind, namespace, name)
    if "object" in answer:
        return object_data(kind, answer["object"], env)
    if answer.get("notFound"):
        if optional:
            return None
        raise APIVolumeError(f'{kind} "{name}" not found')
    raise APIVolumeError(str(answer.get("error", "unknown error")))


def make_payload(kind: str, items: tuple[KeyToPath, ...], data: Mapping[str, bytes],
                 default_mode: int, optional: bool) -> dict[str, FileProjection]:
    """upstream MakePayload (configmap and secret)."""
    if not items:
        return {k: FileProjection(v, default_mode) for k, v in data.items()}
    payload: dict[str, FileProjection] = {}
    for item in items:
        if item.key not in data:
            if optional:
                continue
            what = "config" if kind == "configmap" else "secret"
            raise APIVolumeError(f"{kind} references non-existent {what} key: {item.key}")
        payload[item.path] = FileProjection(
            data[item.key], default_mode if item.mode is None else item.mode)
    return payload


def _object_payload(objects: ObjectSource, kind: str, namespace: str, name: str,
                    items: tuple[KeyToPath, ...], mode: int, optional: bool
                    ) -> dict[str, FileProjection]:
    data = fetch(objects, kind, namespace, name, optional)
    return make_payload(kind, items, data or {}, mode, optional)


def _projected_payload(pod: Pod, volume: Volume, objects: ObjectSource
                       ) -> dict[str, FileProjection]:
    assert volume.projected is not None
    mode = DEFAULT_MODE if volume.projected.default_mode is None else volume.projected.default_mode
    namespace = pod.metadata.namespace
    payload: dict[str, FileProjection] = {}
    errors: list[str] = []
    for source in volume.projected.sources:
        try:
            if source.config_map is not None:
                cm = source.config_map
                payload.update(_object_payload(objects, "configmap", namespace, cm.name,
                                               cm.items, mode, bool(cm.optional)))
            elif source.secret is not None:
                s = source.secret
                payload.update(_object_payload(objects, "secret", namespace, s.name, s.items,
                                               mode, bool(s.optional)))
            elif source.service_account_token is not None:
                tp = source.service_account_token
                answer = objects.token(
                    namespace, pod.spec.service_account_name or "default", pod.metadata.name,
                    pod.uid, tp.audience, tp.expiration_seconds or DEFAULT_TOKEN_EXPIRATION)
                if "token" not in answer:
                    raise APIVolumeError(str(answer.get("error", "failed to fetch token")))
                payload[tp.path] = FileProjection(str(answer["token"]).encode(), mode)
            elif source.downward_api is not None:
                for item in source.downward_api.items:
                    if item.field_ref is not None:
                        value = metadata_value(pod, item.field_ref.field_path)
                        if value is None:
                            raise APIVolumeError(
                                f'unsupported fieldRef fieldPath "{item.field_ref.field_path}"')
                    elif item.resource_field_ref is not None:
                        value = resource_value(pod, None, item.resource_field_ref)
                    else:
                        continue
                    payload[item.path] = FileProjection(
                        value.encode(), mode if item.mode is None else item.mode)
            elif (source.cluster_trust_bundle is not None
                  and not source.cluster_trust_bundle.optional):
                raise APIVolumeError("clusterTrustBundle projections are not supported")
            elif source.pod_certificate is not None:
                raise APIVolumeError("podCertificate projections are not supported")
        except APIVolumeError as err:
            errors.append(str(err))
    if errors:
        # utilerrors.NewAggregate: one error alone, else "[a, b]".
        raise APIVolumeError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
    return payload


def api_volume_payload(pod: Pod, volume: Volume, objects: ObjectSource
                       ) -> dict[str, FileProjection]:
    """The files of a configMap, secret or projected volume from the API server (its
    directory, and the medium under it, are runtime.kuberuntime.volumes'); APIVolumeError
    with upstream's message when it cannot be had."""
    namespace = pod.metadata.namespace
    if volume.config_map is not None:
        cm = volume.config_map
        mode = DEFAULT_MODE if cm.default_mode is None else cm.default_mode
        return _object_payload(objects, "configmap", namespace, cm.name, cm.items, mode,
                               bool(cm.optional))
    if volume.secret is not None:
        s = volume.secret
        mode = DEFAULT_MODE if s.default_mode is None else s.default_mode
        return _object_payload(objects, "secret", namespace, s.secret_name, s.items, mode,
                               bool(s.optional))
    return _projected_payload(pod, volume, objects)
