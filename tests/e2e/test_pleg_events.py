"""The event-driven PLEG on the real containerd: containerd 1.6 answers CRI
GetContainerEvents with UNIMPLEMENTED, so the chooser reads its events service, which reports
a container's start and exit, and the daemon's PLEG relists on the exit event rather than on
a tick."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import read_trace
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.containerd.event_sources import EventSourceChooser
from runtime.containerd.events import EventKind
from runtime.cri.client import CRIClient
from runtime.cri.container_events import CRIEventSubscription
from runtime.cri.runtime_events import EventSource
from runtime.testing.event_sink import CollectingSink
from tests.e2e.daemon import Daemon
from tests.e2e.test_daemon import manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e


def after_choice(states: list[str]) -> list[str]:
    """The states after the chooser's: a refusal slower than the probe window shows first
    as a CRI connection taken back."""
    if states[:1] == ["connected: cri"] and states[1:2] and states[1].startswith(
            "lost: GetContainerEvents UNIMPLEMENTED"):
        return states[2:]
    return states


def _container_id(pod: dict[str, Any]) -> str:
    (main,) = pod["status"]["containerStatuses"]
    return str(main["containerID"]).removeprefix("containerd://")


def test_containerd_events_drive_the_pleg_of_a_running_daemon(
    containerd: EmbeddedContainerd, cri: CRIClient
) -> None:
    workdir = containerd.base_dir / "pleg-events" / uuid.uuid4().hex[:8]
    manifests = workdir / "manifests"
    manifests.mkdir(parents=True)
    trace_dir = workdir / "trace"
    sink = CollectingSink()
    chooser = EventSourceChooser(containerd.endpoint)
    subscription = chooser(sink)
    daemon = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
                    "--trace-dir", str(trace_dir))
    try:
        wait_for(lambda: after_choice(sink.states) == ["connected: containerd"], 10.0,
                 "the test's own subscription")
        daemon.start()
        assert chooser.known_source == EventSource.CONTAINERD  # 1.6: no GetContainerEvents
        wait_for(lambda: "runtime events flowing" in daemon.log(), 30.0, "the PLEG's stream")
        assert "answered CRI GetContainerEvents with UNIMPLEMENTED" in daemon.log()
        assert "runtime events flowing (from containerd)" in daemon.log()
        wait_for(lambda: 'kubelet_actors_runtime_events_source{source="containerd"} 1.0'
                 in daemon.get("/metrics")[1], 10.0, "the source in /metrics")
        (manifests / "exits.yaml").write_text(
            manifest("exits", "sleep 2; exit 3", policy="Never"))
        name = "exits-e2e-node"
        status = wait_for(lambda: (p := daemon.pod(name)) and all(
            "containerID" in c for c in p["status"].get("containerStatuses") or [{}]) and p,
            60.0, "the pod's container")
        assert status
        container = _container_id(status)
        wait_for(lambda: (p := daemon.pod(name)) and p["status"].get("phase") == "Failed",
                 60.0, "the container's exit in /pods")
        wait_for(lambda: {e.kind for e in sink.of(container)} >= {
            EventKind.STARTED, EventKind.EXITED}, 10.0, "start and exit events")
        exits = [e for e in sink.of(container) if e.kind == EventKind.EXITED]
        assert exits[0].exit_code == 3
    finally:
        daemon.stop()
        subscription.stop()
    # never lost while containerd ran
    assert after_choice(sink.states) == ["connected: containerd"]

    # In the daemon's trace, the relist that found the container dead was made on an
    # event (the PLEG's RelistNow to itself), not on its once-a-second tick.
    trace = read_trace(Path(trace_dir))
    by_id = {r["id"]: r for r in trace.messages()}
    died = [r for r in trace.messages() if MESSAGES.short(r["type"]) == "Relisted"
            and any(e["type"] == "ContainerDied" and e.get("container_id") == container
                    for e in r["body"]["events"])]
    assert died, "no relist found the container dead"
    cause = by_id[died[0]["parent"]]
    assert MESSAGES.short(cause["type"]) == "RelistNow", cause
    assert died[0]["body"]["evented"] is True
    connected = [r for r in trace.messages()
                 if MESSAGES.short(r["type"]) == "RuntimeEventsConnected"]
    assert connected and all(r["body"]["source"] == "containerd" for r in connected)


def test_containerd_1_6_answers_get_container_events_unimplemented(
    containerd: EmbeddedContainerd
) -> None:
    """What the chooser relies on: the first call is answered at once with UNIMPLEMENTED
    (no connection comes and goes); without a fallback the subscription keeps retrying."""
    sink = CollectingSink()
    subscription = CRIEventSubscription(containerd.endpoint, sink, probe_window=5.0,
                                        retry_first=0.05, retry_max=0.1).start()
    try:
        wait_for(lambda: len(sink.states) >= 2, 20.0, "two refused calls")
    finally:
        subscription.stop()
    assert sink.events == []
    assert all(s.startswith("lost: GetContainerEvents UNIMPLEMENTED") for s in sink.states), (
        sink.states)
