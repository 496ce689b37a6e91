"""Every API drill (kubelet-actors drill api-...) once, on a fixed seed, side by side: the
kubelet on a real containerd joined to an emulated API server (subprocess, TLS), the fault,
the verdict, and the replay of every run's trace.

The restart drills run in test_drills.py on a few seeds; the API drills run here once each
(they wait on the lease and the status resync, so a seed sweep of them is for
``kubelet-actors drill api-500s ... --seeds 1-50``). The session holds the machine-wide lock
and serves the registry, so the sweep does neither. The drills share nothing (a slot of the
drills' bed, an API server and a kubelet each), so they run up to four at a time: they
mostly wait.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.drills.api_drills import API_DRILLS
from actors.app.drills.runner import Verdict
from actors.app.drills.sweep import SweepPlan, run_sweep
from actors.app.testbed import HeldLock

pytestmark = pytest.mark.e2e

SEED = 7
JOBS = 4
SWEEP_TIMEOUT_S = 600
NAMES = [d.name for d in API_DRILLS]


@pytest.fixture(scope="module")
def sweep(registry: object, e2e_lock: HeldLock,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Verdict]]:
    root: Path = tmp_path_factory.mktemp("api-drill-traces")
    plan = SweepPlan(tuple(NAMES), (SEED,), JOBS, root)
    verdicts = run_sweep(plan, lambda v: None, take_lock=False, serve_registry=False)
    yield {v.name: v for v in verdicts}


@pytest.mark.timeout(SWEEP_TIMEOUT_S)
@pytest.mark.parametrize("name", NAMES)
def test_api_drill_emulated_apiserver(name: str, sweep: dict[str, Verdict]) -> None:
    verdict = sweep[name]
    report = "\n".join([verdict.line(), *verdict.notes])
    assert not verdict.failed, report
    assert not verdict.diverged, report
    assert "no divergence" in verdict.replay, report
