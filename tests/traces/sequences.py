"""Replay as a property (issue 16): random input sequences, recorded, replayed, compared.

A sequence is a list of steps a node on the fake runtime goes through: pods added,
updated and removed, containers exiting, exec probes flipping, actors failing mid-handler,
runtime calls failing, virtual time passing. ``run`` records one on a RecordedNode
(tests/traces/scenarios.py) and replays the trace with the kubelet's World; the property
is that replay finds no divergence. ``generate`` draws sequences from a seed, ``shrink``
cuts a diverging one down (delta debugging, then simpler step parameters), and kept cases
are JSON files of steps under tests/traces/property/ that a unit test runs again.

`python -m bench.replay_property` runs the property over many seeds.
"""

from __future__ import annotations

import math
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from actors.core.faults import ActorFault, FaultPlan
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import names
from actors.kubelet.trace import KubeletWorld
from runtime.cri.types import ContainerState, ExecResult
from runtime.errors import CRIError, CRIUnavailable
from runtime.kuberuntime import labels as L
from runtime.pod.model import Container, ExecAction, ObjectMeta, Pod, PodSpec, Probe
from tests.traces.scenarios import IMAGE, RecordedNode

IMAGE_2 = "localhost:5000/kubelet-actors/busybox:1.36"
KEPT = Path(__file__).resolve().parent / "property"
"""Where diverging sequences, once shrunk, are kept as regression cases (JSON)."""

PODS = 3  # pod slots: p0, p1, p2 (a removed slot may be added again, with the same UID)
PROBE_KINDS = ("liveness", "readiness", "startup")
ACTORS = (names.STATUS, names.PROBES, names.KILLER, names.PLEG, names.RUNTIME_MONITOR)
MESSAGES: dict[str, tuple[str, ...]] = {
    names.STATUS: ("DesiredPods", "PodObserved", "ProbeVerdict"),
    names.PROBES: ("Tick", "PodObserved", "ProbeOutcome"),
    names.KILLER: ("KillRuntimePod", "KillFinished"),
    names.PLEG: ("Tick",),
    names.RUNTIME_MONITOR: ("Tick", "Recheck"),
    "worker": ("UpdatePod", "RunPending"),
}
"""What each actor may be failed on (besides any message at all)."""
METHODS = ("list_pod_sandbox", "list_containers", "status", "run_pod_sandbox",
           "pod_sandbox_status", "create_container", "start_container", "stop_container",
           "stop_pod_sandbox", "remove_pod_sandbox", "container_status", "exec_sync")
"""CRI calls a step may make fail."""


# --- steps -------------------------------------------------------------------------------


class AddPod(msgspec.Struct, frozen=True, tag="add"):
    """The file source now has pod slot ``pod`` (no-op if it has it already)."""

    pod: int
    probes: tuple[str, ...] = ()  # exec probes: liveness, readiness, startup
    policy: str = "Always"


class UpdatePod(msgspec.Struct, frozen=True, tag="update"):
    """The source's pod changes: its labels, its image, or its container's args."""

    pod: int
    change: str  # labels | image | args


class RemovePod(msgspec.Struct, frozen=True, tag="remove"):
    pod: int


class ExitContainer(msgspec.Struct, frozen=True, tag="exit"):
    """The pod's running container exits with ``code`` (no-op if none runs)."""

    pod: int
    code: int


class FlipProbe(msgspec.Struct, frozen=True, tag="probe"):
    """The pod's exec probes answer ``ok`` from now on."""

    pod: int
    ok: bool


class KillActor(msgspec.Struct, frozen=True, tag="kill"):
    """An actor fails (a FaultPlan ActorFault): on its next delivery of ``message`` (any,
    if None), at handler begin or on its ``runtime_call``-th runtime call; or, with
    ``on_start``, on its next (re)start. ``actor`` "worker" is pod slot ``pod``'s worker."""

    actor: str
    pod: int = 0
    message: str | None = None
    runtime_call: int = 0
    on_start: bool = False


class FailCall(msgspec.Struct, frozen=True, tag="fail"):
    """The runtime's ``method`` fails: its next ``times`` calls, or (0) until healed."""

    method: str
    times: int = 1
    unavailable: bool = False


