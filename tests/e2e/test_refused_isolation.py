"""The node never silently downgrades what a pod asks for: on the real containerd (1.6,
which reports no runtime handler features), each attack pod is written as a static
manifest, the daemon refuses it in upstream's words, and no container of it ever runs.

Where the refusal is depends on where upstream makes it: the API server's validation
(the manifest is rejected and the pod never shows in /pods), the admit handlers (the pod
is Failed with upstream's reason and message in /pods), the sandbox and what precedes it
(the pod stays Pending with its containers ContainerCreating in /pods, and upstream's
event is in the kubelet's log), or the runtime (the container's waiting reason). A pod
that asks for nothing unusual runs beside them, so the daemon could have run the others.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerFilter, SandboxFilter
from runtime.kuberuntime.labels import POD_NAME
from runtime.machine import apparmor_enabled
from tests.e2e.daemon import Daemon
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NODE = "e2e-node"
TIMEOUT = 60.0
NO_USERNS = ("can't set `spec.hostUsers: false`, runtime does not support user namespaces: "
             'the handler "" is not known')


class Node:
    """The daemon on the e2e containerd, and what a test asks of it."""

    def __init__(self, containerd: EmbeddedContainerd, cri: CRIClient, workdir: Path) -> None:
        self.daemon = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
                             containerd.endpoint)
        self.cri = cri
        self.workdir = workdir

    def write(self, name: str, script: str = "sleep 3600", container: dict[str, Any]
              | None = None, metadata: dict[str, Any] | None = None, **spec: Any) -> str:
        """Write the pod's manifest (JSON is YAML); the name it has in /pods."""
        main = {"name": "main", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", script],
                **(container or {})}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **(metadata or {})},
               "spec": {"terminationGracePeriodSeconds": 1, "containers": [main], **spec}}
        (self.daemon.manifests / f"{name}.yaml").write_text(json.dumps(pod))
        return f"{name}-{NODE}"

    def start(self) -> None:
        self.daemon.start()

    def log_line(self, pattern: str) -> str:
        """The kubelet log line (an event, a rejected manifest) matching ``pattern``."""
        def found() -> str | None:
            match = re.search(pattern, self.daemon.log_path.read_text(errors="replace"))
            return match.group(0) if match else None

        line = wait_for(found, TIMEOUT, f"a log line matching {pattern!r}")
        assert line is not None
        return line

    def waiting(self, pod: str, reason: str) -> str:
        """The main container's waiting message once its reason is ``reason``."""
        def matched() -> tuple[str] | None:
            found = self.daemon.pod(pod)
            for status in (found or {}).get("status", {}).get("containerStatuses", []):
                waiting = status.get("state", {}).get("waiting", {})
                if waiting.get("reason") == reason:
                    return (str(waiting.get("message", "")),)
            return None

        message = wait_for(matched, TIMEOUT, f"{pod} waiting with {reason}")
        assert message is not None
        return message[0]

    def failed(self, pod: str) -> tuple[str, str]:
        """(reason, message) of the pod once Failed."""
        def done() -> tuple[str, str] | None:
            status = (self.daemon.pod(pod) or {}).get("status", {})
            if status.get("phase") != "Failed":
                return None
            return status.get("reason", ""), status.get("message", "")

        found = wait_for(done, TIMEOUT, f"{pod} Failed")
        assert found is not None
        return found

    def pending(self, pod: str) -> None:
        found = self.daemon.pod(pod)
        assert found is not None and found["status"].get("phase") == "Pending", found

    def sandboxes(self, pod: str) -> int:
        return len(self.cri.list_pod_sandbox(SandboxFilter(label_selector={POD_NAME: pod})))

    def containers(self, pod: str) -> int:
        return len(self.cri.list_containers(ContainerFilter(label_selector={POD_NAME: pod})))

    def ran_none(self, *pods: str) -> None:
        """No sandbox and no container of ``pods`` in the runtime (its every state)."""
        made = {pod: (self.sandboxes(pod), self.containers(pod)) for pod in pods}
        assert all(counts == (0, 0) for counts in made.values()), made


@pytest.fixture
def node(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Node]:
    """The daemon; at the end it stops and the ``cri`` fixture removes what it made."""
    workdir = containerd.base_dir / "refused" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    n = Node(containerd, cri, workdir)
    yield n
    n.daemon.stop()
    if n.daemon.log_path.exists():
        print(n.daemon.log())  # pytest shows it when the test failed


