"""Isolation: the security contexts of the pod and its containers (upstream's
validatePodSpecSecurityContext, ValidateSecurityContext), the namespaces a pod shares with
the host and what contradicts them (validateHostUsers), and the fields
of one operating system refused on a pod of the other (validateOS, validateLinux,
validateWindows, validateWindowsHostProcessPod).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from runtime.pod.model import (
    AppArmorProfile,
    PodSpec,
    SeccompProfile,
    SecurityContext,
    WindowsSecurityContextOptions,
)
from runtime.pod.validation.fields import (
    _ID_RANGE,
    _MAX_INT32,
    _SYSCTL,
    _SYSCTL_NAME,
    AnyContainer,
    Problem,
    _descending_path,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    subdomain_faults,
)

OPERATING_SYSTEMS = ("linux", "windows")
SECCOMP_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")
APPARMOR_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")
PROC_MOUNTS = ("Default", "Unmasked")
FS_GROUP_CHANGE_POLICIES = ("Always", "OnRootMismatch")
SUPPLEMENTAL_GROUPS_POLICIES = ("Merge", "Strict")
SELINUX_CHANGE_POLICIES = ("MountOption", "Recursive")
_WINDOWS = "cannot be set for a windows pod"
_LINUX = "windows options cannot be set for a linux pod"
_NOT_USERNS = "when `pod.Spec.HostUsers` is false"

# --- the pod's and the containers' security contexts ---------------------------------------


def _ids(path: str, **ids: int | None) -> Iterator[Problem]:
    for field, value in ids.items():
        if value is not None and not 0 <= value <= _MAX_INT32:
            yield invalid(f"{path}.{field}", value, _ID_RANGE)


def _seccomp(profile: SeccompProfile | None, path: str) -> Iterator[Problem]:
    """upstream validateSeccompProfileField."""
    if profile is None:
        return
    p = f"{path}.seccompProfile"
    if not profile.type:
        yield required(f"{p}.type", "type is required when seccompProfile is set")
    elif profile.type not in SECCOMP_TYPES:
        yield not_supported(f"{p}.type", profile.type, SECCOMP_TYPES)
    if profile.type == "Localhost":
        if profile.localhost_profile is None:
            yield required(f"{p}.localhostProfile", "must be set when seccomp type is Localhost")
        else:
            yield from _descending_path(profile.localhost_profile, f"{p}.localhostProfile")
    elif profile.localhost_profile is not None:
        yield invalid(f"{p}.localhostProfile", profile.localhost_profile,
                      "can only be set when seccomp type is Localhost")


def _apparmor(profile: AppArmorProfile | None, path: str) -> Iterator[Problem]:
    """upstream ValidateAppArmorProfileField."""
    if profile is None:
        return
    p = f"{path}.appArmorProfile"
    if profile.type == "Localhost":
        local = profile.localhost_profile
        if local is None:
            yield required(f"{p}.localhostProfile", "must be set when AppArmor type is Localhost")
        else:
            if local.strip() != local:
                yield invalid(f"{p}.localhostProfile", local, "must not be padded with whitespace")
            elif not local:
                yield required(f"{p}.localhostProfile",
                               "must be set when AppArmor type is Localhost")
            if len(local.encode()) > 4095:  # PATH_MAX - 1
                yield f"{p}.localhostProfile", "Too long: may not be more than 4095 bytes"
    elif profile.type in ("RuntimeDefault", "Unconfined"):
        if profile.localhost_profile is not None:
            yield invalid(f"{p}.localhostProfile", profile.localhost_profile,
                          "can only be set when AppArmor type is Localhost")
    elif not profile.type:
        yield required(f"{p}.type", "type is required when appArmorProfile is set")
    else:
        yield not_supported(f"{p}.type", profile.type, APPARMOR_TYPES)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NETBIOS = re.compile(r'[^\\/:*?"<>|.][^\\/:*?"<>|]{0,14}')
_DNS_DOMAIN = re.compile(
    r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*"
)
_BAD_USER_CHARS = re.compile(r'["/\\:;|=,+*?<>@\[\]]')
_DOTS_SPACES = re.compile(r"[. ]+")


def _windows_options(options: WindowsSecurityContextOptions | None, path: str) -> Iterator[Problem]:
    """upstream validateWindowsSecurityContextOptions (an empty string is taken as unset: a
    manifest cannot tell the two apart here)."""
    if options is None:
        return
    p = f"{path}.windowsOptions"
    for why in subdomain_faults(options.gmsa_credential_spec_name) if (
            options.gmsa_credential_spec_name) else ():
        yield invalid(f"{p}.gmsaCredentialSpecName", options.gmsa_credential_spec_name, why)
    if len(options.gmsa_credential_spec) > 64 * 1024:
        yield invalid(f"{p}.gmsaCredentialSpec", options.gmsa_credential_spec,
                      "gmsaCredentialSpec size must be under 64 KiB")
    name = options.run_as_user_name
    if not name:
        return
    rp = f"{p}.runAsUserName"
    if _CONTROL.search(name):
        yield invalid(rp, name, "runAsUserName cannot contain control characters")
        return
    parts = name.split("\\")
    if len(parts) > 2:
        yield invalid(rp, name, "runAsUserName cannot contain more than one backslash")
        return
    domain, user = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
    if len(domain) >= 256:
        yield invalid(rp, name, "runAsUserName's Domain length must be under 256 characters")
    if len(parts) == 2 and not (_NETBIOS.fullmatch(domain) or _DNS_DOMAIN.fullmatch(domain)):
        yield invalid(rp, name, "runAsUserName's Domain doesn't match the NetBios nor the DNS "
                      "format")
    if not user:
        yield invalid(rp, name, "runAsUserName's User cannot be empty")
    elif len(user) > 104:
        yield invalid(rp, name, "runAsUserName's User length must not be longer than 104 "
                      "characters")
    if _DOTS_SPACES.fullmatch(user):
        yield invalid(rp, name, "runAsUserName's User cannot contain only periods or spaces")
    if _BAD_USER_CHARS.search(user):
        yield invalid(rp, name, "runAsUserName's User cannot contain the following characters: "
                      '"/\\:;|=,+*?<>@[]')


def pod_security_context(spec: PodSpec) -> Iterator[Problem]:
    """upstream validatePodSpecSecurityContext. Upstream keeps hostNetwork, hostPID,
    hostIPC, shareProcessNamespace and hostUsers in its internal pod security context, so
    their rules hold whether or not the manifest has a ``securityContext``."""
    path = "spec.securityContext"
    sc = spec.security_context
    if sc is not None:
        yield from _ids(path, fsGroup=sc.fs_group, runAsUser=sc.run_as_user,
                        runAsGroup=sc.run_as_group)
        for i, group in enumerate(sc.supplemental_groups):
            if not 0 <= group <= _MAX_INT32:
                yield invalid(f"{path}.supplementalGroups[{i}]", group, _ID_RANGE)
    if spec.share_process_namespace and spec.host_pid:
        yield invalid(f"{path}.shareProcessNamespace", True,
                      "ShareProcessNamespace and HostPID cannot both be enabled")
    if sc is None:
        return
    names: set[str] = set()
    for i, sysctl in enumerate(sc.sysctls):
        p = f"{path}.sysctls[{i}].name"
        if not sysctl.name:
            yield required(p)
        elif len(sysctl.name) > 253 or not _SYSCTL_NAME.fullmatch(sysctl.name):
            yield invalid(p, sysctl.name,
                          f"must have at most 253 characters and match regex ^{_SYSCTL}$")
        elif sysctl.name in names:
            yield duplicate(p, sysctl.name)
        # upstream's ValidateHostSysctl (a net or IPC sysctl in a pod sharing that namespace
        # with the host) is left to the kubelet's admission (runtime.pod.admission), which
        # refuses such a pod as upstream's kubelet refuses a static one: SysctlForbidden.
        names.add(sysctl.name)
    if sc.fs_group_change_policy and sc.fs_group_change_policy not in FS_GROUP_CHANGE_POLICIES:
        yield not_supported(f"{path}.fsGroupChangePolicy", sc.fs_group_change_policy,
                            FS_GROUP_CHANGE_POLICIES)
    yield from _seccomp(sc.seccomp_profile, path)
    yield from _windows_options(sc.windows_options, path)
    yield from _apparmor(sc.app_armor_profile, path)
    policy = sc.supplemental_groups_policy
    if policy and policy not in SUPPLEMENTAL_GROUPS_POLICIES:
        yield not_supported(f"{path}.supplementalGroupsPolicy", policy,
                            SUPPLEMENTAL_GROUPS_POLICIES)
    policy = sc.se_linux_change_policy
    if policy and policy not in SELINUX_CHANGE_POLICIES:
        yield not_supported(f"{path}.seLinuxChangePolicy", policy, SELINUX_CHANGE_POLICIES)


def security_context(sc: SecurityContext, path: str, *, host_users: bool) -> Iterator[Problem]:
    """upstream ValidateSecurityContext, for a container of a pod whose user namespace is
    the host's (``host_users``) or its own."""
    yield from _ids(path, runAsUser=sc.run_as_user, runAsGroup=sc.run_as_group)
    if sc.proc_mount:
        if sc.proc_mount not in PROC_MOUNTS:
            yield not_supported(f"{path}.procMount", sc.proc_mount, PROC_MOUNTS)
        if host_users and sc.proc_mount == "Unmasked":
            yield invalid(f"{path}.procMount", sc.proc_mount,
                          "`hostUsers` must be false to use `Unmasked`")
    yield from _seccomp(sc.seccomp_profile, path)
    if sc.allow_privilege_escalation is False:
        # upstream prints the whole security context as the value (a Go struct dump)
        if sc.privileged:
            yield invalid(path, "", "cannot set `allowPrivilegeEscalation` to false and "
                          "`privileged` to true")
        if sc.capabilities is not None:
            for cap in sc.capabilities.add:
                if cap == "CAP_SYS_ADMIN":
                    yield invalid(path, "", "cannot set `allowPrivilegeEscalation` to false "
                                  "and `capabilities.Add` CAP_SYS_ADMIN")
    yield from _windows_options(sc.windows_options, path)
    yield from _apparmor(sc.app_armor_profile, path)


