"""A node that sees many pods come and go: what the memory tests churn and measure.

``ChurnNode`` is the kubelet's tree on the fake runtime in virtual time (a RecordedNode with
events, metrics, probe metrics and garbage collection on), and ``per_pod_sizes`` reads the
size of every structure an actor keeps per pod or per container, so a test can churn N pods
and check each one is back where it started. bench.churn_memory drives the same node
through thousands of cycles.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.kubelet import names
from actors.kubelet.gc_settings import GCSettings
from actors.kubelet.metrics import KubeletMetrics
from actors.kubelet.probe_metrics import ProbeMetrics
from runtime.cri.types import ContainerFilter
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.container_gc import ContainerGCPolicy
from runtime.pod.model import Container, ExecAction, ObjectMeta, Pod, PodSpec, Probe
from tests.traces.scenarios import IMAGE, RecordedNode

GC = GCSettings(containers=ContainerGCPolicy(min_age=0.0, max_per_pod_container=1),
                container_gc_period=5.0)
"""Dead containers go within seconds, one kept per container (upstream's default)."""


def probed_pod(uid: str, name: str) -> Pod:
    """A pod whose container has all three probes (exec: the fake runtime answers 0)."""
    probe = Probe(exec=ExecAction(command=("probe", uid)), period_seconds=1,
                  failure_threshold=1)
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=uid,
                            annotations={"kubernetes.io/config.source": "file"}),
        spec=PodSpec(containers=(Container(
            name="c", image=IMAGE, image_pull_policy="IfNotPresent", liveness_probe=probe,
            readiness_probe=probe, startup_probe=probe),),
            restart_policy="Always", termination_grace_period_seconds=1),
    )


class ChurnNode:
    """The kubelet's tree on the fake runtime, with every part that keeps per-pod state."""

    def __init__(self) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix="churn-"))
        self.metrics = KubeletMetrics()
        self.probe_metrics = ProbeMetrics()
        self.node = RecordedNode(self.scratch / "trace", self.scratch, gc=GC,
                                 metrics=self.metrics, probe_metrics=self.probe_metrics)

    def close(self) -> None:
        self.node.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def actor(self, name: str) -> Any:
        """The live actor at ``name`` (its state is read only while the node is idle)."""
        ref = self.node.dispatch.ref(name)
        actor = ref._actor_weakref() if ref is not None else None
        assert actor is not None, f"no live actor at {name}"
        return actor

    def run_until(self, what: str, done: Callable[[], bool], limit: float = 900.0) -> None:
        """Move virtual time a second at a time (settling after each) until ``done``."""
        waited = 0.0
        while not done():
            assert waited < limit, f"{what}: not within {limit:g} virtual seconds"
            self.node.advance(1.0)
            waited += 1.0

    def containers_of(self, uid: str) -> list[str]:
        found = self.node.fake.list_containers(ContainerFilter(label_selector={L.POD_UID: uid}))
        return [c.id for c in found]

    def sandboxes_of(self, uid: str) -> list[str]:
        return [s.id for s in self.node.fake.list_pod_sandbox() if s.metadata.uid == uid]

    def churn(self, kept: tuple[Pod, ...], uid: str, name: str) -> None:
        """One pod created beside ``kept``, run until probed ready, deleted until gone."""
        self.node.snapshot(*kept, probed_pod(uid, name))
        self.run_until(f"{name} running", lambda: len(self.node.running(uid)) == 1)
        self.node.advance(3.0)  # its probes run and flip
        self.node.snapshot(*kept)
        self.run_until(f"{name} gone", lambda: not self.sandboxes_of(uid)
                       and not self.containers_of(uid))
        self.node.advance(3.0)  # housekeeping forgets its worker


def series(registry: Any) -> int:
    """How many label sets a prometheus registry holds (a child per set, until removed)."""
    return sum(len(metric.samples) for metric in registry.collect())


def per_pod_sizes(c: ChurnNode) -> dict[str, int]:
    """The size of each structure that holds something per pod or per container."""
    loop, status, probes = (c.actor(names.SYNC_LOOP), c.actor(names.STATUS),
                            c.actor(names.PROBES))
    pleg, killer = c.actor(names.PLEG), c.actor(names.KILLER)
    manager = killer._manager
    dispatch = c.node.dispatch
    return {
        "sync loop desired": len(loop._desired),
        "sync loop workers": len(loop._workers),
        "sync loop requeue": len(loop._requeue_at),
        "sync loop verdicts": len(loop._verdicts),
        "sync loop verdicts by container": sum(
            len(v.liveness) + len(v.startup) for v in loop._verdicts.values()),
        "sync loop restart, killing, rejected": len(loop._restart) + len(loop._killing)
        + len(loop._rejected),
        "sync loop waiting": len(loop._waiting),
        "sync loop pod config": sum(len(p) for p in loop._config._admitted.values()),
        "supervised children": len(loop.supervision._children),
        "status pods": len(status._pods),
        "status verdicts by container": sum(
            len(e.readiness) + len(e.startup) for e in status._pods.values()),
        "status published": len(status._published),
        "probe workers": len(probes._workers),
        "probe pods": len(probes._by_pod),
        "probe touched": len(probes._touched),
        "probe saved": len(probes._saved),
        "pleg pods": len(pleg._states or {}),
        "pleg expected, unknown starts": len(pleg._expected) + len(pleg._unknown_starts),
        "killer in flight": len(killer._in_flight),
        "crash back-off keys": len(manager.containers.crash_backoff),
        "image back-off keys": len(manager.images.backoff),
        "dispatch names": len(dispatch.names()),
        "dispatch parents": len(dispatch._parents),
        "dispatch sender sequences": len(dispatch._sender_seq),
        "metric series": series(c.metrics.registry),
        "probe metric series": series(c.probe_metrics.registry),
    }
