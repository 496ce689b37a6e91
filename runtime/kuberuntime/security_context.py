"""A pod's and its containers' security context, as the CRI security settings upstream's
kubelet sends (pkg/securitycontext/util.go, pkg/kubelet/kuberuntime/security_context.go,
security_context_others.go, helpers.go, kuberuntime_sandbox.go, kuberuntime/util).

Pure functions: the effective security context of a container (the container's fields
over the pod's), the sandbox's and the container's CRI security settings, the namespace
modes, the seccomp profile, no_new_privs, the masked and read-only /proc paths, the
sandbox's sysctls, the image's user and the runAsNonRoot check. A setting that cannot be
honoured raises SecurityContextError with upstream's message; the caller turns it into
the container's CreateContainerConfigError.
"""

from __future__ import annotations

import os

from msgspec import Struct
from msgspec.structs import replace

from runtime.cri.types import (
    Capability,
    Image,
    LinuxContainerSecurityContext,
    LinuxSandboxSecurityContext,
    NamespaceMode,
    SecurityProfile,
    SecurityProfileType,
    SELinuxOption,
    SupplementalGroupsPolicy,
)
from runtime.pod.admission import (
    container_apparmor,
    container_security_contexts,
    normalize_sysctl,
)
from runtime.pod.model import (
    Container,
    Pod,
    PodSecurityContext,
    SecurityContext,
)
from runtime.pod.model import SeccompProfile as PodSeccompProfile
from runtime.pod.model import SELinuxOptions as PodSELinuxOptions

__all__ = [
    "DEFAULT_MASKED_PATHS",
    "DEFAULT_READONLY_PATHS",
    "LINUX_CAPABILITIES",
    "ROOT_USER",
    "ImageUser",
    "SecurityContextError",
    "add_no_new_privs",
    "apparmor_profile",
    "container_security",
    "effective_security_context",
    "image_user",
    "masked_paths",
    "namespace_modes",
    "readonly_paths",
    "sandbox_security",
    "sandbox_sysctls",
    "seccomp_profile",
    "unknown_capabilities",
    "verify_run_as_non_root",
]

MAX_USER_ID = 2**31 - 1  # validation.IsValidUserID: 0 to math.MaxInt32

# pkg/securitycontext/util.go, kept in sync there with moby's oci defaults.
DEFAULT_MASKED_PATHS = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
)
DEFAULT_READONLY_PATHS = (
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
)


# include/uapi/linux/capability.h, 0 to CAP_LAST_CAP (40) in Linux 6.x.
LINUX_CAPABILITIES = frozenset({
    "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID",
    "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN",
    "NET_RAW", "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE",
    "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME",
    "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
    "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ",
    "PERFMON", "BPF", "CHECKPOINT_RESTORE",
})


class SecurityContextError(ValueError):
    """The security context cannot be honoured; the message is upstream's."""


class ImageUser(Struct, frozen=True):
    """The user an image's config runs as (upstream getImageUser): a numeric ``uid``, or a
    ``username`` that is not a number (then ``uid`` is None)."""

    uid: int | None = 0
    username: str = ""


ROOT_USER = ImageUser(uid=0)
"""An image whose config names no user runs as root."""


def image_user(image: Image | None) -> ImageUser:
    """The user of ``image`` as CRI ImageStatus reports it: its uid if numeric, else its
    user name, else root."""
    if image is None:
        return ROOT_USER
    if image.uid is not None:
        return ImageUser(uid=image.uid)
    if image.username:
        return ImageUser(uid=None, username=image.username)
    return ROOT_USER


def format_pod(pod: Pod) -> str:
    """Upstream format.Pod: ``name_namespace(uid)``."""
    return f"{pod.metadata.name}_{pod.metadata.namespace}({pod.uid})"


# --- the effective security context ------------------------------------------------------


