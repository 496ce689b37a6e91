"""The daemon on containerd: admission against the node, and volumes and env the node
cannot provide, as upstream's kubelet reports them (issue 9)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import Daemon, daemon_on
from tests.e2e.test_daemon import manifest, sandboxes_of
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e


def daemon(containerd: EmbeddedContainerd, *flags: str) -> Daemon:
    """A daemon (not started) on the e2e containerd, with its own dirs under it."""
    return daemon_on(containerd, "daemon", *flags)


@pytest.fixture
def admitting(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    """``cri`` removes the pods the test made once the daemon has stopped."""
    d = daemon(containerd, "--node-labels", "disk=ssd",
               "--allowed-unsafe-sysctls", "kernel.msg*")
    yield d
    d.stop()
    print(d.log())  # shown when the test failed


@pytest.fixture
def plain(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    d = daemon(containerd)
    yield d
    d.stop()
    print(d.log())  # shown when the test failed


def sysctl(name: str) -> str:
    return f"  securityContext:\n    sysctls:\n    - name: {name}\n      value: '1'\n"


def failed(daemon: Daemon, name: str) -> dict[str, Any]:
    pod = wait_for(lambda: (p := daemon.pod(name)) is not None
                   and p["status"].get("phase") == "Failed" and p, 60.0, f"{name} Failed")
    assert isinstance(pod, dict)
    status: dict[str, Any] = pod["status"]
    return status


def test_admission_refuses_what_the_node_cannot_run_and_runs_the_rest(
        admitting: Daemon, cri: CRIClient) -> None:
    files = {
        "fits": manifest("fits"),
        "selected": manifest("selected") + "  nodeSelector:\n    disk: ssd\n"
                    "    kubernetes.io/hostname: e2e-node\n    kubernetes.io/os: linux\n",
        "elsewhere": manifest("elsewhere") + "  nodeSelector:\n    disk: hdd\n",
        "allowed": manifest("allowed") + sysctl("kernel.msgmax"),
        "unsafe": manifest("unsafe") + sysctl("net.core.somaxconn"),
    }
    for name, text in files.items():
        (admitting.manifests / f"{name}.yaml").write_text(text)
    admitting.start()
    for name in ("fits", "selected", "allowed"):
        admitting.wait_running(f"{name}-e2e-node", timeout=90.0)
    elsewhere = failed(admitting, "elsewhere-e2e-node")
    assert (elsewhere["reason"], elsewhere["message"]) == ("NodeAffinity", (
        "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node "
        "affinity/selector"))
    unsafe = failed(admitting, "unsafe-e2e-node")
    assert (unsafe["reason"], unsafe["message"]) == (
        "SysctlForbidden",
        'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted')
    for pod in ("elsewhere-e2e-node", "unsafe-e2e-node"):
        assert sandboxes_of(cri, admitting.pods()[pod]["metadata"]["uid"]) == []
    # Removing a refused pod's manifest removes its status.
    (admitting.manifests / "unsafe.yaml").unlink()
    wait_for(lambda: "unsafe-e2e-node" not in admitting.pods(), 30.0, "the refused pod to go")


def waiting(daemon: Daemon, name: str, reason: str) -> tuple[str, str, str]:
    def found() -> tuple[str, str, str] | None:
        pod = daemon.pod(name)
        if pod is None:
            return None
        statuses = pod["status"].get("containerStatuses", [])
        state = statuses[0]["state"].get("waiting", {}) if statuses else {}
        if state.get("reason") != reason:
            return None
        return pod["status"]["phase"], state["reason"], state.get("message", "")

    result = wait_for(found, 60.0, f"{name} waiting with {reason}")
    assert result is not None
    return result


def test_objects_the_node_cannot_have_are_reported_as_upstream(
        plain: Daemon, cri: CRIClient) -> None:
    volume = ("    volumeMounts:\n    - {name: config, mountPath: /config}\n"
              "  volumes:\n  - name: config\n    configMap: {name: app-config}\n")
    env = ("    env:\n    - name: PASSWORD\n      valueFrom:\n"
           "        secretKeyRef: {name: db, key: password}\n")
    optional = ("    envFrom:\n    - configMapRef: {name: settings, optional: true}\n"
                "    volumeMounts:\n    - {name: creds, mountPath: /creds}\n"
                "  volumes:\n  - name: creds\n    secret: {secretName: creds, optional: true}\n")
    for name, extra in (("volume", volume), ("env", env), ("optional", optional)):
        (plain.manifests / f"{name}.yaml").write_text(manifest(name, extra=extra))
    plain.start()
    plain.wait_running("optional-e2e-node", timeout=90.0)
    assert waiting(plain, "env-e2e-node", "CreateContainerConfigError") == (
        "Pending", "CreateContainerConfigError", 'secret "db" not found')
    assert waiting(plain, "volume-e2e-node", "ContainerCreating") == (
        "Pending", "ContainerCreating", "")
    wait_for(lambda: 'FailedMount: MountVolume.SetUp failed for volume "config" : configmap '
             '"app-config" not found' in plain.log_path.read_text(errors="replace"), 30.0,
             "the FailedMount line in the daemon's log")
    uid = plain.pods()["volume-e2e-node"]["metadata"]["uid"]
    assert sandboxes_of(cri, uid) == []
