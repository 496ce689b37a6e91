"""Resources and QoS on containerd (issue 10, item 6): status.qosClass, the kubepods
cgroup hierarchy with a cgroup per pod, each container's and each pod's cpu shares, CFS
quota and period and memory limit read back from the cgroup files, oom_score_adj by QoS,
the pod cgroup removed with its pod, and OOMKilled with exit code 137.

Ported from upstream's test/e2e_node/pods_container_manager_test.go ("Kubelet Cgroup
Manager") and test/e2e_node/oomkiller_linux_test.go. This machine is cgroup v1 (cpu and
memory hierarchies under /sys/fs/cgroup) and the e2e containerd uses the cgroupfs driver,
so the daemon runs with its defaults: --cgroups-per-qos, --cgroup-root /, cgroupfs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.cm.cgroupfs import HYBRID_UNIFIED, v1_mounts
from runtime.cm.oom import BESTEFFORT_OOM_SCORE_ADJ, GUARANTEED_OOM_SCORE_ADJ
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.machine import mem_total
from tests.e2e.daemon import Daemon, daemon_on, remove_every_pod, stopped_after
from tests.e2e.test_daemon import manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

CGROUP = Path("/sys/fs/cgroup")
MI = 2**20
UNLIMITED_QUOTA = -1
# A v1 memory cgroup without a limit reads PAGE_COUNTER_MAX pages.
UNLIMITED_MEMORY = 9223372036854771712


@pytest.fixture
def kubelet(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    """A daemon with the default cgroup flags. Its manifests are deleted before it stops,
    so it removes its pods and their cgroups itself; ``cri`` removes anything left."""
    with stopped_after(daemon_on(containerd, "daemon")) as d:
        yield d
        remove_every_pod(d, 60.0)


def runtime_oom_floor(containerd: EmbeddedContainerd) -> int:
    """The lowest oom_score_adj the runtime gives a container. The embedded containerd
    runs with restrict_oom_score_adj (this machine's bounding set lacks
    CAP_SYS_RESOURCE, so no process may lower its score): it raises a lower score to its
    own, as containerd's WithOOMScoreAdj does."""
    assert containerd.pid is not None
    return int(Path(f"/proc/{containerd.pid}/oom_score_adj").read_text())


def read(controller: str, cgroup: str, name: str) -> int:
    return int((CGROUP / controller / cgroup.lstrip("/") / name).read_text().split()[0])


def cpu_and_memory(cgroup: str) -> tuple[int, int, int, int]:
    """(cpu.shares, cpu.cfs_quota_us, cpu.cfs_period_us, memory.limit_in_bytes)."""
    return (read("cpu", cgroup, "cpu.shares"), read("cpu", cgroup, "cpu.cfs_quota_us"),
            read("cpu", cgroup, "cpu.cfs_period_us"),
            read("memory", cgroup, "memory.limit_in_bytes"))


def container_id(pod: dict[str, Any], name: str = "main") -> str:
    status = next(s for s in pod["status"]["containerStatuses"] if s["name"] == name)
    cid: str = status["containerID"].removeprefix("containerd://")
    return cid


def container_pid(cgroup: str) -> int:
    procs = (CGROUP / "cpu" / cgroup.lstrip("/") / "cgroup.procs").read_text().split()
    assert procs, f"no process in {cgroup}"
    return int(procs[0])


def burstable_oom_score_adj(memory_request: int) -> int:
    """upstream GetContainerOOMScoreAdjust for a Burstable container on this machine."""
    adjust = 1000 - 1000 * memory_request // mem_total()
    return max(3, adjust if adjust != 1000 else 999)


def resources(requests: str = "", limits: str = "") -> str:
    text = "    resources:\n"
    if requests:
        text += f"      requests: {{{requests}}}\n"
    if limits:
        text += f"      limits: {{{limits}}}\n"
    return text


