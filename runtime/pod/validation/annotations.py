"""Pod annotations upstream validates (ValidatePodSpecificAnnotations) and those that must
agree with the fields that replaced them (validateSeccompAnnotationsAndFields,
validateAppArmorAnnotationsAndFieldsMatchOnCreate): the deprecated seccomp, AppArmor and
tolerations annotations, and the deletion cost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from runtime.pod.model import AppArmorProfile, Pod, SeccompProfile, Toleration
from runtime.pod.validation.fields import Problem, _descending_path, forbidden, invalid
from runtime.pod.validation.gojson import GoJSONError, Number, loads
from runtime.pod.validation.scheduling import _toleration
from runtime.pod.validation.security import containers_with_paths

SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER = "container.seccomp.security.alpha.kubernetes.io/"
APPARMOR_CONTAINER = "container.apparmor.security.beta.kubernetes.io/"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
TOLERATIONS = "scheduler.alpha.kubernetes.io/tolerations"
"""upstream TolerationsAnnotationKey: deprecated, yet still decoded and validated."""
_INT = re.compile(r"[+-]?[0-9]+")


def pod_annotations(pod: Pod) -> Iterator[Problem]:
    """upstream ValidatePodSpecificAnnotations (the deletion cost, the seccomp and AppArmor
    annotations' formats), then ValidatePodCreate's checks that annotation and field agree."""
    annotations = pod.metadata.annotations
    path = "metadata.annotations"
    # upstream's "must set spec.nodeName if mirror pod annotation is set" is not applied: the
    # kubelet's file source sets nodeName before it validates, and an API server's pod was
    # checked there, so on a node it cannot fire.
    if annotations.get(TOLERATIONS):
        yield from _tolerations_annotation(annotations[TOLERATIONS], path)
    if (cost := annotations.get(DELETION_COST)) is not None and not (
            _INT.fullmatch(cost) and -(2**31) <= int(cost) < 2**31):
        yield invalid(f"{path}[{DELETION_COST}]", cost, "must be a 32bit integer")
    for key, value in annotations.items():
        # upstream's path here is Child(key), not Key(key): "annotations.<key>"
        if key == SECCOMP_POD or key.startswith(SECCOMP_CONTAINER):
            yield from _seccomp_annotation(value, f"{path}.{key}")
    names = {c.name for c, _ in containers_with_paths(pod.spec)}
    for key, value in annotations.items():
        if not key.startswith(APPARMOR_CONTAINER):
            continue
        container = key.removeprefix(APPARMOR_CONTAINER)
        if container not in names:
            yield invalid(f"{path}[{key}]", container, "container not found")
        if value not in ("", "runtime/default", "unconfined") and not value.startswith(
                "localhost/"):
            yield invalid(f"{path}[{key}]", value, f"invalid AppArmor profile name: {value!r}"
                          .replace("'", '"'))
    yield from _seccomp_match(pod)
    yield from _apparmor_match(pod)


_TOLERATION_FIELDS = {  # Go's field name (the internal type has no JSON tags), its type
    "key": ("Key", "string"), "operator": ("Operator", "core.TolerationOperator"),
    "value": ("Value", "string"), "effect": ("Effect", "core.TaintEffect"),
    "tolerationseconds": ("TolerationSeconds", "int64"),
}


def _tolerations_annotation(text: str, path: str) -> Iterator[Problem]:
    """upstream ValidateTolerationsInPodAnnotations: the annotation json.Unmarshal-ed into
    []core.Toleration (a failure is reported at the annotations, the key as the value), then
    ValidateTolerations at ``annotations.<key>``."""
    try:
        tolerations = _decode_tolerations(loads(text.encode()))
    except GoJSONError as err:
        yield invalid(path, TOLERATIONS, str(err))
        return
    except RecursionError:
        # Go nests 10000 deep before its "exceeded max depth"; Python's stack gives out
        # sooner, and a pod so nested is refused in Go's words for the deeper case
        yield invalid(path, TOLERATIONS, "exceeded max depth")
        return
    for i, t in enumerate(tolerations):
        yield from _toleration(t, f"{path}.{TOLERATIONS}[{i}]")


def _json_kind(value: object) -> str:
    """The JSON kind Go's UnmarshalTypeError names (a number with its literal text)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Number):
        return f"number {value}"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def _decode_tolerations(value: object) -> list[Toleration]:
    """json.Unmarshal into []core.Toleration: keys matched whatever their case, unknown keys
    ignored, null leaving a field unset; the first type error wins."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise GoJSONError(f"json: cannot unmarshal {_json_kind(value).split()[0]} into Go "
                          "value of type []core.Toleration")
    tolerations: list[Toleration] = []
    for item in value:
        if item is None:
            tolerations.append(Toleration())
            continue
        if not isinstance(item, dict):
            raise GoJSONError(f"json: cannot unmarshal {_json_kind(item).split()[0]} into Go "
                              "value of type core.Toleration")
        fields: dict[str, object] = {}
        for key, field_value in item.items():
            known = _TOLERATION_FIELDS.get(key.lower())
            if known is None or field_value is None:
                continue
            name, go_type = known
            if go_type == "int64":
                ok = isinstance(field_value, Number) and _is_int64(field_value)
                kind = _json_kind(field_value) if isinstance(field_value, Number) else (
                    _json_kind(field_value).split()[0])
                if ok:
                    fields[name] = int(field_value)
            else:
                ok = isinstance(field_value, str) and not isinstance(field_value, Number)
                kind = _json_kind(field_value).split()[0]
                if ok:
                    fields[name] = field_value
            if not ok:
                raise GoJSONError(f"json: cannot unmarshal {kind} into Go struct field "
                                  f"Toleration.{name} of type {go_type}")
        tolerations.append(Toleration(
            key=str(fields.get("Key", "")), operator=str(fields.get("Operator", "")),
            value=str(fields.get("Value", "")), effect=str(fields.get("Effect", "")),
            toleration_seconds=_int_or_none(fields.get("TolerationSeconds"))))
    return tolerations


def _is_int64(number: str) -> bool:
    """Go's strconv.ParseInt(number, 10, 64): digits only, in range."""
    return bool(_INT.fullmatch(number)) and -(2**63) <= int(number) < 2**63


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _seccomp_annotation(value: str, path: str) -> Iterator[Problem]:
    """upstream ValidateSeccompProfile."""
    if value in ("runtime/default", "docker/default", "unconfined"):
        return
    if value.startswith("localhost/"):
        yield from _descending_path(value.removeprefix("localhost/"), path)
        return
    yield invalid(path, value, "must be a valid seccomp profile")


def _seccomp_agrees(annotation: str, profile: SeccompProfile, path: str) -> Iterator[Problem]:
    """upstream validateSeccompAnnotationsAndFieldsMatch."""
    allowed = {"Unconfined": ("unconfined",), "RuntimeDefault": ("runtime/default",
                                                                "docker/default")}
    if profile.type in allowed and annotation not in allowed[profile.type]:
        yield forbidden(f"{path}.type", "seccomp type in annotation and field must match")
    elif profile.type == "Localhost":
        if not annotation.startswith("localhost/"):
            yield forbidden(f"{path}.type", "seccomp type in annotation and field must match")
        elif annotation.removeprefix("localhost/") != profile.localhost_profile:
            yield forbidden(f"{path}.localhostProfile",
                            "seccomp profile in annotation and field must match")


def _seccomp_match(pod: Pod) -> Iterator[Problem]:
    annotations, spec = pod.metadata.annotations, pod.spec
    sc = spec.security_context
    if sc is not None and sc.seccomp_profile is not None and SECCOMP_POD in annotations:
        yield from _seccomp_agrees(annotations[SECCOMP_POD], sc.seccomp_profile,
                                   "spec.securityContext.seccompProfile")
    for c, path in containers_with_paths(spec):
        profile = c.security_context.seccomp_profile if c.security_context else None
        annotation = annotations.get(SECCOMP_CONTAINER + c.name)
        if profile is not None and annotation is not None:
            yield from _seccomp_agrees(annotation, profile,
                                       f"{path}.securityContext.seccompProfile")


def _apparmor_match(pod: Pod) -> Iterator[Problem]:
    spec = pod.spec
    if spec.os is not None and spec.os.name == "windows":
        return
    pod_profile = spec.security_context.app_armor_profile if spec.security_context else None
    for c, path in containers_with_paths(spec):
        profile: AppArmorProfile | None = pod_profile
        if c.security_context is not None and c.security_context.app_armor_profile is not None:
            profile = c.security_context.app_armor_profile
        annotation = pod.metadata.annotations.get(APPARMOR_CONTAINER + c.name)
        if profile is None or annotation is None:
            continue
        p = f"{path}.securityContext.appArmorProfile"
        if (profile.type == "Unconfined" and annotation != "unconfined") or (
                profile.type == "RuntimeDefault" and annotation != "runtime/default") or (
                profile.type == "Localhost" and not annotation.startswith("localhost/")):
            yield forbidden(f"{p}.type", "apparmor type in annotation and field must match")
        elif profile.type == "Localhost" and (
                annotation.removeprefix("localhost/") != profile.localhost_profile):
            yield forbidden(f"{p}.localhostProfile",
                            "apparmor profile in annotation and field must match")
