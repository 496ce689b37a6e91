"""Upstream's API defaults for a pod (pkg/apis/core/v1/defaults.go and the ``+default``
markers of the v1 types), in two steps.

``apply_defaults`` is what a decoded manifest pod gets before the kubelet keeps it: the
contextual defaults (image pull policy from the tag, a 0 probe period meaning 10, a volume
without a source being an emptyDir, ...). Fields with a static default already carry it
(runtime.pod.generate's table).

``api_defaults`` adds the rest of what the API server would store: the defaults that write
into fields the pre-issue-9 model already had but left alone (an httpGet path of "/",
requests copied from limits, hostPorts on the host network, a gRPC probe's empty service,
the pod's securityContext ``{}``, schedulerName, enableServiceLinks). They are kept apart
because the container hash and the static-pod UID are hashes of the kept pod's JSON:
applying them there would restart every such container and static pod after an upgrade.
Validation runs on ``api_defaults``' result, as upstream validates a defaulted pod, and
``to_api_object`` renders it as ``kubectl get pod -o json`` would show it.

Not applied: serviceAccountName ``default`` (set by the ServiceAccount admission plugin,
which leaves mirror pods, the API face of static pods, alone), the rounding of quantities
to milli-units (SetDefaults_ResourceList) and the pod-level resources defaults of the
PodLevelResources feature.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec
from msgspec.structs import replace

from runtime.pod.model import (
    Container,
    EmptyDirVolumeSource,
    EphemeralContainer,
    HTTPGetAction,
    Lifecycle,
    LifecycleHandler,
    Pod,
    PodSecurityContext,
    Probe,
    Volume,
)

__all__ = ["api_defaults", "apply_defaults", "default_pull_policy", "to_api_object"]

_S = TypeVar("_S", bound=msgspec.Struct)

# Upstream's SecretVolumeSourceDefaultMode and friends: 0644.
DEFAULT_MODE = 0o644
DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600
DEFAULT_SCHEDULER_NAME = "default-scheduler"


def default_pull_policy(image: str) -> str:
    """Upstream's default: Always for ``:latest`` or an untagged image, else IfNotPresent.

    A digest (``@sha256:...``) pins the image as firmly as a tag, so it counts as one.
    """
    if "@" in image:
        return "IfNotPresent"
    # The tag is after the last ':' of the last path component; a ':' before the last
    # '/' belongs to a registry host's port (localhost:5000/busybox has no tag).
    last = image.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _changed(value: _S, **changes: Any) -> _S:
    """``value`` with ``changes``, or ``value`` itself when nothing differs (cheap)."""
    changes = {k: v for k, v in changes.items() if getattr(value, k) is not v}
    return replace(value, **changes) if changes else value


# --- the kept pod -------------------------------------------------------------------------


def _probe(probe: Probe | None) -> Probe | None:
    if probe is None:
        return None
    # SetDefaults_Probe: an explicit 0 means "the default".
    return _changed(
        probe,
        timeout_seconds=probe.timeout_seconds or 1,
        period_seconds=probe.period_seconds or 10,
        success_threshold=probe.success_threshold or 1,
        failure_threshold=probe.failure_threshold or 3,
        http_get=_http_get(probe.http_get),
    )


def _http_get(action: HTTPGetAction | None) -> HTTPGetAction | None:
    if action is None or action.scheme:
        return action
    return replace(action, scheme="HTTP")


def _handler(handler: LifecycleHandler | None) -> LifecycleHandler | None:
    if handler is None:
        return None
    return _changed(handler, http_get=_http_get(handler.http_get))


def _lifecycle(lifecycle: Lifecycle | None) -> Lifecycle | None:
    if lifecycle is None:
        return None
    return _changed(
        lifecycle, post_start=_handler(lifecycle.post_start), pre_stop=_handler(lifecycle.pre_stop)
    )


_C = TypeVar("_C", Container, EphemeralContainer)


def _container(c: _C) -> _C:
    ports = c.ports
    if any(not p.protocol for p in ports):
        ports = tuple(p if p.protocol else replace(p, protocol="TCP") for p in ports)
    return _changed(
        c,
        image_pull_policy=c.image_pull_policy or default_pull_policy(c.image),
        ports=ports,
        termination_message_policy=c.termination_message_policy or "File",
        termination_message_path=c.termination_message_path or "/dev/termination-log",
        liveness_probe=_probe(c.liveness_probe),
        readiness_probe=_probe(c.readiness_probe),
        startup_probe=_probe(c.startup_probe),
        lifecycle=_lifecycle(c.lifecycle),
    )


def _volume(v: Volume) -> Volume:
    # SetDefaults_Volume: a volume that names no source is an emptyDir.
    if all(getattr(v, f) is None for f in _SOURCE_ATTRS):
        return replace(v, empty_dir=EmptyDirVolumeSource())
    changes: dict[str, Any] = {}
    for attr in ("secret", "config_map", "downward_api", "projected"):
        source = getattr(v, attr)
        if source is not None and source.default_mode is None:
            changes[attr] = source = replace(source, default_mode=DEFAULT_MODE)
    if v.projected is not None and any(
        s.service_account_token is not None
        and s.service_account_token.expiration_seconds is None
        for s in v.projected.sources
    ):
        sources = tuple(
            replace(s, service_account_token=replace(
                s.service_account_token, expiration_seconds=DEFAULT_TOKEN_EXPIRATION_SECONDS))
            if s.service_account_token is not None
            and s.service_account_token.expiration_seconds is None else s
            for s in v.projected.sources
        )
        changes["projected"] = replace(changes.get("projected", v.projected), sources=sources)
    if v.image is not None and not v.image.pull_policy:
        tag_latest = default_pull_policy(v.image.reference) == "Always"
        # SetDefaults_Volume: only an explicit ":latest" means Always for image volumes.
        explicit_latest = tag_latest and v.image.reference.rsplit("/", 1)[-1].endswith(":latest")
        policy = "Always" if explicit_latest else "IfNotPresent"
        changes["image"] = replace(v.image, pull_policy=policy)
    if v.ephemeral is not None and v.ephemeral.volume_claim_template is not None:
        spec = v.ephemeral.volume_claim_template.spec
        if spec.volume_mode is None:
            template = replace(v.ephemeral.volume_claim_template,
                               spec=replace(spec, volume_mode="Filesystem"))
            changes["ephemeral"] = replace(v.ephemeral, volume_claim_template=template)
    # The +default markers of the in-tree volume sources.
    for attr, defaults in _MARKER_DEFAULTS.items():
        source = getattr(v, attr)
        if source is not None:
            fill = {k: d for k, d in defaults.items() if getattr(source, k) in (None, "")}
            if fill:
                changes[attr] = replace(source, **fill)
    return replace(v, **changes) if changes else v


_SOURCE_ATTRS = tuple(f.name for f in msgspec.structs.fields(Volume) if f.name != "name")
_MARKER_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "iscsi": {"iscsi_interface": "default"},
    "rbd": {"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"},
    "azure_disk": {"caching_mode": "ReadWrite", "fs_type": "ext4", "read_only": False,
                   "kind": "Shared"},
    "scale_io": {"storage_mode": "ThinProvisioned", "fs_type": "xfs"},
}


def _each(items: tuple[_S, ...], fn: Callable[[_S], _S]) -> tuple[_S, ...]:
    result = tuple(fn(i) for i in items)
    return items if all(a is b for a, b in zip(result, items, strict=True)) else result


def apply_defaults(pod: Pod) -> Pod:
    """The pod with the defaults the kubelet keeps (a new value; the input is unchanged)."""
    spec = pod.spec
    spec = _changed(
        spec,
        containers=_each(spec.containers, _container),
        init_containers=_each(spec.init_containers, _container),
        ephemeral_containers=_each(spec.ephemeral_containers, _container),
        volumes=_each(spec.volumes, _volume),
        restart_policy=spec.restart_policy or "Always",
        dns_policy=spec.dns_policy or "ClusterFirst",
    )
    metadata = pod.metadata
    if not metadata.namespace:
        metadata = replace(metadata, namespace="default")
    return _changed(pod, metadata=metadata, spec=spec)


# --- what the API server would store -------------------------------------------------------


def _api_http_get(action: HTTPGetAction | None) -> HTTPGetAction | None:
    if action is None or action.path:
        return action
    return replace(action, path="/")


def _api_handler(handler: LifecycleHandler | None) -> LifecycleHandler | None:
    if handler is None:
        return None
    return _changed(handler, http_get=_api_http_get(handler.http_get))


def _api_probe(probe: Probe | None) -> Probe | None:
    if probe is None:
        return None
    grpc = probe.grpc
    if grpc is not None and grpc.service is None:
        grpc = replace(grpc, service="")  # +default="" on GRPCAction.service
    return _changed(probe, http_get=_api_http_get(probe.http_get), grpc=grpc)


def _api_container(c: _C, host_network: bool, pod_resources: bool) -> _C:
    resources = c.resources
    # SetDefaults_Pod: requests default to limits, per resource (not for ephemeral ones).
    if pod_resources and resources is not None and resources.limits:
        missing = {k: v for k, v in resources.limits.items() if k not in resources.requests}
        if missing:
            resources = replace(resources, requests={**resources.requests, **missing})
    ports = c.ports
    if host_network and any(p.host_port == 0 for p in ports):
        ports = tuple(p if p.host_port else replace(p, host_port=p.container_port)
                      for p in ports)
    lifecycle = c.lifecycle
    if lifecycle is not None:
        lifecycle = _changed(lifecycle, post_start=_api_handler(lifecycle.post_start),
                             pre_stop=_api_handler(lifecycle.pre_stop))
    env = c.env
    if any(e.value_from is not None and e.value_from.field_ref is not None
           and not e.value_from.field_ref.api_version for e in env):
        env = tuple(
            replace(e, value_from=replace(e.value_from, field_ref=replace(
                e.value_from.field_ref, api_version="v1")))
            if e.value_from is not None and e.value_from.field_ref is not None
            and not e.value_from.field_ref.api_version else e
            for e in env
        )
    return _changed(
        c, resources=resources, ports=ports, lifecycle=lifecycle, env=env,
        liveness_probe=_api_probe(c.liveness_probe),
        readiness_probe=_api_probe(c.readiness_probe),
        startup_probe=_api_probe(c.startup_probe),
    )


def api_defaults(pod: Pod, *, defaulted: bool = False) -> Pod:
    """The pod as the API server would store it: apply_defaults plus the defaults kept
    out of the hashed pod (see the module docstring). ``defaulted`` says ``pod`` is
    already apply_defaults' result, so that step is skipped."""
    if not defaulted:
        pod = apply_defaults(pod)
    spec = pod.spec
    net = spec.host_network
    spec = _changed(
        spec,
        containers=_each(spec.containers, lambda c: _api_container(c, net, True)),
        init_containers=_each(spec.init_containers, lambda c: _api_container(c, net, True)),
        ephemeral_containers=_each(
            spec.ephemeral_containers, lambda c: _api_container(c, False, False)),
        security_context=spec.security_context or PodSecurityContext(),
        termination_grace_period_seconds=(
            30 if spec.termination_grace_period_seconds is None
            else spec.termination_grace_period_seconds),
        scheduler_name=spec.scheduler_name or DEFAULT_SCHEDULER_NAME,
        enable_service_links=(
            True if spec.enable_service_links is None else spec.enable_service_links),
    )
    return _changed(pod, spec=spec)


