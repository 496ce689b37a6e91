"""Security context and sysctls on a real containerd, through the daemon as a user runs it.

Upstream's node conformance cases of test/e2e/common/node/security_context.go,
test/e2e/common/node/sysctl.go, test/e2e_node/security_context_test.go and the fsGroup
cases of test/e2e/common/storage/empty_dir.go, ported without an API server: each test
writes a static pod manifest, starts the daemon and checks, from inside the container, what
the field asked for (``id`` output, /proc/self/status, /proc/sys, ``ls -n``). The cases that
upstream's API server would refuse are the manifest errors and admission failures of this
node; a setting the runtime refuses is the container's (or the sandbox's) waiting reason and
an event line in the kubelet's log naming the pod, the container and the cause.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE, BUSYBOX_NONROOT_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import Daemon
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NODE = "e2e-node"
TIMEOUT = 60.0


@pytest.fixture
def workdir(containerd: EmbeddedContainerd) -> Path:
    path = containerd.base_dir / "security" / uuid.uuid4().hex[:8]
    (path / "manifests").mkdir(parents=True)
    return path


class Node:
    """The daemon on the e2e containerd, started on the first pod a test runs."""

    def __init__(self, containerd: EmbeddedContainerd, workdir: Path) -> None:
        self.daemon = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
                             containerd.endpoint,
                             "--allowed-unsafe-sysctls", "net.ipv4.no_such_knob")
        self.workdir = workdir

    @property
    def seccomp_dir(self) -> Path:
        return self.workdir / "root" / "seccomp"

    def run(self, name: str, containers: list[dict[str, Any]], policy: str = "Never",
            **spec: Any) -> str:
        """Write the pod's manifest (JSON is YAML) and start the daemon; the pod's name."""
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"restartPolicy": policy, "terminationGracePeriodSeconds": 1,
                        "containers": containers, **spec}}
        (self.daemon.manifests / f"{name}.yaml").write_text(json.dumps(pod))
        if self.daemon.proc is None:
            self.daemon.start()
        return f"{name}-{NODE}"

    def finished(self, pod: str) -> dict[str, Any]:
        """The pod once Succeeded or Failed."""
        def done() -> dict[str, Any] | None:
            found = self.daemon.pod(pod)
            phase = found["status"].get("phase") if found else None
            return found if phase in ("Succeeded", "Failed") else None

        found = wait_for(done, TIMEOUT, f"{pod} Succeeded or Failed")
        assert found is not None
        return found

    def succeeded_with_log(self, pod: str, container: str = "main") -> str:
        found = self.finished(pod)
        log = self.container_log(pod, container)
        assert found["status"]["phase"] == "Succeeded", (found["status"], log)
        return log

    def container_log(self, pod: str, container: str = "main") -> str:
        code, body = self.daemon.get(f"/containerLogs/default/{pod}/{container}")
        assert code == 200, body
        return body

    def waiting(self, pod: str, reason: str, container: str = "main") -> str:
        """The container's waiting message once its reason is ``reason``."""
        def matched() -> tuple[str] | None:  # a tuple: an empty message counts too
            found = self.daemon.pod(pod)
            for status in (found or {}).get("status", {}).get("containerStatuses", []):
                waiting = status.get("state", {}).get("waiting", {})
                if status["name"] == container and waiting.get("reason") == reason:
                    return (str(waiting.get("message", "")),)
            return None

        message = wait_for(matched, TIMEOUT, f"{pod}/{container} waiting with {reason}")
        assert message is not None
        return message[0]

    def event(self, pattern: str) -> str:
        """The kubelet log line (the event) matching ``pattern``."""
        def found() -> str | None:
            text = self.daemon.log_path.read_text(errors="replace")
            match = re.search(pattern, text)
            return match.group(0) if match else None

        line = wait_for(found, TIMEOUT, f"a log line matching {pattern!r}")
        assert line is not None
        return line


@pytest.fixture
def node(containerd: EmbeddedContainerd, cri: CRIClient, workdir: Path) -> Iterator[Node]:
    """The daemon; at the end it stops and the ``cri`` fixture removes what it made."""
    n = Node(containerd, workdir)
    yield n
    n.daemon.stop()
    if n.daemon.log_path.exists():
        print(n.daemon.log())  # pytest shows it when the test failed


def box(script: str, image: str = BUSYBOX_IMAGE, name: str = "main",
        **security: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image, "command": ["sh", "-c", script]}
    if security:
        container["securityContext"] = security
    return container


