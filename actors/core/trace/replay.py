"""Replay: run a trace's recorded inputs through the actors again, and compare.

Single-threaded and in virtual time: each handled delivery is fed, in the recorded order,
to a fresh instance of the actor that handled it (one per incarnation, and per spawn of
it: a name re-added after removal counts its incarnations from 0 again). Whatever the
handler asks of the outside comes from the recording: runtime answers, clock reads, other
inputs. Whatever it does (messages it sends, runtime calls it makes) is checked against
what the recording says it did. The first difference is reported with the causal chain
of deliveries that led to it; none means the code still behaves as it did.

What is replayed, and how each actor is built on the stubs, is the replayed system's
business: a ``World`` (actors.core.trace.stubs) says it. Actors that read the outside
world directly (a kubelet's sources read files and URLs) are not replayed: their messages
are inputs of the others.

A trace of several runs (a daemon restarted on the same trace directory) is replayed run
by run, each from its own header. A run whose first files were deleted (--trace-max-files)
cannot be replayed whole: an actor that started before its first kept file had state the
trace no longer shows, and fed only the rest of its mail it would diverge where the code
did nothing wrong. So such a run replays only the actors that started (a spawn record)
within the kept files, and the report names the others and why they were left out.

An incarnation its supervisor started from a hand-over (actors.core.messages.HandOver) is
built from the state the ``hand-over`` decision recorded just before its spawn.

A trace recorded by other code (another version or commit, as its header names them:
actors.core.trace.provenance) is replayed all the same, and the report says so before
anything else: its first divergence is then possibly a change of code, not a bug.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from actors.core import context
from actors.core.faults import fault_point
from actors.core.supervision import HAND_OVER
from actors.core.trace.names import MESSAGES
from actors.core.trace.provenance import other_code
from actors.core.trace.reader import Trace, TraceError, read_trace
from actors.core.trace.stubs import (
    Divergence,
    DivergenceFound,
    ReplayAnswers,
    ReplayClock,
    ReplayDispatch,
    ReplayTimers,
    Step,
    Stubs,
    World,
    decode_message,
)

Record = dict[str, Any]


@dataclass(slots=True)
class ReplayReport:
    replayed: int = 0
    actors: set[str] = field(default_factory=set)
    skipped: dict[str, int] = field(default_factory=dict)
    divergence: Divergence | None = None
    notes: list[str] = field(default_factory=list)
    # Deliveries not replayed because their actor started before the first kept file.
    before_start: dict[str, int] = field(default_factory=dict)
    # Why the trace was recorded by other code than this (provenance.other_code); None:
    # recorded by this code.
    other_code: str | None = None

    @property
    def ok(self) -> bool:
        return self.divergence is None


class _Index:
    """The trace, arranged by delivery: what each handler received, did and read."""

    def __init__(self, trace: Trace) -> None:
        self.msgs: dict[int, Record] = {}
        self.begins: list[Record] = []
        self.ends: dict[int, Record] = {}
        self.sent: dict[int, list[Record]] = defaultdict(list)
        self.calls: dict[int, list[Record]] = defaultdict(list)
        self.inputs: dict[int, list[Record]] = defaultdict(list)
        # Which instance of (actor, incarnation) each delivery went to: a dynamic child
        # removed and added again under its name starts over at incarnation 0, so the
        # pair names several actors in turn. Each was spawned (a spawn record) before it
        # was registered, so a delivery goes to the newest spawned when it was recorded.
        self.instance: dict[int, int] = {}
        # What each (actor, incarnation, instance) was started from, if a hand-over: the
        # decision comes just before the spawn it is for.
        self.handed_over: dict[tuple[str, int, int], object] = {}
        spawned: dict[tuple[str, int], int] = defaultdict(int)
        for r in trace.records:
            kind = r["k"]
            if kind == "spawn":
                spawned[(r["actor"], r["inc"])] += 1
            elif kind == "decision" and r.get("what") == HAND_OVER:
                detail = r.get("detail", {})
                child, inc = detail.get("child"), detail.get("incarnation")
                if isinstance(child, str) and isinstance(inc, int):
                    self.handed_over[(child, inc, spawned[(child, inc)] + 1)] = detail.get(
                        "state")
            elif kind == "msg":
                self.msgs[r["id"]] = r
                self.instance[r["id"]] = spawned.get((r["to"], r["inc"]), 0)
                # What the dispatch point sends on its own (a dead letter handed to the
                # supervisor) happens during a handler but is not the handler's doing.
                if r.get("parent") is not None and r.get("from") != "dispatch":
                    self.sent[r["parent"]].append(r)
            elif kind == "begin":
                self.begins.append(r)
            elif kind == "end":
                self.ends[r["id"]] = r
            elif kind == "call" and r.get("in") is not None:
                self.calls[r["in"]].append(r)
            elif kind == "input" and r.get("in") is not None:
                self.inputs[r["in"]].append(r)

    def chain(self, delivery: int, limit: int = 12) -> list[Record]:
        """The delivery, then the one whose handler sent it, and so on back to a root."""
        out: list[Record] = []
        current: int | None = delivery
        while current is not None and current in self.msgs and len(out) < limit:
            record = self.msgs[current]
            out.append(record)
            current = record.get("parent")
        return out


def replay(
    trace: Trace,
    world: World,
    until: int | None = None,
    only_actor: str | None = None,
    scratch_dir: str | None = None,
) -> ReplayReport:
    """Replay ``trace``; stops at the first divergence.

    Replayed handlers may make directories (emptyDir, logs): they go to ``scratch_dir``,
    or to a temporary directory removed afterwards. Several runs are replayed in turn
    (``until`` applies to each: delivery ids start over with each run).
    """
    runs = trace.runs()
    other = next((why for why in (other_code(run.header) for run in runs) if why), None)
    if len(runs) == 1:
        single = _replay_in(trace, world, until, only_actor, scratch_dir)
        single.other_code = other
        return single
    report = ReplayReport(other_code=other)
    for n, run in enumerate(runs, 1):
        part = _replay_in(run, world, until, only_actor, scratch_dir)
        report.replayed += part.replayed
        report.actors |= part.actors
        for into, source in ((report.skipped, part.skipped),
                             (report.before_start, part.before_start)):
            for actor, count in source.items():
                into[actor] = into.get(actor, 0) + count
        names = f"{run.files[0].name}" + (f"..{run.files[-1].name}" if len(run.files) > 1
                                          else "")
        report.notes.append(f"run {n} of {len(runs)} ({names}): {part.replayed} deliveries "
                            + ("diverged" if part.divergence else "replayed"))
        report.notes.extend(part.notes)
        if part.divergence is not None:
            report.divergence = part.divergence
            break
    return report


def _replay_in(trace: Trace, world: World, until: int | None, only_actor: str | None,
               scratch_dir: str | None) -> ReplayReport:
    if scratch_dir is not None:
        return _replay(trace, world, until, only_actor, scratch_dir)
    with tempfile.TemporaryDirectory(prefix="actors-replay-") as scratch:
        return _replay(trace, world, until, only_actor, scratch)


def _replay(trace: Trace, world: World, until: int | None, only_actor: str | None,
            scratch: str) -> ReplayReport:
    index = _Index(trace)
    report = ReplayReport()
    paths = world.scratch_paths(trace.config, scratch)
    stubs = Stubs(trace.config, scratch, ReplayDispatch(),
                  ReplayClock(trace.header.get("m", 0.0), trace.header.get("t", 0.0)),
                  ReplayTimers(), ReplayAnswers(world))
    instances: dict[tuple[str, int, int], Any] = {}
    cut_off: set[tuple[str, int, int]] = set()
    mid_run = trace.begins_mid_run
    if mid_run:
        first = trace.parts[0]
        report.notes.append(
            f"the trace begins at {first.file.name}, file {first.part} of its run: the files "
            "before it were deleted (--trace-max-files), so only the actors that started "
            "within the kept files are replayed")
    for begin in index.begins:
        delivery, actor, inc = begin["id"], begin["actor"], begin["inc"]
        if until is not None and delivery > until:
            break
        if only_actor is not None and actor != only_actor:
            continue
        if not world.replayable(actor):
            report.skipped[actor] = report.skipped.get(actor, 0) + 1
            continue
        key = (actor, inc, index.instance.get(delivery, 0))
        if key in cut_off:
            continue
        if mid_run and key[2] == 0:
            # Started before the first kept file: its state then is not in the trace.
            report.before_start[actor] = report.before_start.get(actor, 0) + 1
            continue
        if delivery not in index.ends:
            # The trace ends inside this handler (the system stopped or was killed while
            # it ran): what it did is only partly recorded, so this actor stops here.
            cut_off.add(key)
            report.notes.append(f"the trace ends while {actor} handled delivery #{delivery}; "
                                f"{actor} replayed up to there")
            continue
        msg = index.msgs.get(delivery)
        if msg is None:
            report.notes.append(f"delivery #{delivery} to {actor}: its message is not in the "
                                "trace (an older, rotated file?); skipped")
            continue
        if key not in instances:
            instances[key] = world.build(actor, inc, stubs, index.handed_over.get(key))
        message = decode_message(msg)
        # A version 1 trace's code knew fewer fields: compare only the keys it recorded.
        step = Step(msg, index.sent[delivery], index.calls[delivery], index.inputs[delivery],
                    paths, known_keys=trace.version < 2)
        stubs.dispatch.step = stubs.answers.step = stubs.clock.step = step
        try:
            replay_delivery(instances[key], delivery, actor, inc, message, index.ends.get(delivery),
                    step)
            step.finish()
        except DivergenceFound as found:
            found.divergence.chain = [_chain_line(r) for r in index.chain(delivery)]
            report.divergence = found.divergence
            return report
        report.replayed += 1
        report.actors.add(actor)
    return report


def replay_delivery(instance: Any, delivery: int, actor: str, inc: int, message: object,
                    end: Record | None, step: Step) -> None:
    """Feed one recorded delivery to ``instance`` and compare how its handler ends with the
    recording (what it does on the way is checked by ``step``'s stubs).

    A drill's injected fault is a recorded input like any other, replayed where it struck
    (actors.core.faults.fault_point): before the handler ran (the handler is not run: the
    recording has nothing of it), on a runtime call (that call's recorded answer is the
    fault, so the handler fails there), or as it returned (the handler runs all of its
    work, which must match). Nothing beyond that is excused: an action the recording lacks
    is a divergence, fault or not.
    """
    expected_error = (end or {}).get("error")
    point = fault_point(expected_error)
    if point == "begin":
        return
    previous = context.enter(context.Handling(actor, inc, delivery))
    try:
        instance.handle(message)
    except DivergenceFound:
        raise
    except Exception as err:
        if expected_error is None:
            raise DivergenceFound(step.divergence(
                "the handler raised", "no error", repr(err))) from err
        if type(err).__name__ not in expected_error:
            raise DivergenceFound(step.divergence(
                "the handler raised another error", expected_error, repr(err))) from err
        return
    finally:
        context.enter(previous)
    if expected_error is not None and point != "return":
        raise DivergenceFound(step.divergence("the handler did not raise", expected_error,
                                              "no error"))


def _chain_line(record: Record) -> str:
    return (f"#{record['id']} {MESSAGES.short(record['type'])} "
            f"{record['from'] or '-'} -> {record['to']} (sender seq {record['seq']})")


# --- the command ----------------------------------------------------------------------


def format_report(report: ReplayReport) -> str:
    skipped = ", ".join(f"{a} {n}" for a, n in sorted(report.skipped.items()))
    lines: list[str] = [] if report.other_code is None else [f"note: {report.other_code}"]
    if report.divergence is None:
        lines.append(f"no divergence: replayed {report.replayed} deliveries to "
                     f"{len(report.actors)} actors"
                     + (f" (not replayed, they read the outside world: {skipped})"
                        if skipped else ""))
    else:
        if report.other_code is not None:
            lines.append("the first divergence is possibly a change of code, not a bug "
                         "(the trace was recorded by other code):")
        lines.extend(report.divergence.describe())
        lines.append(f"({report.replayed} deliveries replayed without divergence before it)")
    if report.before_start:
        before = ", ".join(f"{a} {n}" for a, n in sorted(report.before_start.items()))
        lines.append("not replayed, they started before the first kept trace file (their "
                     f"history was deleted): {before}")
    lines.extend(f"note: {n}" for n in report.notes)
    return "\n".join(lines)


def main(argv: list[str], world: World, prog: str = "trace replay") -> int:
    parser = argparse.ArgumentParser(
        prog=prog, allow_abbrev=False,  # --until is not --until-delivery
        description="Replay a recorded trace against this code: single-threaded, in "
                    "virtual time, with the recorded runtime answers; print 'no "
                    "divergence' or the first divergent step.",
        epilog="exit codes: 0 no divergence; 1 a divergence, or the trace cannot be read; "
               "2 a flag or argument is wrong")
    parser.add_argument("trace", metavar="DIR|FILE",
                        help="a trace directory or one trace file")
    parser.add_argument("--until-delivery", type=int, metavar="N",
                        help="replay deliveries up to this delivery id only (default: all)")
    parser.add_argument("--until", help=argparse.SUPPRESS)
    parser.add_argument("--actor", help="replay one actor (its name; default: every one)")
    args = parser.parse_args(argv)
    if args.until is not None:
        # trace show's --until is seconds from the start: the same word must not mean a
        # delivery here.
        parser.error(f"--until {args.until}: replay stops at a delivery id, "
                     "--until-delivery N (--until is seconds from the start in trace show)")
    try:
        trace = read_trace(args.trace)
    except TraceError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1
    report = replay(trace, world, until=args.until_delivery, only_actor=args.actor)
    for torn in trace.torn:
        report.notes.append(torn)
    print(format_report(report))
    return 0 if report.ok else 1

