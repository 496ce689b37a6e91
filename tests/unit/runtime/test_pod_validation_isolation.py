# ruff: noqa: E501  (table rows hold whole manifest fragments and upstream messages)
"""Isolation rules of upstream's ValidatePodCreate, each refusal exact.

Ported from upstream's pkg/apis/core/validation/validation_test.go (TestValidatePodSpec's
host namespace and hostUsers cases, TestValidateSecurityContext, TestValidateSeccompProfile*,
TestValidateAppArmorProfile*, TestValidateWindowsSecurityContextOptions,
TestValidateWindowsHostProcessPod, TestValidateOSFields / TestValidateLinux / TestValidateWindows,
TestValidatePodSecurityContext): each case a manifest fragment and the one error upstream's
field.ErrorList prints for it, path and message both exact.
"""

from __future__ import annotations

import pytest

from runtime.pod.manifest import parse_manifest
from tests.unit.runtime.test_pod_validation import errors, manifest


def case(id_: str, data: bytes, expected: str) -> object:
    return pytest.param(data, expected, id=id_)


CSC = "securityContext: "  # a container's security context, in manifest(container=...)

HOST_NAMESPACES = [
    case("hostNetwork port: hostPort must match", manifest("hostNetwork: true", container="ports: [{containerPort: 80, hostPort: 8080}]"),
         "spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"),
    case("hostUsers false with hostNetwork", manifest("hostUsers: false\nhostNetwork: true"),
         "spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false"),
    case("hostUsers false with hostPID", manifest("hostUsers: false\nhostPID: true"),
         "spec.HostPID: Forbidden: when `pod.Spec.HostUsers` is false"),
    case("hostUsers false with hostIPC", manifest("hostUsers: false\nhostIPC: true"),
         "spec.HostIPC: Forbidden: when `pod.Spec.HostUsers` is false"),
    case("shareProcessNamespace with hostPID", manifest("hostPID: true\nshareProcessNamespace: true"),
         "spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"),
    case("shareProcessNamespace with hostPID and a securityContext", manifest("hostPID: true\nshareProcessNamespace: true\nsecurityContext: {runAsUser: 1000}"),
         "spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"),
]

