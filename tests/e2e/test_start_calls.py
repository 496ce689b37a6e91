"""What one pod start costs the daemon in CRI calls on the real containerd, from its trace.

The daemon runs with its event-driven PLEG and a trace; once its own start is over (the
stream's settle relist done), one pod is written and waited for until /pods shows it
Running. The runtime calls from the pod's first sync until then are counted by method and
printed (``pytest -s`` shows them; bench.start_calls does the same with durations and a
burst). Asserted: the calls that make the pod happen once each, with one ImageStatus (its
image is present), and no relist on the task starts (the PLEG relists when the worker's
sync asks, after the worker has read its pod's status and reported it Running), no
listing by the worker, and one sync; see the fake runtime's exact counts in
tests/unit/kubelet/test_start_calls.py.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from actors.app.tools.call_counts import calls_in, count_by_actor, count_by_method
from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import Trace, read_trace
from actors.kubelet import names
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerState, ImageSpec
from tests.e2e.daemon import Daemon
from tests.e2e.test_daemon import manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e


def _relists(trace: Trace) -> int:
    return sum(1 for r in trace.messages() if MESSAGES.short(r["type"]) == "Relisted")


def _running(pod: dict[str, Any] | None) -> bool:
    statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
    return bool(statuses) and all("running" in s.get("state", {}) for s in statuses)


def test_one_pod_start_counts_its_cri_calls(containerd: EmbeddedContainerd,
                                           cri: CRIClient) -> None:
    cri.pull_image(ImageSpec(BUSYBOX_IMAGE))  # present: the start pulls nothing
    workdir = containerd.base_dir / "start-calls" / uuid.uuid4().hex[:8]
    manifests = workdir / "manifests"
    manifests.mkdir(parents=True)
    trace_dir = workdir / "trace"
    daemon = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
                    "--trace-dir", str(trace_dir))
    try:
        daemon.start()
        wait_for(lambda: "runtime events flowing" in daemon.log(), 30.0, "the PLEG's stream")
        # The stream's first relist and its settle relist a second later: the daemon's own.
        wait_for(lambda: trace_dir.exists() and _relists(read_trace(trace_dir)) >= 2, 30.0,
                 "the PLEG's settle relist")
        (manifests / "counted.yaml").write_text(manifest("counted", "sleep 3600"))
        name = "counted-e2e-node"
        wait_for(lambda: _running(daemon.pod(name)), 60.0, "the pod Running in /pods")
    finally:
        daemon.stop()
    trace = read_trace(trace_dir)
    uid = next(p for p in (r["body"] for r in trace.messages()
                           if MESSAGES.short(r["type"]) == "UpdatePod")
               if p["pod"]["metadata"]["name"] == name)["pod"]["metadata"]["uid"]
    worker = names.worker_name(uid)
    first = next(r["m"] for r in trace.messages() if r["to"] == worker)
    # Until the status manager was told the container runs (what /pods showed).
    running_at = next(
        r["m"] for r in trace.messages()
        if r["to"] == names.STATUS and MESSAGES.short(r["type"]) == "PodObserved"
        and r["body"]["pod"]["metadata"]["uid"] == uid
        and any(c["state"] == ContainerState.RUNNING
                for c in r["body"]["runtime"]["container_statuses"]))
    calls = calls_in(trace.records, since=first, until=running_at)
    counted = {m: c.count for m, c in count_by_method(calls).items()}
    print(f"\nCRI calls of one pod start on containerd, first sync -> Running: {counted}")
    print(f"by actor: {count_by_actor(calls, names.actor_group)}")
    for method in ("run_pod_sandbox", "image_status", "create_container", "start_container"):
        assert counted.get(method) == 1, (method, counted)
    assert "pull_image" not in counted
    by_actor = count_by_actor(calls, names.actor_group)
    # The worker reads its pod's status right after its start and reports it, before
    # the relist its sync asks for (which then makes no second sync); a new pod lists
    # nothing of itself.
    worker_calls = by_actor.get(names.actor_group(worker), {})
    assert "list_pod_sandbox" not in worker_calls and "list_containers" not in worker_calls, \
        by_actor
    assert worker_calls.get("container_status") == 1, by_actor
    # The PLEG relists only for a cause of its own (the task starts make none).
    assert by_actor.get(names.PLEG, {}).get("list_containers", 0) <= 1, by_actor
    syncs = [r for r in trace.messages()
             if r["to"] == worker and MESSAGES.short(r["type"]) == "RunPending"]
    assert len(syncs) == 1, "one sync from the manifest to Running"
