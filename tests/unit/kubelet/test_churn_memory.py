"""A long-running node must not keep anything per pod it has ever seen.

Pods are created and deleted one after another (each with all three probes), and a
probed pod crash-loops; afterwards every per-pod and per-container structure of the
kubelet's actors is back at its size before the churn (counts, not bytes).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.core.dispatch import Dispatch
from actors.kubelet import names
from actors.kubelet.events import RING
from actors.kubelet.messages import ProbeKind
from actors.kubelet.probe_metrics import ProbeMetrics
from runtime.events.correlator import MAX_LRU_CACHE_ENTRIES
from runtime.prober.results import ProbeResult
from tests.unit.kubelet.churn import ChurnNode, per_pod_sizes, probed_pod, series

CHURNED = 25


@pytest.fixture
def churn() -> Iterator[ChurnNode]:
    node = ChurnNode()
    try:
        yield node
    finally:
        node.close()


@pytest.mark.timeout(300)
def test_churned_pods_leave_nothing_behind(churn: ChurnNode) -> None:
    kept = (probed_pod("kept", "kept"),)
    churn.node.snapshot(*kept)
    churn.run_until("the kept pod running", lambda: len(churn.node.running("kept")) == 1)
    churn.churn(kept, "warm-up", "warm-up")  # the first pod's one-off state (image, events)
    baseline = per_pod_sizes(churn)
    assert baseline["probe metric series"] > 0, "the kept pod's probes are counted"
    for i in range(CHURNED):
        churn.churn(kept, f"churned-{i}", f"churned-{i}")
    after = per_pod_sizes(churn)
    grown = {k: (baseline[k], v) for k, v in after.items() if v != baseline[k]}
    assert not grown, f"after {CHURNED} pods came and went (before, after): {grown}"
    # The bounded ones fill towards their bound, as upstream's do.
    events = churn.actor(names.EVENTS)
    assert len(events._kept) <= RING
    assert len(events._correlator._logs) <= MAX_LRU_CACHE_ENTRIES


@pytest.mark.timeout(300)
def test_a_crash_loop_keeps_the_verdicts_of_the_containers_the_runtime_holds(
        churn: ChurnNode) -> None:
    """Probe verdicts are per container id: a crash-looping pod must not keep one for
    every container it ever ran, only for those the runtime still holds (the garbage
    collector keeps one dead one)."""
    pod = probed_pod("crashing", "crashing")
    churn.node.snapshot(pod)
    churn.run_until("the pod running", lambda: len(churn.node.running("crashing")) == 1)
    restarts = 5
    for n in range(restarts):
        (running,) = churn.node.running("crashing")
        churn.node.advance(3.0)  # its probes run and report
        churn.node.fake.exit_container(running, 1)
        churn.run_until(f"restart {n + 1}", lambda r=running: len(  # type: ignore[misc]
            churn.node.running("crashing")) == 1 and churn.node.running("crashing") != [r])
    churn.node.advance(3.0)
    churn.run_until("the dead containers collected",
                    lambda: len(churn.containers_of("crashing")) <= 2)
    churn.node.advance(3.0)  # a relist shows the removals
    held = set(churn.containers_of("crashing"))
    loop, status = churn.actor(names.SYNC_LOOP), churn.actor(names.STATUS)
    verdicts = loop._verdicts["crashing"]
    entry = status._pods["crashing"]
    for table in (verdicts.liveness, verdicts.startup, entry.readiness, entry.startup):
        assert set(table) <= held, f"verdicts of removed containers kept: {table}"
    # The running container's verdicts are there: pruning took only the removed ones.
    (current,) = churn.node.running("crashing")
    assert entry.readiness.get(current) == ProbeResult.SUCCESS


def test_sender_sequences_are_kept_only_while_recording_and_forgotten_with_the_sender() -> None:
    """Only a trace reads a sender's sequence: without one nothing is counted, and a
    child its supervisor forgets (a pod worker whose pod is gone) loses its count."""
    quiet = Dispatch()
    for i in range(50):
        quiet.tell("nobody", object(), sender=names.worker_name(f"u{i}"))
    assert len(quiet._sender_seq) == 0

    class Recorder:
        def delivery(self, *args: object, **kwargs: object) -> None:
            pass

    recording = Dispatch(recorder=Recorder())  # type: ignore[arg-type]
    for i in range(50):
        name = names.worker_name(f"u{i}")
        recording.adopt(name, names.SYNC_LOOP)
        recording.tell("nobody", object(), sender=name)
        recording.adopt(name, None)
    assert len(recording._sender_seq) == 0


def test_probe_series_of_a_stopped_worker_go() -> None:
    """prometheus-client keeps a child per label set until it is removed."""
    metrics = ProbeMetrics()
    for i in range(20):
        metrics.observe(ProbeKind.READINESS, ProbeResult.SUCCESS, "c", f"p{i}", "default",
                        f"u{i}")
        metrics.forget(ProbeKind.READINESS, "c", f"p{i}", "default", f"u{i}")
    assert series(metrics.registry) == 0
