"""Events end to end: the daemon on a real containerd, joined to the emulated API server,
records its pods' events as upstream's kubelet does, and kubectl shows them.

One run holds three pods (a pod that runs, one that crash-loops, one whose liveness probe
fails) with a trace; the recorded run then replays without divergence.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e import test_cluster_emulated_apiserver as base
from tests.e2e.daemon import REPO
from tests.e2e.test_cluster_emulated_apiserver import NODE, Cluster, pod_manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e
cluster = base.cluster  # the fixture: an emulated API server and a daemon joined to it


def events_of(c: Cluster, pod: str, reason: str = "") -> list[dict[str, Any]]:
    selector = f"involvedObject.name={pod}" + (f",reason={reason}" if reason else "")
    listed = c.kubectl.json("get", "events", "--field-selector", selector)
    items: list[dict[str, Any]] = listed["items"]
    return sorted(items, key=lambda e: (e["firstTimestamp"], e["metadata"]["name"]))


def apply(c: Cluster, manifest: dict[str, Any]) -> None:
    path = c.workdir / f"{manifest['metadata']['name']}.json"
    path.write_text(json.dumps(manifest))
    c.kubectl.run("apply", "-f", str(path))


def crash_loop() -> dict[str, Any]:
    pod = pod_manifest("crash")
    pod["spec"]["containers"][0]["command"] = ["sh", "-c", "exit 1"]
    return pod


def sick() -> dict[str, Any]:
    pod = pod_manifest("sick")
    pod["spec"]["containers"][0]["livenessProbe"] = {
        "exec": {"command": ["cat", "/no/such/file"]}, "periodSeconds": 1,
        "failureThreshold": 1}
    return pod


@pytest.mark.parametrize("cluster", [("--trace-dir", "TRACE")], indirect=True)
def test_pod_events_reach_the_api_aggregated_and_replay_emulated_apiserver(
        cluster: Cluster) -> None:
    c = cluster
    c.daemon.start()
    wait_for(lambda: c.node_ready() == "True", 30, "the Node Ready", ignore=(AssertionError,),
             interval=0.5)
    web = pod_manifest("web")
    web["spec"]["containers"][0]["imagePullPolicy"] = "Always"  # a pull, not "present"
    for manifest in (web, crash_loop(), sick()):
        apply(c, manifest)

    # A pod that runs: Pulling, Pulled, Created, Started, in that order, on its container.
    wait_for(lambda: len(events_of(c, "web")) >= 4, 60, "web's four events", interval=0.5)
    ours = events_of(c, "web")
    assert [e["reason"] for e in ours] == ["Pulling", "Pulled", "Created", "Started"]
    assert all(e["involvedObject"]["fieldPath"] == "spec.containers{main}" for e in ours)
    assert all(e["source"] == {"component": "kubelet", "host": NODE} for e in ours)
    assert all(e["reportingComponent"] == "kubelet" and e["reportingInstance"] == NODE
               for e in ours)
    pulled = ours[1]["message"]
    assert pulled.startswith('Successfully pulled image "') and "including waiting). " \
        "Image size: " in pulled and pulled.endswith(" bytes.")
    assert ours[3]["message"] == "Started container main"
    uid = c.pod("web")["metadata"]["uid"]
    assert {e["involvedObject"]["uid"] for e in ours} == {uid}

    # A crash loop: one BackOff event whose count grows (PATCHed), not many.
    wait_for(lambda: (b := events_of(c, "crash", "BackOff")) and b[0]["count"] > 1, 90,
             "crash's BackOff counted twice", interval=1.0)
    backoff = events_of(c, "crash", "BackOff")
    assert len(backoff) == 1 and backoff[0]["type"] == "Warning"
    assert backoff[0]["message"].startswith("Back-off restarting failed container main in "
                                            "pod crash_default(")
    assert backoff[0]["firstTimestamp"] <= backoff[0]["lastTimestamp"]

    # A failing liveness probe: Unhealthy, then the container killed to be restarted.
    wait_for(lambda: events_of(c, "sick", "Killing"), 60, "sick killed", interval=0.5)
    unhealthy = events_of(c, "sick", "Unhealthy")
    assert unhealthy and unhealthy[0]["message"].startswith("Liveness probe failed: ")
    killing = events_of(c, "sick", "Killing")
    assert killing[0]["message"] == "Container main failed liveness probe, will be restarted"

    # kubectl describe lists them, as it lists a real kubelet's.
    described = c.kubectl.run("describe", "pod", "crash").stdout
    assert "Events:" in described and "BackOff" in described
    assert "Back-off restarting failed container main in pod crash_default(" in described
    listed = c.kubectl.run("get", "events").stdout
    assert "pod/crash" in listed and "Started" in listed and "node/" + NODE in listed

    # The Node's own: Starting, then NodeReady.
    node_reasons = [e["reason"] for e in events_of(c, NODE)]
    assert "Starting" in node_reasons and "NodeReady" in node_reasons

    for name in ("web", "crash", "sick"):
        c.kubectl.run("delete", "pod", name, "--wait=true", timeout=60)
    assert [e["message"] for e in events_of(c, "web", "Killing")] == [
        "Stopping container main"]
    c.daemon.stop()
    replayed = subprocess.run([sys.executable, "-m", "bin.main", "trace", "replay",
                               str(c.trace_dir)], cwd=REPO, capture_output=True,
                              text=True, timeout=300, check=False)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence: replayed" in replayed.stdout
