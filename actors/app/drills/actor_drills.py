"""Drills that make an actor fail: in the middle of a handler, or in on_start."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from actors.app.drills.env import NODE, Env
from actors.app.drills.runner import Drill
from actors.core.faults import ActorFault
from actors.core.supervision import SupervisorSpec
from actors.kubelet import names
from runtime.clock import RealClock
from runtime.cri.client import CRIClient
from runtime.ids import PodUID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.static import read_manifest_dir

PODS = ("alpha", "beta")
START_TIMEOUT = 60.0
RECOVER_TIMEOUT = 45.0
FIRE_TIMEOUT = 30.0

# The escalation drill's supervision: fast back-off and a small MaxR, so giving up takes
# seconds (the kubelet's own is 10 restarts in 60 s with back-off up to 10 s).
ESCALATE_SPEC = SupervisorSpec(strategy="rest_for_one", max_restarts=3, within=30.0,
                               backoff_initial=0.05, backoff_max=0.2, backoff_jitter=0.2,
                               reset_after=30.0)


def sample(env: Env, name: str, **labels: str) -> float:
    if env.kubelet is None:
        return 0.0
    value = env.kubelet.metrics.registry.get_sample_value(name, labels)
    return float(value or 0.0)


def restarts_of(env: Env, kind: str) -> float:
    return sample(env, "kubelet_actors_restarts_total", actor=kind)


def start_pods(env: Env, names: tuple[str, ...] = PODS) -> None:
    with env.step(f"start {len(names)} pods"):
        for name in names:
            env.write_pod(name)
        env.converge(START_TIMEOUT, "the pods to run")


def uid_of(env: Env, full_name: str) -> PodUID:
    assert env.cri is not None
    for sandbox in env.cri.list_pod_sandbox():
        if sandbox.labels.get(L.POD_NAME) == full_name:
            return PodUID(sandbox.labels[L.POD_UID])
    raise env.fail(f"no sandbox of {full_name}")


def add_pod(env: Env) -> None:
    env.write_pod("gamma")


def remove_pod(env: Env) -> None:
    env.remove_pod("alpha")


def make_orphan(env: Env) -> None:
    """Run a pod behind the kubelet's back (same labels, no manifest): an orphan to kill."""
    orphan_dir = env.base / "orphan"
    orphan_dir.mkdir(exist_ok=True)
    (orphan_dir / "stray.yaml").write_text(
        (env.manifests / "alpha.yaml").read_text().replace("name: alpha", "name: stray"))
    (sourced,) = read_manifest_dir(orphan_dir, NODE).pods
    pod = sourced.pod
    settings = NodeSettings(node_name=NODE, root_dir=str(env.base / "root"),
                            pod_logs_dir=str(env.base / "logs"))
    with CRIClient(env.emb.endpoint, timeout=30.0) as client:
        manager = KubeRuntimeManager(client, settings, RealClock())
        status = manager.get_pod_status(PodUID(pod.uid), pod.metadata.name,
                                        pod.metadata.namespace)
        result = manager.sync_pod(pod, status)
        if not result.ok:
            raise env.fail(f"could not start the orphan pod: {result}")
    env.removed.add(pod.metadata.name)  # it must end up gone


def kill_actor(actor: str, kind: str, message: str, calls: tuple[int, int],
               trigger: Callable[[Env], None] | None) -> Callable[[Env], None]:
    """A drill: ``actor`` fails handling a ``message`` (on a runtime call drawn from
    ``calls``, 0: as its handler begins), after ``trigger``; the kubelet recovers."""

    def run(env: Env) -> None:
        env.start()
        start_pods(env)
        before = restarts_of(env, kind)
        call = env.plan.rng.randint(*calls)
        target = actor
        if actor == names.WORKER_PREFIX:
            target = names.worker_name(uid_of(env, f"alpha-{NODE}"))
        env.plan.add(ActorFault(target, message, skip=0, runtime_call=call))
        env.notes.append(f"fault: {target} handling {message}, "
                         + (f"runtime call #{call}" if call else "as its handler begins"))
        env.plan.arm()
        if trigger is not None:
            with env.step(f"trigger a {message} ({trigger.__name__})"):
                trigger(env)
        with env.step(f"fault {actor} in the middle of a handler"):
            env.wait(lambda: env.plan.fired, FIRE_TIMEOUT, f"{target} to handle a {message}")
        with env.step("recover: every invariant holds again"):
            env.converge(RECOVER_TIMEOUT)
        with env.step(f"{kind} was restarted by its supervisor"):
            env.wait(lambda: restarts_of(env, kind) > before, 10.0, f"a restart of {kind}")

    return run