class Heal(msgspec.Struct, frozen=True, tag="heal"):
    """The runtime stops failing calls."""


class Advance(msgspec.Struct, frozen=True, tag="advance"):
    """Virtual time moves on; timers due on the way fire."""

    seconds: float


Step = AddPod | UpdatePod | RemovePod | ExitContainer | FlipProbe | KillActor | FailCall | \
    Heal | Advance


def describe(step: Step) -> str:
    """One step as a line a person reads."""
    match step:
        case AddPod(pod, probes, policy):
            return f"add pod {pod} (restartPolicy {policy}" + (
                f", exec probes {', '.join(probes)})" if probes else ")")
        case UpdatePod(pod, change):
            return f"update pod {pod}: {change}"
        case RemovePod(pod):
            return f"remove pod {pod}"
        case ExitContainer(pod, code):
            return f"pod {pod}'s container exits {code}"
        case FlipProbe(pod, ok):
            return f"pod {pod}'s probes now {'succeed' if ok else 'fail'}"
        case KillActor(actor, pod, message, call, on_start):
            who = f"pod {pod}'s worker" if actor == "worker" else actor
            if on_start:
                return f"{who} fails on its next start"
            where = f"on runtime call {call}" if call else "as its handler begins"
            return f"{who} fails on its next {message or 'message'}, {where}"
        case FailCall(method, times, unavailable):
            how = "unavailable" if unavailable else "an error"
            return f"{method} fails ({how}) " + (f"{times}x" if times else "until healed")
        case Heal():
            return "runtime calls stop failing"
        case Advance(seconds):
            return f"advance {seconds:g} s"


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(list[Step])


def dump_steps(steps: Sequence[Step]) -> str:
    """Steps as JSON, one per line (diffs of kept cases stay readable)."""
    return "[\n" + ",\n".join("  " + _encoder.encode(s).decode() for s in steps) + "\n]"


def load_steps(text: str | bytes) -> list[Step]:
    return _decoder.decode(text)


# --- generating --------------------------------------------------------------------------


def generate(rng: random.Random, length: int) -> list[Step]:
    """A sequence of ``length`` steps drawn from ``rng``: a pod first, then anything, with
    time passing often enough that the kubelet acts on what happened."""
    steps: list[Step] = [_add(rng)]
    kills = 0
    while len(steps) < length:
        roll = rng.random()
        step: Step
        if roll < 0.12:
            step = _add(rng)
        elif roll < 0.20:
            step = UpdatePod(rng.randrange(PODS), rng.choice(("labels", "image", "args")))
        elif roll < 0.26:
            step = RemovePod(rng.randrange(PODS))
        elif roll < 0.36:
            step = ExitContainer(rng.randrange(PODS), rng.choice((0, 1)))
        elif roll < 0.44:
            step = FlipProbe(rng.randrange(PODS), rng.random() < 0.5)
        elif roll < 0.53 and kills < 4:
            kills += 1
            step = _kill(rng)
        elif roll < 0.60:
            step = FailCall(rng.choice(METHODS), rng.choice((0, 1, 1, 2, 3)),
                            rng.random() < 0.3)
        elif roll < 0.64:
            step = Heal()
        else:
            step = Advance(round(rng.uniform(0.1, 5.0), 1))
        steps.append(step)
    return steps


def _add(rng: random.Random) -> AddPod:
    probes = tuple(k for k in PROBE_KINDS if rng.random() < 0.3)
    return AddPod(rng.randrange(PODS), probes, rng.choice(("Always", "Always", "OnFailure",
                                                             "Never")))


def _kill(rng: random.Random) -> KillActor:
    actor = rng.choice((*ACTORS, "worker", "worker"))
    pod = rng.randrange(PODS) if actor == "worker" else 0
    if rng.random() < 0.1:
        return KillActor(actor, pod, on_start=True)
    message = rng.choice((None, *MESSAGES[actor]))
    return KillActor(actor, pod, message, rng.choice((0, 0, 1, 2, 3)))


def sequence(seed: int | str, index: int, min_length: int = 6, max_length: int = 24
             ) -> list[Step]:
    """Sequence ``index`` of seed ``seed``: drawn from its own Random, so it is the same
    whatever else is drawn, and one can be run again alone."""
    rng = random.Random(f"{seed}:{index}")
    return generate(rng, rng.randint(min_length, max_length))


