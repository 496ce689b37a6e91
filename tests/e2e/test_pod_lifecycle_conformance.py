"""Upstream node conformance cases for termination messages, activeDeadlineSeconds, sidecars
and static pods put back, ported to the daemon on a real containerd (no API server: pods
come from manifests, status from /pods)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerFilter, ContainerState
from runtime.kuberuntime import labels as L
from tests.e2e.daemon import Daemon
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

# sh as PID 1 ignores SIGTERM unless it traps it; `sleep & wait` lets the trap run at once.
SERVE = "trap 'exit 0' TERM; sleep 3600 & wait"


@pytest.fixture
def workdir(containerd: EmbeddedContainerd) -> Path:
    path = containerd.base_dir / "lifecycle" / uuid.uuid4().hex[:8]
    (path / "manifests").mkdir(parents=True)
    return path


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient, workdir: Path) -> Iterator[Daemon]:
    d = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
               containerd.endpoint)
    d.start()
    yield d
    d.stop()


def _write(daemon: Daemon, name: str, text: str) -> Path:
    path = daemon.manifests / f"{name}.yaml"
    tmp = daemon.manifests / f".{name}.tmp"  # dotfiles are not manifests
    tmp.write_text(text)
    tmp.rename(path)  # whole or not at all, as an editor's save
    return path


NODE = "e2e-node"


def _wait_phase(daemon: Daemon, name: str, phases: tuple[str, ...],
                timeout: float = 60.0) -> dict[str, Any]:
    """Wait for the static pod made from manifest ``name`` (``<name>-<node>`` in /pods)."""
    try:
        pod = wait_for(lambda: (p := daemon.pod(f"{name}-{NODE}"))
                       and p["status"].get("phase") in phases and p, timeout,
                       f"{name} in phase {phases}")
    except AssertionError as err:
        lines = [line for line in daemon.log_path.read_text(errors="replace").splitlines()
                 if " HTTP " not in line]
        raise AssertionError("\n".join([str(err), str(daemon.pods()), *lines[-80:]])) from err
    assert pod
    return pod


def _one_container(name: str, script: str, extra: str = "", policy: str = "Never") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: {policy}
  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["/bin/sh", "-c"]
    args: [{json.dumps(script)}]
{extra}"""


def _termination_message(daemon: Daemon, name: str, manifest: str, phase: str) -> str:
    _write(daemon, name, manifest)
    pod = _wait_phase(daemon, name, (phase,))
    (status,) = pod["status"]["containerStatuses"]
    message: str = status["state"]["terminated"].get("message", "")
    return message


# --- test/e2e/common/node/runtime.go: Container Runtime blackbox test on terminated container


def test_should_report_termination_message_if_termination_message_path_is_set(
        daemon: Daemon) -> None:
    """Container Runtime blackbox test on terminated container should report termination
    message if TerminationMessagePath is set [NodeConformance]"""
    manifest = _one_container("msg-path", "/bin/echo -n DONE > /dev/termination-log",
                              "    terminationMessagePath: /dev/termination-log\n")
    assert _termination_message(daemon, "msg-path", manifest, "Succeeded") == "DONE"


def test_should_report_termination_message_as_non_root_user_and_at_a_non_default_path(
        daemon: Daemon) -> None:
    """Container Runtime blackbox test on terminated container should report termination
    message if TerminationMessagePath is set as non-root user and at a non-default path
    [NodeConformance] [Conformance]"""
    manifest = _one_container(
        "msg-nonroot", "/bin/echo -n DONE > /dev/termination-custom-log",
        "    terminationMessagePath: /dev/termination-custom-log\n"
        "    securityContext: {runAsUser: 1000}\n")
    assert _termination_message(daemon, "msg-nonroot", manifest, "Succeeded") == "DONE"


def test_should_report_termination_message_from_log_output_if_fallback_to_logs_on_error(
        daemon: Daemon) -> None:
    """Container Runtime blackbox test on terminated container should report termination
    message from log output if TerminationMessagePolicy FallbackToLogsOnError is set
    [NodeConformance] [Conformance]"""
    manifest = _one_container("msg-logs", "/bin/echo -n DONE; /bin/false",
                              "    terminationMessagePolicy: FallbackToLogsOnError\n")
    assert _termination_message(daemon, "msg-logs", manifest, "Failed") == "DONE"


def test_should_report_termination_message_as_empty_when_pod_succeeds_and_fallback_to_logs(
        daemon: Daemon) -> None:
    """Container Runtime blackbox test on terminated container should report termination
    message as empty when pod succeeds and TerminationMessagePolicy FallbackToLogsOnError is
    set [NodeConformance] [Conformance]"""
    manifest = _one_container("msg-empty", "/bin/echo -n DONE; /bin/true",
                              "    terminationMessagePolicy: FallbackToLogsOnError\n")
    assert _termination_message(daemon, "msg-empty", manifest, "Succeeded") == ""


