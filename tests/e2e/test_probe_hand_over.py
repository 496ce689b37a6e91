"""A restarted probe manager continues its results, on containerd: the kill-probes-ready
drill (actors.app.drills.probe_drills) run as an e2e test.

The drill starts the daemon's kubelet on a containerd of its own with a fault plan, kills
the probe manager on a probe answer while a pod with a readiness probe is Ready, and GETs
/pods every 50 ms through the restart: Ready must never flip. Its trace (the fault, the
hand-over and the successor made from it included) must replay without divergence.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.drills.probe_drills import PROBE_DRILLS
from actors.app.drills.sweep import SweepPlan, run_sweep
from actors.app.testbed import HeldLock

pytestmark = pytest.mark.e2e

SEEDS = (1, 2)  # one fault as the handler begins, one as it returns (drawn per seed)


@pytest.mark.timeout(900)
def test_a_ready_pod_stays_ready_through_a_probe_manager_crash(
        registry: object, e2e_lock: HeldLock, tmp_path: Path) -> None:
    names = tuple(d.name for d in PROBE_DRILLS)
    plan = SweepPlan(names, SEEDS, 1, tmp_path / "drill-traces")
    verdicts = run_sweep(plan, lambda v: None, take_lock=False, serve_registry=False)
    assert sorted(v.seed for v in verdicts) == sorted(SEEDS)
    for verdict in verdicts:
        report = "\n".join([verdict.line(), *verdict.notes])
        assert not verdict.failed, report
        assert not verdict.diverged, report
        assert verdict.replay.count("no divergence") >= 1, report
        assert any("fault: probes" in note for note in verdict.notes), report
