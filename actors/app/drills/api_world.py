"""The API drills' world: the drill's kubelet joined to an emulated API server, with pods.

``join(env)`` starts the emulated API server (emulator.Emulator, TLS, as
scripts/dev-cluster.sh does), then the drill's containerd and its kubelet with
``--kubeconfig`` (a 4 s lease renewed every second, the node status every second), and
runs a static pod (``alpha``, from a file) and two API pods: ``web`` serves, ``job``
(restartPolicy Never) exits 0 when the drill writes ``exit`` into its hostPath dir, so a
drill can make a container end while the API is faulted and check that the API shows it
afterwards.

``FaultRun`` is the shape every API fault drill shares: while the fault holds, the drill
ends ``job``, adds a static pod (``gamma``: the file source keeps working, it must run
before the fault ends) and creates an API pod (``late``: the pod source catches up), each
at a moment drawn from the seed, and checks at every step that the running containers stay
the same; then ``recover`` checks that everything caught up.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from actors.app.drills import api_invariants as inv
from actors.app.drills.emulator import Emulator, Seen
from actors.app.drills.env import NODE, SERVE, Env

LEASE_SECONDS = 4
STATUS_EVERY = "1s"
JOIN_TIMEOUT = 60.0
RECOVER_TIMEOUT = 45.0
GAMMA_TIMEOUT = 30.0
NS = "default"
LEASE_NS = "kube-node-lease"
STATIC = ("alpha", "gamma")


def api_pod(env: Env, name: str, *, job: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": env.image,
                                 "command": ["sh", "-c", SERVE]}
    spec: dict[str, Any] = {"nodeName": NODE, "automountServiceAccountToken": False,
                            "enableServiceLinks": False, "terminationGracePeriodSeconds": 2,
                            "containers": [container]}
    if job:
        container["command"] = ["sh", "-c", "while [ ! -e /trigger/exit ]; do sleep 0.2; "
                                "done; exit 0"]
        container["volumeMounts"] = [{"name": "trigger", "mountPath": "/trigger"}]
        spec["restartPolicy"] = "Never"
        spec["volumes"] = [{"name": "trigger", "hostPath": {
            "path": str(env.base / "trigger"), "type": "DirectoryOrCreate"}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


def parse_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class World:
    """A drill's emulated API server and the kubelet joined to it."""

    def __init__(self, env: Env, emulator: Emulator) -> None:
        self.env = env
        self.api = emulator
        self.rng = env.plan.rng

    # --- what the API holds -------------------------------------------------------------

    def pod(self, name: str) -> dict[str, Any] | None:
        return self.api.get("pods", NS, name)

    def mirror(self, static: str) -> dict[str, Any] | None:
        return self.pod(f"{static}-{NODE}")

    def renew_time(self) -> float:
        lease = self.api.get("leases", LEASE_NS, NODE)
        renewed = ((lease or {}).get("spec") or {}).get("renewTime")
        return parse_time(renewed) if renewed else 0.0

    def node_ready(self) -> bool:
        node = self.api.get("nodes", "", NODE) or {}
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (node.get("status") or {}).get("conditions") or [])

    def container_id(self, name: str) -> str:
        pod = self.pod(name) or {}
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        return str(statuses[0].get("containerID", ""))

    def running_ids(self) -> set[str]:
        return {c.id for c in self.env.containers() if c.state == "RUNNING"}

    def requests(self, start: float, end: float | None = None) -> list[Seen]:
        return [r for r in self.api.requests(start) if end is None or r.at <= end]

    # --- steps --------------------------------------------------------------------------

    def end_job(self) -> None:
        """Make job's container exit 0 (it is then no longer a pod that must run)."""
        (self.env.base / "trigger" / "exit").write_text("now\n")
        self.env.desired.discard("job")

    def settled(self) -> list[str]:
        """What does not hold yet of the steady state in the API: Node Ready, the mirror
        pods and the API pods Running and Ready, ``job`` shown terminated with 0."""
        problems = [] if self.node_ready() else ["the Node is not Ready"]
        for static in STATIC:
            if f"{static}-{NODE}" in self.env.desired:
                problems += [f"mirror pod {static}: {p}"
                             for p in inv.running_ready(self.mirror(static))]
        for name in ("web", "late"):
            if name in self.env.desired:
                problems += [f"pod {name}: {p}" for p in inv.running_ready(self.pod(name))]
        return problems


def wait_clear(env: Env, problems: Callable[[], list[str]], timeout: float, what: str) -> None:
    """Wait until ``problems()`` is empty; else fail the step with the last ones."""
    deadline = time.monotonic() + timeout
    while last := problems():
        if time.monotonic() > deadline:
            raise env.fail(f"{what} not within {timeout:g} s: " + "; ".join(last[:5]))
        time.sleep(0.2)


def join(env: Env) -> World:
    """The emulated API server, the kubelet joined to it, alpha, web and job running."""
    with env.step("start the emulated API server (TLS) with its control endpoint"):
        emulator = Emulator(env.base / "apiserver", NODE)
        env.closers.append(emulator.stop)
        config = env.base / "kubelet-config.yaml"
        # A 4 s lease renews every second: a drill sees the heartbeat stop and resume
        # in seconds, not the 40 s and 10 s of the defaults.
        config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\n"
                          f"kind: KubeletConfiguration\nnodeLeaseDurationSeconds: "
                          f"{LEASE_SECONDS}\n")
        env.extra_flags += ["--kubeconfig", str(emulator.kubeconfig), "--config", str(config),
                            "--node-status-update-frequency", STATUS_EVERY]
    world = World(env, emulator)
    env.start()
    with env.step("the node registers and turns Ready"):
        env.wait(world.node_ready, JOIN_TIMEOUT, "the Node Ready in the API")
    with env.step("a static pod and two API pods run, in the kubelet and in the API"):
        env.write_pod("alpha")
        for name, job in (("web", False), ("job", True)):
            emulator.create("pods", NS, api_pod(env, name, job=job))
        env.desired |= {"web", "job"}
        env.converge(JOIN_TIMEOUT, "alpha, web and job to run")
        wait_clear(env, lambda: world.settled() + [
            f"pod job: {p}" for p in inv.running_ready(world.pod("job"))], JOIN_TIMEOUT,
            "the pods Running and Ready in the API")
    return world