def test_top_level_qos_containers_should_have_been_created(kubelet: Daemon) -> None:
    """Kubelet Cgroup Manager QOS containers On enabling QOS cgroup hierarchy Top level
    QoS containers should have been created."""
    (kubelet.manifests / "idle.yaml").write_text(manifest("idle"))
    kubelet.start()
    kubelet.wait_running("idle-e2e-node", timeout=90.0)
    for controller in ("cpu", "cpuacct", "cpuset", "memory", "pids"):
        for cgroup in ("kubepods", "kubepods/burstable", "kubepods/besteffort"):
            assert (CGROUP / controller / cgroup).is_dir(), f"{controller}:/{cgroup}"
    assert read("cpu", "kubepods/besteffort", "cpu.shares") == 2
    # kubepods holds the node's allocatable (nothing reserved): every cpu and all memory.
    assert read("cpu", "kubepods", "cpu.shares") == (os.cpu_count() or 1) * 1024
    assert read("memory", "kubepods", "memory.limit_in_bytes") == mem_total()


def test_pod_containers_should_have_been_created_under_the_cgroup_root(
        kubelet: Daemon, containerd: EmbeddedContainerd) -> None:
    """Kubelet Cgroup Manager Pod containers On scheduling a Guaranteed Pod / a
    BestEffort Pod / a Burstable Pod Pod containers should have been created under the
    cgroup-root (with each limit read back from the pod's and the container's cgroup
    files, the QoS class in the status, and oom_score_adj by class)."""
    pods = {
        "guaranteed": resources(requests="cpu: 100m, memory: 64Mi",
                                limits="cpu: 100m, memory: 64Mi"),
        "burstable": resources(requests="cpu: 100m, memory: 32Mi", limits="memory: 64Mi"),
        "besteffort": "",
        "capped": resources(requests="cpu: 50m", limits="cpu: 200m, memory: 48Mi"),
    }
    for name, extra in pods.items():
        (kubelet.manifests / f"{name}.yaml").write_text(manifest(name, extra=extra))
    kubelet.start()
    seen = {name: kubelet.wait_running(f"{name}-e2e-node", timeout=90.0) for name in pods}
    classes = {name: pod["status"]["qosClass"] for name, pod in seen.items()}
    assert classes == {"guaranteed": "Guaranteed", "burstable": "Burstable",
                       "besteffort": "BestEffort", "capped": "Burstable"}
    uid = {name: pod["metadata"]["uid"] for name, pod in seen.items()}
    pod_cgroup = {
        "guaranteed": f"/kubepods/pod{uid['guaranteed']}",
        "burstable": f"/kubepods/burstable/pod{uid['burstable']}",
        "besteffort": f"/kubepods/besteffort/pod{uid['besteffort']}",
        "capped": f"/kubepods/burstable/pod{uid['capped']}",
    }
    # Pod level (upstream ResourceConfigForPod): shares of the requests, quota only when
    # every container limits cpu, memory only when every container limits memory.
    assert cpu_and_memory(pod_cgroup["guaranteed"]) == (102, 10_000, 100_000, 64 * MI)
    assert cpu_and_memory(pod_cgroup["burstable"]) == (
        102, UNLIMITED_QUOTA, 100_000, 64 * MI)
    assert cpu_and_memory(pod_cgroup["besteffort"]) == (
        2, UNLIMITED_QUOTA, 100_000, UNLIMITED_MEMORY)
    assert cpu_and_memory(pod_cgroup["capped"]) == (51, 20_000, 100_000, 48 * MI)
    # The burstable class's shares are the burstable pods' cpu requests (100m + 50m).
    assert read("cpu", "kubepods/burstable", "cpu.shares") == 153
    # Container level (upstream calculateLinuxResources), in a cgroup of its pod's.
    expected = {
        "guaranteed": ((102, 10_000, 100_000, 64 * MI),
                       max(GUARANTEED_OOM_SCORE_ADJ, runtime_oom_floor(containerd))),
        "burstable": ((102, UNLIMITED_QUOTA, 100_000, 64 * MI),
                      burstable_oom_score_adj(32 * MI)),
        "besteffort": ((2, UNLIMITED_QUOTA, 100_000, UNLIMITED_MEMORY),
                       BESTEFFORT_OOM_SCORE_ADJ),
        "capped": ((51, 20_000, 100_000, 48 * MI), burstable_oom_score_adj(48 * MI)),
    }
    for name, (limits, oom_score_adj) in expected.items():
        cgroup = f"{pod_cgroup[name]}/{container_id(seen[name])}"
        assert cpu_and_memory(cgroup) == limits, name
        pid = container_pid(cgroup)
        assert int(Path(f"/proc/{pid}/oom_score_adj").read_text()) == oom_score_adj, name
        proc_cgroups = Path(f"/proc/{pid}/cgroup").read_text()
        assert f":memory:{cgroup}\n" in proc_cgroups, proc_cgroups
        assert f":cpu:{cgroup}\n" in proc_cgroups or f"cpu,cpuacct:{cgroup}\n" in proc_cgroups