def test_should_report_termination_message_from_file_when_pod_succeeds_and_fallback_to_logs(
        daemon: Daemon) -> None:
    """Container Runtime blackbox test on terminated container should report termination
    message from file when pod succeeds and TerminationMessagePolicy FallbackToLogsOnError
    is set [NodeConformance] [Conformance]"""
    manifest = _one_container(
        "msg-file", "/bin/echo -n OK > /dev/termination-log; /bin/echo DONE; /bin/true",
        "    terminationMessagePolicy: FallbackToLogsOnError\n")
    assert _termination_message(daemon, "msg-file", manifest, "Succeeded") == "OK"


def test_termination_messages_are_capped_at_4_kib_per_container(daemon: Daemon) -> None:
    """The kubelet reads at most the last 4096 bytes of the file (upstream's
    MaxContainerTerminationMessageLength); one container has the pod's whole 12 KiB."""
    script = ("yes a | head -n 5000 | tr -d '[:space:]' > /dev/termination-log; "
              "printf b >> /dev/termination-log")
    manifest = _one_container("msg-big", script)
    message = _termination_message(daemon, "msg-big", manifest, "Succeeded")
    assert len(message) == 4096 and message.endswith("ab")


# --- test/e2e/common/node/pods.go ------------------------------------------------------


def test_pods_should_allow_active_deadline_seconds_to_be_updated(
        daemon: Daemon, cri: CRIClient) -> None:
    """Pods should allow activeDeadlineSeconds to be updated [NodeConformance]
    [Conformance]. Adapted: the manifest keeps its UID (set in metadata, as upstream's file
    source keeps it) so the edit updates the running pod instead of replacing it; once the
    new deadline has passed the pod is Failed with reason DeadlineExceeded and its
    containers are stopped."""
    uid = uuid.uuid4().hex
    base = f"""apiVersion: v1
kind: Pod
metadata: {{name: deadline, uid: {uid}}}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(SERVE)}]
"""
    _write(daemon, "deadline", base)
    running = daemon.wait_running(f"deadline-{NODE}")
    first_id = running["status"]["containerStatuses"][0]["containerID"]
    _write(daemon, "deadline", base.replace("spec:\n", "spec:\n  activeDeadlineSeconds: 5\n"))
    pod = _wait_phase(daemon, "deadline", ("Failed",))
    assert pod["status"]["reason"] == "DeadlineExceeded"
    assert pod["status"]["message"] == (
        "Pod was active on the node longer than the specified deadline")
    assert pod["metadata"]["uid"] == uid
    # The same container was kept through the edit and is stopped now.
    wait_for(lambda: not [c for c in cri.list_containers(ContainerFilter(
        label_selector={L.POD_UID: uid})) if c.state == ContainerState.RUNNING], 30.0,
        "the pod's containers to stop")
    final = wait_for(lambda: (p := daemon.pod(f"deadline-{NODE}"))
                     and "terminated" in p["status"]["containerStatuses"][0]["state"] and p,
                     30.0, "/pods to show the container terminated")
    assert final
    (status,) = final["status"]["containerStatuses"]
    assert status["containerID"] == first_id
    assert final["status"]["phase"] == "Failed"


# --- test/e2e_node/container_lifecycle_test.go: [NodeFeature:SidecarContainers] -----------


MAIN = "echo main started >> /shared/log; sleep 2; echo main exited >> /shared/log"


def _sidecar_pod(name: str, shared: Path, policy: str = "Never") -> str:
    def sidecar(n: str, probe: str = "") -> str:
        script = (f"echo {n} started >> /shared/log; "
                  f"trap 'echo {n} stopping >> /shared/log; exit 0' TERM; "
                  "sleep 3600 & wait")
        if probe:
            script = (f"echo {n} started >> /shared/log; sleep 2; touch /tmp/ready; "
                      f"echo {n} ready >> /shared/log; "
                      f"trap 'echo {n} stopping >> /shared/log; exit 0' TERM; "
                      "sleep 3600 & wait")
        text = f"""  - name: {n}
    image: {BUSYBOX_IMAGE}
    restartPolicy: Always
    command: ["sh", "-c", {json.dumps(script)}]
    volumeMounts: [{{name: shared, mountPath: /shared}}]
"""
        if probe:
            text += """    startupProbe:
      exec: {command: ["test", "-f", "/tmp/ready"]}
      periodSeconds: 1
      failureThreshold: 30
"""
        return text

    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: {policy}
  terminationGracePeriodSeconds: 20
  volumes:
  - name: shared
    hostPath: {{path: {shared}, type: DirectoryOrCreate}}
  initContainers:
{sidecar("sc1", probe="yes")}{sidecar("sc2")}{sidecar("sc3")}  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(MAIN)}]
    volumeMounts: [{{name: shared, mountPath: /shared}}]
