"""Replay as a property (issue 16): kept cases (generated sequences that once diverged,
shrunk) record and replay without divergence. `python -m bench.replay_property` runs the
property at scale."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from loguru import logger

from tests.traces.sequences import KEPT, Runner, load_case


@pytest.fixture(scope="module")
def runner() -> Iterator[Runner]:
    # Every sync logs: hundreds of runs' worth would only slow the runs down.
    for package in ("actors", "runtime"):
        logger.disable(package)
    yield Runner()
    for package in ("actors", "runtime"):
        logger.enable(package)


CASES = sorted(KEPT.glob("*.json"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_kept_case_replays_without_divergence(runner: Runner, path: Path) -> None:
    case = load_case(path)
    outcome = runner.run(case.steps)
    assert outcome.divergence is None, f"{case.about}\n{outcome.report}"
