"""Readiness gates end to end in cluster mode: the daemon on a real containerd, joined to
the emulated API server. A controller (here the test, with kubectl, through the pod's
status subresource) sets the gate's condition; the kubelet sees it through its watch,
turns the pod Ready in the API, and its later status writes keep the condition as the
controller set it. The run is traced and replays without divergence (the conditions the
kubelet heard are in the trace).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e import test_cluster_emulated_apiserver as base
from tests.e2e.daemon import REPO
from tests.e2e.test_cluster_emulated_apiserver import Cluster, pod_manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e
cluster = base.cluster  # the fixture: an emulated API server and a daemon joined to it

GATE = "example.com/gate"


def conditions(c: Cluster) -> dict[str, dict[str, Any]]:
    pod = c.pod("gated")
    found = (pod or {}).get("status", {}).get("conditions", [])
    return {k["type"]: k for k in found}


def ready_is(c: Cluster, status: str, reason: str = "", message: str = ""
             ) -> dict[str, dict[str, Any]] | None:
    now = conditions(c)
    ready = now.get("Ready")
    if ready is None or ready["status"] != status:
        return None
    if (ready.get("reason", ""), ready.get("message", "")) != (reason, message):
        return None
    return now


def set_gate(c: Cluster, status: str) -> None:
    """What a controller does: the gate's condition through the status subresource."""
    patch = {"status": {"conditions": [{"type": GATE, "status": status,
                                        "reason": "LoadBalancerReady"}]}}
    c.kubectl.run("patch", "pod", "gated", "--subresource=status", "--type=strategic",
                  "-p", json.dumps(patch))


@pytest.mark.parametrize("cluster", [("--trace-dir", "TRACE")], indirect=True)
def test_a_gate_s_condition_set_by_a_controller_turns_the_pod_ready_emulated_apiserver(
        cluster: Cluster) -> None:
    c = cluster
    signal = c.workdir / "signal"
    signal.mkdir()
    (signal / "ready").touch()
    pod = pod_manifest("gated")
    pod["spec"]["readinessGates"] = [{"conditionType": GATE}]
    pod["spec"]["volumes"] = [{"name": "signal", "hostPath": {"path": str(signal)}}]
    main = pod["spec"]["containers"][0]
    main["volumeMounts"] = [{"name": "signal", "mountPath": "/signal"}]
    main["readinessProbe"] = {"exec": {"command": ["cat", "/signal/ready"]},
                              "periodSeconds": 1, "failureThreshold": 1}
    c.daemon.start()
    wait_for(lambda: c.node_ready() == "True", 30, "the Node Ready", ignore=(AssertionError,),
             interval=0.5)
    path = c.workdir / "gated.json"
    path.write_text(json.dumps(pod))
    c.kubectl.run("apply", "-f", str(path))

    # Running, its container ready, the pod not: no one has set the gate's condition.
    now = wait_for(lambda: ready_is(
        c, "False", "ReadinessGatesNotReady",
        f'corresponding condition of pod readiness gate "{GATE}" does not exist.'),
        60, "Ready False for the missing gate in the API", interval=0.5)
    assert now is not None and now["ContainersReady"]["status"] == "True"
    assert c.running("gated") is not None

    set_gate(c, "False")
    wait_for(lambda: ready_is(
        c, "False", "ReadinessGatesNotReady",
        f'the status of pod readiness gate "{GATE}" is not "True", but False'),
        30, "Ready False for the gate False", interval=0.5)

    set_gate(c, "True")
    now = wait_for(lambda: ready_is(c, "True"), 30, "Ready True in the API", interval=0.5)
    assert now is not None
    gate = now[GATE]
    assert (gate["status"], gate["reason"]) == ("True", "LoadBalancerReady")

    # The container turns not ready: the kubelet writes the pod's status again, and the
    # gate's condition stays as the controller set it.
    (signal / "ready").unlink()
    now = wait_for(lambda: ready_is(c, "False", "ContainersNotReady",
                                    "containers with unready status: [main]"),
                   30, "Ready False for the container", interval=0.5)
    assert now is not None and now[GATE] == gate
    (signal / "ready").touch()
    now = wait_for(lambda: ready_is(c, "True"), 30, "Ready True again", interval=0.5)
    assert now is not None and now[GATE] == gate
    types = [k["type"] for k in c.pod("gated")["status"]["conditions"]]
    assert types.count(GATE) == 1 and types[0] == GATE  # kept first, never doubled

    c.kubectl.run("delete", "pod", "gated", "--wait=true", timeout=60)
    assert c.pod("gated") is None
    c.daemon.stop()
    shown = subprocess.run([sys.executable, "-m", "bin.main", "trace", "show",
                            str(c.trace_dir), "--type", "APIPodConditions"], cwd=REPO,
                           capture_output=True, text=True, timeout=120, check=True)
    assert "APIPodConditions" in shown.stdout  # what the replay feeds the status manager
    replayed = subprocess.run([sys.executable, "-m", "bin.main", "trace", "replay",
                               str(c.trace_dir)], cwd=REPO, capture_output=True,
                              text=True, timeout=300, check=False)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence: replayed" in replayed.stdout