"""


def test_should_launch_restartable_init_containers_in_order_and_terminate_them_in_reverse(
        daemon: Daemon, tmp_path: Path) -> None:
    """[NodeFeature:SidecarContainers] Containers Lifecycle should launch restartable init
    containers in order (each after the previous one's startupProbe succeeded) and
    [NodeFeature:SidecarContainers] Containers Lifecycle should terminate sidecars in
    reverse order after all main containers have exited"""
    shared = tmp_path / "shared"
    _write(daemon, "sidecars", _sidecar_pod("sidecars", shared))
    pod = _wait_phase(daemon, "sidecars", ("Succeeded",), timeout=90.0)
    log = wait_for(lambda: (text := (shared / "log").read_text()) and "sc1 stopping" in text
                   and text, 30.0, "every sidecar to stop")
    assert log, daemon.log()
    lines = log.splitlines()
    assert lines[:4] == ["sc1 started", "sc1 ready", "sc2 started", "sc3 started"], lines
    assert lines[4:] == ["main started", "main exited", "sc3 stopping", "sc2 stopping",
                         "sc1 stopping"], lines
    inits = {s["name"]: s for s in pod["status"]["initContainerStatuses"]}
    assert all("terminated" in inits[n]["state"] for n in ("sc1", "sc2", "sc3"))


def test_a_static_pod_removed_and_put_back_runs_again_with_new_containers(
        daemon: Daemon, cri: CRIClient) -> None:
    """A static manifest removed and put back: the pod is killed, then started again under
    the same UID (a hash of the same manifest) with new containers, restartCount 0."""
    text = _one_container("comeback", SERVE, policy="Always")
    path = _write(daemon, "comeback", text)
    first = daemon.wait_running(f"comeback-{NODE}")
    uid = first["metadata"]["uid"]
    first_id = first["status"]["containerStatuses"][0]["containerID"]
    path.unlink()
    wait_for(lambda: daemon.pod(f"comeback-{NODE}") is None, 30.0, "the pod to go")
    _write(daemon, "comeback", text)
    again = wait_for(lambda: (p := daemon.pod(f"comeback-{NODE}")) and p["status"].get("phase")
                     == "Running" and p["status"]["containerStatuses"][0]["containerID"]
                     != first_id and p, 60.0, "the pod to run again")
    assert again, daemon.log()
    assert again["metadata"]["uid"] == uid
    (status,) = again["status"]["containerStatuses"]
    assert status["restartCount"] == 0 and "running" in status["state"]
    ids = [c.id for c in cri.list_containers(ContainerFilter(label_selector={L.POD_UID: uid}))]
    assert ids == [status["containerID"].removeprefix("containerd://")]


def test_a_static_pod_put_back_while_it_is_stopping_runs_again(daemon: Daemon) -> None:
    """The same, put back before the old pod finished stopping (its container takes its
    grace period): upstream's "re-added with the same UID" path (restartRequested)."""
    slow = "sleep 3600 & wait"  # ignores SIGTERM: stopping takes the 3 s grace
    text = _one_container("quickback", slow, policy="Always").replace(
        "  containers:", "  terminationGracePeriodSeconds: 3\n  containers:", 1)
    path = _write(daemon, "quickback", text)
    first = daemon.wait_running(f"quickback-{NODE}")
    first_id = first["status"]["containerStatuses"][0]["containerID"]
    path.unlink()
    wait_for(lambda: "stopping pod: removed from its source" in daemon.log(), 30.0,
             "the kill to start")
    _write(daemon, "quickback", text)
    again = wait_for(lambda: (p := daemon.pod(f"quickback-{NODE}")) and p["status"].get("phase")
                     == "Running" and p["status"]["containerStatuses"][0]["containerID"]
                     != first_id and p, 60.0, "the pod to run again")
    assert again, daemon.log()
    assert again["metadata"]["uid"] == first["metadata"]["uid"]


def test_sidecars_pre_stop_hooks_run_and_they_stop_after_the_main_container_in_reverse(
        daemon: Daemon, tmp_path: Path) -> None:
    """[NodeFeature:SidecarContainers] Containers Lifecycle when A pod with restartable init
    containers is terminating: every container's preStop hook runs at once and gets its time
    (a 2 s hook here); then the main container stops, then the sidecars in reverse order."""
    shared = tmp_path / "shared"

    def member(n: str, sidecar: bool) -> str:
        script = (f"echo {n} started >> /shared/log; "
                  f"trap 'echo {n} stopping >> /shared/log; exit 0' TERM; sleep 3600 & wait")
        hook = f"sleep 2; echo {n} prestop done >> /shared/log"
        return f"""  - name: {n}
    image: {BUSYBOX_IMAGE}
{"    restartPolicy: Always" + chr(10) if sidecar else ""}\
    command: ["sh", "-c", {json.dumps(script)}]
    volumeMounts: [{{name: shared, mountPath: /shared}}]
    lifecycle:
      preStop:
        exec: {{command: ["sh", "-c", {json.dumps(hook)}]}}
"""

    text = f"""apiVersion: v1
kind: Pod
metadata: {{name: prestops}}
spec:
  terminationGracePeriodSeconds: 20
  volumes:
  - name: shared
    hostPath: {{path: {shared}, type: DirectoryOrCreate}}
  initContainers:
{member("sc1", True)}{member("sc2", True)}  containers:
{member("main", False)}"""
    path = _write(daemon, "prestops", text)
    daemon.wait_running(f"prestops-{NODE}")
    path.unlink()
    log = wait_for(lambda: (text := (shared / "log").read_text()) and "sc1 stopping" in text
                   and text, 60.0, "every container to stop")
    assert log, daemon.log()
    stops = [line for line in log.splitlines() if line.endswith(" stopping")]
    assert stops == ["main stopping", "sc2 stopping", "sc1 stopping"], log
    lines = log.splitlines()
    for n in ("main", "sc1", "sc2"):
        # Each hook had its 2 s and finished before its container was told to stop.
        assert lines.index(f"{n} prestop done") < lines.index(f"{n} stopping"), log


def _init_then_main(name: str, policy: str, init: str, script: str,
                    restartable: bool = False) -> str:
    """A pod of one init container running ``script`` (a sidecar when ``restartable``)
    and one regular container that serves until told to stop."""
    sidecar = "    restartPolicy: Always\n" if restartable else ""
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: {policy}
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: {init}
    image: {BUSYBOX_IMAGE}
{sidecar}    command: ["sh", "-c", {json.dumps(script)}]
  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(SERVE)}]