def status_field(log: str, field: str) -> str:
    match = re.search(rf"^{field}:\s*(\S+)", log, re.MULTILINE)
    assert match, log
    return match.group(1)


# --- runAsUser, runAsGroup, groups --------------------------------------------------------


def test_security_context_when_creating_a_container_with_run_as_user_should_run_the_container_with_uid_65534(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a container with runAsUser should run the
    container with uid 65534 [LinuxOnly] [NodeConformance] [Conformance]"""
    pod = node.run("uid-65534", [box("id -u", runAsUser=65534)])
    assert node.succeeded_with_log(pod).strip() == "65534"


def test_security_context_when_creating_a_container_with_run_as_user_should_run_the_container_with_uid_0(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a container with runAsUser should run the
    container with uid 0 [LinuxOnly] [NodeConformance]"""
    pod = node.run("uid-0", [box("id -u", runAsUser=0)])
    assert node.succeeded_with_log(pod).strip() == "0"


def test_security_context_should_support_pod_run_as_user_group_supplemental_groups_and_fs_group(
        node: Node) -> None:
    """[sig-node] Security Context should support pod.Spec.SecurityContext.RunAsUser And
    pod.Spec.SecurityContext.RunAsGroup [LinuxOnly] [Conformance] (with supplementalGroups
    and fsGroup, which upstream adds to the supplemental groups)"""
    pod = node.run("user-group", [box("id -u; id -g; id -G")], securityContext={
        "runAsUser": 1001, "runAsGroup": 2002, "supplementalGroups": [3003],
        "fsGroup": 4004})
    uid, gid, groups = node.succeeded_with_log(pod).split("\n")[:3]
    assert (uid, gid) == ("1001", "2002")
    assert {"2002", "3003", "4004"} <= set(groups.split())


def test_security_context_container_run_as_user_and_group_override_the_pods(node: Node) -> None:
    """[sig-node] Security Context should support container.SecurityContext.RunAsUser And
    container.SecurityContext.RunAsGroup [LinuxOnly] [Conformance]"""
    pod = node.run("override", [box("id -u; id -g", runAsUser=1002, runAsGroup=2003)],
                   securityContext={"runAsUser": 1001, "runAsGroup": 2002})
    assert node.succeeded_with_log(pod).split() == ["1002", "2003"]


# --- runAsNonRoot --------------------------------------------------------------------------


def test_security_context_when_creating_a_container_with_run_as_non_root_should_run_with_an_explicit_non_root_user_id(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a container with runAsNonRoot should run
    with an explicit non-root user ID [LinuxOnly]"""
    pod = node.run("explicit-nonroot-uid",
                   [box("id -u", runAsUser=1234, runAsNonRoot=True)])
    assert node.succeeded_with_log(pod).strip() == "1234"


def test_security_context_when_creating_a_container_with_run_as_non_root_should_not_run_with_an_explicit_root_user_id(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a container with runAsNonRoot should not
    run with an explicit root user ID [LinuxOnly]"""
    pod = node.run("explicit-root-uid", [box("id -u", runAsUser=0, runAsNonRoot=True)])
    message = node.waiting(pod, "CreateContainerConfigError")
    assert re.fullmatch(r"container's runAsUser breaks non-root policy \(pod: "
                        rf'"{pod}_default\([0-9a-f]+\)", container: main\)', message), message
    node.event(rf"{pod}.* main: CreateContainerConfigError: container's runAsUser breaks "
               r"non-root policy")


def test_security_context_when_creating_a_container_with_run_as_non_root_should_run_with_an_image_specified_user_id(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a container with runAsNonRoot should run
    with an image specified user ID [LinuxOnly]"""
    pod = node.run("implicit-nonroot-uid",
                   [box("id -u", image=BUSYBOX_NONROOT_IMAGE, runAsNonRoot=True)])
    assert node.succeeded_with_log(pod).strip() == "1234"


def test_security_context_when_creating_a_container_with_run_as_non_root_should_not_run_without_a_specified_user_id(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a container with runAsNonRoot should not
    run without a specified user ID"""
    pod = node.run("implicit-root-uid", [box("id -u", runAsNonRoot=True)])
    message = node.waiting(pod, "CreateContainerConfigError")
    assert re.fullmatch(r'container has runAsNonRoot and image will run as root \(pod: '
                        rf'"{pod}_default\([0-9a-f]+\)", container: main\)', message), message
    node.event(rf"{pod}.* main: CreateContainerConfigError: container has runAsNonRoot and "
               r"image will run as root")


# --- readOnlyRootFilesystem, privileged, allowPrivilegeEscalation, capabilities ----------


def test_security_context_when_creating_a_pod_with_read_only_root_filesystem_should_run_the_container_with_readonly_rootfs_when_read_only_root_filesystem_true(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a pod with readOnlyRootFilesystem should run
    the container with readonly rootfs when readOnlyRootFilesystem=true [LinuxOnly]
    [NodeConformance]"""
    pod = node.run("readonly-rootfs", [box("touch checkfile", readOnlyRootFilesystem=True)])
    assert node.finished(pod)["status"]["phase"] == "Failed"
    assert "Read-only file system" in node.container_log(pod)


def test_security_context_when_creating_a_pod_with_read_only_root_filesystem_should_run_the_container_with_writable_rootfs_when_read_only_root_filesystem_false(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a pod with readOnlyRootFilesystem should run
    the container with writable rootfs when readOnlyRootFilesystem=false [NodeConformance]
    [Conformance]"""
    pod = node.run("writable-rootfs", [box("touch checkfile", readOnlyRootFilesystem=False)])
    node.succeeded_with_log(pod)


def test_security_context_when_creating_a_pod_with_privileged_should_run_the_container_as_unprivileged_when_false(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a pod with privileged should run the
    container as unprivileged when false [LinuxOnly] [NodeConformance] [Conformance]"""
    pod = node.run("unprivileged",
                   [box("ip link add dummy0 type dummy || true", privileged=False)])
    assert "Operation not permitted" in node.succeeded_with_log(pod)


def test_security_context_when_creating_a_pod_with_privileged_should_run_the_container_as_privileged_when_true(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a pod with privileged should run the
    container as privileged when true [LinuxOnly] [NodeFeature:HostAccess]"""
    # (This kernel has no dummy links: changing lo's MTU needs CAP_NET_ADMIN too.)
    pod = node.run("privileged", [box("ip link set lo mtu 1400 && echo made; "
                                      "grep CapEff /proc/self/status", privileged=True)])
    log = node.succeeded_with_log(pod)
    assert "made" in log and "Operation not permitted" not in log
    assert int(status_field(log, "CapEff"), 16) & (1 << 21)  # CAP_SYS_ADMIN


def test_security_context_when_creating_containers_with_allow_privilege_escalation_should_allow_privilege_escalation_when_not_explicitly_set_and_uid_not_0(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context when creating containers with AllowPrivilegeEscalation
    should allow privilege escalation when not explicitly set and uid != 0 [LinuxOnly]
    [NodeConformance] (no_new_privs read from /proc/self/status, not a setuid binary)"""
    pod = node.run("ape-unset", [box("cat /proc/self/status", runAsUser=1000)])
    assert status_field(node.succeeded_with_log(pod), "NoNewPrivs") == "0"


def test_security_context_when_creating_containers_with_allow_privilege_escalation_should_not_allow_privilege_escalation_when_false(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context when creating containers with AllowPrivilegeEscalation
    should not allow privilege escalation when false [LinuxOnly] [NodeConformance]
    [Conformance]"""
    pod = node.run("ape-false", [box("cat /proc/self/status", runAsUser=1000,
                                     allowPrivilegeEscalation=False)])
    assert status_field(node.succeeded_with_log(pod), "NoNewPrivs") == "1"


def test_security_context_when_creating_containers_with_allow_privilege_escalation_should_allow_privilege_escalation_when_true(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context when creating containers with AllowPrivilegeEscalation
    should allow privilege escalation when true [LinuxOnly] [NodeConformance]"""
    pod = node.run("ape-true", [box("cat /proc/self/status", runAsUser=1000,
                                    allowPrivilegeEscalation=True)])
    assert status_field(node.succeeded_with_log(pod), "NoNewPrivs") == "0"


def test_security_context_capabilities_add_and_drop(node: Node) -> None:
    """[sig-node] Security Context should support capabilities: dropping ALL leaves none,
    adding NET_ADMIN gives it (test/e2e_node/security_context_test.go's capability cases)"""
    pod = node.run("caps", [
        box("grep CapEff /proc/self/status", name="none", capabilities={"drop": ["ALL"]}),
        box("grep CapEff /proc/self/status; ip link set lo mtu 1400 && echo made",
            name="netadmin", capabilities={"add": ["NET_ADMIN"]}),
    ])
    node.finished(pod)
    assert int(status_field(node.container_log(pod, "none"), "CapEff"), 16) == 0
    log = node.container_log(pod, "netadmin")
    assert int(status_field(log, "CapEff"), 16) & (1 << 12)  # CAP_NET_ADMIN
    assert "made" in log


def test_a_capability_linux_does_not_have_is_an_event_not_a_silent_skip(node: Node) -> None:
    """Bad input: runc ignores a capability it does not know (upstream's kubelet passes it
    on); the kubelet names the container and the capability in an event, and the container
    runs without it."""
    pod = node.run("bad-cap", [box("grep CapEff /proc/self/status",
                                   capabilities={"add": ["NO_SUCH_CAP"], "drop": ["ALL"]})])
    assert int(status_field(node.succeeded_with_log(pod), "CapEff"), 16) == 0
    node.event(rf'{pod}.* main: unknown capability "NO_SUCH_CAP" in '
               r"securityContext.capabilities: not a Linux capability")


# --- seccomp, procMount -----------------------------------------------------------------


def test_security_context_seccomp_runtime_default_unconfined_and_localhost(node: Node) -> None:
    """[sig-node] Security Context should support seccomp runtime/default, unconfined and a
    localhost profile under <root-dir>/seccomp [LinuxOnly] (test/e2e/node/security_context.go
    seccomp cases, read from /proc/self/status)"""
    node.seccomp_dir.mkdir(parents=True)
    (node.seccomp_dir / "allow.json").write_text('{"defaultAction": "SCMP_ACT_ALLOW"}')
    pod = node.run("seccomp", [
        box("grep Seccomp: /proc/self/status", name="default",
            seccompProfile={"type": "RuntimeDefault"}),
        box("grep Seccomp: /proc/self/status", name="unconfined",
            seccompProfile={"type": "Unconfined"}),
        box("grep Seccomp: /proc/self/status", name="inherited"),
        box("grep Seccomp: /proc/self/status", name="localhost",
            seccompProfile={"type": "Localhost", "localhostProfile": "allow.json"}),
    ], securityContext={"seccompProfile": {"type": "Unconfined"}})
    node.finished(pod)
    assert status_field(node.container_log(pod, "default"), "Seccomp") == "2"
    assert status_field(node.container_log(pod, "unconfined"), "Seccomp") == "0"
    assert status_field(node.container_log(pod, "inherited"), "Seccomp") == "0"
    assert status_field(node.container_log(pod, "localhost"), "Seccomp") == "2"


def test_a_seccomp_profile_that_does_not_exist_is_a_waiting_reason_and_an_event(
        node: Node) -> None:
    """Bad input: a Localhost seccomp profile missing from <root-dir>/seccomp fails the
    container with CreateContainerError naming the file, as upstream leaves it to the
    runtime to find out."""
    pod = node.run("no-profile", [box("true", seccompProfile={
        "type": "Localhost", "localhostProfile": "missing.json"})], policy="Always")
    message = node.waiting(pod, "CreateContainerError")
    assert "missing.json" in message, message
    node.event(rf"{pod}.* main: CreateContainerError: .*missing\.json")


def test_security_context_proc_mount_default_masks(node: Node) -> None:
    """[sig-node] Security Context procMount: Default (and unset) masks /proc/timer_list
    and makes /proc/sys read-only (upstream's default masked and read-only paths). Unmasked
    needs the pod's own user namespace, which this node refuses (test_refused_isolation)."""
    script = ("echo masked=$(head -c 16 /proc/timer_list | wc -c); "
              "grep -q ' /proc/sys .*ro,' /proc/self/mounts && echo sys=ro || echo sys=rw")
    pod = node.run("procmount", [box(script, name="default", procMount="Default"),
                                 box(script, name="unset")])
    node.finished(pod)
    for container in ("default", "unset"):
        log = node.container_log(pod, container)
        assert "masked=0" in log and "sys=ro" in log, log


# --- fsGroup on emptyDir -----------------------------------------------------------------


def test_emptydir_volumes_when_fsgroup_is_specified_new_files_should_be_created_with_fsgroup_ownership_when_container_is_non_root(  # noqa: E501
        node: Node) -> None:
    """[sig-storage] EmptyDir volumes when FSGroup is specified [LinuxOnly]
    [NodeFeature:FSGroup] new files should be created with FSGroup ownership when container
    is non-root (and volume on default medium should have the correct mode using FSGroup)"""
    pod = node.run("fsgroup", [{
        **box("ls -nd /data; touch /data/f; ls -n /data/f", runAsUser=1001),
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }], securityContext={"fsGroup": 4004}, volumes=[{"name": "data", "emptyDir": {}}])
    directory, new_file = node.succeeded_with_log(pod).splitlines()[:2]
    assert directory.split()[0] == "drwxrwsrwx" and directory.split()[3] == "4004", directory
    assert new_file.split()[2:4] == ["1001", "4004"], new_file


# --- namespaces: hostPID, hostIPC, hostNetwork, shareProcessNamespace ---------------------


def test_security_context_when_pod_pid_namespace_is_configurable_containers_in_pods_using_isolated_pid_namespaces_should_all_receive_pid_1(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When pod PID namespace is configurable [LinuxOnly]
    containers in pods using isolated PID namespaces should all receive PID 1"""
    # $$$$: the kubelet's $(VAR) expansion makes $$ a literal $, as upstream's does.
    pod = node.run("isolated-pid", [box("echo $$$$", name="a"), box("echo $$$$", name="b")])
    node.finished(pod)
    assert [node.container_log(pod, c).strip() for c in ("a", "b")] == ["1", "1"]


def test_security_context_when_pod_pid_namespace_is_configurable_processes_in_containers_sharing_a_pod_should_be_able_to_see_each_other(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When pod PID namespace is configurable [LinuxOnly]
    processes in containers sharing a pod namespace should be able to see each other"""
    pod = node.run("shared-pid", [
        box("trap 'exit 0' TERM; while true; do sleep 1; done", name="sleeper"),
        box("until ps | grep -q 'sleep 1'; do sleep 0.2; done; ps", name="looker"),
    ], policy="Always", shareProcessNamespace=True)

    def seen() -> str | None:
        code, body = node.daemon.get(f"/containerLogs/default/{pod}/looker")
        return body if code == 200 and "/pause" in body and "sleep 1" in body else None

    log = wait_for(seen, TIMEOUT, "the looker's ps output")
    assert log is not None


def test_security_context_when_creating_a_pod_in_the_host_pid_namespace_should_show_its_pid_in_the_host_pid_namespace(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a pod in the host PID namespace should show
    its pid in the host PID namespace [NodeFeature:HostAccess] (PID 1 is the host's init,
    not the container's shell)"""
    pod = node.run("host-pid", [box("echo $$$$; cat /proc/1/comm")], hostPID=True)
    pid, comm = node.succeeded_with_log(pod).split()[:2]
    assert pid != "1" and comm != "sh"


def test_security_context_when_creating_a_pod_in_the_host_ipc_namespace_should_show_the_shared_memory_id_in_the_host_ipc_namespace(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a pod in the host IPC namespace should
    show the shared memory ID in the host IPC namespace [NodeFeature:HostAccess] (compared by
    the IPC namespace's inode, which is the host's)"""
    pod = node.run("host-ipc", [box("readlink /proc/self/ns/ipc")], hostIPC=True)
    assert node.succeeded_with_log(pod).strip() == Path("/proc/self/ns/ipc").readlink().name
    pod = node.run("pod-ipc", [box("readlink /proc/self/ns/ipc")])
    assert node.succeeded_with_log(pod).strip() != Path("/proc/self/ns/ipc").readlink().name


def test_security_context_when_creating_a_pod_in_the_host_network_namespace_should_listen_on_same_port_in_the_host_network_containers_share_the_hosts_network_namespace(  # noqa: E501
        node: Node) -> None:
    """[sig-node] Security Context When creating a pod in the host network namespace
    (test/e2e_node/security_context_test.go; compared by the network namespace's inode)"""
    pod = node.run("host-net", [box("readlink /proc/self/ns/net")], hostNetwork=True)
    assert node.succeeded_with_log(pod).strip() == Path("/proc/self/ns/net").readlink().name
    # ... shouldn't show the same port in the non-hostnetwork containers
    pod = node.run("pod-net", [box("readlink /proc/self/ns/net")])
    assert node.succeeded_with_log(pod).strip() != Path("/proc/self/ns/net").readlink().name


# --- sysctls ---------------------------------------------------------------------------


def test_sysctls_should_support_sysctls(node: Node) -> None:
    """[sig-node] Sysctls [LinuxOnly] [NodeConformance] should support sysctls
    [MinimumKubeletVersion:1.21] [Environment:NotInUserNS] [Conformance]"""
    pod = node.run("sysctl", [box("cat /proc/sys/kernel/shm_rmid_forced")],
                   securityContext={"sysctls": [{"name": "kernel.shm_rmid_forced",
                                                 "value": "1"}]})
    assert node.succeeded_with_log(pod).strip() == "1"


def test_sysctls_should_support_sysctls_with_slashes_as_separator(node: Node) -> None:
    """[sig-node] Sysctls [LinuxOnly] [NodeConformance] should support sysctls with slashes
    as separator [MinimumKubeletVersion:1.23] [Environment:NotInUserNS]"""
    pod = node.run("sysctl-slash", [box("cat /proc/sys/kernel/shm_rmid_forced")],
                   securityContext={"sysctls": [{"name": "kernel/shm_rmid_forced",
                                                 "value": "1"}]})
    assert node.succeeded_with_log(pod).strip() == "1"


def test_sysctls_should_not_launch_unsafe_but_not_explicitly_enabled_sysctls_on_the_node(
        node: Node) -> None:
    """[sig-node] Sysctls [LinuxOnly] [NodeConformance] should not launch unsafe, but not
    explicitly enabled sysctls on the node [MinimumKubeletVersion:1.21]"""
    pod = node.run("sysctl-unsafe", [box("true")], securityContext={
        "sysctls": [{"name": "kernel.msgmax", "value": "10000000000"}]})
    status = node.finished(pod)["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "SysctlForbidden"), status
    assert "kernel.msgmax" in status["message"]


def test_sysctls_should_reject_invalid_sysctls(node: Node) -> None:
    """[sig-node] Sysctls [LinuxOnly] [NodeConformance] should reject invalid sysctls
    [MinimumKubeletVersion:1.21] [Conformance] (upstream's API server refuses the pod; here
    the manifest is reported by field and no pod runs)"""
    node.run("sysctl-invalid", [box("true")], securityContext={"sysctls": [
        {"name": "foo-", "value": "bar"}, {"name": "kernel.shmmax", "value": "100000000"},
        {"name": "safe-and-unsafe", "value": "100000000"}, {"name": "bar..", "value": "42"}]})
    node.event(r"manifest .*sysctl-invalid\.yaml rejected: spec\.securityContext\.sysctls"
               r'\[0\]\.name: Invalid value: "foo-".*sysctls\[3\]\.name: Invalid value: '
               r'"bar\.\."')
    assert node.daemon.pod(f"sysctl-invalid-{NODE}") is None


def test_a_sysctl_the_runtime_refuses_is_a_sandbox_error_and_an_event(node: Node) -> None:
    """Bad input: an allowed unsafe sysctl the kernel does not have fails the sandbox
    (upstream's FailedCreatePodSandBox event), the containers stay ContainerCreating, the
    daemon keeps going."""
    pod = node.run("sysctl-refused", [box("true")], policy="Always", securityContext={
        "sysctls": [{"name": "net.ipv4.no_such_knob", "value": "1"}]})
    node.event(rf"{pod}.* creating the pod sandbox failed: .*no_such_knob")
    node.waiting(pod, "ContainerCreating")


def test_supplemental_groups_policy_strict_is_refused_where_the_runtime_cannot_apply_it(
        node: Node) -> None:
    """[sig-node] Security Context SupplementalGroupsPolicy [LinuxOnly] when the container
    runtime does not support it (containerd 1.6 reports no supplementalGroupsPolicy
    feature): a Strict pod is rejected, as upstream's kubelet rejects it since 1.33, and a
    Merge pod runs"""
    strict = node.run("groups-strict", [box("id -G")], securityContext={
        "runAsUser": 1000, "supplementalGroups": [4000], "supplementalGroupsPolicy": "Strict"})
    merge = node.run("groups-merge", [box("id -G")], securityContext={
        "runAsUser": 1000, "supplementalGroups": [4000], "supplementalGroupsPolicy": "Merge"})
    status = node.finished(strict)["status"]
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed", "SupplementalGroupsPolicyNotSupported",
        "Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node")
    assert "4000" in node.succeeded_with_log(merge).split()


def test_an_apparmor_profile_on_a_node_without_apparmor_is_rejected(node: Node) -> None:
    """Bad input: this node's kernel has no AppArmor; a pod that names a profile is
    rejected at admission as upstream's AppArmor admit handler rejects it (reason AppArmor),
    and one that asks for unconfined runs."""
    refused = node.run("apparmor", [box("true", appArmorProfile={"type": "RuntimeDefault"})])
    unconfined = node.run("apparmor-off", [box("true",
                                               appArmorProfile={"type": "Unconfined"})])
    status = node.finished(refused)["status"]
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed", "AppArmor",
        "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host")
    node.succeeded_with_log(unconfined)
