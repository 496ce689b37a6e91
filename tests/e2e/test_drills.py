"""Every restart drill (kubelet-actors drill NAME) on a real containerd, as CI runs them.

The drills take the machine-wide e2e lock themselves when run from the command line; here
the session already holds it (e2e_lock) and serves the registry, so they do neither.
KUBELET_ACTORS_DRILL_SEED picks the fault plans' seed (default 0).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from actors.app.drills.catalog import DRILLS
from actors.app.drills.env import session
from actors.app.drills.runner import run_drill
from actors.app.testbed import HeldLock

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("KUBELET_ACTORS_DRILL_SEED", "0"))


@pytest.mark.parametrize("name", list(DRILLS))
def test_drill(name: str, registry: object, e2e_lock: HeldLock, tmp_path: Path) -> None:
    with session(take_lock=False, serve_registry=False):
        verdict = run_drill(DRILLS[name], SEED, tmp_path / "traces")
    report = "\n".join([verdict.line(), *verdict.notes])
    assert verdict.ok, report
    # Every drill's trace replays against this code, faults and restarts included.
    assert verdict.replay and "DIVERGENCE" not in verdict.replay, report
