"""The drills' verdicts, sweeps and exit status, without containerd: a divergence fails a
run, failures and divergences are counted apart, seeds parse, batches let the lock go."""

from __future__ import annotations

import contextlib
import queue
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

import pytest

from actors.app.drills import catalog, cli, runner, sweep
from actors.app.drills.runner import Verdict, replay_traces
from actors.app.drills.sweep import (
    LOCK_GAP_S,
    InlineExecutor,
    SweepPlan,
    parse_seeds,
    run_sweep,
)
from actors.app.testbed import DRILLS, TestbedError
from runtime.kuberuntime import actions
from tests.traces.scenarios import restart_and_remove

DIVERGENCE = "DIVERGENCE at #9 pleg (incarnation 1) handling Tick: runtime call 1 differs"


def verdict(name: str = "kill-pleg", seed: int = 1, step: str = "", divergence: str = "",
            recovery: float | None = 1.0) -> Verdict:
    return Verdict(name, seed, Path("/nonexistent") / name, step=step,
                   detail="it broke" if step else "", recovery=recovery,
                   divergence=divergence, duration=2.0)


# --- the verdict -------------------------------------------------------------------------


def test_a_run_that_diverges_fails_with_the_divergence_as_its_reason() -> None:
    diverged = verdict(divergence=DIVERGENCE)
    assert not diverged.ok and diverged.diverged and not diverged.failed
    assert diverged.outcome == "DIVERGED"
    assert diverged.reasons() == [f"replay: {DIVERGENCE}"]
    assert diverged.line().startswith(f"DIVERGED kill-pleg | replay: {DIVERGENCE} |")


def test_failed_and_diverged_are_two_findings() -> None:
    both = verdict(step="recover", divergence=DIVERGENCE)
    assert both.outcome == "FAIL" and both.failed and both.diverged
    assert both.reasons() == ["failed step: recover: it broke", f"replay: {DIVERGENCE}"]
    passed = verdict()
    assert passed.ok and passed.outcome == "PASS" and passed.reasons() == []


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("drill") / "run1"
    restart_and_remove(run)
    return run


def test_replay_of_a_faithful_trace_finds_no_divergence(recorded: Path, tmp_path: Path) -> None:
    notes: list[str] = []
    found, divergence = replay_traces([recorded], tmp_path / "scratch", notes)
    assert found.startswith("no divergence (") and divergence == "" and notes == []
    assert not (tmp_path / "scratch").exists()


