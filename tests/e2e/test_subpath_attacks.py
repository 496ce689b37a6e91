"""subPath attacks on the daemon on containerd (issue 31): a pod plants a symlink in a volume
and mounts it with ``subPath``, hoping the runtime follows it to the node's own files (the
CVE-2017-1002101 class). Each is refused as upstream refuses it, the container never runs,
and the node's files stay out of reach; honest subPaths (a symlink that stays inside its
volume, a directory the kubelet makes, a subPathExpr) work, and every bind mount the kubelet
made is gone with the pod."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerFilter, SandboxFilter
from runtime.kuberuntime import labels as L
from runtime.mounts import is_mount_point, mount_points_under, unmount
from tests.e2e.daemon import Daemon, daemon_on, remove_every_pod, stopped_after
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

SLEEP = "trap 'exit 0' TERM; while true; do sleep 1; done"


def pod(name: str, containers: list[dict[str, Any]], volumes: list[dict[str, Any]],
        init: list[dict[str, Any]] | None = None, policy: str = "Always") -> str:
    """A manifest (JSON is YAML) of busybox containers, each ``{"name", "script",
    "mounts", ...}``."""
    def container(c: dict[str, Any]) -> dict[str, Any]:
        out = {"name": c["name"], "image": BUSYBOX_IMAGE,
               "command": ["sh", "-c", c["script"]], "volumeMounts": c.get("mounts", [])}
        out.update({k: v for k, v in c.items() if k not in ("name", "script", "mounts")})
        return out

    spec: dict[str, Any] = {"restartPolicy": policy, "terminationGracePeriodSeconds": 2,
                            "containers": [container(c) for c in containers],
                            "volumes": volumes}
    if init:
        spec["initContainers"] = [container(c) for c in init]
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": spec}, indent=1)


EMPTY = [{"name": "vol", "emptyDir": {}}]


def planted(link_target: str) -> str:
    """A pod whose init container plants ``vol/escape -> link_target`` and whose container
    mounts ``escape`` as a subPath."""
    return pod("x", [{"name": "main", "script": f"ls /host; {SLEEP}",
                      "mounts": [{"name": "vol", "mountPath": "/host", "subPath": "escape"}]}],
               EMPTY, init=[{"name": "plant", "script": f"ln -s {link_target} /vol/escape",
                             "mounts": [{"name": "vol", "mountPath": "/vol"}]}])


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    with stopped_after(daemon_on(containerd, "subpath")) as d:
        yield d
        remove_every_pod(d)  # the daemon must unmount what it mounted for them
    # The root dir's own mount (share_root_dir) stays, as upstream's does; nothing else may.
    root = os.path.realpath(d.workdir / "root")
    leftovers = [p for p in mount_points_under(str(d.workdir)) if p != root]
    for point in leftovers:
        unmount(point)
    if is_mount_point(root):
        unmount(root)
    assert leftovers == [], "the daemon left mounts behind"


def container_state(daemon: Daemon, pod_name: str, container: str) -> dict[str, Any]:
    found = daemon.pod(pod_name)
    if found is None:
        return {}
    for status in found["status"].get("containerStatuses", []):
        if status["name"] == container:
            state: dict[str, Any] = status["state"]
            return state
    return {}


def refused(daemon: Daemon, pod_name: str, container: str, timeout: float = 90.0) -> str:
    """Wait until ``container`` waits with CreateContainerConfigError; its message."""
    def waiting() -> str | None:
        state = container_state(daemon, pod_name, container).get("waiting", {})
        return (state.get("message", "")
                if state.get("reason") == "CreateContainerConfigError" else None)

    message = wait_for(waiting, timeout, f"{pod_name}/{container} CreateContainerConfigError")
    assert message is not None
    return message


def created_containers(cri: CRIClient, daemon: Daemon, pod_name: str) -> list[str]:
    found = daemon.pod(pod_name)
    assert found is not None
    uid = found["metadata"]["uid"]
    return sorted(c.metadata.name for c in cri.list_containers(
        ContainerFilter(label_selector={L.POD_UID: uid})))


def prepare_refusal(container: str) -> str:
    return f'failed to prepare subPath for volumeMount "vol" of container "{container}"'


@pytest.mark.parametrize("link_target", ["/", "../../../../../../../.."],
                         ids=["absolute", "relative"])
def test_a_planted_symlink_never_reaches_the_host(link_target: str, daemon: Daemon,
                                                  cri: CRIClient) -> None:
    (daemon.manifests / "x.yaml").write_text(planted(link_target))
    daemon.start()
    assert refused(daemon, "x-e2e-node", "main") == prepare_refusal("main")
    # Only the init container ever existed: the attacker never ran.
    assert created_containers(cri, daemon, "x-e2e-node") == ["plant"]
    assert "not within volume path" in daemon.log()


def test_a_symlink_planted_after_the_first_start_is_refused_on_restart(
        daemon: Daemon, cri: CRIClient) -> None:
    # "victim" mounts vol/dir (made by the kubelet), marks it and exits; "planter" then
    # swaps the directory for a symlink to / before the victim's restart.
    swap = ("until [ -e /vol/dir/started ]; do sleep 0.2; done; "
            f"rm -rf /vol/dir && ln -s / /vol/dir && touch /vol/swapped; {SLEEP}")
    text = pod("swap", [
        {"name": "planter", "script": swap, "mounts": [{"name": "vol", "mountPath": "/vol"}]},
        {"name": "victim", "script": "touch /d/started; sleep 1; exit 1",
         "mounts": [{"name": "vol", "mountPath": "/d", "subPath": "dir"}]},
    ], EMPTY)
    (daemon.manifests / "swap.yaml").write_text(text)
    daemon.start()
    daemon.wait_running("swap-e2e-node", timeout=90.0)
    assert refused(daemon, "swap-e2e-node", "victim", timeout=120.0) == prepare_refusal(
        "victim")
    found = daemon.pod("swap-e2e-node")
    assert found is not None
    victim = next(s for s in found["status"]["containerStatuses"] if s["name"] == "victim")
    # It ran once, from the real directory, and was not started on the symlink.
    assert victim["restartCount"] == 0
    assert victim["lastState"]["terminated"]["exitCode"] == 1


def test_a_symlink_in_a_host_path_volume_does_not_lead_out_of_it(
        daemon: Daemon, cri: CRIClient) -> None:
    host = daemon.workdir / "hostdir"
    (host / "real").mkdir(parents=True)
    (host / "real" / "file").write_text("inside")
    (host / "esc").symlink_to("/etc")
    (host / "inside").symlink_to("real")
    volumes = [{"name": "vol", "hostPath": {"path": str(host)}}]
    (daemon.manifests / "esc.yaml").write_text(pod("esc", [
        {"name": "main", "script": f"cat /e/passwd; {SLEEP}",
         "mounts": [{"name": "vol", "mountPath": "/e", "subPath": "esc"}]}], volumes))
    (daemon.manifests / "ok.yaml").write_text(pod("ok", [
        {"name": "main", "script": f"cat /i/file > /i/seen; {SLEEP}",
         "mounts": [{"name": "vol", "mountPath": "/i", "subPath": "inside"}]}], volumes))
    daemon.start()
    assert refused(daemon, "esc-e2e-node", "main") == prepare_refusal("main")
    assert created_containers(cri, daemon, "esc-e2e-node") == []
    daemon.wait_running("ok-e2e-node", timeout=90.0)
    wait_for(lambda: (host / "real" / "seen").exists(), 30.0, "the honest pod's write")
    assert (host / "real" / "seen").read_text() == "inside"


def test_honest_sub_paths_work_and_their_mounts_go_with_the_pod(
        daemon: Daemon, cri: CRIClient) -> None:
    script = ("test -f /link/file && echo ok > /made/x && echo $POD_NAME > /expr/y && "
              f"grep -q ' /link ' /proc/mounts && {SLEEP}")
    (daemon.manifests / "honest.yaml").write_text(pod("honest", [{
        "name": "main", "script": script,
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "mounts": [{"name": "vol", "mountPath": "/link", "subPath": "inside"},
                   {"name": "vol", "mountPath": "/made", "subPath": "new/deeper"},
                   {"name": "vol", "mountPath": "/expr", "subPathExpr": "by-pod/$(POD_NAME)"},
                   {"name": "vol", "mountPath": "/whole", "mountPropagation": "None"}]}],
        EMPTY, init=[{"name": "fill", "script": "mkdir /vol/real && touch /vol/real/file && "
                      "ln -s real /vol/inside",
                      "mounts": [{"name": "vol", "mountPath": "/vol"}]}]))
    daemon.start()
    running = daemon.wait_running("honest-e2e-node", timeout=90.0)
    uid = running["metadata"]["uid"]
    pod_dir = daemon.workdir / "root" / "pods" / uid
    volume = pod_dir / "volumes" / "kubernetes.io~empty-dir" / "vol"
    wait_for(lambda: (volume / "by-pod" / "honest-e2e-node" / "y").exists(), 30.0,
             "the container's writes")
    assert (volume / "new" / "deeper" / "x").read_text() == "ok\n"
    assert (volume / "by-pod" / "honest-e2e-node" / "y").read_text() == "honest-e2e-node\n"
    targets = {str(pod_dir / "volume-subpaths" / "vol" / "main" / str(i)) for i in range(3)}
    assert set(mount_points_under(str(pod_dir))) == targets
    # The pod goes: its bind mounts go first, then its directory.
    (daemon.manifests / "honest.yaml").unlink()
    wait_for(lambda: "honest-e2e-node" not in daemon.pods(), 60.0, "the pod to go")
    wait_for(lambda: not pod_dir.exists(), 30.0, "the pod's directory to go")
    assert mount_points_under(str(daemon.workdir / "root")) == ()


def test_the_pods_bind_mounts_go_when_it_stops_and_stay_gone(
        daemon: Daemon, cri: CRIClient) -> None:
    # restartPolicy Never: the pod stops on its own and is kept (Succeeded), its mounts not.
    (daemon.manifests / "done.yaml").write_text(pod("done", [{
        "name": "main", "script": "echo hi > /d/out",
        "mounts": [{"name": "vol", "mountPath": "/d", "subPath": "sub"}]}], EMPTY,
        policy="Never"))
    daemon.start()
    wait_for(lambda: daemon.phase("done-e2e-node") == "Succeeded", 90.0, "done Succeeded")
    found = daemon.pod("done-e2e-node")
    assert found is not None
    pod_dir = daemon.workdir / "root" / "pods" / found["metadata"]["uid"]
    wait_for(lambda: not mount_points_under(str(pod_dir)), 30.0,
             "the stopped pod's subPath mounts to go")
    assert (pod_dir / "volumes" / "kubernetes.io~empty-dir" / "vol" / "sub" / "out"
            ).read_text() == "hi\n"
    assert not (pod_dir / "volume-subpaths").exists()


def test_host_to_container_propagation_reaches_the_container(daemon: Daemon,
                                                            cri: CRIClient) -> None:
    # The kubelet made its root dir a shared mount at start (upstream's MakeRShared; / is
    # private on these machines), so the runtime can make the volume's mount a slave of
    # the node's: master:N in the container's mountinfo. Dropped, it would be private.
    (daemon.manifests / "p.yaml").write_text(pod("p", [{
        "name": "main", "script": f"grep ' /h ' /proc/self/mountinfo > /h/info; {SLEEP}",
        "mounts": [{"name": "vol", "mountPath": "/h",
                    "mountPropagation": "HostToContainer"}]}], EMPTY))
    daemon.start()
    found = daemon.wait_running("p-e2e-node", timeout=90.0)
    info = (daemon.workdir / "root" / "pods" / found["metadata"]["uid"] / "volumes" /
            "kubernetes.io~empty-dir" / "vol" / "info")
    wait_for(info.exists, 30.0, "the container's mountinfo")
    assert "master:" in info.read_text()
    assert "made " in daemon.log() and "a shared mount" in daemon.log()


def test_a_restarted_kubelet_unmounts_what_gone_pods_left(daemon: Daemon,
                                                          cri: CRIClient) -> None:
    (daemon.manifests / "left.yaml").write_text(pod("left", [{
        "name": "main", "script": SLEEP,
        "mounts": [{"name": "vol", "mountPath": "/d", "subPath": "sub"}]}], EMPTY))
    daemon.start()
    uid = daemon.wait_running("left-e2e-node", timeout=90.0)["metadata"]["uid"]
    pod_dir = daemon.workdir / "root" / "pods" / uid
    assert mount_points_under(str(pod_dir)) != ()
    # The kubelet stops (its pods run on); meanwhile the pod is removed behind its back.
    daemon.stop()
    (daemon.manifests / "left.yaml").unlink()
    for sandbox in cri.list_pod_sandbox(SandboxFilter(label_selector={L.POD_UID: uid})):
        cri.stop_pod_sandbox(sandbox.id)
        cri.remove_pod_sandbox(sandbox.id)
    daemon.start()
    wait_for(lambda: "unmounted the subPath mounts of 1 pod(s)" in daemon.log(), 60.0,
             "the start's clean-up")
    assert mount_points_under(str(pod_dir)) == ()
    assert not (pod_dir / "volume-subpaths").exists()


def test_recursive_read_only_is_refused_where_the_runtime_cannot_and_kept_where_asked(
        daemon: Daemon, cri: CRIClient) -> None:
    # containerd 1.6 reports no handler features: Enabled cannot be had (refused in
    # upstream's words, never run writable below), IfPossible falls back to read-only.
    def rro(name: str, mode: str) -> str:
        return pod(name, [{"name": "main", "script": f"touch /d/x 2>/d-denied || true; {SLEEP}",
                           "mounts": [{"name": "vol", "mountPath": "/d", "readOnly": True,
                                       "recursiveReadOnly": mode}]}], EMPTY)

    (daemon.manifests / "enabled.yaml").write_text(rro("enabled", "Enabled"))
    (daemon.manifests / "possible.yaml").write_text(rro("possible", "IfPossible"))
    daemon.start()
    assert refused(daemon, "enabled-e2e-node", "main") == (
        'failed to resolve recursive read-only mode: volume "vol" requested recursive '
        "read-only mode, but it is not supported by the runtime")
    assert created_containers(cri, daemon, "enabled-e2e-node") == []
    daemon.wait_running("possible-e2e-node", timeout=90.0)