def _from_pod(sc: PodSecurityContext) -> SecurityContext:
    """The container-level fields a pod's security context provides (upstream
    securityContextFromPodSecurityContext): SELinux and Windows options, user, group,
    runAsNonRoot. (seccompProfile and appArmorProfile are looked up on their own.)"""
    return SecurityContext(
        se_linux_options=sc.se_linux_options,
        windows_options=sc.windows_options,
        run_as_user=sc.run_as_user,
        run_as_group=sc.run_as_group,
        run_as_non_root=sc.run_as_non_root,
    )


_OVERRIDES = (
    "se_linux_options", "capabilities", "privileged", "run_as_user", "run_as_group",
    "run_as_non_root", "read_only_root_filesystem", "allow_privilege_escalation",
)


def effective_security_context(pod: Pod, container: Container) -> SecurityContext:
    """Upstream DetermineEffectiveSecurityContext: the pod's fields, each replaced by the
    container's where the container sets it."""
    pod_sc = pod.spec.security_context
    container_sc = container.security_context
    if pod_sc is None:
        return container_sc or SecurityContext()
    effective = _from_pod(pod_sc)
    if container_sc is None:
        return effective
    changes: dict[str, object] = {
        name: getattr(container_sc, name) for name in _OVERRIDES
        if getattr(container_sc, name) is not None
    }
    if container_sc.proc_mount:
        changes["proc_mount"] = container_sc.proc_mount
    if container_sc.windows_options is not None:
        # Upstream merges the Windows options field by field; a Linux node reads none of
        # them, so the container's whole struct is close enough.
        changes["windows_options"] = container_sc.windows_options
    return replace(effective, **changes)


def add_no_new_privs(sc: SecurityContext) -> bool:
    """Upstream AddNoNewPrivileges: no_new_privs only when allowPrivilegeEscalation is
    explicitly false."""
    return sc.allow_privilege_escalation is False


def masked_paths(proc_mount: str) -> tuple[str, ...]:
    """Upstream ConvertToRuntimeMaskedPaths: none for procMount Unmasked, else the
    defaults."""
    return () if proc_mount == "Unmasked" else DEFAULT_MASKED_PATHS


def readonly_paths(proc_mount: str) -> tuple[str, ...]:
    """Upstream ConvertToRuntimeReadonlyPaths: none for procMount Unmasked, else the
    defaults."""
    return () if proc_mount == "Unmasked" else DEFAULT_READONLY_PATHS


def namespace_modes(pod: Pod) -> tuple[NamespaceMode, NamespaceMode, NamespaceMode]:
    """(network, pid, ipc) as upstream's NamespacesForPod: the node's namespace for
    hostNetwork, hostPID, hostIPC; a pod-wide PID namespace for shareProcessNamespace;
    else one network and IPC namespace per pod and one PID namespace per container."""
    spec = pod.spec
    network = NamespaceMode.NODE if spec.host_network else NamespaceMode.POD
    ipc = NamespaceMode.NODE if spec.host_ipc else NamespaceMode.POD
    if spec.host_pid:
        pid = NamespaceMode.NODE
    elif spec.share_process_namespace:
        pid = NamespaceMode.POD
    else:
        pid = NamespaceMode.CONTAINER
    return network, pid, ipc


def _field_seccomp(profile: PodSeccompProfile, root: str, fallback_default: bool
                   ) -> SecurityProfile:
    """Upstream fieldSeccompProfile."""
    if profile.type == "RuntimeDefault":
        return SecurityProfile(SecurityProfileType.RUNTIME_DEFAULT)
    if profile.type == "Localhost":
        if not profile.localhost_profile:
            raise SecurityContextError(
                "localhostProfile must be set if seccompProfile type is Localhost.")
        return SecurityProfile(SecurityProfileType.LOCALHOST,
                               os.path.join(root, profile.localhost_profile))
    return SecurityProfile(SecurityProfileType.UNCONFINED)


