"""Memory and PID pressure eviction end to end: the daemon on a real containerd, joined to
the emulated API server, with one hard threshold computed when the test starts from the
signal as the kubelet computes it (the same code: runtime.stats.collector.node_memory for
memory.available, the node's capacity less the root cgroup's working set; runtime.host_counters
.rlimit for pid.available, kernel.pid_max less the tasks).

Memory: a static pod holds 1.5 GiB (more than any other pod: it ranks first, and is skipped
as critical), a Guaranteed pod uses less than it requests, and a BestEffort pod then
allocates enough to take memory.available some 512 MiB below the threshold. The BestEffort
pod is evicted (Failed, reason Evicted, upstream's message and event), the Node reports
MemoryPressure, a new BestEffort pod is refused while a Burstable one is admitted, and once
the evicted pod's memory is freed the pressure goes after the transition period; the static
and the Guaranteed pod run on, never evicted. PID: a pod that forks a thousand or more
sleeps takes pid.available below its threshold and is evicted; PIDPressure refuses every
new pod while it holds.

Margins are hundreds of MiB (a thousand or more process IDs) both ways: the threshold sits
640 MiB (1,500 PIDs) below what the node has when the test starts, less what the static pod
will hold; the hog is sized once the daemon and the other pods run, from the daemon's own
/stats/summary, to go 512 MiB (1,000 PIDs) past it. Memory is taken by a busybox ``dd``
whose 1 block is the whole amount, blocked writing it to a ``sleep`` that never reads: the
buffer is held until the container is killed.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.eviction.api import format_quantity
from runtime.host_counters import HostPaths, rlimit
from runtime.stats.collector import node_memory
from tests.apiserver import EmulatedAPIServer
from tests.e2e.test_cluster_emulated_apiserver import NODE, SERVE, Cluster, pod_manifest
from tests.e2e.test_eviction_emulated_apiserver import apply, condition, events
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

Mi = 1 << 20
KEEPER_MIB = 1536
"""What the static pod holds: more than the hog will, so it would be evicted first."""
ROOM = 640 * Mi
"""memory.available above the threshold once the static pod holds its share (the daemon's
own use comes off it)."""
MIN_ROOM = 256 * Mi
"""What must be left of ROOM when the hog is sized, else the node is too busy to test on."""
OVERSHOOT = 512 * Mi
"""How far below the threshold the hog takes memory.available."""
PID_ROOM = 1500
PID_MIN_ROOM = 600
PID_OVERSHOOT = 1000
TRANSITION = "30s"
"""--eviction-pressure-transition-period: long enough to submit pods under pressure."""
LATE = ("late", "late-burstable")
"""The pods submitted under pressure."""


def holding(mib: int) -> str:
    """A shell script that holds ``mib`` MiB of anonymous memory and waits for TERM."""
    return f"dd if=/dev/zero bs={mib}M count=1 | sleep 1000000 & {SERVE}"


def forking(count: int) -> str:
    """A shell script that starts ``count`` sleeps and waits for TERM."""
    return (f"i=0; while [ $i -lt {count} ]; do sleep 1000000 & i=$((i+1)); done; {SERVE}")


KEEPER = f"""apiVersion: v1
kind: Pod
metadata:
  name: keeper
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(holding(KEEPER_MIB))}]
"""


def with_script(name: str, script: str) -> dict[str, Any]:
    pod = pod_manifest(name)
    pod["spec"]["containers"][0]["command"] = ["sh", "-c", script]
    return pod


def with_resources(name: str, requests: dict[str, str], limits: dict[str, str] | None = None
                   ) -> dict[str, Any]:
    pod = pod_manifest(name)
    resources: dict[str, Any] = {"requests": requests}
    if limits is not None:
        resources["limits"] = limits
    pod["spec"]["containers"][0]["resources"] = resources
    return pod


def guaranteed(name: str) -> dict[str, Any]:
    amounts = {"cpu": "100m", "memory": "64Mi"}
    return with_resources(name, amounts, dict(amounts))


def summary(c: Cluster) -> dict[str, Any]:
    """The daemon's own /stats/summary: what its eviction manager decides on."""
    code, body = c.daemon.get("/stats/summary")
    assert code == 200, body
    decoded: dict[str, Any] = json.loads(body)
    return decoded


def pod_stats(c: Cluster, name: str) -> dict[str, Any] | None:
    return next((p for p in summary(c).get("pods", []) if p["podRef"]["name"] == name), None)


def failed(c: Cluster, name: str) -> Any:
    pod = c.pod(name)
    return pod if pod and pod["status"].get("phase") == "Failed" else None


def disruption(status: dict[str, Any]) -> tuple[str, str, str]:
    """The DisruptionTarget condition an eviction adds: status, reason, message."""
    (found,) = [c for c in status.get("conditions", []) if c["type"] == "DisruptionTarget"]
    return found["status"], found.get("reason", ""), found.get("message", "")


