"""The invariants every drill checks, as pure functions of what it observed.

Each returns a list of problems in words (empty: the invariant holds), so a drill can
check them while the fault is under way (duplicates) and after it (all of them), and unit
tests can check the checks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

CREATED, RUNNING, EXITED, UNKNOWN = "CREATED", "RUNNING", "EXITED", "UNKNOWN"


@dataclass(frozen=True, slots=True)
class SeenContainer:
    """One runtime container, as the drill saw it in ListContainers."""

    id: str
    pod: str  # the pod's full name (its io.kubernetes.pod.name label)
    name: str  # the container's name
    state: str  # CREATED, RUNNING, EXITED, UNKNOWN


@dataclass(frozen=True, slots=True)
class SeenPod:
    """One pod in the kubelet's view (the status manager's GetPods)."""

    name: str
    phase: str
    running: int  # containers whose status says running
    containers: int  # containers in its spec


def orphans(containers: Iterable[SeenContainer], desired: Iterable[str]) -> list[str]:
    """Every live runtime container belongs to a desired pod."""
    wanted = set(desired)
    return [f"orphan container {c.id[:13]} ({c.pod}/{c.name}, {c.state})"
            for c in containers if c.pod not in wanted and c.state in (CREATED, RUNNING)]


def duplicates(containers: Iterable[SeenContainer]) -> list[str]:
    """At most one running instance per pod and container name."""
    running = Counter((c.pod, c.name) for c in containers if c.state == RUNNING)
    return [f"{n} running instances of {pod}/{name}"
            for (pod, name), n in sorted(running.items()) if n > 1]


def leftovers(containers: Iterable[SeenContainer]) -> list[str]:
    """No container left CREATED (created, never started, never removed)."""
    return [f"container {c.id[:13]} of {c.pod}/{c.name} left CREATED"
            for c in containers if c.state == CREATED]


def lost_kills(containers: Iterable[SeenContainer], view: Iterable[SeenPod],
               removed: Iterable[str]) -> list[str]:
    """A pod removed during the drill is gone: from the runtime and from the view."""
    gone = set(removed)
    problems = [f"removed pod {c.pod}: container {c.id[:13]} ({c.name}) still {c.state}"
                for c in containers if c.pod in gone and c.state in (CREATED, RUNNING)]
    problems += [f"removed pod {p.name} still in the kubelet's view ({p.phase})"
                 for p in view if p.name in gone]
    return problems


def not_converged(view: Iterable[SeenPod], desired: Iterable[str]) -> list[str]:
    """Every desired pod is Running, every container of it running."""
    by_name = {p.name: p for p in view}
    problems: list[str] = []
    for name in sorted(set(desired)):
        pod = by_name.get(name)
        if pod is None:
            problems.append(f"pod {name} is not in the kubelet's view")
        elif pod.phase != "Running" or pod.running < pod.containers:
            problems.append(f"pod {name} is {pod.phase} with {pod.running}/{pod.containers} "
                            "containers running")
    return problems


def runtime_converged(containers: Sequence[SeenContainer], desired: Iterable[str]
                      ) -> list[str]:
    """The runtime runs something of every desired pod."""
    running = {c.pod for c in containers if c.state == RUNNING}
    return [f"no running container of pod {name}" for name in sorted(set(desired))
            if name not in running]


def restart_intensity(restarts: Sequence[float], max_restarts: int, within: float,
                      escalated: bool) -> list[str]:
    """At most MaxR restarts in any MaxT window; and past that, an escalation.

    ``restarts`` are the monotonic times of the supervisor's restart decisions.
    """
    times = sorted(restarts)
    peak, j = 0, 0
    for i, t in enumerate(times):
        while t - times[j] > within:
            j += 1
        peak = max(peak, i - j + 1)
    if peak > max_restarts and not escalated:
        return [f"{peak} restarts within {within:g} s (MaxR {max_restarts}) and no escalation"]
    if escalated and peak <= max_restarts:
        return [f"escalated after only {peak} restarts within {within:g} s "
                f"(MaxR {max_restarts})"]
    return []


def unhandled_dead_letters(counts: Mapping[str, int]) -> list[str]:
    """No dead letter was dropped without a rule (dispatch.dead_letters_unhandled)."""
    return [f"{n} unhandled dead letter(s) of {kind}"
            for kind, n in sorted(counts.items()) if n > 0]


def all_problems(containers: Sequence[SeenContainer], view: Sequence[SeenPod],
                 desired: Iterable[str], removed: Iterable[str] = ()) -> list[str]:
    """The steady-state invariants together: what must hold once the drill recovered."""
    wanted = list(desired)
    return (orphans(containers, wanted) + duplicates(containers) + leftovers(containers)
            + lost_kills(containers, view, removed) + not_converged(view, wanted)
            + runtime_converged(containers, wanted))
