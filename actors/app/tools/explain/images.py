"""Image pulls that failed: ErrImagePull with the runtime's error, then ImagePullBackOff
with its delays, until the image was pulled (or the trace ends).

Read from the pod worker's sync results (each failed StartContainer step has upstream's
reason, the message and, for a back-off, its delay) and the Failed / Pulled events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.app.tools.explain.model import (
    Finding,
    PodHistory,
    Seen,
    clock_time,
    evidence,
    ids,
    seconds,
)
from actors.kubelet.messages import PodObserved
from runtime.events import reasons

PULL_ERRORS = frozenset({"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull",
                         "InvalidImageName"})
"""A container's waiting reasons that are about its image."""


@dataclass(slots=True)
class _Streak:
    """Failed attempts to get one container's image, one after another."""

    container: str
    first: Seen
    errors: list[tuple[Seen, str, str]] = field(default_factory=list)  # (seen, reason, message)
    delays: list[tuple[Seen, float]] = field(default_factory=list)
    ended: Seen | None = None  # the sync that started the container at last


def _streaks(history: PodHistory) -> list[_Streak]:
    open_: dict[str, _Streak] = {}
    done: list[_Streak] = []
    for seen, observed in history.of(PodObserved):
        for step in observed.sync.steps if observed.sync is not None else ():
            if step.action != "StartContainer":
                continue
            streak = open_.get(step.target)
            if step.error in PULL_ERRORS:
                if streak is None:
                    streak = open_[step.target] = _Streak(step.target, seen)
                streak.errors.append((seen, step.error, step.message))
                delay = step.backoff_seconds
                if delay is not None and (not streak.delays or streak.delays[-1][1] != delay):
                    streak.delays.append((seen, delay))
            elif streak is not None:
                if step.ok:
                    streak.ended = seen
                done.append(open_.pop(step.target))
    return done + list(open_.values())


def image_findings(history: PodHistory) -> list[Finding]:
    out: list[Finding] = []
    for streak in _streaks(history):
        spec = history.container_spec(streak.container)
        image = f'"{spec.image}" ' if spec is not None and spec.image else ""
        pulls = [(s, r, m) for s, r, m in streak.errors if r != "ImagePullBackOff"]
        first_error = pulls[0] if pulls else streak.errors[0]
        counts: dict[str, int] = {}
        for _, reason, _ in streak.errors:
            counts[reason] = counts.get(reason, 0) + 1
        tally = ", ".join(f"{reason} {n}x" for reason, n in counts.items())
        text = (f"image {image}of container {streak.container} could not be had from "
                f"{clock_time(streak.first.t)}: {first_error[1]}: {first_error[2][:300]} "
                f"({tally}")
        if streak.delays:
            text += f"; back-off {', '.join(seconds(d) for _, d in streak.delays)}"
        text += ")"
        failed_events = [s for s, e in history.events(reasons.FAILED_TO_PULL_IMAGE,
                                                       streak.container)
                         if s.t >= streak.first.t and "pull" in e.message.lower()][:3]
        if streak.ended is not None:
            text += f"; pulled and started at {clock_time(streak.ended.t)}"
        else:
            text += "; still failing when the trace ends"
        found = (evidence("image", spec.image if spec is not None else "", streak.first)
                 + evidence("pullError", first_error[1], first_error[0])
                 + evidence("pullMessage", first_error[2], first_error[0]))
        if streak.delays:
            found += evidence("backOff", streak.delays[-1][1], streak.delays[-1][0])
        out.append(Finding(streak.first.t, "image", text,
                           ids((s for s, _, _ in streak.errors[:3]), failed_events,
                               (streak.errors[-1][0], streak.ended)), streak.container,
                           tuple(found)))
    return out
