"""runtime.kuberuntime.security_context: the tables of upstream's security_context_test.go,
security_context_others_test.go, helpers_test.go (getSeccompProfile),
pkg/securitycontext/util_test.go and kuberuntime/util/util_test.go (namespaces), plus the
container and sandbox config they feed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.cri.types import (
    Capability,
    Image,
    NamespaceMode,
    SecurityProfile,
    SecurityProfileType,
    SupplementalGroupsPolicy,
)
from runtime.errors import SyncError
from runtime.kuberuntime.container_config import generate_container_config
from runtime.kuberuntime.sandbox import generate_sandbox_config
from runtime.kuberuntime.security_context import (
    DEFAULT_MASKED_PATHS,
    DEFAULT_READONLY_PATHS,
    ROOT_USER,
    ImageUser,
    SecurityContextError,
    add_no_new_privs,
    apparmor_profile,
    container_security,
    effective_security_context,
    image_user,
    namespace_modes,
    sandbox_security,
    sandbox_sysctls,
    seccomp_profile,
    unknown_capabilities,
    verify_run_as_non_root,
)
from runtime.kuberuntime.settings import NodeSettings
from runtime.machine import apparmor_enabled
from runtime.pod.admission import (
    Node,
    admit,
    check_apparmor,
    check_supplemental_groups_policy,
)
from runtime.pod.model import (
    AppArmorProfile,
    Capabilities,
    Container,
    EphemeralContainer,
    ObjectMeta,
    Pod,
    PodSecurityContext,
    PodSpec,
    SeccompProfile,
    SecurityContext,
    SELinuxOptions,
    Sysctl,
)

ROOT_DIR = "/var/lib/kubelet-actors"
PROFILE_ROOT = f"{ROOT_DIR}/seccomp"


def make_pod(container_sc: SecurityContext | None = None,
             pod_sc: PodSecurityContext | None = None, **spec: Any) -> Pod:
    return Pod(
        metadata=ObjectMeta(name="web", namespace="prod", uid="uid-1"),
        spec=PodSpec(containers=(Container(name="app", image="busybox",
                                           security_context=container_sc),),
                     security_context=pod_sc, **spec),
    )


def app(pod: Pod) -> Container:
    return pod.spec.containers[0]


# --- verifyRunAsNonRoot (security_context_others_test.go TestVerifyRunAsNonRoot) ----------

WHERE = '(pod: "web_prod(uid-1)", container: app)'


@pytest.mark.parametrize(
    ("name", "sc", "user", "error"),
    [
        ("Pass if SecurityContext is not set", None, ROOT_USER, None),
        ("Pass if RunAsNonRoot is not set", SecurityContext(run_as_user=0), ROOT_USER, None),
        ("Pass if RunAsNonRoot is false (image user is root)",
         SecurityContext(run_as_non_root=False), ROOT_USER, None),
        ("Pass if RunAsNonRoot is false (RunAsUser is root)",
         SecurityContext(run_as_non_root=False, run_as_user=0), ROOT_USER, None),
        ("Fail if container's RunAsUser is root and RunAsNonRoot is true",
         SecurityContext(run_as_non_root=True, run_as_user=0), ImageUser(uid=1000),
         f"container's runAsUser breaks non-root policy {WHERE}"),
        ("Fail if image's user is root and RunAsNonRoot is true",
         SecurityContext(run_as_non_root=True), ROOT_USER,
         f"container has runAsNonRoot and image will run as root {WHERE}"),
        ("Fail if image's username is set and RunAsNonRoot is true",
         SecurityContext(run_as_non_root=True), ImageUser(uid=None, username="test"),
         "container has runAsNonRoot and image has non-numeric user (test), cannot verify "
         f"user is non-root {WHERE}"),
        ("Pass if image's user is non-root and RunAsNonRoot is true",
         SecurityContext(run_as_non_root=True), ImageUser(uid=1000), None),
        ("Pass if container's user and image's user aren't set and RunAsNonRoot is true",
         SecurityContext(run_as_non_root=True), ImageUser(uid=None), None),
        ("Pass if RunAsUser is non-root and RunAsNonRoot is true, whatever the image",
         SecurityContext(run_as_non_root=True, run_as_user=65534), ROOT_USER, None),
        ("Fail if image's user id is out of range and RunAsNonRoot is true",
         SecurityContext(run_as_non_root=True), ImageUser(uid=2**31),
         "container has runAsNonRoot and image has an invalid user id (2147483648). "
         "(Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive "
         f"{WHERE}"),
    ],
)
def test_verify_run_as_non_root(name: str, sc: SecurityContext | None, user: ImageUser,
                                error: str | None) -> None:
    pod = make_pod(sc)
    assert verify_run_as_non_root(pod, app(pod), user) == error, name


def test_run_as_non_root_from_the_pod_and_overridden_by_the_container() -> None:
    pod = make_pod(None, PodSecurityContext(run_as_non_root=True))
    assert verify_run_as_non_root(pod, app(pod), ROOT_USER) is not None
    pod = make_pod(SecurityContext(run_as_non_root=False),
                   PodSecurityContext(run_as_non_root=True))
    assert verify_run_as_non_root(pod, app(pod), ROOT_USER) is None
    pod = make_pod(SecurityContext(run_as_user=1000),
                   PodSecurityContext(run_as_non_root=True, run_as_user=0))
    assert verify_run_as_non_root(pod, app(pod), ROOT_USER) is None


# --- DetermineEffectiveSecurityContext ----------------------------------------------------


def test_effective_security_context_container_fields_win() -> None:
    pod = make_pod(
        SecurityContext(run_as_user=2, privileged=True, read_only_root_filesystem=True,
                        proc_mount="Unmasked", capabilities=Capabilities(add=("NET_ADMIN",))),
        PodSecurityContext(run_as_user=1, run_as_group=10, run_as_non_root=True,
                           se_linux_options=SELinuxOptions(level="s0")),
    )
    sc = effective_security_context(pod, app(pod))
    assert (sc.run_as_user, sc.run_as_group, sc.run_as_non_root) == (2, 10, True)
    assert sc.privileged and sc.read_only_root_filesystem and sc.proc_mount == "Unmasked"
    assert sc.se_linux_options == SELinuxOptions(level="s0")
    assert sc.capabilities == Capabilities(add=("NET_ADMIN",))


def test_effective_security_context_without_any_is_empty() -> None:
    pod = make_pod()
    assert effective_security_context(pod, app(pod)) == SecurityContext()


# --- AddNoNewPrivileges (securitycontext util_test.go TestAddNoNewPrivileges) -------------


@pytest.mark.parametrize(
    ("sc", "expect"),
    [
        (SecurityContext(), False),  # allowPrivilegeEscalation nil
        (SecurityContext(allow_privilege_escalation=True), False),
        (SecurityContext(allow_privilege_escalation=False), True),
    ],
)
def test_add_no_new_privileges(sc: SecurityContext, expect: bool) -> None:
    assert add_no_new_privs(sc) is expect


# --- ConvertToRuntimeMaskedPaths / ReadonlyPaths (util_test.go) --------------------------


@pytest.mark.parametrize(
    ("proc_mount", "masked", "readonly"),
    [
        ("", DEFAULT_MASKED_PATHS, DEFAULT_READONLY_PATHS),
        ("Default", DEFAULT_MASKED_PATHS, DEFAULT_READONLY_PATHS),
        ("Unmasked", (), ()),
    ],
)
def test_proc_mount_paths(proc_mount: str, masked: tuple[str, ...],
                          readonly: tuple[str, ...]) -> None:
    pod = make_pod(SecurityContext(proc_mount=proc_mount))
    sc = container_security(pod, app(pod), ROOT_USER, PROFILE_ROOT)
    assert (sc.masked_paths, sc.readonly_paths) == (masked, readonly)


# --- getSeccompProfile (helpers_test.go TestGetSeccompProfile) ----------------------------

UNCONFINED = SecurityProfile(SecurityProfileType.UNCONFINED)
RUNTIME_DEFAULT = SecurityProfile(SecurityProfileType.RUNTIME_DEFAULT)


def _profile(kind: str, localhost: str | None = None) -> SeccompProfile:
    return SeccompProfile(type=kind, localhost_profile=localhost)


@pytest.mark.parametrize(
    ("name", "pod_profile", "container_profile", "default", "expect"),
    [
        ("no seccomp should return unconfined", None, None, False, UNCONFINED),
        ("pod seccomp profile set to unconfined returns unconfined",
         _profile("Unconfined"), None, False, UNCONFINED),
        ("container seccomp profile set to unconfined returns unconfined",
         None, _profile("Unconfined"), False, UNCONFINED),
        ("pod seccomp profile set to SeccompProfileTypeRuntimeDefault returns runtime/default",
         _profile("RuntimeDefault"), None, False, RUNTIME_DEFAULT),
        ("container seccomp profile set to SeccompProfileTypeRuntimeDefault returns "
         "runtime/default", None, _profile("RuntimeDefault"), False, RUNTIME_DEFAULT),
        ("pod seccomp profile set to SeccompProfileTypeLocalhost returns 'localhost/' + "
         "LocalhostProfile", _profile("Localhost", "filename"), None, False,
         SecurityProfile(SecurityProfileType.LOCALHOST, f"{PROFILE_ROOT}/filename")),
        ("container seccomp profile set to SeccompProfileTypeLocalhost returns "
         "'localhost/' + LocalhostProfile", None, _profile("Localhost", "filename2"), False,
         SecurityProfile(SecurityProfileType.LOCALHOST, f"{PROFILE_ROOT}/filename2")),
        ("prioritise container field over pod field", _profile("Localhost", "field-pod"),
         _profile("RuntimeDefault"), False, RUNTIME_DEFAULT),
        ("no seccomp with seccompDefault returns runtime/default", None, None, True,
         RUNTIME_DEFAULT),
        ("pod unconfined with seccompDefault stays unconfined", _profile("Unconfined"), None,
         True, UNCONFINED),
    ],
)
def test_seccomp_profile(name: str, pod_profile: SeccompProfile | None,
                         container_profile: SeccompProfile | None, default: bool,
                         expect: SecurityProfile) -> None:
    pod = make_pod(SecurityContext(seccomp_profile=container_profile),
                   PodSecurityContext(seccomp_profile=pod_profile))
    assert seccomp_profile(pod, app(pod), PROFILE_ROOT, default) == expect, name


@pytest.mark.parametrize("where", ["pod", "container"])
def test_localhost_seccomp_without_a_profile_is_an_error(where: str) -> None:
    profile = _profile("Localhost")
    pod = (make_pod(None, PodSecurityContext(seccomp_profile=profile)) if where == "pod"
           else make_pod(SecurityContext(seccomp_profile=profile)))
    with pytest.raises(SecurityContextError,
                       match=r"localhostProfile must be set if seccompProfile type is "
                             r"Localhost\."):
        seccomp_profile(pod, app(pod), PROFILE_ROOT)


# --- NamespacesForPod (kuberuntime/util/util_test.go) -------------------------------------


@pytest.mark.parametrize(
    ("spec", "expect"),
    [
        ({}, (NamespaceMode.POD, NamespaceMode.CONTAINER, NamespaceMode.POD)),
        ({"host_network": True, "host_pid": True, "host_ipc": True},
         (NamespaceMode.NODE, NamespaceMode.NODE, NamespaceMode.NODE)),
        ({"share_process_namespace": True},
         (NamespaceMode.POD, NamespaceMode.POD, NamespaceMode.POD)),
        ({"share_process_namespace": False},
         (NamespaceMode.POD, NamespaceMode.CONTAINER, NamespaceMode.POD)),
        ({"host_pid": True, "share_process_namespace": True},  # hostPID wins
         (NamespaceMode.POD, NamespaceMode.NODE, NamespaceMode.POD)),
    ],
)
def test_namespace_modes(spec: dict[str, Any],
                         expect: tuple[NamespaceMode, NamespaceMode, NamespaceMode]) -> None:
    assert namespace_modes(make_pod(**spec)) == expect


# --- determineEffectiveSecurityContext (security_context_test.go) -------------------------


def test_container_security_carries_every_field() -> None:
    pod = make_pod(
        SecurityContext(
            run_as_user=1000, run_as_group=3000, read_only_root_filesystem=True,
            allow_privilege_escalation=False,
            capabilities=Capabilities(add=("NET_ADMIN",), drop=("ALL",)),
            se_linux_options=SELinuxOptions(level="s0:c1,c2"),
        ),
        PodSecurityContext(fs_group=2000, supplemental_groups=(4000, 5000),
                           supplemental_groups_policy="Merge"),
    )
    sc = container_security(pod, app(pod), ImageUser(uid=7), PROFILE_ROOT)
    assert (sc.run_as_user, sc.run_as_username, sc.run_as_group) == (1000, "", 3000)
    assert sc.readonly_rootfs and sc.no_new_privs and not sc.privileged
    assert sc.capabilities == Capability(("NET_ADMIN",), ("ALL",))
    assert sc.supplemental_groups == (2000, 4000, 5000)  # fsGroup first, as upstream
    assert sc.supplemental_groups_policy == SupplementalGroupsPolicy.MERGE
    assert sc.seccomp == UNCONFINED
    assert sc.selinux_options is not None and sc.selinux_options.level == "s0:c1,c2"


@pytest.mark.parametrize(
    ("user", "expect"),
    [
        (ImageUser(uid=1234), (1234, "")),
        (ImageUser(uid=None, username="nobody"), (None, "nobody")),
        (ROOT_USER, (0, "")),
    ],
)
def test_image_user_when_no_run_as_user(user: ImageUser,
                                        expect: tuple[int | None, str]) -> None:
    pod = make_pod()
    sc = container_security(pod, app(pod), user, PROFILE_ROOT)
    assert (sc.run_as_user, sc.run_as_username) == expect


@pytest.mark.parametrize(
    ("image", "expect"),
    [
        (None, ROOT_USER),
        (Image(id="x"), ROOT_USER),
        (Image(id="x", uid=1234), ImageUser(uid=1234)),
        (Image(id="x", uid=0), ROOT_USER),
        (Image(id="x", username="www"), ImageUser(uid=None, username="www")),
    ],
)
def test_image_user(image: Image | None, expect: ImageUser) -> None:
    assert image_user(image) == expect


def test_strict_policy_is_sent_and_an_unknown_one_refused() -> None:
    pod = make_pod(None, PodSecurityContext(supplemental_groups_policy="Strict"))
    assert (container_security(pod, app(pod), ROOT_USER, PROFILE_ROOT)
            .supplemental_groups_policy == SupplementalGroupsPolicy.STRICT)
    pod = make_pod(None, PodSecurityContext(supplemental_groups_policy="Loose"))
    with pytest.raises(SecurityContextError, match="unsupported supplementalGroupsPolicy: Loose"):
        container_security(pod, app(pod), ROOT_USER, PROFILE_ROOT)


# --- the sandbox (kuberuntime_sandbox_linux_test.go) ----------------------------------


def test_sandbox_security() -> None:
    pod = make_pod(SecurityContext(privileged=True),
                   PodSecurityContext(run_as_user=1000, run_as_group=2000, fs_group=3000,
                                      supplemental_groups=(4000,),
                                      se_linux_options=SELinuxOptions(type="t")))
    sc = sandbox_security(pod)
    assert (sc.run_as_user, sc.run_as_group) == (1000, 2000)
    assert sc.supplemental_groups == (3000, 4000)
    assert sc.privileged
    assert sc.seccomp == RUNTIME_DEFAULT  # always, whatever the pod asks
    assert sc.selinux_options is not None and sc.selinux_options.type == "t"


def test_sandbox_security_without_a_pod_context() -> None:
    sc = sandbox_security(make_pod())
    assert sc.run_as_user is None and sc.supplemental_groups == () and not sc.privileged
    assert sc.seccomp == RUNTIME_DEFAULT


@pytest.mark.parametrize(
    ("name", "expect"),
    [
        ("kernel.shm_rmid_forced", "kernel.shm_rmid_forced"),
        ("net/ipv4/ip_forward", "net.ipv4.ip_forward"),
        ("net/ipv4/conf/eno2.100/rp_filter", "net.ipv4.conf.eno2/100.rp_filter"),
        ("net.ipv4.conf.eno2/100.rp_filter", "net.ipv4.conf.eno2/100.rp_filter"),
    ],
)
def test_sandbox_sysctls_in_dotted_form(name: str, expect: str) -> None:
    pod = make_pod(None, PodSecurityContext(sysctls=(Sysctl(name=name, value="1"),)))
    assert sandbox_sysctls(pod) == {expect: "1"}


# --- the configs they feed ------------------------------------------------------------


def settings(tmp_path: Path) -> NodeSettings:
    return NodeSettings(node_name="n", root_dir=str(tmp_path / "root"),
                        pod_logs_dir=str(tmp_path / "logs"), resolv_conf="")


def test_container_config_refuses_a_root_image_under_run_as_non_root(tmp_path: Path) -> None:
    pod = make_pod(SecurityContext(run_as_non_root=True))
    with pytest.raises(SyncError) as err:
        generate_container_config(pod, app(pod), "sha256:x", 0, "", settings(tmp_path),
                                  image_user=ROOT_USER)
    assert err.value.reason == "CreateContainerConfigError"
    assert err.value.message == f"container has runAsNonRoot and image will run as root {WHERE}"


def test_container_config_bad_seccomp_is_a_config_error(tmp_path: Path) -> None:
    pod = make_pod(SecurityContext(seccomp_profile=_profile("Localhost")))
    with pytest.raises(SyncError) as err:
        generate_container_config(pod, app(pod), "sha256:x", 0, "", settings(tmp_path))
    assert err.value.reason == "CreateContainerConfigError"
    assert "localhostProfile must be set" in err.value.message


def test_container_config_uses_the_seccomp_dir_and_seccomp_default(tmp_path: Path) -> None:
    node = settings(tmp_path)
    pod = make_pod(SecurityContext(seccomp_profile=_profile("Localhost", "audit.json")))
    config = generate_container_config(pod, app(pod), "sha256:x", 0, "", node)
    assert config.security.seccomp == SecurityProfile(
        SecurityProfileType.LOCALHOST, str(tmp_path / "root" / "seccomp" / "audit.json"))
    pod = make_pod()
    defaulted = NodeSettings(node_name="n", root_dir=node.root_dir, resolv_conf="",
                             pod_logs_dir=node.pod_logs_dir, seccomp_default=True)
    config = generate_container_config(pod, app(pod), "sha256:x", 0, "", defaulted)
    assert config.security.seccomp == RUNTIME_DEFAULT


def test_sandbox_config_modes_sysctls_and_security(tmp_path: Path) -> None:
    pod = make_pod(None, PodSecurityContext(fs_group=5, sysctls=(
        Sysctl(name="kernel/shm_rmid_forced", value="1"),)), share_process_namespace=True)
    config = generate_sandbox_config(pod, 0, settings(tmp_path))
    assert config.pid_mode == NamespaceMode.POD
    assert dict(config.sysctls) == {"kernel.shm_rmid_forced": "1"}
    assert config.security.supplemental_groups == (5,)


# --- admission: SupplementalGroupsPolicyNotSupported (predicate_test.go) ------------------


@pytest.mark.parametrize(
    ("policy", "supported", "rejected"),
    [
        ("", False, False),
        ("Merge", False, False),
        ("Strict", False, True),
        ("Strict", True, False),
        ("Merge", True, False),
    ],
)
def test_supplemental_groups_policy_admission(policy: str, supported: bool,
                                              rejected: bool) -> None:
    pod = make_pod(None, PodSecurityContext(supplemental_groups_policy=policy))
    node = Node(name="n", supplemental_groups_policy=supported)
    rejection = check_supplemental_groups_policy(pod, node)
    assert (rejection is not None) is rejected
    if rejected:
        assert rejection == ("SupplementalGroupsPolicyNotSupported",
                             "SupplementalGroupsPolicy=Strict is not supported in this node")
        assert admit(pod, node) == rejection


@pytest.mark.parametrize(
    ("add", "drop", "unknown"),
    [
        (("NET_ADMIN", "CAP_SYS_TIME", "net_raw"), ("ALL",), ()),
        (("all",), ("cap_chown",), ()),
        (("NO_SUCH_CAP",), ("CAP_BOGUS", "KILL"), ("NO_SUCH_CAP", "CAP_BOGUS")),
    ],
)
def test_unknown_capabilities(add: tuple[str, ...], drop: tuple[str, ...],
                              unknown: tuple[str, ...]) -> None:
    pod = make_pod(SecurityContext(capabilities=Capabilities(add=add, drop=drop)))
    assert unknown_capabilities(pod, app(pod)) == unknown


# --- getAppArmorProfile (helpers.go; apparmor.GetProfile) ----------------------------------

ANNOTATION = "container.apparmor.security.beta.kubernetes.io/app"


@pytest.mark.parametrize(
    ("name", "container", "annotation", "pod", "expect"),
    [
        ("nothing set leaves it to the runtime", None, None, None, None),
        ("the container's field", AppArmorProfile(type="RuntimeDefault"), None, None,
         RUNTIME_DEFAULT),
        ("the pod's field", None, None, AppArmorProfile(type="Unconfined"), UNCONFINED),
        ("the container's field over the annotation and the pod's",
         AppArmorProfile(type="Unconfined"), "runtime/default",
         AppArmorProfile(type="RuntimeDefault"), UNCONFINED),
        ("the annotation over the pod's field", None, "localhost/my-profile",
         AppArmorProfile(type="RuntimeDefault"),
         SecurityProfile(SecurityProfileType.LOCALHOST, "my-profile")),
        ("annotation unconfined", None, "unconfined", None, UNCONFINED),
        ("a localhost field", AppArmorProfile(type="Localhost", localhost_profile="p"), None,
         None, SecurityProfile(SecurityProfileType.LOCALHOST, "p")),
    ],
)
def test_apparmor_profile(name: str, container: AppArmorProfile | None,
                          annotation: str | None, pod: AppArmorProfile | None,
                          expect: SecurityProfile | None) -> None:
    made = make_pod(SecurityContext(app_armor_profile=container),
                    PodSecurityContext(app_armor_profile=pod))
    if annotation is not None:
        made = Pod(metadata=ObjectMeta(name="web", namespace="prod", uid="uid-1",
                                       annotations={ANNOTATION: annotation}), spec=made.spec)
    assert apparmor_profile(made, app(made)) == expect, name


def test_apparmor_localhost_without_a_name_is_an_error() -> None:
    pod = make_pod(SecurityContext(app_armor_profile=AppArmorProfile(type="Localhost")))
    with pytest.raises(SecurityContextError, match="missing localhost apparmor profile name"):
        apparmor_profile(pod, app(pod))



# --- admission: AppArmor (apparmor validate_test.go, lifecycle handlers) ------------------

NO_APPARMOR = ("AppArmor", "Cannot enforce AppArmor: AppArmor is not enabled on the host")


@pytest.mark.parametrize(
    ("name", "container", "pod", "annotation", "enabled", "expect"),
    [
        ("nothing asked", None, None, None, False, None),
        ("unconfined needs no AppArmor", AppArmorProfile(type="Unconfined"), None,
         "unconfined", False, None),
        ("a container profile on a node without", AppArmorProfile(type="RuntimeDefault"),
         None, None, False, NO_APPARMOR),
        ("a pod profile on a node without", None, AppArmorProfile(type="Localhost",
                                                                  localhost_profile="p"),
         None, False, NO_APPARMOR),
        ("an annotation on a node without", None, None, "runtime/default", False,
         NO_APPARMOR),
        ("a profile on a node with", AppArmorProfile(type="RuntimeDefault"), None, None,
         True, None),
        ("an empty localhost name", AppArmorProfile(type="Localhost", localhost_profile=" "),
         None, None, True,
         ("AppArmor", 'Cannot enforce AppArmor: invalid empty AppArmor profile name: " "')),
        ("a localhost annotation on a node without", None, None, "localhost/not-loaded",
         False, NO_APPARMOR),
        ("a localhost field on a node without", AppArmorProfile(
            type="Localhost", localhost_profile="not-loaded"), None, None, False, NO_APPARMOR),
        ("an empty localhost annotation", None, None, "localhost/", True,
         ("AppArmor", 'Cannot enforce AppArmor: invalid empty AppArmor profile name: ""')),
        ("the annotation over the pod's field", None, AppArmorProfile(
            type="Localhost", localhost_profile="p"), "localhost/ ", True,
         ("AppArmor", 'Cannot enforce AppArmor: invalid empty AppArmor profile name: " "')),
        # Whether a named profile is loaded is the runtime's to find out (upstream dropped
        # the kubelet's check): containerd refuses the container.
        ("a localhost name on a node with", None, None, "localhost/not-loaded", True, None),
    ],
)
def test_apparmor_admission(name: str, container: AppArmorProfile | None,
                            pod: AppArmorProfile | None, annotation: str | None,
                            enabled: bool, expect: tuple[str, str] | None) -> None:
    made = make_pod(SecurityContext(app_armor_profile=container),
                    PodSecurityContext(app_armor_profile=pod))
    if annotation is not None:
        made = Pod(metadata=ObjectMeta(name="web", namespace="prod", uid="uid-1",
                                       annotations={ANNOTATION: annotation}), spec=made.spec)
    node = Node(name="n", apparmor=enabled)
    assert check_apparmor(made, node) == expect, name
    if expect is not None:
        assert admit(made, node) == expect


@pytest.mark.parametrize(("content", "enabled"), [("Y\n", True), ("N\n", False), (None, False)])
def test_apparmor_enabled(tmp_path: Path, content: str | None, enabled: bool) -> None:
    path = tmp_path / "enabled"
    if content is not None:
        path.write_text(content)
    assert apparmor_enabled(str(path)) is enabled


def test_a_privileged_ephemeral_container_makes_the_sandbox_privileged() -> None:
    pod = make_pod()
    pod = Pod(metadata=pod.metadata, spec=PodSpec(
        containers=pod.spec.containers,
        ephemeral_containers=(EphemeralContainer(
            name="debug", image="busybox", security_context=SecurityContext(privileged=True)),),
    ))
    assert sandbox_security(pod).privileged