def seccomp_profile(pod: Pod, container: Container, profile_root: str,
                    seccomp_default: bool = False) -> SecurityProfile:
    """Upstream getSeccompProfile: the container's seccompProfile, else the pod's, else
    RuntimeDefault with ``--seccomp-default`` and Unconfined without. A Localhost profile
    is a path under ``profile_root`` (``<root-dir>/seccomp``); whether it exists is the
    runtime's to find out, as upstream leaves it."""
    container_sc, pod_sc = container.security_context, pod.spec.security_context
    if container_sc is not None and container_sc.seccomp_profile is not None:
        return _field_seccomp(container_sc.seccomp_profile, profile_root, seccomp_default)
    if pod_sc is not None and pod_sc.seccomp_profile is not None:
        return _field_seccomp(pod_sc.seccomp_profile, profile_root, seccomp_default)
    if seccomp_default:
        return SecurityProfile(SecurityProfileType.RUNTIME_DEFAULT)
    return SecurityProfile(SecurityProfileType.UNCONFINED)


def apparmor_profile(pod: Pod, container: Container) -> SecurityProfile | None:
    """Upstream getAppArmorProfile (apparmor.GetProfile): the container's field, else the
    deprecated annotation (static pods may have only that), else the pod's field; None
    leaves it to the runtime's default."""
    profile = container_apparmor(pod, container.name, container.security_context)
    if profile is None:
        return None
    if profile.type == "RuntimeDefault":
        return SecurityProfile(SecurityProfileType.RUNTIME_DEFAULT)
    if profile.type == "Unconfined":
        return SecurityProfile(SecurityProfileType.UNCONFINED)
    if profile.type == "Localhost":
        if profile.localhost_profile is None:
            raise SecurityContextError("missing localhost apparmor profile name")
        return SecurityProfile(SecurityProfileType.LOCALHOST, profile.localhost_profile)
    raise SecurityContextError(f'unknown apparmor profile type: "{profile.type}"')


def _selinux(opts: PodSELinuxOptions | None) -> SELinuxOption | None:
    if opts is None:
        return None
    return SELinuxOption(user=opts.user, role=opts.role, type=opts.type, level=opts.level)


def _groups_policy(pod_sc: PodSecurityContext) -> SupplementalGroupsPolicy:
    policy = pod_sc.supplemental_groups_policy
    if not policy or policy == "Merge":
        return SupplementalGroupsPolicy.MERGE
    if policy == "Strict":
        return SupplementalGroupsPolicy.STRICT
    raise SecurityContextError(f"unsupported supplementalGroupsPolicy: {policy}")


def _pod_groups(pod_sc: PodSecurityContext) -> tuple[int, ...]:
    """fsGroup first, then supplementalGroups, as upstream appends them."""
    fs_group = () if pod_sc.fs_group is None else (pod_sc.fs_group,)
    return fs_group + tuple(pod_sc.supplemental_groups)


# --- the CRI settings -----------------------------------------------------------------


def unknown_capabilities(pod: Pod, container: Container) -> tuple[str, ...]:
    """The capabilities the container adds or drops that Linux does not have (``ALL``
    aside, with or without ``CAP_``, any case). Upstream passes them on and runc ignores
    them without a word; the kubelet says so in an event instead of a silent skip."""
    caps = effective_security_context(pod, container).capabilities
    if caps is None:
        return ()
    return tuple(name for name in caps.add + caps.drop
                 if name.upper() != "ALL"
                 and name.upper().removeprefix("CAP_") not in LINUX_CAPABILITIES)