SECURITY_CONTEXT = [
    case("procMount Unmasked in the host's user namespace", manifest(container=CSC + "{procMount: Unmasked}"),
         'spec.containers[0].securityContext.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`'),
    case("procMount Unmasked with hostUsers true", manifest("hostUsers: true", container=CSC + "{procMount: Unmasked}"),
         'spec.containers[0].securityContext.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`'),
    case("procMount Unmasked in an init container", manifest("initContainers: [{name: i, image: 'b:1', securityContext: {procMount: Unmasked}}]"),
         'spec.initContainers[0].securityContext.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`'),
    case("procMount unsupported", manifest("hostUsers: false", container=CSC + "{procMount: Masked}"),
         'spec.containers[0].securityContext.procMount: Unsupported value: "Masked": supported values: "Default", "Unmasked"'),
    case("privileged without privilege escalation", manifest(container=CSC + "{privileged: true, allowPrivilegeEscalation: false}"),
         'spec.containers[0].securityContext: Invalid value: "": cannot set `allowPrivilegeEscalation` to false and `privileged` to true'),
    case("CAP_SYS_ADMIN without privilege escalation", manifest(container=CSC + "{allowPrivilegeEscalation: false, capabilities: {add: [CAP_SYS_ADMIN]}}"),
         'spec.containers[0].securityContext: Invalid value: "": cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN'),
    case("seccomp type empty", manifest(container=CSC + "{seccompProfile: {type: ''}}"),
         "spec.containers[0].securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set"),
    case("seccomp type unsupported", manifest("securityContext: {seccompProfile: {type: Confined}}"),
         'spec.securityContext.seccompProfile.type: Unsupported value: "Confined": supported values: "Localhost", "RuntimeDefault", "Unconfined"'),
    case("seccomp Localhost without profile", manifest(container=CSC + "{seccompProfile: {type: Localhost}}"),
         "spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"),
    case("seccomp Localhost absolute profile", manifest("securityContext: {seccompProfile: {type: Localhost, localhostProfile: /etc/profile.json}}"),
         'spec.securityContext.seccompProfile.localhostProfile: Invalid value: "/etc/profile.json": must be a relative path'),
    case("seccomp Localhost profile with ..", manifest(container=CSC + "{seccompProfile: {type: Localhost, localhostProfile: ../../etc/shadow}}"),
         "spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: \"../../etc/shadow\": must not contain '..'"),
    case("seccomp profile without Localhost", manifest(container=CSC + "{seccompProfile: {type: RuntimeDefault, localhostProfile: p.json}}"),
         'spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "p.json": can only be set when seccomp type is Localhost'),
    case("apparmor type empty", manifest(container=CSC + "{appArmorProfile: {type: ''}}"),
         "spec.containers[0].securityContext.appArmorProfile.type: Required value: type is required when appArmorProfile is set"),
    case("apparmor type unsupported", manifest("securityContext: {appArmorProfile: {type: Confined}}"),
         'spec.securityContext.appArmorProfile.type: Unsupported value: "Confined": supported values: "Localhost", "RuntimeDefault", "Unconfined"'),
    case("apparmor Localhost without profile", manifest(container=CSC + "{appArmorProfile: {type: Localhost}}"),
         "spec.containers[0].securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost"),
    case("apparmor Localhost empty profile", manifest(container=CSC + "{appArmorProfile: {type: Localhost, localhostProfile: ''}}"),
         "spec.containers[0].securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost"),
    case("apparmor Localhost padded profile", manifest(container=CSC + "{appArmorProfile: {type: Localhost, localhostProfile: ' foo '}}"),
         'spec.containers[0].securityContext.appArmorProfile.localhostProfile: Invalid value: " foo ": must not be padded with whitespace'),
    case("apparmor profile without Localhost", manifest("securityContext: {appArmorProfile: {type: Unconfined, localhostProfile: foo}}"),
         'spec.securityContext.appArmorProfile.localhostProfile: Invalid value: "foo": can only be set when AppArmor type is Localhost'),
    case("supplementalGroupsPolicy unsupported", manifest("securityContext: {supplementalGroupsPolicy: Loose}"),
         'spec.securityContext.supplementalGroupsPolicy: Unsupported value: "Loose": supported values: "Merge", "Strict"'),
    case("seLinuxChangePolicy unsupported", manifest("securityContext: {seLinuxChangePolicy: Sometimes}"),
         'spec.securityContext.seLinuxChangePolicy: Unsupported value: "Sometimes": supported values: "MountOption", "Recursive"'),
    case("fsGroupChangePolicy unsupported", manifest("securityContext: {fsGroupChangePolicy: Never}"),
         'spec.securityContext.fsGroupChangePolicy: Unsupported value: "Never": supported values: "Always", "OnRootMismatch"'),
    case("sysctl name regex", manifest("securityContext: {sysctls: [{name: 'kernel.shm_rmid_forced-', value: '1'}]}"),
         'spec.securityContext.sysctls[0].name: Invalid value: "kernel.shm_rmid_forced-": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$'),
]

WINDOWS_OPTIONS = [
    case("gmsaCredentialSpecName not a subdomain", manifest(container=CSC + "{windowsOptions: {gmsaCredentialSpecName: Not_A_Name}}"),
         'spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName: Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. \'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')'),
    case("runAsUserName with control characters", manifest(container=CSC + '{windowsOptions: {runAsUserName: "Container\\tUser"}}'),
         'spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "Container\\tUser": runAsUserName cannot contain control characters'),
    case("runAsUserName with two backslashes", manifest(container=CSC + "{windowsOptions: {runAsUserName: 'a\\b\\c'}}"),
         'spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "a\\\\b\\\\c": runAsUserName cannot contain more than one backslash'),
    case("runAsUserName with an empty user", manifest(container=CSC + "{windowsOptions: {runAsUserName: 'Domain\\'}}"),
         'spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "Domain\\\\": runAsUserName\'s User cannot be empty'),
    case("runAsUserName user too long", manifest(container=CSC + "{windowsOptions: {runAsUserName: " + "u" * 105 + "}}"),
         'spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "' + "u" * 105 + '": runAsUserName\'s User length must not be longer than 104 characters'),
    case("runAsUserName user of dots", manifest(container=CSC + "{windowsOptions: {runAsUserName: '...'}}"),
         'spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "...": runAsUserName\'s User cannot contain only periods or spaces'),
    case("runAsUserName user with bad characters", manifest(container=CSC + "{windowsOptions: {runAsUserName: 'us|er'}}"),
         'spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "us|er": runAsUserName\'s User cannot contain the following characters: "/\\:;|=,+*?<>@[]'),
    case("runAsUserName bad domain", manifest(container=CSC + "{windowsOptions: {runAsUserName: '.domain\\user'}}"),
         'spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: ".domain\\\\user": runAsUserName\'s Domain doesn\'t match the NetBios nor the DNS format'),
    case("hostProcess differs from the pod's", manifest("os: {name: windows}\nhostNetwork: true\nsecurityContext: {windowsOptions: {hostProcess: true}}", container=CSC + "{windowsOptions: {hostProcess: false}}"),
         "spec.containers[0].securityContext.windowsOptions.hostProcess: Invalid value: false: pod hostProcess value must be identical if both are specified, was true"),
    case("hostProcess without hostNetwork", manifest("os: {name: windows}\nsecurityContext: {windowsOptions: {hostProcess: true}}"),
         "spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers"),
    case("hostProcess not in every container", manifest("os: {name: windows}\nhostNetwork: true\ncontainers:\n- {name: a, image: 'b:1', securityContext: {windowsOptions: {hostProcess: true}}}\n- {name: b, image: 'b:1'}"),
         'spec: Invalid value: "": If pod contains any hostProcess containers then all containers must be HostProcess containers'),
]