# --- namespaces shared with the host, and the pod's operating system -----------------------


def host_users(spec: PodSpec) -> Iterator[Problem]:
    """upstream validateHostUsers: a pod in its own user namespace shares no other
    namespace with the host (its paths, HostPID and HostIPC capitalised, are upstream's)."""
    if spec.host_users is not False:
        return
    if spec.host_network:
        yield forbidden("spec.hostNetwork", _NOT_USERNS)
    if spec.host_pid:
        yield forbidden("spec.HostPID", _NOT_USERNS)
    if spec.host_ipc:
        yield forbidden("spec.HostIPC", _NOT_USERNS)


def containers_with_paths(spec: PodSpec) -> Iterator[tuple[AnyContainer, str]]:
    """Every container with its path, in upstream's VisitContainersWithPath order."""
    for i, c in enumerate(spec.init_containers):
        yield c, f"spec.initContainers[{i}]"
    for i, c in enumerate(spec.containers):
        yield c, f"spec.containers[{i}]"
    for i, e in enumerate(spec.ephemeral_containers):
        yield e, f"spec.ephemeralContainers[{i}]"


def windows_host_process(spec: PodSpec) -> Iterator[Problem]:
    """upstream validateWindowsHostProcessPod (privileged pods are allowed here, as by a
    kubelet's default --allow-privileged)."""
    pod_options = spec.security_context.windows_options if spec.security_context else None
    pod_hp = pod_options.host_process if pod_options else None
    count = host_process = 0
    problems: list[Problem] = []
    for c, path in containers_with_paths(spec):
        count += 1
        options = c.security_context.windows_options if c.security_context else None
        hp = options.host_process if options else None
        if pod_hp is not None and hp is not None and pod_hp != hp:
            problems.append(invalid(
                f"{path}.securityContext.windowsOptions.hostProcess", hp,
                f"pod hostProcess value must be identical if both are specified, was "
                f"{str(pod_hp).lower()}"))
        if hp or (hp is None and pod_hp):
            host_process += 1
    yield from problems
    if host_process:
        if host_process != count:
            yield invalid("spec", "", "If pod contains any hostProcess containers then all "
                          "containers must be HostProcess containers")
        if not spec.host_network:
            yield invalid("spec.hostNetwork", False,
                          "hostNetwork must be true if pod contains any hostProcess containers")


