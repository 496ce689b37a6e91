"""Every restart drill (kubelet-actors drill NAME) on a real containerd, as CI runs them:
each drill on a few seeds, side by side in slots of the drills' bed, every run's trace
replayed.

The drills take the machine-wide e2e lock themselves when run from the command line; here
the session already holds it (e2e_lock) and serves the registry, so the sweep does neither.
KUBELET_ACTORS_DRILL_SEEDS picks the seeds (default 1-2: the suite's time budget; a long
sweep is ``kubelet-actors drill --all --seeds 1-1000``), KUBELET_ACTORS_DRILL_JOBS the
drills run side by side (default: one per CPU).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.drills.api_drills import API_DRILL_NAMES
from actors.app.drills.catalog import DRILLS as ALL_DRILLS
from actors.app.drills.runner import Verdict
from actors.app.drills.sweep import SweepPlan, default_jobs, parse_seeds, run_sweep
from actors.app.testbed import HeldLock

pytestmark = pytest.mark.e2e

# The API drills run once each in test_api_drills_emulated_apiserver.py.
DRILLS = {name: d for name, d in ALL_DRILLS.items() if name not in API_DRILL_NAMES}
SEEDS = parse_seeds(os.environ.get("KUBELET_ACTORS_DRILL_SEEDS", "1-2"))
JOBS = int(os.environ.get("KUBELET_ACTORS_DRILL_JOBS", str(default_jobs())))
SWEEP_TIMEOUT_S = 900  # the whole sweep runs in the first test's setup


@pytest.fixture(scope="module")
def sweep(registry: object, e2e_lock: HeldLock,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Verdict]]]:
    """Every drill on every seed, once for the module: the verdicts by drill."""
    root: Path = tmp_path_factory.mktemp("drill-traces")
    plan = SweepPlan(tuple(DRILLS), SEEDS, JOBS, root)
    verdicts = run_sweep(plan, lambda v: None, take_lock=False, serve_registry=False)
    by_drill: dict[str, list[Verdict]] = {name: [] for name in DRILLS}
    for verdict in verdicts:
        by_drill[verdict.name].append(verdict)
    yield by_drill


@pytest.mark.timeout(SWEEP_TIMEOUT_S)
@pytest.mark.parametrize("name", list(DRILLS))
def test_drill(name: str, sweep: dict[str, list[Verdict]]) -> None:
    verdicts = sweep[name]
    assert sorted(v.seed for v in verdicts) == sorted(SEEDS)
    for verdict in verdicts:
        report = "\n".join([verdict.line(), *verdict.notes])
        assert not verdict.failed, report
        # Every drill's trace replays against this code exactly, faults and restarts
        # included: a divergence anywhere is a failure of the drill.
        assert not verdict.diverged, report
        assert verdict.replay.count("no divergence") >= 1, report