OS = [
    case("os name empty", manifest("os: {name: ''}"), "spec.os.name: Required value: cannot be empty"),
    case("os name unsupported", manifest("os: {name: Linux}"), 'spec.os: Unsupported value: "Linux": supported values: "linux", "windows"'),
    case("linux pod with pod windowsOptions", manifest("os: {name: linux}\nsecurityContext: {windowsOptions: {runAsUserName: u}}"),
         "spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod"),
    case("linux pod with container windowsOptions", manifest("os: {name: linux}", container=CSC + "{windowsOptions: {runAsUserName: u}}"),
         "spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod"),
    case("linux pod with init container windowsOptions", manifest("os: {name: linux}\ninitContainers: [{name: i, image: 'b:1', securityContext: {windowsOptions: {hostProcess: false}}}]"),
         "spec.initContainers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod"),
    *[case(f"windows pod with pod {field}", manifest("os: {name: windows}\nsecurityContext: {" + value + "}"), f"spec.securityContext.{field}: Forbidden: cannot be set for a windows pod")
      for field, value in (("appArmorProfile", "appArmorProfile: {type: RuntimeDefault}"), ("seLinuxOptions", "seLinuxOptions: {level: s0}"),
                           ("seccompProfile", "seccompProfile: {type: RuntimeDefault}"), ("fsGroup", "fsGroup: 1"),
                           ("fsGroupChangePolicy", "fsGroupChangePolicy: Always"), ("sysctls", "sysctls: [{name: kernel.shm_rmid_forced, value: '1'}]"),
                           ("runAsUser", "runAsUser: 1"), ("runAsGroup", "runAsGroup: 1"), ("supplementalGroups", "supplementalGroups: [1]"),
                           ("supplementalGroupsPolicy", "supplementalGroupsPolicy: Strict"), ("seLinuxChangePolicy", "seLinuxChangePolicy: Recursive"))],
    *[case(f"windows pod with {field}", manifest("os: {name: windows}\n" + value), f"spec.{field}: Forbidden: cannot be set for a windows pod")
      for field, value in (("hostUsers", "hostUsers: true"), ("hostPID", "hostPID: true"), ("hostIPC", "hostIPC: true"),
                           ("shareProcessNamespace", "shareProcessNamespace: false"))],
    *[case(f"windows pod with container {field}", manifest("os: {name: windows}", container=CSC + "{" + value + "}"), f"spec.containers[0].securityContext.{field}: Forbidden: cannot be set for a windows pod")
      for field, value in (("appArmorProfile", "appArmorProfile: {type: RuntimeDefault}"), ("seLinuxOptions", "seLinuxOptions: {level: s0}"),
                           ("seccompProfile", "seccompProfile: {type: RuntimeDefault}"), ("capabilities", "capabilities: {drop: [ALL]}"),
                           ("readOnlyRootFilesystem", "readOnlyRootFilesystem: true"), ("privileged", "privileged: false"),
                           ("allowPrivilegeEscalation", "allowPrivilegeEscalation: false"), ("procMount", "procMount: Default"),
                           ("runAsUser", "runAsUser: 1"), ("runAsGroup", "runAsGroup: 1"))],
]


SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_C = "container.seccomp.security.alpha.kubernetes.io/c"
APPARMOR_C = "container.apparmor.security.beta.kubernetes.io/c"


def annotated(annotations: str, spec: str = "", container: str = "") -> bytes:
    return manifest(spec, container=container, metadata="name: p\nannotations: {" + annotations + "}")