def operating_system(spec: PodSpec) -> Iterator[Problem]:
    """upstream validateOS, then validateLinux or validateWindows: fields of the other
    operating system are refused."""
    if spec.os is None:
        return
    if not spec.os.name:
        yield required("spec.os.name", "cannot be empty")
    elif spec.os.name not in OPERATING_SYSTEMS:
        yield not_supported("spec.os", spec.os.name, OPERATING_SYSTEMS)
    elif spec.os.name == "linux":
        yield from _linux(spec)
    else:
        yield from _windows(spec)


def _linux(spec: PodSpec) -> Iterator[Problem]:
    sc = spec.security_context
    if sc is not None and sc.windows_options is not None:
        yield forbidden("spec.securityContext.windowsOptions", _LINUX)
    for c, path in containers_with_paths(spec):
        if c.security_context is not None and c.security_context.windows_options is not None:
            yield forbidden(f"{path}.securityContext.windowsOptions", _LINUX)


def _windows(spec: PodSpec) -> Iterator[Problem]:
    sc = spec.security_context
    p = "spec.securityContext"
    if sc is not None:
        for field, on in (("appArmorProfile", sc.app_armor_profile is not None),
                          ("seLinuxOptions", sc.se_linux_options is not None)):
            if on:
                yield forbidden(f"{p}.{field}", _WINDOWS)
    for field, on in (("spec.hostUsers", spec.host_users is not None),
                      ("spec.hostPID", spec.host_pid), ("spec.hostIPC", spec.host_ipc)):
        if on:
            yield forbidden(field, _WINDOWS)
    if sc is not None:
        for field, on in (("seccompProfile", sc.seccomp_profile is not None),
                          ("fsGroup", sc.fs_group is not None),
                          ("fsGroupChangePolicy", bool(sc.fs_group_change_policy)),
                          ("sysctls", bool(sc.sysctls))):
            if on:
                yield forbidden(f"{p}.{field}", _WINDOWS)
    if spec.share_process_namespace is not None:
        yield forbidden("spec.shareProcessNamespace", _WINDOWS)
    if sc is not None:
        for field, on in (("runAsUser", sc.run_as_user is not None),
                          ("runAsGroup", sc.run_as_group is not None),
                          ("supplementalGroups", bool(sc.supplemental_groups)),
                          ("supplementalGroupsPolicy", bool(sc.supplemental_groups_policy)),
                          ("seLinuxChangePolicy", bool(sc.se_linux_change_policy))):
            if on:
                yield forbidden(f"{p}.{field}", _WINDOWS)
    for c, path in containers_with_paths(spec):
        csc = c.security_context
        if csc is None:
            continue
        for field, on in (("appArmorProfile", csc.app_armor_profile is not None),
                          ("seLinuxOptions", csc.se_linux_options is not None),
                          ("seccompProfile", csc.seccomp_profile is not None),
                          ("capabilities", csc.capabilities is not None),
                          ("readOnlyRootFilesystem", csc.read_only_root_filesystem is not None),
                          ("privileged", csc.privileged is not None),
                          ("allowPrivilegeEscalation", csc.allow_privilege_escalation is not None),
                          ("procMount", bool(csc.proc_mount)),
                          ("runAsUser", csc.run_as_user is not None),
                          ("runAsGroup", csc.run_as_group is not None)):
            if on:
                yield forbidden(f"{path}.securityContext.{field}", _WINDOWS)