def sequences(seed: int | str, count: int) -> Iterator[tuple[int, list[Step]]]:
    """The first ``count`` sequences of ``seed``: (index, steps)."""
    for i in range(count):
        yield i, sequence(seed, i)


# --- running -----------------------------------------------------------------------------


def uid_of(pod: int) -> str:
    return f"p{pod}"


def probe_command(pod: int) -> tuple[str, ...]:
    return ("probe", uid_of(pod))


def make_pod(step: AddPod, revision: int = 0, image: str = IMAGE,
             args: tuple[str, ...] = ("sleep", "1d")) -> Pod:
    probe = Probe(exec=ExecAction(command=probe_command(step.pod)), period_seconds=1,
                  failure_threshold=1)
    return Pod(
        metadata=ObjectMeta(name=f"pod-{step.pod}", namespace="default", uid=uid_of(step.pod),
                            labels={"rev": str(revision)},
                            annotations={"kubernetes.io/config.source": "file"}),
        spec=PodSpec(containers=(Container(
            name="c", image=image, args=args, image_pull_policy="IfNotPresent",
            liveness_probe=probe if "liveness" in step.probes else None,
            readiness_probe=probe if "readiness" in step.probes else None,
            startup_probe=probe if "startup" in step.probes else None),),
            restart_policy=step.policy, termination_grace_period_seconds=1),
    )