# --- rendering ----------------------------------------------------------------------------

_EMPTY: tuple[object, ...] = ("", 0, False, (), None)
_SHOWN = object()
"""In _render_fields: the field has no empty default, so it is shown whatever it holds."""


@functools.cache
def _render_fields(cls: type[msgspec.Struct]) -> tuple[tuple[str, str, object], ...]:
    """Per Struct type: (attribute, JSON name, the empty default that is left out, or
    _SHOWN). Once per type: msgspec.structs.fields resolves the type's annotations on
    every call, which was most of the CPU of a GET /pods with many pods."""
    rows = []
    for field in msgspec.structs.fields(cls):
        default = field.default
        if field.default_factory is not msgspec.NODEFAULT:
            default = field.default_factory()
        empty = default is not msgspec.NODEFAULT and _is_empty(default)
        rows.append((field.name, field.encode_name, default if empty else _SHOWN))
    return tuple(rows)


def to_api_object(value: Any) -> Any:
    """``value`` (a model Struct, or anything inside one) as JSON-ready builtins the way
    upstream's Go types encode: fields with a static default are shown even at their
    default (``timeoutSeconds: 1``), empty and unset ones are left out."""
    if isinstance(value, msgspec.Struct):
        out: dict[str, Any] = {}
        for name, encode_name, omitted in _render_fields(type(value)):
            item = getattr(value, name)
            if item is None or (omitted is not _SHOWN and item == omitted):
                continue
            out[encode_name] = to_api_object(item)
        return out
    if isinstance(value, tuple | list):
        return [to_api_object(v) for v in value]
    if isinstance(value, Mapping):
        return {k: to_api_object(v) for k, v in value.items()}
    return value


def _is_empty(value: object) -> bool:
    if isinstance(value, Mapping):
        return not value
    return any(value is e or (type(value) is type(e) and value == e) for e in _EMPTY)
