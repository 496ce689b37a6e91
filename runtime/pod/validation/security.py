"""Security contexts of the pod and its containers (upstream's validatePodSpecSecurityContext,
ValidateSecurityContext).
"""

from __future__ import annotations

from collections.abc import Iterator

from runtime.pod.model import (
    PodSecurityContext,
    SecurityContext,
)
from runtime.pod.validation.fields import (
    _ID_RANGE,
    _MAX_INT32,
    _SYSCTL,
    _SYSCTL_NAME,
    Problem,
    duplicate,
    invalid,
    not_supported,
    required,
)

SECCOMP_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")

# --- security ------------------------------------------------------------------------------


def _ids(path: str, **ids: int | None) -> Iterator[Problem]:
    for field, value in ids.items():
        if value is not None and not 0 <= value <= _MAX_INT32:
            yield invalid(f"{path}.{field}", value, _ID_RANGE)


def _seccomp(sc: PodSecurityContext | SecurityContext, path: str) -> Iterator[Problem]:
    profile = sc.seccomp_profile
    if profile is None:
        return
    if profile.type not in SECCOMP_TYPES:
        yield not_supported(f"{path}.seccompProfile.type", profile.type, SECCOMP_TYPES)
    elif profile.type == "Localhost" and not profile.localhost_profile:
        yield required(f"{path}.seccompProfile.localhostProfile",
                       "must be set when seccomp type is Localhost")
    elif profile.type != "Localhost" and profile.localhost_profile is not None:
        yield invalid(f"{path}.seccompProfile.localhostProfile", profile.localhost_profile,
                      "can only be set when seccomp type is Localhost")


def _pod_security_context(sc: PodSecurityContext, path: str) -> Iterator[Problem]:
    yield from _ids(path, runAsUser=sc.run_as_user, runAsGroup=sc.run_as_group,
                    fsGroup=sc.fs_group)
    for i, group in enumerate(sc.supplemental_groups):
        if not 0 <= group <= _MAX_INT32:
            yield invalid(f"{path}.supplementalGroups[{i}]", group, _ID_RANGE)
    names: set[str] = set()
    for i, sysctl in enumerate(sc.sysctls):
        p = f"{path}.sysctls[{i}].name"
        if not sysctl.name:
            yield required(p)
        elif len(sysctl.name) > 253 or not _SYSCTL_NAME.fullmatch(sysctl.name):
            yield invalid(p, sysctl.name,
                          f"must have at most 253 characters and match regex {_SYSCTL}")
        elif sysctl.name in names:
            yield duplicate(p, sysctl.name)
        names.add(sysctl.name)
    yield from _seccomp(sc, path)
    if sc.fs_group_change_policy and sc.fs_group_change_policy not in (
            "OnRootMismatch", "Always"):
        yield not_supported(f"{path}.fsGroupChangePolicy", sc.fs_group_change_policy,
                            ("Always", "OnRootMismatch"))


def _security_context(sc: SecurityContext, path: str) -> Iterator[Problem]:
    yield from _ids(path, runAsUser=sc.run_as_user, runAsGroup=sc.run_as_group)
    if sc.privileged and sc.allow_privilege_escalation is False:
        yield invalid(path, "", "cannot set `allowPrivilegeEscalation` to false and "
                      "`privileged` to true")
    if (sc.capabilities is not None and "CAP_SYS_ADMIN" in sc.capabilities.add
            and sc.allow_privilege_escalation is False):
        yield invalid(path, "", "cannot set `allowPrivilegeEscalation` to false and "
                      "`capabilities.Add` CAP_SYS_ADMIN")
    if sc.proc_mount and sc.proc_mount not in ("Default", "Unmasked"):
        yield not_supported(f"{path}.procMount", sc.proc_mount, ("Default", "Unmasked"))
    yield from _seccomp(sc, path)


