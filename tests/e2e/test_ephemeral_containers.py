"""Ephemeral containers through the runtime manager on a real containerd (no API server
yet: the pod gains them through the model, as an ephemeralcontainers update would)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from msgspec.structs import replace

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerState
from runtime.kuberuntime.podstatus import RuntimePodStatus
from runtime.pod.model import EphemeralContainer, Pod
from runtime.status.generate import generate_pod_status
from tests.e2e.test_runtime_manager import Kubelet, make_pod
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def kubelet(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Kubelet]:
    yield Kubelet(cri, containerd.base_dir / "ephemeral" / uuid.uuid4().hex[:8])


def _target_pod() -> Pod:
    return make_pod(f"""
apiVersion: v1
kind: Pod
metadata: {{name: ephemeral}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sleep", "3600"]
""")


def _with_debug(pod: Pod, debug: EphemeralContainer) -> Pod:
    return replace(pod, spec=replace(pod.spec, ephemeral_containers=(debug,)))


def test_ephemeral_containers_should_be_able_to_launch_an_ephemeral_container(
        kubelet: Kubelet) -> None:
    """Ephemeral Containers [NodeConformance] should be able to launch an ephemeral
    container [Conformance] (test/e2e/common/node/ephemeral_containers.go), through the
    runtime manager: the debug container starts in the pod's sandbox, the others are kept,
    and it is reported in ephemeralContainerStatuses."""
    pod = _target_pod()
    before = kubelet.sync_until_running(pod)
    main_id = before.find_container("main")
    assert main_id is not None
    debug = EphemeralContainer(name="debugger", image=BUSYBOX_IMAGE,
                               image_pull_policy="IfNotPresent",
                               command=("sh", "-c", "echo polo; sleep 3600"))
    pod = _with_debug(pod, debug)
    result = kubelet.manager.sync_pod(pod, kubelet.status(pod))
    assert result.ok and [s.target for s in result.steps] == ["debugger"], str(result)
    def debugger_runs() -> RuntimePodStatus | None:
        now = kubelet.status(pod)
        found = now.find_container("debugger")
        return now if found is not None and found.is_running else None

    status = wait_for(debugger_runs, 30.0, "the ephemeral container to run")
    assert status
    assert status.find_container("main") == main_id  # nothing else restarted
    sandboxes = {s.id for s in status.sandbox_statuses}
    assert len(sandboxes) == 1
    log = wait_for(lambda: "polo" in (text := kubelet.log(pod, "debugger")) and text, 10.0,
                   "the debug container's output")
    assert log
    api = generate_pod_status(pod, status)
    (eph,) = api.ephemeral_container_statuses
    assert eph.name == "debugger" and eph.state.running is not None and not eph.ready
    assert [c.name for c in api.container_statuses] == ["main"]
    assert kubelet.manager.sync_pod(pod, status).steps == ()  # already runs: nothing to do


def test_an_ephemeral_container_sees_its_targets_processes_and_is_never_restarted(
        kubelet: Kubelet) -> None:
    """targetContainerName: the debug container joins the target's PID namespace (CRI
    NamespaceMode TARGET), so it sees the target's processes; once exited it stays so."""
    pod = _target_pod()
    kubelet.sync_until_running(pod)
    debug = EphemeralContainer(name="debugger", image=BUSYBOX_IMAGE,
                               image_pull_policy="IfNotPresent", target_container_name="main",
                               command=("ps",))
    pod = _with_debug(pod, debug)
    assert kubelet.manager.sync_pod(pod, kubelet.status(pod)).ok
    exited = wait_for(lambda: (c := kubelet.status(pod).find_container("debugger"))
                      and c.state == ContainerState.EXITED and c, 30.0,
                      "the debug container to finish")
    assert exited and exited.exit_code == 0
    assert "sleep 3600" in kubelet.log(pod, "debugger")
    status = kubelet.status(pod)
    assert kubelet.manager.sync_pod(pod, status).steps == ()  # never restarted
    assert len(kubelet.status(pod).instances("debugger")) == 1
    api = generate_pod_status(pod, status)
    (eph,) = api.ephemeral_container_statuses
    assert eph.state.terminated is not None and eph.state.terminated.exit_code == 0


def test_an_ephemeral_container_whose_target_does_not_run_is_a_config_error(
        kubelet: Kubelet) -> None:
    pod = _target_pod()
    kubelet.sync_until_running(pod)
    debug = EphemeralContainer(name="debugger", image=BUSYBOX_IMAGE,
                               image_pull_policy="IfNotPresent",
                               target_container_name="nosuch", command=("ps",))
    pod = _with_debug(pod, debug)
    result = kubelet.manager.sync_pod(pod, kubelet.status(pod))
    (failure,) = result.failures
    assert failure.error == "CreateContainerConfigError"
    assert failure.message == "unable to find target container nosuch"
    api = generate_pod_status(pod, kubelet.status(pod), result)
    (eph,) = api.ephemeral_container_statuses
    assert eph.state.waiting is not None
    assert eph.state.waiting.reason == "CreateContainerConfigError"
