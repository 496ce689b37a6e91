"""The runtime manager on a real containerd: hooks, volumes, DNS, env, kill and adoption."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.clock import RealClock
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerState, SandboxState
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.podstatus import RuntimePodStatus
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.manifest import parse_manifest
from runtime.pod.model import Pod
from runtime.status.generate import generate_pod_status
from tests.helpers import listening, wait_for

pytestmark = pytest.mark.e2e


class Kubelet:
    """A runtime manager on the e2e containerd, with a sync-until helper."""

    def __init__(self, cri: CRIClient, base: Path) -> None:
        self.base = base
        self.settings = NodeSettings(
            node_name="e2e", root_dir=str(base / "root"), pod_logs_dir=str(base / "logs")
        )
        self.manager = KubeRuntimeManager(cri, self.settings, RealClock())

    def status(self, pod: Pod) -> RuntimePodStatus:
        return self.manager.get_pod_status(PodUID(pod.uid), pod.metadata.name, "default")

    def sync_until_running(self, pod: Pod) -> RuntimePodStatus:
        def up() -> RuntimePodStatus | None:
            result = self.manager.sync_pod(pod, self.status(pod))
            assert not [f for f in result.failures if f.error != "CrashLoopBackOff"], str(result)
            status = self.status(pod)
            names = {c.name for c in pod.spec.containers}
            running = {c.name for c in status.container_statuses if c.is_running}
            return status if names <= running else None

        status = wait_for(up, 30.0, f"pod {pod.metadata.name} running")
        assert status is not None
        return status

    def log(self, pod: Pod, container: str, restart: int = 0) -> str:
        path = Path(self.settings.pod_log_dir("default", pod.metadata.name, pod.uid))
        return (path / container / f"{restart}.log").read_text()


@pytest.fixture
def kubelet(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Kubelet]:
    yield Kubelet(cri, containerd.base_dir / "manager" / uuid.uuid4().hex[:8])


def make_pod(text: str) -> Pod:
    (pod,) = parse_manifest(text.encode(), "test.yaml")
    meta = pod.metadata
    return replace(pod, metadata=replace(meta, uid=uuid.uuid4().hex, namespace="default"))


def test_hooks_volumes_env_and_dns(kubelet: Kubelet, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    pod = make_pod(f"""
apiVersion: v1
kind: Pod
metadata: {{name: hooks}}
spec:
  terminationGracePeriodSeconds: 5
  volumes:
  - name: out
    hostPath: {{path: {shared}, type: DirectoryOrCreate}}
  - name: scratch
    emptyDir: {{}}
  containers:
  - name: web
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c"]
    args: ["echo $(GREETING) from $(POD_NAME); cat /etc/resolv.conf; mkdir -p /www;
            echo hi > /www/index.html; httpd -f -vv -p 8080 -h /www"]
    env:
    - {{name: GREETING, value: hello}}
    - name: POD_NAME
      valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}
    ports: [{{name: http, containerPort: 8080}}]
    volumeMounts:
    - {{name: out, mountPath: /out}}
    - {{name: scratch, mountPath: /scratch}}
    lifecycle:
      postStart:
        exec: {{command: ["sh", "-c", "echo started > /out/post-start"]}}
      preStop:
        exec: {{command: ["sh", "-c", "echo stopping > /out/pre-stop"]}}
""")
    status = kubelet.sync_until_running(pod)
    assert (shared / "post-start").read_text() == "started\n"
    def output() -> str | None:
        text = kubelet.log(pod, "web")
        return text if "nameserver" in text else None

    log = wait_for(output, 10.0, "the container's output")
    assert log is not None
    assert "hello from hooks" in log
    host_servers = [line.split()[1] for line in Path("/etc/resolv.conf").read_text().splitlines()
                    if line.startswith("nameserver")]
    for server in host_servers:
        assert f"nameserver {server}" in log
    assert status.ips and status.ips[0].startswith("10.89.")

    result = kubelet.manager.kill_pod(pod, status, None)
    assert result.ok, str(result)
    assert (shared / "pre-stop").read_text() == "stopping\n"
    after = kubelet.status(pod)
    assert all(c.state == ContainerState.EXITED for c in after.container_statuses)
    assert all(s.state == SandboxState.NOTREADY for s in after.sandbox_statuses)


def test_http_pre_stop_reaches_the_pod(kubelet: Kubelet) -> None:
    pod = make_pod(f"""