ANNOTATIONS = [
    case("seccomp pod annotation unknown", annotated(f"{SECCOMP_POD}: foo"),
         f'metadata.annotations.{SECCOMP_POD}: Invalid value: "foo": must be a valid seccomp profile'),
    case("seccomp container annotation escaping", annotated(f"{SECCOMP_C}: localhost/../foo"),
         f"metadata.annotations.{SECCOMP_C}: Invalid value: \"../foo\": must not contain '..'"),
    case("seccomp annotation and field disagree", annotated(f"{SECCOMP_POD}: unconfined", "securityContext: {seccompProfile: {type: RuntimeDefault}}"),
         "spec.securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must match"),
    case("seccomp container localhost profiles disagree", annotated(f"{SECCOMP_C}: localhost/a.json", container=CSC + "{seccompProfile: {type: Localhost, localhostProfile: b.json}}"),
         "spec.containers[0].securityContext.seccompProfile.localhostProfile: Forbidden: seccomp profile in annotation and field must match"),
    case("apparmor annotation for no container", annotated("container.apparmor.security.beta.kubernetes.io/ghost: runtime/default"),
         'metadata.annotations[container.apparmor.security.beta.kubernetes.io/ghost]: Invalid value: "ghost": container not found'),
    case("apparmor annotation bad profile", annotated(f"{APPARMOR_C}: confined"),
         f'metadata.annotations[{APPARMOR_C}]: Invalid value: "confined": invalid AppArmor profile name: "confined"'),
    case("apparmor annotation and field disagree", annotated(f"{APPARMOR_C}: unconfined", container=CSC + "{appArmorProfile: {type: RuntimeDefault}}"),
         "spec.containers[0].securityContext.appArmorProfile.type: Forbidden: apparmor type in annotation and field must match"),
    case("apparmor annotation and pod field disagree", annotated(f"{APPARMOR_C}: localhost/a", "securityContext: {appArmorProfile: {type: Localhost, localhostProfile: b}}"),
         "spec.containers[0].securityContext.appArmorProfile.localhostProfile: Forbidden: apparmor profile in annotation and field must match"),
    case("deletion cost not an int32", annotated("controller.kubernetes.io/pod-deletion-cost: '2147483648'"),
         'metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "2147483648": must be a 32bit integer'),
]


@pytest.mark.parametrize(("data", "expected"), HOST_NAMESPACES + SECURITY_CONTEXT + WINDOWS_OPTIONS + OS + ANNOTATIONS)
def test_upstream_refusal(data: bytes, expected: str) -> None:
    found = errors(data)
    assert expected in found, found


VALID = [
    pytest.param(manifest("hostUsers: false", container=CSC + "{procMount: Unmasked}"), id="procMount Unmasked in its own user namespace"),
    pytest.param(manifest("hostUsers: false\nshareProcessNamespace: true"), id="own user namespace, shared process namespace"),
    pytest.param(manifest("hostNetwork: true\nhostPID: true\nhostIPC: true"), id="every host namespace"),
    pytest.param(manifest("hostPID: true\nshareProcessNamespace: false"), id="hostPID, no shared process namespace"),
    pytest.param(manifest("hostNetwork: true", container="ports: [{containerPort: 80, hostPort: 80}]"), id="hostNetwork ports equal"),
    pytest.param(manifest("os: {name: linux}\nsecurityContext: {seccompProfile: {type: Localhost, localhostProfile: profiles/audit.json}, appArmorProfile: {type: Localhost, localhostProfile: k8s-apparmor-example}}"), id="linux pod with localhost profiles"),
    pytest.param(manifest("os: {name: windows}\nhostNetwork: true\nsecurityContext: {windowsOptions: {hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM'}}"), id="windows hostProcess pod"),
    pytest.param(manifest(container=CSC + "{windowsOptions: {runAsUserName: 'Domain\\User', gmsaCredentialSpecName: gmsa-spec}}"), id="windows options without an os"),
    pytest.param(manifest(container=CSC + "{privileged: true, allowPrivilegeEscalation: true, capabilities: {add: [CAP_SYS_ADMIN]}}"), id="privileged with escalation"),
    pytest.param(annotated(f"{SECCOMP_POD}: runtime/default, {SECCOMP_C}: localhost/a.json, {APPARMOR_C}: localhost/a, controller.kubernetes.io/pod-deletion-cost: '-5'",
                           "securityContext: {seccompProfile: {type: RuntimeDefault}}",
                           CSC + "{seccompProfile: {type: Localhost, localhostProfile: a.json}, appArmorProfile: {type: Localhost, localhostProfile: a}}"), id="annotations agreeing with fields"),
]


@pytest.mark.parametrize("data", VALID)
def test_upstream_accepts(data: bytes) -> None:
    parse_manifest(data, "p.yaml")
