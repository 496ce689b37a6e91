"""Readiness gates on a real containerd, standalone: a static pod with gates runs and its
containers turn ready, but the pod stays not ready, in upstream's words (reason
ReadinessGatesNotReady, one clause per gate), since no one sets a gate's condition on a
static pod (upstream evaluates a static pod's gates against the static pod's own status).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import Daemon, daemon_on, stopped_after
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

NODE = "e2e-node"
SERVE = "trap 'exit 0' TERM; touch /tmp/ready; while true; do sleep 1; done"


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    """The daemon; at the end it stops and the ``cri`` fixture removes what it made."""
    with stopped_after(daemon_on(containerd, "gates")) as d:
        yield d


def conditions(pod: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", ""))
            for c in pod["status"].get("conditions", [])}


def test_a_static_pod_with_readiness_gates_runs_ready_containers_but_is_not_ready(
        daemon: Daemon) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated"},
           "spec": {"terminationGracePeriodSeconds": 1,
                    "readinessGates": [{"conditionType": "example.com/lb"},
                                       {"conditionType": "example.com/feature"}],
                    "containers": [{"name": "main", "image": BUSYBOX_IMAGE,
                                    "command": ["sh", "-c", SERVE],
                                    "readinessProbe": {
                                        "exec": {"command": ["cat", "/tmp/ready"]},
                                        "periodSeconds": 1}}]}}
    (daemon.manifests / "gated.yaml").write_text(json.dumps(pod))
    daemon.start()
    name = f"gated-{NODE}"
    daemon.wait_running(name, 60)

    def containers_ready() -> dict[str, Any] | None:
        found = daemon.pod(name)
        return found if found and conditions(found)["ContainersReady"][0] == "True" else None

    found = wait_for(containers_ready, 30, "the containers ready (readiness probe)")
    assert found is not None
    assert [s["ready"] for s in found["status"]["containerStatuses"]] == [True]
    assert conditions(found)["Ready"] == (
        "False", "ReadinessGatesNotReady",
        'corresponding condition of pod readiness gate "example.com/lb" does not exist., '
        'corresponding condition of pod readiness gate "example.com/feature" does not exist.')
    assert found["status"]["phase"] == "Running"