@dataclass(slots=True)
class _Source:
    """The pods the (simulated) file source holds, and how each was last changed."""

    added: dict[int, AddPod] = field(default_factory=dict)
    revision: dict[int, int] = field(default_factory=dict)
    image: dict[int, str] = field(default_factory=dict)
    args: dict[int, tuple[str, ...]] = field(default_factory=dict)

    def pods(self) -> list[Pod]:
        return [make_pod(a, self.revision[p], self.image[p], self.args[p])
                for p, a in sorted(self.added.items())]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run of a sequence gave."""

    steps: int
    report: str  # replay's report
    divergence: str | None  # the divergence's signature (None: none)
    unsettled: int  # steps after which the node did not go idle in time
    seconds: float


class Runner:
    """Runs sequences: records each on a fresh node, replays it, reports."""

    def __init__(self, scratch: Path | None = None) -> None:
        shm = Path("/dev/shm")
        self.scratch = scratch or (shm if shm.is_dir() else Path(tempfile.gettempdir()))
        self.world = KubeletWorld()

    def run(self, steps: Sequence[Step], keep: Path | None = None) -> Outcome:
        """Record ``steps`` (into ``keep`` if given, else a temporary directory), replay."""
        started = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix="replay-property-", dir=self.scratch))
        directory = keep or work / "trace"
        try:
            unsettled = self._record(steps, directory, work)
            report = replay(read_trace(directory), self.world, scratch_dir=str(work / "replay"))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        divergence = None
        if report.divergence is not None:
            d = report.divergence
            divergence = f"{names.actor_group(d.actor)}: {re.sub(r'[0-9]+', 'N', d.step)}"
        return Outcome(len(steps), format_report(report), divergence, unsettled,
                       time.monotonic() - started)

    def _record(self, steps: Sequence[Step], directory: Path, work: Path) -> int:
        plan = FaultPlan(0)
        plan.arm()
        node = RecordedNode(directory, work, plan, images=(IMAGE, IMAGE_2))
        source = _Source()
        unsettled = 0
        try:
            unsettled += not node.settle()
            for step in steps:
                _apply(node, plan, source, step)
                unsettled += not node.settle()
        finally:
            node.close()
        return unsettled


def _apply(node: RecordedNode, plan: FaultPlan, source: _Source, step: Step) -> None:
    match step:
        case AddPod(pod):
            if pod in source.added:
                return
            source.added[pod] = step
            source.revision[pod] = source.revision.get(pod, 0) + 1
            source.image[pod], source.args[pod] = IMAGE, ("sleep", "1d")
            node.snapshot(*source.pods())
        case UpdatePod(pod, change):
            if pod not in source.added:
                return
            if change == "labels":
                source.revision[pod] += 1
            elif change == "image":
                source.image[pod] = IMAGE_2 if source.image[pod] == IMAGE else IMAGE
            else:
                source.args[pod] = (("sleep", "2d") if source.args[pod] == ("sleep", "1d")
                                    else ("sleep", "1d"))
            node.snapshot(*source.pods())
        case RemovePod(pod):
            if source.added.pop(pod, None) is not None:
                node.snapshot(*source.pods())
        case ExitContainer(pod, code):
            for c in node.fake.snapshot().containers:
                if (c.labels.get(L.POD_UID) == uid_of(pod)
                        and c.state == ContainerState.RUNNING):
                    node.fake.exit_container(c.id, code)
        case FlipProbe(pod, ok):
            node.fake.set_exec_result(None, probe_command(pod),
                                      ExecResult(b"", b"" if ok else b"failed", 0 if ok else 1))
        case KillActor(actor, pod, message, call, on_start):
            name = names.worker_name(uid_of(pod)) if actor == "worker" else actor
            plan.add(ActorFault(name, message, runtime_call=call, on_start=on_start))
        case FailCall(method, times, unavailable):
            cls = CRIUnavailable if unavailable else CRIError
            error = cls(method, "injected by the property check",
                        "UNAVAILABLE" if unavailable else "UNKNOWN")
            if times:
                node.fake.fail(method, error, times)
            else:
                node.fake.fail_always(method, error)
        case Heal():
            node.fake.clear_failures()
        case Advance(seconds):
            node.advance(seconds)


# --- shrinking ---------------------------------------------------------------------------


def simpler(step: Step) -> list[Step]:
    """Simpler variants of one step, simplest first."""
    match step:
        case AddPod(pod, probes, policy):
            out: list[Step] = [AddPod(pod, probes[:i] + probes[i + 1:], policy)
                               for i in range(len(probes))]
            return out + ([AddPod(pod, probes)] if policy != "Always" else [])
        case KillActor(actor, pod, message, call, on_start) if not on_start:
            kills: list[Step] = [KillActor(actor, pod, message)] if call else []
            return kills + ([KillActor(actor, pod, None, call)] if message else [])
        case FailCall(method, times, unavailable):
            fails: list[Step] = [FailCall(method, 1, unavailable)] if times != 1 else []
            return fails + ([FailCall(method, times)] if unavailable else [])
        case Advance(seconds) if seconds > 1.0:
            return [Advance(float(math.ceil(seconds / 2)))]
    return []


def _merged(steps: list[Step]) -> list[Step]:
    """Adjacent Advance steps as one (what they do, in fewer lines)."""
    out: list[Step] = []
    for step in steps:
        if isinstance(step, Advance) and out and isinstance(out[-1], Advance):
            out[-1] = Advance(round(out[-1].seconds + step.seconds, 1))
        else:
            out.append(step)
    return out


def shrink(steps: list[Step], diverges: Callable[[list[Step]], bool],
           log: Callable[[str], None] = lambda _: None) -> list[Step]:
    """A shorter sequence that still ``diverges``: steps dropped in chunks while the
    divergence stays (ddmin), then each step made simpler while it stays."""
    n = 2
    while len(steps) >= 2:
        size = math.ceil(len(steps) / n)
        for start in range(0, len(steps), size):
            candidate = steps[:start] + steps[start + size:]
            if diverges(candidate):
                steps, n = candidate, max(n - 1, 2)
                log(f"  {len(steps)} steps")
                break
        else:
            if n >= len(steps):
                break
            n = min(n * 2, len(steps))
    merged = _merged(steps)
    if merged != steps and diverges(merged):
        steps = merged
    i = 0
    while i < len(steps):
        for variant in simpler(steps[i]):
            candidate = [*steps[:i], variant, *steps[i + 1:]]
            if diverges(candidate):
                steps = candidate
                break
        else:
            i += 1
    return steps


class Case(msgspec.Struct, frozen=True):
    """A kept regression: a shrunk sequence that once diverged, and why it did."""

    about: str
    steps: list[Step]
    seed: str = ""


def save_case(path: Path, case: Case) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = msgspec.json.format(msgspec.json.encode(case), indent=2).decode()
    path.write_text(body + "\n")


def load_case(path: Path) -> Case:
    return msgspec.json.decode(path.read_bytes(), type=Case)