@dataclass
class FaultRun:
    """One API fault drill's timeline: moments drawn from the seed, what was seen."""

    world: World
    seconds: float
    started: float = 0.0
    ended: float = 0.0
    before: set[str] = field(default_factory=set)
    web_id: str = ""

    def run(self, what: str, start: Callable[[], None], stop: Callable[[], None],
            during: Callable[[float], None] | None = None) -> None:
        """Hold the fault for ``seconds`` (longer if gamma has not run yet), doing the
        drill's actions at seeded moments; ``during`` is called every step with the
        seconds since the fault began."""
        world, env = self.world, self.world.env
        rng = world.rng
        at = {"job": rng.uniform(0.1, 0.5) * self.seconds,
              "gamma": rng.uniform(0.0, 0.4) * self.seconds,
              "late": rng.uniform(0.1, 0.5) * self.seconds}
        env.notes.append(f"fault: {what} for {self.seconds:.1f} s; job ends at "
                         f"+{at['job']:.1f} s, gamma at +{at['gamma']:.1f} s, late at "
                         f"+{at['late']:.1f} s")
        self.before = world.running_ids()
        self.web_id = world.container_id("web")
        done: set[str] = set()
        with env.step(f"fault: {what}"):
            self.started = time.time()
            start()
            env.fault()
            try:
                self._hold(at, done, during)
            finally:
                self.ended = time.time()
                stop()

    def _hold(self, at: dict[str, float], done: set[str],
              during: Callable[[float], None] | None) -> None:
        world, env = self.world, self.world.env
        gamma_deadline = self.started + self.seconds + GAMMA_TIMEOUT
        while True:
            elapsed = time.time() - self.started
            for action in sorted(set(at) - done):
                if elapsed >= at[action]:
                    done.add(action)
                    if action == "job":
                        world.end_job()
                    elif action == "gamma":
                        env.write_pod("gamma")
                    else:
                        world.api.create("pods", NS, api_pod(env, "late"))
            gamma_ran = bool(env.running(f"gamma-{NODE}"))
            kept = self.before & world.running_ids()
            alpha = {c.id for c in env.running(f"alpha-{NODE}")}
            if not alpha or not alpha <= self.before:
                raise env.fail(f"the static pod alpha stopped or was restarted during the "
                               f"fault (running now: {sorted(i[:13] for i in alpha)})")
            lost = self.before - kept - self._job_ids()
            if lost:
                raise env.fail(f"containers stopped during the fault: "
                               f"{sorted(i[:13] for i in lost)}")
            if during is not None:
                during(elapsed)
            if elapsed >= self.seconds and done == set(at) and gamma_ran:
                return
            if time.time() > gamma_deadline:
                raise env.fail("the static pod gamma, written while the API was faulted, "
                               f"did not run within {GAMMA_TIMEOUT:g} s: the file source "
                               "stopped working")
            time.sleep(0.1)

    def _job_ids(self) -> set[str]:
        return {c.id for c in self.world.env.containers() if c.pod == "job"}

    def recover(self) -> None:
        """Everything catches up: the kubelet's pods, the lease, the Node, the API's
        statuses; no container restarted, replaced or duplicated."""
        world, env = self.world, self.world.env
        env.desired.add("late")
        with env.step("recover: the kubelet runs alpha, gamma, web and late"):
            env.converge(RECOVER_TIMEOUT)
        with env.step("recover: the lease renews again, the Node is Ready, the API "
                      "shows every status (job terminated with 0)"):
            ended = self.ended

            def caught_up() -> list[str]:
                problems = world.settled()
                if world.renew_time() <= ended:
                    problems.append("the lease was not renewed since the fault ended")
                return problems + [f"pod job: {p}" for p in inv.terminated_shown(
                    world.pod("job"), "main", 0)]

            wait_clear(env, caught_up, RECOVER_TIMEOUT, "the API to catch up")
            env.recovered_at = time.monotonic()
        with env.step("no container restarted, replaced or duplicated"):
            now = world.running_ids()
            new = {c.id for c in env.containers() if c.pod in (f"gamma-{NODE}", "late")}
            gone = self.before - now - self._job_ids()
            extra = now - self.before - new
            if gone or extra:
                raise env.fail(f"containers changed: gone {sorted(i[:13] for i in gone)}, "
                               f"new {sorted(i[:13] for i in extra)}")
            if world.container_id("web") != self.web_id:
                raise env.fail(f"web's container changed in the API: {self.web_id} -> "
                               f"{world.container_id('web')}")
            history = world.api.pod_history()
            problems = inv.ready_flips(history, "web") + inv.regressions(history, "job")
            for name in ("web", "late", f"alpha-{NODE}", f"gamma-{NODE}", "job"):
                problems += inv.restarts(history, name)
            if problems:
                raise env.fail("; ".join(problems[:4]))