def evictions_counted(c: Cluster, signal: str) -> float:
    code, text = c.daemon.get("/metrics")
    assert code == 200, text
    # Upstream's name: kubelet_evictions, no _total (actors.kubelet.metric_text).
    match = re.search(r'^kubelet_evictions\{eviction_signal="' + re.escape(signal)
                      + r'"\} (\S+)$', text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def start(c: Cluster) -> None:
    c.daemon.start()
    wait_for(lambda: c.node_ready() == "True", 30, "the Node Ready", ignore=(AssertionError,),
             interval=0.5)


def cluster_with(containerd: EmbeddedContainerd, threshold: str) -> Iterator[Cluster]:
    workdir = containerd.base_dir / "cluster" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    with EmulatedAPIServer(bookmark_interval=0.5) as server:
        c = Cluster(server, workdir, containerd.endpoint, "--eviction-hard", threshold,
                    "--eviction-pressure-transition-period", TRANSITION,
                    "--stats-collection-period", "2s")
        try:
            yield c
        finally:
            for name in ("hog", "steady", *LATE):
                c.kubectl.run("delete", "pod", name, "--wait=false", check=False)
            c.daemon.stop()
            print(c.daemon.log_path.read_text(errors="replace"))  # shown when the test failed


def memory_available() -> int:
    memory = node_memory(HostPaths(), time.time())
    assert memory is not None and memory.available_bytes is not None, "no node memory"
    return memory.available_bytes


def pids_available() -> int:
    max_pid, procs = rlimit(HostPaths())
    assert max_pid is not None and procs is not None, "no pid_max or task count"
    return max_pid - procs


@pytest.fixture
def memory_threshold() -> int:
    """memory.available<X: ROOM below what the node will have once the static pod holds
    its share, in whole MiB."""
    return (memory_available() - KEEPER_MIB * Mi - ROOM) // Mi * Mi


@pytest.fixture
def memory_cluster(containerd: EmbeddedContainerd, cri: CRIClient,
                   memory_threshold: int) -> Iterator[Cluster]:
    yield from cluster_with(containerd, f"memory.available<{memory_threshold // Mi}Mi")


@pytest.fixture
def pid_threshold() -> int:
    return pids_available() - PID_ROOM


@pytest.fixture
def pid_cluster(containerd: EmbeddedContainerd, cri: CRIClient,
                pid_threshold: int) -> Iterator[Cluster]:
    yield from cluster_with(containerd, f"pid.available<{pid_threshold}")


def test_a_best_effort_pod_allocating_memory_is_evicted_under_memory_pressure_emulated_apiserver(
        memory_cluster: Cluster, memory_threshold: int) -> None:
    c = memory_cluster
    (c.daemon.manifests / "keeper.yaml").write_text(KEEPER)
    start(c)
    keeper = f"keeper-{NODE}"
    wait_for(lambda: c.running(keeper), 60, "the static pod Running", interval=0.5)
    apply(c, guaranteed("steady"))
    wait_for(lambda: c.running("steady"), 60, "the Guaranteed pod Running", interval=0.5)

    def keeper_holds() -> bool:
        stats = pod_stats(c, keeper)
        memory = (stats or {}).get("memory") or {}
        return int(memory.get("workingSetBytes", 0)) >= KEEPER_MIB * Mi
    wait_for(keeper_holds, 60, f"the static pod's working set at {KEEPER_MIB} MiB",
             interval=1.0)
    steady = pod_stats(c, "steady")
    assert steady is not None and 0 < steady["memory"]["workingSetBytes"] < 64 * Mi, steady
    assert condition(c, "MemoryPressure")["status"] == "False"
    room = summary(c)["node"]["memory"]["availableBytes"] - memory_threshold
    assert room >= MIN_ROOM, (
        f"memory.available is only {room // Mi} MiB above the threshold before the hog "
        "runs: the node is too busy for this test")

    hog_mib = math.ceil((room + OVERSHOOT) / Mi)
    apply(c, with_script("hog", holding(hog_mib)))
    pod = wait_for(lambda: failed(c, "hog"), 120, f"the hog ({hog_mib} MiB) evicted",
                   interval=1.0)
    status = pod["status"]
    assert status["reason"] == "Evicted"
    quantity = format_quantity(memory_threshold)
    match = re.fullmatch(
        rf"The node was low on resource: memory\. Threshold quantity: {quantity}, available: "
        r"(\d+)Ki\. Container main was using (\d+)Ki, request is 0, has larger consumption "
        r"of memory\. ", status["message"])
    assert match, status
    assert int(match.group(1)) * 1024 < memory_threshold
    # The hog's use when the threshold was crossed: up to all it allocates. It crosses
    # sooner when the node's other users grow meanwhile (one CI run: 800 of 1,100 MiB).
    assert 0 < int(match.group(2)) * 1024 <= (hog_mib + 64) * Mi
    assert all("terminated" in s["state"] for s in status["containerStatuses"])
    assert disruption(status) == ("True", "TerminationByKubelet", status["message"])
    (event,) = events(c, "hog", "Evicted")
    assert event["type"] == "Warning" and event["message"] == status["message"]
    reclaim = events(c, NODE, "EvictionThresholdMet")
    assert reclaim and reclaim[0]["message"] == "Attempting to reclaim memory"
    assert evictions_counted(c, "memory.available") == 1

    pressure = wait_for(lambda: (d := condition(c, "MemoryPressure"))["status"] == "True" and d,
                        30, "MemoryPressure True", interval=0.5)
    assert pressure["reason"] == "KubeletHasInsufficientMemory"
    assert pressure["message"] == "kubelet has insufficient memory available"

    # Under memory pressure alone a BestEffort pod is refused, a Burstable one admitted.
    apply(c, pod_manifest("late"))
    apply(c, with_resources("late-burstable", {"memory": "16Mi"}))
    late = wait_for(lambda: failed(c, "late"), 20, "the BestEffort pod refused", interval=0.5)
    assert (late["status"]["reason"], late["status"]["message"]) == (
        "Evicted", "Pod was rejected: The node had condition: [MemoryPressure]. ")
    wait_for(lambda: c.running("late-burstable"), 60, "the Burstable pod Running",
             interval=0.5)

    # The hog's memory is freed: the pressure goes after the transition period. The static
    # pod (ranked first: it uses the most) and the Guaranteed pod were never evicted.
    wait_for(lambda: condition(c, "MemoryPressure")["status"] == "False", 120,
             "MemoryPressure False again", interval=1.0)
    assert condition(c, "MemoryPressure")["reason"] == "KubeletHasSufficientMemory"
    for name in (keeper, "steady", "late-burstable"):
        running = c.running(name)
        assert running, f"{name} is not running"
        assert running["status"]["containerStatuses"][0]["restartCount"] == 0
        assert not events(c, name, "Evicted")
    assert evictions_counted(c, "memory.available") == 1


def test_a_pod_forking_many_processes_is_evicted_under_pid_pressure_emulated_apiserver(
        pid_cluster: Cluster, pid_threshold: int) -> None:
    c = pid_cluster
    start(c)
    apply(c, guaranteed("steady"))
    wait_for(lambda: c.running("steady"), 60, "the Guaranteed pod Running", interval=0.5)
    assert condition(c, "PIDPressure")["status"] == "False"
    rlimits = summary(c)["node"]["rlimit"]
    room = rlimits["maxpid"] - rlimits["curproc"] - pid_threshold
    assert room >= PID_MIN_ROOM, (
        f"pid.available is only {room} above the threshold before the forker runs: the "
        "node is too busy for this test")

    count = room + PID_OVERSHOOT
    apply(c, with_script("hog", forking(count)))
    pod = wait_for(lambda: failed(c, "hog"), 120, f"the forker ({count} sleeps) evicted",
                   interval=1.0)
    status = pod["status"]
    assert status["reason"] == "Evicted"
    match = re.fullmatch(
        rf"The node was low on resource: pids\. Threshold quantity: "
        rf"{format_quantity(pid_threshold, False)}, available: (\d+)\. ", status["message"])
    assert match, status
    assert int(match.group(1)) < pid_threshold
    assert disruption(status) == ("True", "TerminationByKubelet", status["message"])
    (event,) = events(c, "hog", "Evicted")
    assert event["message"] == status["message"]
    assert evictions_counted(c, "pid.available") == 1

    pressure = wait_for(lambda: (d := condition(c, "PIDPressure"))["status"] == "True" and d,
                        30, "PIDPressure True", interval=0.5)
    assert pressure["reason"] == "KubeletHasInsufficientPID"
    assert pressure["message"] == "kubelet has insufficient PID available"

    # Under PID pressure no pod but a critical one is admitted, whatever its QoS.
    apply(c, with_resources("late-burstable", {"memory": "16Mi"}))
    late = wait_for(lambda: failed(c, "late-burstable"), 20, "the late pod refused",
                    interval=0.5)
    assert (late["status"]["reason"], late["status"]["message"]) == (
        "Evicted", "Pod was rejected: The node had condition: [PIDPressure]. ")

    wait_for(lambda: condition(c, "PIDPressure")["status"] == "False", 120,
             "PIDPressure False again", interval=1.0)
    steady = c.running("steady")
    assert steady and steady["status"]["containerStatuses"][0]["restartCount"] == 0
    assert not events(c, "steady", "Evicted")
    assert evictions_counted(c, "pid.available") == 1
