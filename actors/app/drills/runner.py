"""Running one drill: its world, its steps, the final invariants, cleanup, and replay."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger

from actors.app.drills import invariants
from actors.app.drills.env import DrillFailed, Env
from actors.app.testbed import DRILLS, Bed
from actors.core.trace.reader import TraceError, read_trace
from actors.core.trace.replay import replay
from actors.kubelet import names
from actors.kubelet.sync_loop import KUBELET_SUPERVISION
from actors.kubelet.trace import KubeletWorld


@dataclass(frozen=True, slots=True)
class Drill:
    name: str
    checks: str  # one line: what the drill does and expects
    run: Callable[[Env], None]


@dataclass(slots=True)
class Verdict:
    """What one run of a drill (one seed) came to.

    Two findings, counted apart: the drill failed (a step or an invariant did not hold:
    ``step`` and ``detail``), and its trace's replay diverged from the recording
    (``divergence``). Either fails the run; ``ok`` is neither.
    """

    name: str
    seed: int
    trace_dir: Path
    step: str = ""  # the failed step; "" when every step and invariant held
    detail: str = ""
    recovery: float | None = None  # fault to invariants holding again, seconds
    duration: float = 0.0
    replay: str = ""  # what replay found in each run's trace, for the record
    divergence: str = ""  # the first divergence found, one line; "" when there is none
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.step)

    @property
    def diverged(self) -> bool:
        return bool(self.divergence)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.diverged

    @property
    def outcome(self) -> str:
        """PASS, FAIL (a step failed, whatever replay found) or DIVERGED (only replay)."""
        return "FAIL" if self.failed else "DIVERGED" if self.diverged else "PASS"

    def reasons(self) -> list[str]:
        """Why the run failed: the failed step, the divergence; empty when it passed."""
        out = [f"failed step: {self.step}: {self.detail}"] if self.failed else []
        return out + ([f"replay: {self.divergence}"] if self.diverged else [])

    def line(self) -> str:
        parts = [f"{self.outcome} {self.name}", *self.reasons()]
        parts.append("recovery " + (f"{self.recovery:.2f} s" if self.recovery is not None
                                    else "-"))
        parts.append(f"seed {self.seed}")
        if not self.diverged:
            parts.append(f"replay: {self.replay}")
        parts.append(f"trace {self.trace_dir} (kubelet-actors trace replay "
                     f"{self._replay_target()})")
        return " | ".join(parts)

    def _replay_target(self) -> Path:
        runs = sorted(self.trace_dir.glob("run*"))
        return runs[0] if len(runs) == 1 else self.trace_dir / "runN"


def final_checks(env: Env) -> None:
    """What must hold at the end of every drill, on top of its own steps."""
    with env.step("final invariants"):
        if env.violations:
            raise env.fail("while the drill ran: " + "; ".join(env.violations[:4]))
        if env.kubelet is not None:
            problems = invariants.unhandled_dead_letters(
                env.kubelet.dispatch.dead_letters_unhandled)
            if problems:
                raise env.fail("; ".join(problems))


def intensity_problems(env: Env) -> list[str]:
    """Restart intensity, from the supervisor's decisions in the trace: at most MaxR
    restarts in MaxT, an escalation past that, and one only when the drill expects it."""
    spec = env.supervision or KUBELET_SUPERVISION
    problems: list[str] = []
    for trace_dir in env.trace_dirs:
        try:
            records = read_trace(trace_dir).records
        except TraceError:
            continue
        decisions = [r for r in records if r["k"] == "decision" and r.get("actor") ==
                     names.SYNC_LOOP and r.get("what") in ("restart", "escalate")]
        escalated = any(r["what"] == "escalate" for r in decisions)
        problems += invariants.restart_intensity([float(r["m"]) for r in decisions],
                                                 spec.max_restarts, spec.within, escalated)
        if escalated and not env.expect_escalation:
            problems.append("the supervisor escalated (gave up) unexpectedly")
    if env.expect_escalation and not any("escalat" in n for n in env.notes):
        problems.append("the supervisor did not escalate")
    return problems


def run_drill(drill: Drill, seed: int, trace_root: Path, bed: Bed = DRILLS) -> Verdict:
    """Run ``drill`` in a world of its own (a containerd in ``bed``, one of the drills'
    slots), check it, replay its trace; always cleans up; never raises."""
    started = time.monotonic()
    env: Env | None = None
    verdict = Verdict(drill.name, seed, trace_root / drill.name)
    try:
        env = Env(drill.name, seed, trace_root, bed)
        drill.run(env)
        final_checks(env)
    except DrillFailed as failed:
        verdict.step, verdict.detail = failed.step, failed.detail
    except Exception as err:
        logger.opt(exception=err).error("drill {} crashed", drill.name)
        verdict.step = env.step_name if env is not None else "setup"
        verdict.detail = f"{type(err).__name__}: {err}"
    finally:
        if env is not None:
            try:
                env.close()
            except Exception as err:
                logger.opt(exception=err).error("drill {}: cleanup failed", drill.name)
                verdict.step = verdict.step or "cleanup"
                verdict.detail = verdict.detail or f"{type(err).__name__}: {err}"
    if env is not None:
        verdict.notes = env.notes
        fault_at = env.fault_at if env.fault_at is not None else env.plan.first_fired
        if fault_at is not None and env.recovered_at is not None:
            verdict.recovery = max(env.recovered_at - fault_at, 0.0)
        if not verdict.failed:
            problems = intensity_problems(env)
            if problems:
                verdict.step, verdict.detail = "restart intensity", "; ".join(problems)
        verdict.replay, verdict.divergence = replay_traces(
            env.trace_dirs, env.trace_dir / ".replay-scratch", env.notes)
    verdict.duration = time.monotonic() - started
    return verdict


def replay_traces(trace_dirs: list[Path], scratch: Path, notes: list[str]) -> tuple[str, str]:
    """Replay each recorded run of a drill against this code, every actor and every
    delivery, the injected faults included (they are recorded inputs: a faulted handler
    stops in replay where it stopped when recorded).

    Returns what replay found, for the record, and the first divergence in one line ("" if
    none); the full report of a divergence (fields, causal chain) goes to ``notes``. An
    unreadable trace, or a replay that crashes, is a divergence too: nothing vouches for
    the run's replay. Never raises, so a drill's verdict always comes.
    """
    results: list[str] = []
    divergence = ""
    for trace_dir in trace_dirs:
        label = f"{trace_dir.name}: " if len(trace_dirs) > 1 else ""
        try:
            trace = read_trace(trace_dir)
        except TraceError as err:
            found = f"{label}unreadable trace: {err}"
            results.append(found)
            divergence = divergence or found
            continue
        try:
            report = replay(trace, KubeletWorld(), scratch_dir=str(scratch))
        except Exception as err:  # replay itself broke: nothing vouches for the run
            logger.opt(exception=err).error("replay of {} crashed", trace_dir)
            found = f"{label}replay crashed: {type(err).__name__}: {err}"
            results.append(found)
            divergence = divergence or found
            continue
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        div = report.divergence
        if div is None:
            results.append(f"{label}no divergence ({report.replayed} deliveries)")
            continue
        found = (f"{label}DIVERGENCE at #{div.delivery} {div.actor} (incarnation "
                 f"{div.incarnation}) handling {div.message}: {div.step}")
        results.append(found)
        divergence = divergence or found
        notes.append("\n".join(div.describe()))
    return "; ".join(results) or "no trace", divergence
