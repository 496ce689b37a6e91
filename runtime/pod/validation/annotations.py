"""Pod annotations upstream validates (ValidatePodSpecificAnnotations) and those that must
agree with the fields that replaced them (validateSeccompAnnotationsAndFields,
validateAppArmorAnnotationsAndFieldsMatchOnCreate): the deprecated seccomp and AppArmor
annotations, and the deletion cost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from runtime.pod.model import AppArmorProfile, Pod, SeccompProfile
from runtime.pod.validation.fields import Problem, _descending_path, forbidden, invalid
from runtime.pod.validation.security import containers_with_paths

SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER = "container.seccomp.security.alpha.kubernetes.io/"
APPARMOR_CONTAINER = "container.apparmor.security.beta.kubernetes.io/"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_INT = re.compile(r"[+-]?[0-9]+")


def pod_annotations(pod: Pod) -> Iterator[Problem]:
    """upstream ValidatePodSpecificAnnotations (the deletion cost, the seccomp and AppArmor
    annotations' formats), then ValidatePodCreate's checks that annotation and field agree."""
    annotations = pod.metadata.annotations
    path = "metadata.annotations"
    # upstream's "must set spec.nodeName if mirror pod annotation is set" is not applied: the
    # kubelet's file source sets nodeName before it validates, and an API server's pod was
    # checked there, so on a node it cannot fire. The deprecated tolerations annotation
    # (scheduler.alpha.kubernetes.io/tolerations) is not parsed either (see the report).
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
