"""Manifests breaking upstream's isolation rules, on a real containerd: none of their pods
runs, and the daemon's log and metrics name each file, field and rule (upstream's
ValidatePodCreate words), while a valid manifest beside them runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import SandboxFilter
from runtime.kuberuntime import labels as L
from tests.e2e.daemon import Daemon, daemon_on, stopped_after
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e


def pod(name: str, spec: str = "", container: str = "") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  terminationGracePeriodSeconds: 1
{spec}  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
{container}"""


# file name -> (manifest, the error upstream's field.ErrorList prints for it)
BAD = {
    "userns-hostnetwork.yaml": (
        pod("userns-hostnet", "  hostUsers: false\n  hostNetwork: true\n"),
        "spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false"),
    "unmasked-proc.yaml": (
        pod("unmasked-proc", container="    securityContext: {procMount: Unmasked}\n"),
        'spec.containers[0].securityContext.procMount: Invalid value: "Unmasked": '
        "`hostUsers` must be false to use `Unmasked`"),
    "shared-pid-hostpid.yaml": (
        pod("shared-pid", "  hostPID: true\n  shareProcessNamespace: true\n"),
        "spec.securityContext.shareProcessNamespace: Invalid value: true: "
        "ShareProcessNamespace and HostPID cannot both be enabled"),
    "linux-windows-options.yaml": (
        pod("linux-winopts", "  os: {name: linux}\n",
            "    securityContext: {windowsOptions: {runAsUserName: ContainerUser}}\n"),
        "spec.containers[0].securityContext.windowsOptions: Forbidden: "
        "windows options cannot be set for a linux pod"),
    "hostnetwork-port.yaml": (
        pod("hostnet-port", "  hostNetwork: true\n",
            "    ports: [{containerPort: 18080, hostPort: 18081}]\n"),
        "spec.containers[0].ports[0].hostPort: Invalid value: 18081: "
        "must match `containerPort` when `hostNetwork` is true"),
}


@pytest.fixture
def daemon(containerd: EmbeddedContainerd) -> Iterator[Daemon]:
    with stopped_after(daemon_on(containerd, "daemon")) as d:
        yield d


def metric(daemon: Daemon) -> list[str]:
    code, metrics = daemon.get("/metrics", port=daemon.port)
    assert code == 200
    return [line for line in metrics.splitlines()
            if line.startswith("kubelet_actors_manifest_errors_current")]


def test_isolation_breaking_manifests_never_run(daemon: Daemon, cri: CRIClient) -> None:
    for file, (text, _) in BAD.items():
        (daemon.manifests / file).write_text(text)
    (daemon.manifests / "good.yaml").write_text(pod("good"))
    daemon.start()
    uid = daemon.wait_running("good-e2e-node")["metadata"]["uid"]

    def logged() -> list[str]:
        lines = daemon.log_path.read_text(errors="replace").splitlines()
        return [file for file, (_, error) in BAD.items()
                if not any(f"{daemon.manifests / file} rejected:" in line and error in line
                           for line in lines)]
    wait_for(lambda: not logged(), 30.0, "every bad manifest to be logged with its rule")
    assert metric(daemon) == [
        f'kubelet_actors_manifest_errors_current{{source="file"}} {float(len(BAD))}']
    assert set(daemon.pods()) == {"good-e2e-node"}
    names = {s.metadata.name for s in cri.list_pod_sandbox(SandboxFilter())}
    assert names & {"userns-hostnet", "unmasked-proc", "shared-pid", "linux-winopts",
                    "hostnet-port"} == set(), names

    for file in [*BAD, "good.yaml"]:
        (daemon.manifests / file).unlink()
    wait_for(lambda: daemon.pods() == {}, 60.0, "the good pod to leave /pods")
    wait_for(lambda: not cri.list_pod_sandbox(SandboxFilter(label_selector={L.POD_UID: uid})),
             60.0, "the good pod's sandbox to go")
    wait_for(lambda: metric(daemon) == [
        'kubelet_actors_manifest_errors_current{source="file"} 0.0'], 30.0,
        "the manifest errors to clear with their files")
