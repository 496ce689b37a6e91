"""CRI v1 security-context messages <-> domain types (part of the runtime.cri.convert boundary).

The sandbox's LinuxSandboxSecurityContext and a container's LinuxContainerSecurityContext,
without their namespace options: those come from the sandbox config's modes and are set by
runtime.cri.convert and runtime.cri.convert_containers. Optional scalars (run_as_user,
run_as_group) travel in CRI's Int64Value wrappers, so "unset" and 0 (root) stay apart.
"""

from __future__ import annotations

import enum
from typing import TypeVar

from proto import api_pb2
from runtime.cri.types import (
    Capability,
    LinuxContainerSecurityContext,
    LinuxSandboxSecurityContext,
    SecurityProfile,
    SecurityProfileType,
    SELinuxOption,
    SupplementalGroupsPolicy,
)

_E = TypeVar("_E", bound=enum.IntEnum)


def enum_or(cls: type[_E], value: int, default: _E) -> _E:
    """``cls(value)``, or ``default`` for a value CRI v1 as written here does not have
    (proto3 enums are open). runtime.cri.convert has a faster one for hot paths; this
    module is below it, so it has its own."""
    try:
        return cls(value)
    except ValueError:
        return default


def _profile_to_proto(profile: SecurityProfile) -> api_pb2.SecurityProfile:
    return api_pb2.SecurityProfile(
        profile_type=api_pb2.SecurityProfile.ProfileType.ValueType(int(profile.profile_type)),
        localhost_ref=profile.localhost_ref,
    )


def _profile_from_proto(msg: api_pb2.SecurityProfile) -> SecurityProfile:
    return SecurityProfile(
        enum_or(SecurityProfileType, msg.profile_type, SecurityProfileType.UNCONFINED),
        msg.localhost_ref,
    )


def _selinux_to_proto(opt: SELinuxOption) -> api_pb2.SELinuxOption:
    return api_pb2.SELinuxOption(user=opt.user, role=opt.role, type=opt.type, level=opt.level)


def _selinux_from_proto(msg: api_pb2.SELinuxOption) -> SELinuxOption:
    return SELinuxOption(user=msg.user, role=msg.role, type=msg.type, level=msg.level)


def _policy(value: SupplementalGroupsPolicy) -> api_pb2.SupplementalGroupsPolicy.ValueType:
    return api_pb2.SupplementalGroupsPolicy.ValueType(int(value))


def _set_identity(
    msg: api_pb2.LinuxSandboxSecurityContext | api_pb2.LinuxContainerSecurityContext,
    sc: LinuxSandboxSecurityContext | LinuxContainerSecurityContext,
) -> None:
    """The optional fields sandbox and container security share: user, group, seccomp
    and SELinux (a wrapper or sub-message set only when the domain value has one)."""
    if sc.run_as_user is not None:
        msg.run_as_user.value = sc.run_as_user
    if sc.run_as_group is not None:
        msg.run_as_group.value = sc.run_as_group
    if sc.seccomp is not None:
        msg.seccomp.CopyFrom(_profile_to_proto(sc.seccomp))
    if sc.selinux_options is not None:
        msg.selinux_options.CopyFrom(_selinux_to_proto(sc.selinux_options))


def sandbox_security_to_proto(
    sc: LinuxSandboxSecurityContext, namespaces: api_pb2.NamespaceOption
) -> api_pb2.LinuxSandboxSecurityContext:
    """Domain LinuxSandboxSecurityContext (+ the namespace options) -> CRI."""
    msg = api_pb2.LinuxSandboxSecurityContext(
        namespace_options=namespaces,
        supplemental_groups=sc.supplemental_groups,
        supplemental_groups_policy=_policy(sc.supplemental_groups_policy),
        privileged=sc.privileged,
    )
    _set_identity(msg, sc)
    return msg


def sandbox_security_from_proto(
    msg: api_pb2.LinuxSandboxSecurityContext,
) -> LinuxSandboxSecurityContext:
    """CRI LinuxSandboxSecurityContext -> domain (namespace options left out)."""
    return LinuxSandboxSecurityContext(
        run_as_user=msg.run_as_user.value if msg.HasField("run_as_user") else None,
        run_as_group=msg.run_as_group.value if msg.HasField("run_as_group") else None,
        supplemental_groups=tuple(msg.supplemental_groups),
        supplemental_groups_policy=enum_or(
            SupplementalGroupsPolicy, msg.supplemental_groups_policy,
            SupplementalGroupsPolicy.MERGE),
        privileged=msg.privileged,
        seccomp=_profile_from_proto(msg.seccomp) if msg.HasField("seccomp") else None,
        selinux_options=(_selinux_from_proto(msg.selinux_options)
                         if msg.HasField("selinux_options") else None),
    )


def container_security_to_proto(
    sc: LinuxContainerSecurityContext,
) -> api_pb2.LinuxContainerSecurityContext:
    """Domain LinuxContainerSecurityContext -> CRI (namespace options set by the caller)."""
    msg = api_pb2.LinuxContainerSecurityContext(
        privileged=sc.privileged,
        run_as_username=sc.run_as_username,
        readonly_rootfs=sc.readonly_rootfs,
        supplemental_groups=sc.supplemental_groups,
        supplemental_groups_policy=_policy(sc.supplemental_groups_policy),
        no_new_privs=sc.no_new_privs,
        masked_paths=sc.masked_paths,
        readonly_paths=sc.readonly_paths,
    )
    if sc.capabilities is not None:
        msg.capabilities.CopyFrom(api_pb2.Capability(
            add_capabilities=sc.capabilities.add_capabilities,
            drop_capabilities=sc.capabilities.drop_capabilities,
        ))
    _set_identity(msg, sc)
    if sc.apparmor is not None:
        msg.apparmor.CopyFrom(_profile_to_proto(sc.apparmor))
    return msg


def container_security_from_proto(
    msg: api_pb2.LinuxContainerSecurityContext,
) -> LinuxContainerSecurityContext:
    """CRI LinuxContainerSecurityContext -> domain (for fakes and recorders)."""
    capabilities = None
    if msg.HasField("capabilities"):
        capabilities = Capability(tuple(msg.capabilities.add_capabilities),
                                  tuple(msg.capabilities.drop_capabilities))
    return LinuxContainerSecurityContext(
        capabilities=capabilities,
        privileged=msg.privileged,
        selinux_options=(_selinux_from_proto(msg.selinux_options)
                         if msg.HasField("selinux_options") else None),
        run_as_user=msg.run_as_user.value if msg.HasField("run_as_user") else None,
        run_as_username=msg.run_as_username,
        run_as_group=msg.run_as_group.value if msg.HasField("run_as_group") else None,
        readonly_rootfs=msg.readonly_rootfs,
        supplemental_groups=tuple(msg.supplemental_groups),
        supplemental_groups_policy=enum_or(
            SupplementalGroupsPolicy, msg.supplemental_groups_policy,
            SupplementalGroupsPolicy.MERGE),
        no_new_privs=msg.no_new_privs,
        masked_paths=tuple(msg.masked_paths),
        readonly_paths=tuple(msg.readonly_paths),
        seccomp=_profile_from_proto(msg.seccomp) if msg.HasField("seccomp") else None,
        apparmor=_profile_from_proto(msg.apparmor) if msg.HasField("apparmor") else None,
    )