def raise_in_on_start(env: Env) -> None:
    """PLEG fails mid-relist; its first restart fails in on_start; the second works."""
    env.start()
    start_pods(env)
    env.plan.add(ActorFault(names.PLEG, "Tick", runtime_call=1))
    env.plan.add(ActorFault(names.PLEG, on_start=True, times=1))
    env.plan.arm()
    with env.step("fault pleg mid-relist, then in its restart's on_start"):
        env.wait(lambda: env.plan.fired_count("on_start") >= 1, FIRE_TIMEOUT,
                 "the restarted PLEG to fail in on_start")
    with env.step("add a pod while PLEG restarts"):
        env.write_pod("gamma")
    with env.step("recover: every invariant holds again"):
        env.converge(RECOVER_TIMEOUT)
    with env.step("pleg restarted twice, the supervisor still runs"):
        env.wait(lambda: restarts_of(env, names.PLEG) >= 2, 10.0, "two restarts of pleg")
        assert env.kubelet is not None
        if not env.kubelet.sync_loop.is_alive():
            raise env.fail("the supervisor stopped")


def escalate_from_on_start(env: Env) -> None:
    """PLEG's restarts keep failing in on_start: past MaxR the supervisor gives up, the
    kubelet stops with the reason, and the pods keep running (nothing kills them)."""
    env.expect_escalation = True
    env.supervision = ESCALATE_SPEC
    env.start(supervision=ESCALATE_SPEC)
    start_pods(env, ("alpha",))
    running = {c.id for c in env.running(f"alpha-{NODE}")}
    env.plan.add(ActorFault(names.PLEG, "Tick", runtime_call=1))
    env.plan.add(ActorFault(names.PLEG, on_start=True, times=1000))
    env.plan.arm()
    assert env.kubelet is not None
    supervisor = env.kubelet.sync_loop
    with env.step("the supervisor gives up after MaxR restarts"):
        env.wait(lambda: not supervisor.is_alive(), 30.0, "the supervisor to give up")
        env.fault_at = env.plan.first_fired
        env.recovered_at = time.monotonic()  # here: the fault to the escalation
    with env.step("the kubelet stops with a clear reason"):
        env.stop_kubelet()
        reason = escalation_reason(env.trace_dirs[-1])
        if reason is None or "pleg failed" not in reason or "giving up" not in reason:
            raise env.fail(f"no clear escalation reason in the trace (got {reason!r})")
        env.notes.append(f"escalation: {reason}")
    with env.step("the pods keep running without a kubelet"):
        now = {c.id for c in env.running(f"alpha-{NODE}")}
        if now != running:
            raise env.fail(f"containers changed: {sorted(running)} -> {sorted(now)}")


def escalation_reason(trace_dir: Path) -> str | None:
    from actors.core.trace.reader import read_trace

    for record in read_trace(trace_dir).records:
        if record["k"] == "decision" and record.get("what") == "escalate":
            return str(record.get("detail", {}).get("reason", ""))
    return None


def _kill(actor: str, kind: str, message: str, calls: tuple[int, int],
          trigger: Callable[[Env], None] | None, why: str) -> Drill:
    return Drill(f"kill-{kind.replace('/', '-')}", why, kill_actor(actor, kind, message, calls,
                                                                    trigger))


ACTOR_DRILLS = (
    _kill(names.STATUS, names.STATUS, "DesiredPods", (0, 0), add_pod,
          "status manager dies as it takes the new desired pods; rebuilt, all pods Running"),
    _kill(names.PROBES, names.PROBES, "PodObserved", (0, 0), add_pod,
          "probe manager dies taking a pod observation; rest_for_one restarts its juniors"),
    _kill(names.KILLER, names.KILLER, "KillRuntimePod", (0, 0), make_orphan,
          "pod killer dies taking the kill of an orphan pod: the orphan still goes"),
    _kill(names.PLEG, names.PLEG, "Tick", (1, 2), None,
          "PLEG dies in the middle of a relist (on a runtime call); pods untouched"),
    _kill(names.RUNTIME_MONITOR, names.RUNTIME_MONITOR, "Tick", (1, 1), None,
          "runtime monitor dies in its Status call; pods untouched"),
    _kill(names.SOURCE_FILE, names.SOURCE_FILE, "FilesChanged", (0, 0), add_pod,
          "file source dies taking a change: the new incarnation lists the dir, pod starts"),
    _kill(names.WORKER_PREFIX, names.WORKER_GROUP, "RunPending", (1, 3), remove_pod,
          "a pod worker dies mid-kill (runtime call): the kill is issued again, pod gone"),
    Drill("raise-in-on-start", "PLEG's restart fails once in on_start, then succeeds",
          raise_in_on_start),
    Drill("raise-in-on-start-escalate", "PLEG keeps failing in on_start: the supervisor "
          "escalates past MaxR, the kubelet stops with the reason, pods keep running",
          escalate_from_on_start),
)