def test_a_user_namespace_and_an_unmasked_proc_are_refused(node: Node) -> None:
    """hostUsers false on a runtime whose handlers report no user namespaces: upstream's
    sandbox config error (FailedCreatePodSandBox), never a pod in the node's user
    namespace; procMount Unmasked without its own user namespace: upstream's validation
    error, and with one the user namespace refusal."""
    userns = node.write("userns", hostUsers=False)
    unmasked_userns = node.write("unmasked-userns", hostUsers=False,
                                 container={"securityContext": {"procMount": "Unmasked"}})
    node.write("unmasked", container={"securityContext": {"procMount": "Unmasked"}})
    control = node.write("control")
    node.start()
    node.daemon.wait_running(control, TIMEOUT)
    for pod in (userns, unmasked_userns):
        node.log_line(rf"{pod}.*Failed to create pod sandbox: {re.escape(NO_USERNS)}")
        node.waiting(pod, "ContainerCreating")
        node.pending(pod)
    node.log_line(r"manifest .*unmasked\.yaml rejected: spec\.containers\[0\]\.securityContext"
                  r'\.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use '
                  r"`Unmasked`")
    assert node.daemon.pod(f"unmasked-{NODE}") is None
    node.ran_none(userns, unmasked_userns, f"unmasked-{NODE}")


def test_resource_claims_and_image_volumes_are_refused(node: Node) -> None:
    """resourceClaims no DRA driver prepares: upstream's FailedPrepareDynamicResources
    before the sandbox (standalone, no ResourceClaim can be fetched; one from a template
    was never created); a container claim naming no pod claim: upstream's validation
    error; an image volume, which containerd 1.6 cannot mount: FailedMount, nothing
    started."""
    claim = node.write("claim", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-0"}],
                       container={"resources": {"claims": [{"name": "gpu"}]}})
    template = node.write("claim-template", resourceClaims=[
        {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}])
    node.write("claim-unknown", container={"resources": {"claims": [{"name": "gpu"}]}})
    image = node.write("image-volume", volumes=[
        {"name": "img", "image": {"reference": BUSYBOX_IMAGE}}],
        container={"volumeMounts": [{"name": "img", "mountPath": "/img"}]})
    control = node.write("control")
    node.start()
    node.daemon.wait_running(control, TIMEOUT)
    node.log_line(rf"{claim}.*Failed to prepare dynamic resources: prepare dynamic resources: "
                  r'fetch ResourceClaim gpu-0: resourceclaims\.resource\.k8s\.io "gpu-0" not '
                  r"found")
    node.log_line(rf"{template}.*Failed to prepare dynamic resources: prepare dynamic "
                  rf'resources: pod "default/{template}": ResourceClaim not created yet')
    node.log_line(r"manifest .*claim-unknown\.yaml rejected: spec\.containers\[0\]\.resources"
                  r'\.claims\[0\]: Not found: "gpu": must be one of the names in '
                  r"pod\.spec\.resourceClaims which is empty")
    node.log_line(rf'{image}.*MountVolume\.SetUp failed for volume "img"')
    for pod in (claim, template, image):
        node.waiting(pod, "ContainerCreating")
        node.pending(pod)
    assert node.daemon.pod(f"claim-unknown-{NODE}") is None
    node.ran_none(claim, template, image, f"claim-unknown-{NODE}")


def test_apparmor_and_seccomp_profiles_the_node_lacks_are_refused(node: Node) -> None:
    """An AppArmor localhost profile (field or deprecated annotation) on a node whose kernel
    has no AppArmor: upstream's AppArmor admit handler rejects the pod. A Localhost seccomp
    profile missing under <root-dir>/seccomp: the runtime refuses the container
    (CreateContainerError naming the file), as upstream leaves it to the runtime; the
    container is never made."""
    field = node.write("apparmor-field", container={"securityContext": {
        "appArmorProfile": {"type": "Localhost", "localhostProfile": "not-loaded"}}})
    annotated = node.write("apparmor-annotation", metadata={"annotations": {
        "container.apparmor.security.beta.kubernetes.io/main": "localhost/not-loaded"}})
    seccomp = node.write("seccomp-missing", container={"securityContext": {"seccompProfile": {
        "type": "Localhost", "localhostProfile": "missing.json"}}})
    control = node.write("control")
    node.start()
    node.daemon.wait_running(control, TIMEOUT)
    if apparmor_enabled():
        # The kernel has it, the embedded containerd is built without it: the runtime
        # refuses each container, as upstream's kubelet leaves a named profile to it.
        for pod in (field, annotated):
            assert "apparmor" in node.waiting(pod, "CreateContainerError").lower()
    else:
        for pod in (field, annotated):
            assert node.failed(pod) == (
                "AppArmor",
                "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host")
        node.ran_none(field, annotated)
    message = node.waiting(seccomp, "CreateContainerError")
    assert "missing.json" in message, message
    assert node.containers(seccomp) == 0
    assert node.containers(field) == node.containers(annotated) == 0
