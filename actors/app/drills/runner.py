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
    name: str
    ok: bool
    seed: int
    trace_dir: Path
    step: str = ""  # the failed step
    detail: str = ""
    recovery: float | None = None  # fault to invariants holding again, seconds
    duration: float = 0.0
    replay: str = ""  # "no divergence", or what diverged
    replay_finding: bool = False  # a divergence not explained by the injected fault
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        head = "PASS" if self.ok else "FAIL"
        parts = [f"{head} {self.name}"]
        if not self.ok:
            parts.append(f"failed step: {self.step}: {self.detail}")
        parts.append("recovery " + (f"{self.recovery:.2f} s" if self.recovery is not None
                                    else "-"))
        parts.append(f"seed {self.seed}")
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


def run_drill(drill: Drill, seed: int, trace_root: Path) -> Verdict:
    """Run ``drill`` in a world of its own; always cleans up; never raises."""
    started = time.monotonic()
    env: Env | None = None
    verdict = Verdict(drill.name, False, seed, trace_root / drill.name)
    try:
        env = Env(drill.name, seed, trace_root)
        drill.run(env)
        final_checks(env)
        verdict.ok = True
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
                verdict.ok, verdict.step = False, "cleanup"
                verdict.detail = verdict.detail or f"{type(err).__name__}: {err}"
    if env is not None:
        verdict.notes = env.notes
        fault_at = env.fault_at if env.fault_at is not None else env.plan.first_fired
        if fault_at is not None and env.recovered_at is not None:
            verdict.recovery = max(env.recovered_at - fault_at, 0.0)
        if verdict.ok:
            problems = intensity_problems(env)
            if problems:
                verdict.ok, verdict.step = False, "restart intensity"
                verdict.detail = "; ".join(problems)
        verdict.replay, verdict.replay_finding = replay_traces(env)
    verdict.duration = time.monotonic() - started
    return verdict


def replay_traces(env: Env) -> tuple[str, bool]:
    """Replay each recorded run; classify a divergence.

    A divergence at a delivery whose handler the drill made fail is expected: the fault is
    injected outside the replayed code (it is not one of the recorded inputs), so replay
    reports the recorded DrillFault as not raised or as another error. Then every other
    actor is replayed on its own, and any divergence there is a finding.
    """
    results: list[str] = []
    finding = False
    faulted = {f.delivery for f in env.plan.fired if f.delivery is not None}
    for trace_dir in env.trace_dirs:
        label = f"{trace_dir.name}: " if len(env.trace_dirs) > 1 else ""
        try:
            trace = read_trace(trace_dir)
        except TraceError as err:
            results.append(f"{label}unreadable trace: {err}")
            finding = True
            continue
        scratch = Path(env.trace_dir) / ".replay-scratch"
        report = replay(trace, KubeletWorld(), scratch_dir=str(scratch))
        if report.divergence is None:
            results.append(f"{label}no divergence ({report.replayed} deliveries)")
        elif report.divergence.delivery in faulted:
            div = report.divergence
            others = _replay_others(trace, div.actor, str(scratch))
            results.append(f"{label}divergence only at the injected fault (#{div.delivery} "
                           f"{div.actor}: {div.step}); {others}")
            finding = finding or not others.startswith("other actors: no divergence")
        else:
            div = report.divergence
            results.append(f"{label}DIVERGENCE at #{div.delivery} {div.actor} "
                           f"(incarnation {div.incarnation}) handling {div.message}: "
                           f"{div.step}")
            env.notes.append("\n".join(div.describe()))
            finding = True
        shutil.rmtree(scratch, ignore_errors=True)
    return "; ".join(results) or "no trace", finding


def _replay_others(trace: object, faulted_actor: str, scratch: str) -> str:
    from actors.core.trace.reader import Trace

    assert isinstance(trace, Trace)
    actors = sorted({r["actor"] for r in trace.records if r["k"] == "begin"} - {faulted_actor})
    count = 0
    for actor in actors:
        world = KubeletWorld()
        if not world.replayable(actor):
            continue
        report = replay(trace, world, only_actor=actor, scratch_dir=scratch)
        if report.divergence is not None:
            div = report.divergence
            return (f"DIVERGENCE in {actor} at #{div.delivery} handling {div.message}: "
                    f"{div.step}")
        count += report.replayed
    return f"other actors: no divergence ({count} deliveries)"
