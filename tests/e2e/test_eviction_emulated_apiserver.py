"""Node-pressure eviction end to end: the daemon on a real containerd, joined to the emulated
API server, with ``--eviction-hard nodefs.available<X`` where X is a little below what the
filesystem holding the daemon's root dir has free when the test starts. A pod that writes
600 MiB into an emptyDir (under the root dir) takes the node below X: it is evicted (Failed,
reason Evicted, upstream's message, an Evicted event), the Node reports DiskPressure, a new
pod is refused, and a static pod that also writes to its emptyDir is never evicted. The
evicted pod's emptyDir is deleted, so the pressure goes after the transition period. The
run is recorded and replays without divergence.

The disk is never filled: the threshold is relative to the measured free space and the test
writes at most 620 MiB, all of it under the test's own directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.apiserver import EmulatedAPIServer
from tests.e2e.daemon import REPO
from tests.e2e.test_cluster_emulated_apiserver import NODE, SERVE, Cluster, pod_manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

Mi = 1 << 20
MARGIN = 300 * Mi
"""How far above the threshold the node is when the test starts."""
HOG = 600
"""MiB the evicted pod writes: twice the margin, so it crosses whatever else happens."""

STATIC = f"""apiVersion: v1
kind: Pod
metadata:
  name: keeper
spec:
  terminationGracePeriodSeconds: 5
  volumes:
  - name: data
    emptyDir: {{}}
  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", "dd if=/dev/zero of=/data/fill bs=1M count=20; {SERVE}"]
    volumeMounts:
    - name: data
      mountPath: /data
"""


def hog() -> dict[str, Any]:
    pod = pod_manifest("hog")
    main = pod["spec"]["containers"][0]
    main["command"] = ["sh", "-c", f"dd if=/dev/zero of=/data/fill bs=1M count={HOG}; {SERVE}"]
    main["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    pod["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    return pod


def free_bytes(path: str) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@pytest.fixture
def evicting(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Cluster]:
    workdir = containerd.base_dir / "cluster" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    threshold = free_bytes(str(workdir)) - MARGIN
    assert threshold > 2 * HOG * Mi, "too little free disk for this test"
    with EmulatedAPIServer(bookmark_interval=0.5) as server:
        c = Cluster(server, workdir, containerd.endpoint,
                    "--eviction-hard", f"nodefs.available<{threshold}",
                    "--eviction-pressure-transition-period", "5s",
                    "--stats-collection-period", "2s", "--volume-stats-agg-period", "2s",
                    "--trace-dir", "TRACE")
        try:
            yield c
        finally:
            for name in ("hog", "late"):
                c.kubectl.run("delete", "pod", name, "--wait=false", check=False)
            c.daemon.stop()
            print(c.daemon.log_path.read_text(errors="replace"))  # shown when the test failed
            shutil.rmtree(workdir / "root" / "pods", ignore_errors=True)  # what was written


def condition(c: Cluster, kind: str) -> dict[str, Any]:
    node = c.get("node", NODE)
    found = [x for x in node["status"].get("conditions", []) if x["type"] == kind]
    assert found, f"no {kind} condition"
    return dict(found[0])


def events(c: Cluster, name: str, reason: str) -> list[dict[str, Any]]:
    listed = c.kubectl.json("get", "events", "--field-selector",
                            f"involvedObject.name={name},reason={reason}")
    return list(listed["items"])


def apply(c: Cluster, manifest: dict[str, Any]) -> None:
    path = c.workdir / f"{manifest['metadata']['name']}.json"
    path.write_text(json.dumps(manifest))
    c.kubectl.run("apply", "-f", str(path))


def test_a_pod_filling_the_disk_is_evicted_and_the_node_reports_disk_pressure_emulated_apiserver(
        evicting: Cluster) -> None:
    c = evicting
    (c.daemon.manifests / "keeper.yaml").write_text(STATIC)
    c.daemon.start()
    wait_for(lambda: c.node_ready() == "True", 30, "the Node Ready", ignore=(AssertionError,),
             interval=0.5)
    keeper = f"keeper-{NODE}"
    wait_for(lambda: c.running(keeper), 60, "the static pod Running", interval=0.5)
    assert condition(c, "DiskPressure")["status"] == "False"
    assert condition(c, "DiskPressure")["reason"] == "KubeletHasNoDiskPressure"

    apply(c, hog())

    def evicted() -> dict[str, Any] | None:
        pod = c.pod("hog")
        return pod if pod and pod["status"].get("phase") == "Failed" else None

    pod = wait_for(evicted, 120, "the hog evicted", interval=1.0)
    assert pod is not None
    status = pod["status"]
    assert status["reason"] == "Evicted"
    # Quantities in their canonical form, as upstream's Quantity.String() prints them: a
    # byte count that is a whole number of thousands (or of Ki, Mi, ...) takes a suffix.
    quantity = r"\d+(k|M|G|T|Ki|Mi|Gi|Ti)?"
    assert re.fullmatch(
        rf"The node was low on resource: ephemeral-storage\. Threshold quantity: {quantity}, "
        rf"available: {quantity}\. (Container main was using {quantity}, request is 0, "
        r"has larger consumption of ephemeral-storage\. )?", status["message"]), status
    assert all("terminated" in s["state"] for s in status["containerStatuses"])
    (event,) = events(c, "hog", "Evicted")
    assert event["type"] == "Warning" and event["message"] == status["message"]
    reclaim = events(c, NODE, "EvictionThresholdMet")
    assert reclaim and reclaim[0]["message"] == "Attempting to reclaim ephemeral-storage"

    pressure = wait_for(lambda: (d := condition(c, "DiskPressure"))["status"] == "True" and d,
                        30, "DiskPressure True", interval=0.5)
    assert pressure["reason"] == "KubeletHasDiskPressure"
    assert pressure["message"] == "kubelet has disk pressure"

    # Under pressure a new pod is refused; the static pod keeps running.
    apply(c, pod_manifest("late"))
    late = wait_for(lambda: (p := c.pod("late")) and p["status"].get("phase") == "Failed" and p,
                    60, "the late pod refused", interval=0.5)
    assert (late["status"]["reason"], late["status"]["message"]) == (
        "Evicted", "Pod was rejected: The node had condition: [DiskPressure]. ")
    assert c.running(keeper)

    # The evicted pod's emptyDir is gone: the pressure goes after the transition period.
    wait_for(lambda: condition(c, "DiskPressure")["status"] == "False", 90,
             "DiskPressure False again", interval=1.0)
    assert c.running(keeper)
    assert not events(c, keeper, "Evicted")

    # The run replays: the eviction manager's inputs are recorded messages.
    c.daemon.stop()
    replayed = subprocess.run([sys.executable, "-m", "bin.main", "trace", "replay",
                               str(c.trace_dir)], cwd=REPO, capture_output=True, text=True,
                              timeout=300, check=False)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence: replayed" in replayed.stdout
