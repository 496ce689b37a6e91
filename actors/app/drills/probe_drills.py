"""A drill on probe results across a restart of the probe manager by its supervisor.

The probe manager hands what its probes reached to the sync loop (a HandOver), which
starts the next incarnation from it: a pod that was Ready stays Ready through the crash.
The drill watches that from outside, as a user would: it GETs /pods on the read-only port
every 50 ms from before the fault until well after the restart, and any answer that shows
the pod not Ready after it first read Ready fails the drill.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import dataclass, field

from actors.app.drills.actor_drills import FIRE_TIMEOUT, RECOVER_TIMEOUT, START_TIMEOUT, restarts_of
from actors.app.drills.env import NODE, Env, manifest
from actors.app.drills.runner import Drill
from actors.app.http.server import ANY_PORT, READ_ONLY
from actors.core.faults import ActorFault
from actors.kubelet import names
from actors.kubelet.messages import ProbeKind
from actors.kubelet.probe_manager import ProbeQuery, ProbeSnapshot
from runtime.prober.results import ProbeResult

POD = "ready"
POLL_EVERY = 0.05
AFTER_RESTART = 3.0  # seconds of answers after the restart: past the new manager's probes


def probed_manifest(image: str) -> str:
    # periodSeconds 1: answers (ProbeOutcome) come often, and the restarted manager probes
    # again within the watch.
    return manifest(POD, image) + """    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
"""


@dataclass
class ReadyWatch:
    """GETs /pods every 50 ms; notes when, and the pod's Ready condition (or down / missing).

    Shared with the e2e test of probe state across a daemon restart, which polls the same
    way while the daemon is down for a moment.
    """

    port: int
    pod: str = f"{POD}-{NODE}"
    seen: list[tuple[float, str]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/pods",
                                        timeout=2) as response:
                items = json.loads(response.read())["items"]
        except (OSError, ValueError, KeyError):
            return "down"
        pod = next((p for p in items if p["metadata"]["name"] == self.pod), None)
        if pod is None:
            return "missing"
        ready = next((c["status"] for c in pod["status"].get("conditions", [])
                      if c["type"] == "Ready"), None)
        return "ready" if ready == "True" else f"not-ready({ready})"

    def run(self) -> None:
        while not self.stop.wait(POLL_EVERY):
            self.seen.append((time.monotonic(), self.sample()))

    def states(self) -> list[str]:
        return [s for _, s in self.seen]

    def flips(self, tolerated: tuple[str, ...] = ()) -> list[str]:
        """Every answer after the first that read Ready and did not (``tolerated``:
        answers that do not count, e.g. "down" while a daemon restarts)."""
        states = self.states()
        first = states.index("ready") if "ready" in states else len(states)
        return [s for s in states[first:] if s != "ready" and s not in tolerated]

    def since(self, mark: float) -> list[str]:
        return [s for t, s in self.seen if t >= mark]


def probing_ready(env: Env) -> bool:
    """Whether the running probe manager has a readiness worker of the pod at Success."""
    ref = env.kubelet.dispatch.ref(names.PROBES) if env.kubelet is not None else None
    if ref is None:
        return False
    try:
        snapshot: ProbeSnapshot = ref.ask(ProbeQuery(), block=True, timeout=5.0)
    except Exception:  # stopping or restarting: not yet
        return False
    return any(w.kind == ProbeKind.READINESS and w.result == ProbeResult.SUCCESS
               for w in snapshot.workers)


def kill_probes_ready(env: Env) -> None:
    """The probe manager dies (as its handler of a probe answer begins, or as it returns)
    while a pod is Ready; the restarted one continues the results: Ready never flips."""
    env.read_only_port = ANY_PORT  # /pods is polled there
    env.start()
    assert env.kubelet is not None
    with env.step("start a pod with a readiness probe"):
        env.write_pod(POD, probed_manifest(env.image))
        env.converge(START_TIMEOUT, "the pod to run")
    watch = ReadyWatch(env.kubelet.http.bound_ports[READ_ONLY])
    poller = threading.Thread(target=watch.run, name=f"drill-{env.name}-ready", daemon=True)
    poller.start()
    env.closers.append(watch.stop.set)
    try:
        with env.step("the pod reads Ready in /pods"):
            env.wait(lambda: watch.states()[-1:] == ["ready"], START_TIMEOUT,
                     "Ready in /pods")
        before = restarts_of(env, names.PROBES)
        call = env.plan.rng.randint(0, 1)  # 0: as the handler begins; 1: as it returns
        env.plan.add(ActorFault(names.PROBES, "ProbeOutcome", runtime_call=call))
        env.notes.append("fault: probes handling ProbeOutcome, "
                         + ("as its handler returns" if call else "as its handler begins"))
        env.plan.arm()
        with env.step("fault the probe manager on a probe answer"):
            env.wait(lambda: env.plan.fired, FIRE_TIMEOUT, "probes to handle a ProbeOutcome")
        with env.step("the probe manager was restarted by its supervisor"):
            env.wait(lambda: restarts_of(env, names.PROBES) > before, 10.0,
                     "a restart of probes")
        with env.step("the restarted probe manager probes the pod, from Success"):
            env.wait(lambda: probing_ready(env), RECOVER_TIMEOUT,
                     "a readiness worker at Success in the new probe manager")
        with env.step("the pod stays Ready in /pods through the restart"):
            mark = len(watch.seen)
            env.wait(lambda: len(watch.seen) >= mark + int(AFTER_RESTART / POLL_EVERY),
                     AFTER_RESTART * 4, "answers after the restart")
            flips = watch.flips()
            if flips:
                raise env.fail(f"Ready flipped in /pods: {flips[:5]} (answers: "
                               f"{len(watch.seen)})")
        with env.step("recover: every invariant holds"):
            env.converge(RECOVER_TIMEOUT)
    finally:
        watch.stop.set()
        poller.join(5.0)


PROBE_DRILLS = (
    Drill("kill-probes-ready", "probe manager dies on a probe answer while a pod is Ready; "
          "the restarted one continues its results: /pods never reads it not Ready",
          kill_probes_ready),
)