def test_replay_of_changed_code_is_a_divergence_with_its_report(
    recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(actions, "should_container_be_restarted", lambda *args: False)
    notes: list[str] = []
    found, divergence = replay_traces([recorded, recorded], tmp_path / "scratch", notes)
    assert divergence.startswith("run1: DIVERGENCE at #") and "pod/u1" in divergence
    assert found.count("DIVERGENCE") == 2
    report = notes[0].splitlines()
    assert report[0].startswith("divergence at delivery #")
    assert any(line.split("|")[0].strip() == "field" for line in report)
    assert "  caused by (newest first):" in report


def test_an_unreadable_trace_is_a_divergence(tmp_path: Path) -> None:
    found, divergence = replay_traces([tmp_path / "nothing"], tmp_path / "scratch", [])
    assert divergence == found and "unreadable trace" in divergence


def test_a_replay_that_crashes_is_a_divergence(recorded: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise KeyError("no such actor")

    monkeypatch.setattr(runner, "replay", broken)
    found, divergence = replay_traces([recorded], tmp_path / "scratch", [])
    assert divergence == found == "replay crashed: KeyError: 'no such actor'"


# --- seeds, slots, the summary and the exit status ---------------------------------------


def test_seeds_parse_as_seeds_and_ranges_each_once() -> None:
    assert parse_seeds("5") == (5,)
    assert parse_seeds("1-3,7") == (1, 2, 3, 7)
    assert parse_seeds("3,1-4") == (3, 1, 2, 4)
    assert len(parse_seeds("1-1000")) == 1000
    for bad in ("x", "1-", "5-2", "-3", "1,,2"):
        with pytest.raises(ValueError, match="seed"):
            parse_seeds(bad)


def test_the_summary_counts_passes_failures_and_divergences_apart() -> None:
    runs = [verdict(seed=1, recovery=1.0), verdict(seed=2, step="recover", recovery=None),
            verdict(seed=3, divergence=DIVERGENCE, recovery=3.0),
            verdict(seed=4, recovery=2.0), verdict("flood-mailbox", seed=1, recovery=None)]
    pleg, flood = cli.summarize(runs)
    assert (pleg.drill, pleg.runs, pleg.passed, pleg.failed, pleg.diverged) == (
        "kill-pleg", 4, 2, 1, 1)
    assert (pleg.recovery_p50, pleg.recovery_max, pleg.bad_seeds) == (2.0, 3.0, (2, 3))
    assert flood.passed == 1 and flood.recovery_p50 is None and flood.bad_seeds == ()


def test_the_exit_status_fails_on_any_failure_or_divergence() -> None:
    assert cli.exit_status([verdict(), verdict(seed=2)]) == cli.EXIT_OK
    assert cli.exit_status([verdict(), verdict(divergence=DIVERGENCE)]) == cli.EXIT_FAILED
    assert cli.exit_status([verdict(step="recover")]) == cli.EXIT_FAILED
    assert cli.exit_status([]) == cli.EXIT_FAILED  # nothing ran: nothing passed


@pytest.fixture
def canned(monkeypatch: pytest.MonkeyPatch) -> list[SweepPlan]:
    """The command on canned verdicts: each seed's kill-pleg passes, except seed 2 (a
    failed step) and seed 3 (diverged); the plans it was given are kept."""
    plans: list[SweepPlan] = []

    def fake(plan: SweepPlan, on_verdict: object, take_lock: bool = True,
             serve_registry: bool = True) -> list[Verdict]:
        plans.append(plan)
        out = [verdict(run.drill, run.seed, step="recover" if run.seed == 2 else "",
                       divergence=DIVERGENCE if run.seed == 3 else "") for run in plan.runs()]
        for v in out:
            assert callable(on_verdict)
            on_verdict(v)
        return out

    monkeypatch.setattr(cli, "run_sweep", fake)
    return plans


def test_the_command_exits_1_on_a_divergence_and_counts_it_apart(
    canned: list[SweepPlan], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["kill-pleg", "--seeds", "1,3-4", "--jobs", "2"]) == cli.EXIT_FAILED
    (plan,) = canned
    assert plan.drills == ("kill-pleg",) and plan.seeds == (1, 3, 4) and plan.jobs == 2
    out = capsys.readouterr().out
    assert "3 runs: 2 passed, 0 failed, 1 diverged" in out
    assert f"DIVERGED kill-pleg seed 3: replay: {DIVERGENCE}" in out
    assert cli.main(["kill-pleg", "--seeds", "1-2"]) == cli.EXIT_FAILED
    assert "2 runs: 1 passed, 1 failed, 0 diverged" in capsys.readouterr().out
    assert cli.main(["kill-pleg", "--seed", "4"]) == cli.EXIT_OK


def test_the_command_runs_no_more_jobs_than_runs_and_refuses_bad_options(
    canned: list[SweepPlan], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--all", "--seed", "1", "--jobs", "16"]) == cli.EXIT_OK
    assert canned[-1].jobs == 16 and len(canned[-1].runs()) == len(catalog.DRILLS)
    assert cli.main(["kill-pleg", "--seed", "1", "--jobs", "0"]) == cli.EXIT_USAGE
    assert "--jobs 0" in capsys.readouterr().err
    for bad in (["kill-pleg", "--seeds", "9-1"], ["kill-pleg", "--seed", "1", "--seeds", "2"]):
        with pytest.raises(SystemExit) as exited:
            cli.main(bad)
        assert exited.value.code == cli.EXIT_USAGE


# --- sweeps: batches under the lock, workers, slots ----------------------------------------


class Clock:
    """Virtual time: each run takes ``per_run`` seconds of it."""

    def __init__(self, per_run: float) -> None:
        self.now = 0.0
        self.per_run = per_run

    def __call__(self) -> float:
        return self.now


def test_a_sweep_lets_the_lock_go_between_batches_and_runs_seed_by_seed(tmp_path: Path) -> None:
    clock = Clock(per_run=4.0)
    batches: list[str] = []
    pauses: list[float] = []

    @contextlib.contextmanager
    def batch() -> Iterator[None]:
        batches.append("taken")
        yield
        batches.append("let go")

    def work(name: str, seed: int, root: str, keep: bool) -> Verdict:
        assert batches[-1] == "taken"  # never runs without the lock
        clock.now += clock.per_run
        return verdict(name, seed)

    plan = SweepPlan(("a", "b"), (1, 2, 3), 1, tmp_path, batch_s=10.0)
    seen: list[Verdict] = []
    verdicts = run_sweep(plan, seen.append, batch=batch, pool=lambda: contextlib.nullcontext(
        InlineExecutor()), clock=clock, pause=pauses.append, work=work)
    assert [(v.name, v.seed) for v in verdicts] == [
        ("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3), ("b", 3)]
    assert seen == verdicts
    # Runs start at 0, 4 and 8 s into a batch; at 12 s the batch lets the lock go.
    assert batches == ["taken", "let go"] * 2 and pauses == [LOCK_GAP_S]


def test_under_a_lock_held_by_the_caller_a_sweep_is_one_batch(tmp_path: Path) -> None:
    clock = Clock(per_run=1000.0)
    batches: list[int] = []

    @contextlib.contextmanager
    def batch() -> Iterator[None]:
        batches.append(1)
        yield

    def work(name: str, seed: int, root: str, keep: bool) -> Verdict:
        clock.now += clock.per_run
        return verdict(name, seed)

    plan = SweepPlan(("a",), (1, 2, 3), 1, tmp_path, batch_s=1.0)
    verdicts = run_sweep(plan, lambda v: None, take_lock=False,
                         batch=batch,
                         pool=lambda: contextlib.nullcontext(InlineExecutor()), clock=clock,
                         pause=lambda s: pytest.fail("paused"), work=work)
    assert len(verdicts) == 3 and batches == [1]


def crash_on_seed_2(name: str, seed: int, root: str, keep: bool) -> Verdict:
    if seed == 2:
        raise RuntimeError("worker gone")
    return verdict(name, seed)


def test_parallel_runs_all_come_back_and_a_dead_worker_fails_its_run(tmp_path: Path) -> None:
    @contextlib.contextmanager
    def threads() -> Iterator[Executor]:
        with ThreadPoolExecutor(3) as pool:
            yield pool

    plan = SweepPlan(("a", "b"), (1, 2, 3), 3, tmp_path)
    verdicts = run_sweep(plan, lambda v: None, batch=contextlib.nullcontext, pool=threads,
                         work=crash_on_seed_2)
    assert sorted((v.name, v.seed) for v in verdicts) == sorted(
        (name, seed) for name in "ab" for seed in (1, 2, 3))
    dead = [v for v in verdicts if not v.ok]
    assert {v.seed for v in dead} == {2} and all(v.step == "worker" for v in dead)
    assert "RuntimeError: worker gone" in dead[0].detail


def test_jobs_beyond_the_slots_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TestbedError, match="--jobs 17"):
        run_sweep(SweepPlan(("a",), (1,), 17, tmp_path), lambda v: None)


def test_each_worker_takes_a_slot_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep, "configure_logging", lambda level: None)
    slots: queue.Queue[int] = queue.Queue()
    for n in (0, 3):
        slots.put(n)
    sweep._start_worker(slots, "CRITICAL")
    assert sweep._slot == DRILLS
    sweep._start_worker(slots, "CRITICAL")
    assert sweep._slot == DRILLS.slot(3) and sweep._slot.bridge == "kad3"
    monkeypatch.setattr(sweep, "_slot", DRILLS)


def test_a_passing_run_s_trace_goes_unless_kept(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_drill(drill: object, seed: int, root: Path, bed: object) -> Verdict:
        (root / "kill-pleg" / "run1").mkdir(parents=True)
        return Verdict("kill-pleg", seed, root / "kill-pleg",
                       divergence=DIVERGENCE if seed == 3 else "")

    monkeypatch.setattr(sweep, "run_drill", fake_drill)
    assert sweep.run_one("kill-pleg", 1, str(tmp_path), keep=False).ok
    assert not (tmp_path / "seed-1").exists()
    assert sweep.run_one("kill-pleg", 2, str(tmp_path), keep=True).ok
    assert (tmp_path / "seed-2" / "kill-pleg" / "run1").is_dir()
    assert not sweep.run_one("kill-pleg", 3, str(tmp_path), keep=False).ok
    assert (tmp_path / "seed-3" / "kill-pleg" / "run1").is_dir()


def test_a_sweep_that_loses_the_test_bed_still_sums_up_what_ran(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def half(plan: SweepPlan, on_verdict: Callable[[Verdict], None], take_lock: bool = True,
             serve_registry: bool = True) -> list[Verdict]:
        for run in plan.runs()[:2]:
            on_verdict(verdict(run.drill, run.seed))
        raise TestbedError("the lock is still held after 600 s")

    roots: list[Path] = []

    def traces_dir(prefix: str) -> str:
        roots.append(tmp_path / prefix)
        roots[-1].mkdir()
        return str(roots[-1])

    monkeypatch.setattr(cli, "run_sweep", half)
    monkeypatch.setattr(tempfile, "mkdtemp", traces_dir)
    assert cli.main(["kill-pleg", "--seeds", "1-4"]) == cli.EXIT_FAILED
    assert len(roots) == 1 and not roots[0].exists()  # nothing to keep: removed
    captured = capsys.readouterr()
    assert "2 runs: 2 passed, 0 failed, 0 diverged" in captured.out
    assert "still held after 600 s (after 2 of 4 runs)" in captured.err


def test_without_the_source_tree_the_api_drills_are_listed_refused_and_not_run(
    canned: list[SweepPlan], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """From an installed wheel (no tests/apiserver): --list says why, a named API drill is
    a usage error, --all runs the others and reports each API drill NOT RUN."""
    from actors.app.drills.api_drills import API_DRILL_NAMES

    why = "needs the emulated API server (tests/apiserver), which is in a source checkout"
    monkeypatch.setattr(catalog, "emulator_missing", lambda: why)
    assert cli.main(["--list"]) == cli.EXIT_OK
    listed = capsys.readouterr().out
    assert listed.count("[cannot run here: needs the emulated API server") == 7
    assert cli.main(["api-500s", "--seed", "1"]) == cli.EXIT_USAGE
    assert f"api-500s {why}" in capsys.readouterr().err
    assert cli.main(["--all", "--seed", "1"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert all(f"NOT RUN {name}: {why}" in out for name in API_DRILL_NAMES)
    assert not set(canned[-1].drills) & API_DRILL_NAMES
    assert len(canned[-1].drills) == len(catalog.DRILLS) - len(API_DRILL_NAMES)