def verify_run_as_non_root(pod: Pod, container: Container, user: ImageUser) -> str | None:
    """Upstream verifyRunAsNonRoot: None when the container may run, else the error."""
    sc = effective_security_context(pod, container)
    if not sc.run_as_non_root:
        return None
    where = f'(pod: "{format_pod(pod)}", container: {container.name})'
    if sc.run_as_user is not None:
        if sc.run_as_user == 0:
            return f"container's runAsUser breaks non-root policy {where}"
        return None
    if user.uid is None and user.username:
        return ("container has runAsNonRoot and image has non-numeric user "
                f"({user.username}), cannot verify user is non-root {where}")
    if user.uid is None:
        return None
    if user.uid == 0:
        return f"container has runAsNonRoot and image will run as root {where}"
    if not 0 <= user.uid <= MAX_USER_ID:
        return (f"container has runAsNonRoot and image has an invalid user id ({user.uid}). "
                f"(Must be 1-({MAX_USER_ID})): must be between 0 and {MAX_USER_ID}, "
                f"inclusive {where}")
    return None


def container_security(pod: Pod, container: Container, user: ImageUser, profile_root: str,
                       seccomp_default: bool = False) -> LinuxContainerSecurityContext:
    """Upstream determineEffectiveSecurityContext: the container's CRI security settings.

    Without a runAsUser the image's user is sent (its uid, or its name for the runtime to
    look up). The pod's fsGroup and supplementalGroups become supplemental groups.
    """
    sc = effective_security_context(pod, container)
    capabilities = None
    if sc.capabilities is not None:
        capabilities = Capability(tuple(sc.capabilities.add), tuple(sc.capabilities.drop))
    run_as_user, run_as_username = sc.run_as_user, ""
    if run_as_user is None:
        run_as_user, run_as_username = user.uid, user.username
    pod_sc = pod.spec.security_context
    groups: tuple[int, ...] = ()
    policy = SupplementalGroupsPolicy.MERGE
    if pod_sc is not None:
        groups = _pod_groups(pod_sc)
        policy = _groups_policy(pod_sc)
    proc_mount = sc.proc_mount or "Default"
    return LinuxContainerSecurityContext(
        capabilities=capabilities,
        privileged=bool(sc.privileged),
        selinux_options=_selinux(sc.se_linux_options),
        run_as_user=run_as_user,
        run_as_username=run_as_username,
        run_as_group=sc.run_as_group,
        readonly_rootfs=bool(sc.read_only_root_filesystem),
        supplemental_groups=groups,
        supplemental_groups_policy=policy,
        no_new_privs=add_no_new_privs(sc),
        masked_paths=masked_paths(proc_mount),
        readonly_paths=readonly_paths(proc_mount),
        seccomp=seccomp_profile(pod, container, profile_root, seccomp_default),
        apparmor=apparmor_profile(pod, container),
    )


def sandbox_security(pod: Pod) -> LinuxSandboxSecurityContext:
    """Upstream generatePodSandboxLinuxConfig's security context: privileged when any
    container is, seccomp RuntimeDefault always (so the pause process is confined whatever
    the pod asks for its containers), and the pod's user, group, groups and SELinux
    options."""
    # Ephemeral containers count too (upstream HasPrivilegedContainer visits them all).
    privileged = any(sc is not None and bool(sc.privileged)
                     for sc in container_security_contexts(pod))
    seccomp = SecurityProfile(SecurityProfileType.RUNTIME_DEFAULT)
    sc = pod.spec.security_context
    if sc is None:
        return LinuxSandboxSecurityContext(privileged=privileged, seccomp=seccomp)
    return LinuxSandboxSecurityContext(
        run_as_user=sc.run_as_user,
        run_as_group=sc.run_as_group,
        supplemental_groups=_pod_groups(sc),
        supplemental_groups_policy=_groups_policy(sc),
        privileged=privileged,
        seccomp=seccomp,
        selinux_options=_selinux(sc.se_linux_options),
    )


def sandbox_sysctls(pod: Pod) -> dict[str, str]:
    """The pod's sysctls for the sandbox, names in dotted form (upstream converts
    ``net/ipv4/ip_forward`` before creating the sandbox: runc wants dots)."""
    sc = pod.spec.security_context
    if sc is None:
        return {}
    return {normalize_sysctl(s.name): s.value for s in sc.sysctls}
