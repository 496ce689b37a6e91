"""spec.runtimeClassName on a real containerd, standalone: the daemon's --runtime-classes
table names the handler, the embedded containerd's second runc handler (runc-alt) runs the
pod and its PodSandboxStatus says so (and, verbose, that the default pod's sandbox config
had upstream's resources and empty overhead); a class the table lacks fails the sandbox with
upstream's FailedCreatePodSandBox words, no sandbox made, the pod Pending in
ContainerCreating."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.config import ALT_RUNTIME_HANDLER
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import PodSandbox, SandboxFilter
from runtime.kuberuntime.labels import POD_NAME
from tests.e2e.daemon import Daemon, daemon_on, stopped_after
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NODE = "e2e-node"


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    """The daemon with a table of two classes; at the end it stops and the ``cri`` fixture
    removes what it made."""
    with stopped_after(daemon_on(containerd, "runtimeclass", "--runtime-classes",
                                 f"alt={ALT_RUNTIME_HANDLER},plain=runc")) as d:
        yield d


def write_pod(manifests: Path, name: str, runtime_class: str | None) -> str:
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 1, "containers": [
        {"name": "main", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}]}
    if runtime_class is not None:
        spec["runtimeClassName"] = runtime_class
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    (manifests / f"{name}.yaml").write_text(json.dumps(pod))
    return f"{name}-{NODE}"


def sandboxes(cri: CRIClient, pod: str) -> tuple[PodSandbox, ...]:
    return cri.list_pod_sandbox(SandboxFilter(label_selector={POD_NAME: pod}))


def test_runtime_class_picks_the_sandbox_s_handler_or_fails_it(daemon: Daemon,
                                                               cri: CRIClient) -> None:
    on_alt = write_pod(daemon.manifests, "on-alt", "alt")
    default = write_pod(daemon.manifests, "default", None)
    unknown = write_pod(daemon.manifests, "unknown", "fast")
    daemon.start()
    daemon.wait_running(on_alt, 60)
    daemon.wait_running(default, 60)

    (alt_sandbox,) = sandboxes(cri, on_alt)
    assert alt_sandbox.runtime_handler == ALT_RUNTIME_HANDLER
    assert cri.pod_sandbox_status(alt_sandbox.id).handler == ALT_RUNTIME_HANDLER
    (default_sandbox,) = sandboxes(cri, default)
    assert cri.pod_sandbox_status(default_sandbox.id).handler == ""  # containerd's default
    # A pod asking for nothing, without overhead: upstream's sandbox config still carries
    # both, the overhead empty (containerd's JSON leaves out zeros) and the resources with
    # the minimum shares and no quota.
    linux = json.loads(cri.pod_sandbox_info(default_sandbox.id)["info"])["config"]["linux"]
    assert (linux["overhead"], linux["resources"]) == (
        {}, {"cpu_period": 100_000, "cpu_shares": 2})

    line = wait_for(lambda: next((ln for ln in daemon.log_path.read_text().splitlines()
                                  if "FailedCreatePodSandBox" in ln and unknown in ln), None),
                    60, "the FailedCreatePodSandBox event of the unknown class")
    assert line is not None and line.endswith(
        'Failed to create pod sandbox: runtimeclass.node.k8s.io "fast" not found'), line
    pod = daemon.pod(unknown)
    assert pod is not None
    assert pod["status"]["phase"] == "Pending"
    assert [s["state"]["waiting"]["reason"] for s in pod["status"]["containerStatuses"]
            ] == ["ContainerCreating"]
    assert sandboxes(cri, unknown) == ()
    assert not any(p.name.startswith(f"default_{unknown}_") for p in daemon.pod_logs.iterdir())