"""


def test_should_restart_a_restartable_init_container_whatever_the_pods_restart_policy(
        daemon: Daemon) -> None:
    """[NodeFeature:SidecarContainers] Containers Lifecycle when A pod with restartPolicy
    Never has a restartable init container that exits: it is restarted all the same, and
    the regular container keeps running."""
    _write(daemon, "sidecar-never", _init_then_main(
        "sidecar-never", "Never", "sidecar", "sleep 1; exit 1", restartable=True))
    pod = wait_for(lambda: (p := daemon.pod(f"sidecar-never-{NODE}"))
                   and p["status"].get("initContainerStatuses")
                   and p["status"]["initContainerStatuses"][0]["restartCount"] >= 1 and p,
                   60.0, "the sidecar to be restarted")
    assert pod, daemon.log()
    assert pod["status"]["phase"] == "Running"
    (main,) = pod["status"]["containerStatuses"]
    assert "running" in main["state"] and main["restartCount"] == 0


def test_a_failing_init_containers_pruned_instance_goes_with_its_log(
        daemon: Daemon, cri: CRIClient) -> None:
    """Upstream's pruneInitContainersBeforeStart keeps an init container's newest exited
    instance and removes the older ones with removeContainer, which removes their logs:
    under Always a failing init container leaves one dead instance and one log (of
    restart 1), not one of each per failure, while it backs off."""
    _write(daemon, "init-prune",
           _init_then_main("init-prune", "Always", "init", "echo failing; exit 1"))
    pod = wait_for(lambda: daemon.pod(f"init-prune-{NODE}"), 30.0, "the pod in /pods")
    assert pod is not None
    uid = str(pod["metadata"]["uid"])
    logs = daemon.pod_logs / f"default_init-prune-{NODE}_{uid}"

    def pruned() -> bool:
        instances = cri.list_containers(ContainerFilter(label_selector={L.POD_UID: uid}))
        kept = sorted(p.name for p in (logs / "init").glob("*"))  # none before it starts
        return kept == ["1.log"] and [c.state for c in instances] == [ContainerState.EXITED]

    wait_for(pruned, 30.0, "the first instance and its log removed, the second kept")
    assert (logs / "init" / "1.log").read_text().endswith("failing\n"), daemon.log()