def test_pod_level_resources_limit_the_pod_cgroup(
        kubelet: Daemon, containerd: EmbeddedContainerd) -> None:
    """Pod-level resources (spec.resources): the pod's class and its cgroup follow them,
    its containers without resources of their own get none."""
    (kubelet.manifests / "pod-level.yaml").write_text(manifest("pod-level").replace(
        "spec:\n", "spec:\n  resources:\n    limits: {cpu: 200m, memory: 128Mi}\n", 1))
    kubelet.start()
    pod = kubelet.wait_running("pod-level-e2e-node", timeout=90.0)
    assert pod["status"]["qosClass"] == "Guaranteed"
    cgroup = f"/kubepods/pod{pod['metadata']['uid']}"
    assert cpu_and_memory(cgroup) == (204, 20_000, 100_000, 128 * MI)
    container = f"{cgroup}/{container_id(pod)}"
    assert cpu_and_memory(container) == (2, UNLIMITED_QUOTA, 100_000, UNLIMITED_MEMORY)
    assert int(Path(f"/proc/{container_pid(container)}/oom_score_adj").read_text()) == max(
        GUARANTEED_OOM_SCORE_ADJ, runtime_oom_floor(containerd))


def test_pod_cgroup_is_removed_after_the_pod_is_deleted(kubelet: Daemon) -> None:
    """The pod's cgroup goes with the pod (upstream SyncTerminatedPod's pcm.Destroy)."""
    (kubelet.manifests / "gone.yaml").write_text(manifest(
        "gone", extra=resources(requests="cpu: 10m", limits="memory: 32Mi")))
    kubelet.start()
    pod = kubelet.wait_running("gone-e2e-node", timeout=90.0)
    cgroup = f"kubepods/burstable/pod{pod['metadata']['uid']}"
    assert (CGROUP / "cpu" / cgroup).is_dir() and (CGROUP / "memory" / cgroup).is_dir()
    unified_dir = v1_mounts().get(HYBRID_UNIFIED)
    assert unified_dir is None or (Path(unified_dir) / cgroup).is_dir()
    (kubelet.manifests / "gone.yaml").unlink()
    wait_for(lambda: "gone-e2e-node" not in kubelet.pods(), 60.0, "the pod to go")
    # On a hybrid machine runc makes the pod's directory in the cgroup2 tree too.
    hierarchies = [CGROUP / c for c in ("cpu", "cpuacct", "cpuset", "memory", "pids")]
    unified = v1_mounts().get(HYBRID_UNIFIED)
    if unified is not None:
        hierarchies.append(Path(unified))
    wait_for(lambda: not any((h / cgroup).exists() for h in hierarchies),
             30.0, f"{cgroup} to be removed from {', '.join(map(str, hierarchies))}")


def test_containers_terminated_by_oom_killer_have_reason_oomkilled(kubelet: Daemon) -> None:
    """OOMKiller for pod using more memory than node allocatable [LinuxOnly] The
    containers terminated by OOM killer should have the reason set to OOMKilled (here,
    more memory than the container's limit, as upstream's container-limit variant)."""
    (kubelet.manifests / "oom.yaml").write_text(manifest(
        "oom", script="sleep 1 && dd if=/dev/zero of=/dev/null bs=20M", policy="Never",
        extra=resources(requests="memory: 15Mi", limits="memory: 15Mi")))
    kubelet.start()

    def terminated() -> dict[str, Any] | None:
        pod = kubelet.pod("oom-e2e-node")
        statuses = pod["status"].get("containerStatuses", []) if pod else []
        state = statuses[0]["state"].get("terminated") if statuses else None
        return state if isinstance(state, dict) else None

    state = wait_for(terminated, 90.0, "the container to be OOM-killed")
    assert state is not None
    assert (state["reason"], state["exitCode"]) == ("OOMKilled", 137), state
    wait_for(lambda: kubelet.phase("oom-e2e-node") == "Failed", 30.0, "the pod Failed")