apiVersion: v1
kind: Pod
metadata: {{name: httphook}}
spec:
  # httpd as PID 1 ignores SIGTERM: a short grace keeps the kill from waiting out 30 s.
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", "mkdir -p /www; echo ok > /www/bye; httpd -f -vv -p 8080 -h /www"]
    ports: [{{name: http, containerPort: 8080}}]
    lifecycle:
      preStop:
        httpGet: {{path: /bye, port: http}}
""")
    status = kubelet.sync_until_running(pod)
    # Wait until httpd listens before asking it anything.
    wait_for(lambda: listening(status.ips[0], 8080), 10.0, "httpd to listen")
    assert kubelet.manager.kill_pod(pod, status, None).ok
    assert "/bye" in kubelet.log(pod, "web")



def test_failing_post_start_kills_the_container(kubelet: Kubelet) -> None:
    pod = make_pod(f"""
apiVersion: v1
kind: Pod
metadata: {{name: badhook}}
spec:
  # sleep as PID 1 ignores SIGTERM: a short grace keeps the kill from waiting out 30 s.
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: {BUSYBOX_IMAGE}
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        exec: {{command: ["sh", "-c", "echo no; exit 7"]}}
""")
    result = kubelet.manager.sync_pod(pod, kubelet.status(pod))
    (failure,) = result.failures
    assert failure.error == "PostStartHookError" and "exited with 7" in failure.message
    (c,) = kubelet.status(pod).container_statuses
    assert c.state == ContainerState.EXITED


def test_a_restarted_kubelet_adopts_running_containers(
    kubelet: Kubelet, cri: CRIClient
) -> None:
    pod = make_pod(f"""
apiVersion: v1
kind: Pod
metadata: {{name: adopt}}
spec:
  containers:
  - name: c
    image: {BUSYBOX_IMAGE}
    command: ["sleep", "3600"]
""")
    before = kubelet.sync_until_running(pod)
    fresh = Kubelet(cri, kubelet.base)  # no memory: everything comes from the runtime
    status = fresh.status(pod)
    assert [c.id for c in status.container_statuses] == [c.id for c in before.container_statuses]
    assert fresh.manager.sync_pod(pod, status).steps == ()  # nothing restarted
    api = generate_pod_status(pod, status)
    assert api.phase == "Running" and api.container_statuses[0].restart_count == 0


def test_crash_looping_container_restarts_with_its_count(kubelet: Kubelet) -> None:
    pod = make_pod(f"""
apiVersion: v1
kind: Pod
metadata: {{name: crasher}}
spec:
  restartPolicy: OnFailure
  containers:
  - name: c
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", "echo run; exit 3"]
""")
    kubelet.manager.sync_pod(pod, kubelet.status(pod))
    wait_for(lambda: kubelet.status(pod).container_statuses[0].state == ContainerState.EXITED,
             10.0, "the first run to exit")
    assert kubelet.manager.sync_pod(pod, kubelet.status(pod)).ok  # immediate first restart
    wait_for(lambda: (c := kubelet.status(pod).find_container("c")) is not None
             and c.restart_count == 1 and c.state == ContainerState.EXITED, 10.0,
             "the restart to exit")
    status = kubelet.status(pod)
    result = kubelet.manager.sync_pod(pod, status)
    assert result.failures[0].error == "CrashLoopBackOff"
    api = generate_pod_status(pod, kubelet.status(pod), result)
    (cs,) = api.container_statuses
    assert cs.state.waiting is not None and cs.state.waiting.reason == "CrashLoopBackOff"
    assert cs.last_state.terminated is not None and cs.last_state.terminated.exit_code == 3
    assert cs.restart_count == 1
    assert "run" in kubelet.log(pod, "c", 1)
