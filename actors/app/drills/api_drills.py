"""Drills that fail the API server under a kubelet joined to it (cluster mode).

Each runs the kubelet on the drill's containerd, joined to an emulated API server
(api_world.join: a static pod and API pods running), makes the API server fail in one way
for a few seconds drawn from the seed, and checks that static pods keep running, the file
source keeps working, nothing is restarted, duplicated or leaked, and that everything
catches up once the fault ends: the lease renews, the Node is Ready, the API shows every
pod's status, a container that ended during the fault included (api_world.FaultRun). Each
also checks how the kubelet's clients behaved, from the server's request log
(api_invariants): back-off after errors, Retry-After honoured, relists only when due.
The emulated API server is test code: these drills need a source checkout (emulator.py).
"""

from __future__ import annotations

import time

from actors.app.drills import api_invariants as inv
from actors.app.drills.api_world import NS, FaultRun, World, api_pod, join, wait_clear
from actors.app.drills.env import Env
from actors.app.drills.runner import Drill

PODS = "pods"


def _seconds(world: World) -> float:
    return round(world.rng.uniform(3.0, 5.0), 2)


def _check(env: Env, problems: list[str]) -> None:
    if problems:
        raise env.fail("; ".join(problems[:4]))


def server_errors(env: Env) -> None:
    """Every request answered 500 and the open watches cut, as a failing API server does."""
    world = join(env)
    run = FaultRun(world, _seconds(world))

    def fail() -> None:
        world.api.inject(code=500)
        world.api.drop_watches()

    run.run("every request answered 500, watches cut", fail, world.api.clear_faults)
    run.recover()
    with env.step("the pod reflector backed off: no tight loop"):
        seen = inv.reflector_requests(world.requests(run.started, run.ended))
        env.notes.append(f"{sum(1 for r in seen if r.fault_code)} pod list/watch requests "
                         f"failed in {run.ended - run.started:.1f} s")
        _check(env, inv.tight_loop(seen) + inv.too_many_rounds(
            seen, run.ended - run.started, "pod list/watch"))


def too_many_requests(env: Env) -> None:
    """Every request answered 429 with a Retry-After drawn from the seed: each client
    waits that long before it asks again."""
    world = join(env)
    # At least 2 s: longer than the reflector's own first back-off (0.8 to 1.6 s), so a
    # client that backs off on its own instead of honouring Retry-After is caught.
    retry_after = world.rng.randint(2, 3)
    run = FaultRun(world, _seconds(world))

    def throttle() -> None:
        world.api.inject(code=429, retry_after=retry_after)
        world.api.drop_watches()

    run.run(f"every request answered 429, Retry-After {retry_after}, watches cut", throttle,
            world.api.clear_faults)
    run.recover()
    with env.step(f"Retry-After {retry_after} s honoured by every client"):
        seen = world.requests(run.started, run.ended + retry_after + 1.0)
        env.notes.append(f"{sum(1 for r in seen if r.fault_code == 429)} requests answered "
                         "429")
        _check(env, inv.retry_after_ignored(seen, retry_after))


def dropped_watches(env: Env) -> None:
    """The pod watch cut (connection closed mid-stream) a few times: each is reopened from
    the last resourceVersion, without a relist, and no event is lost."""
    world = join(env)
    drops = world.rng.randint(2, 4)
    # Apart by more than the reflector's "very short watch" second (bookmarks every 0.5 s
    # keep the reopened watch talking), so each cut is an ordinary one.
    gaps = [round(world.rng.uniform(1.2, 2.0), 2) for _ in range(drops - 1)]
    moments = [sum(gaps[:i]) for i in range(drops)]
    cut: list[int] = []

    def during(elapsed: float) -> None:
        if len(cut) < drops and elapsed >= moments[len(cut)]:
            cut.append(world.api.drop_watches(PODS))

    run = FaultRun(world, max(_seconds(world), moments[-1] + 0.5))
    run.run(f"the pod watch cut {drops} times, at +{', +'.join(f'{m:g}' for m in moments)} s",
            lambda: None, lambda: None, during)
    run.recover()
    with env.step("each cut watch reopened from its version, no relist"):
        seen = inv.reflector_requests(world.requests(run.started, run.ended + 1.0))
        watches = sum(1 for r in seen if r.verb == "watch")
        env.notes.append(f"watches cut: {cut}; reopened {watches}")
        problems = inv.relists(seen, 0, 0, "after cut watches")
        if watches < len(cut):
            problems.append(f"{len(cut)} watches cut, {watches} reopened")
        if sum(cut) < drops:
            problems.append(f"only {sum(cut)} of {drops} cuts found an open pod watch")
        _check(env, problems)


def gone(env: Env) -> None:
    """History compacted and the pod watch ended with 410 Gone: the reflector relists
    (consistently, its version being gone) once per 410, not in a loop."""
    world = join(env)
    expiries = world.rng.randint(1, 2)
    moments = [0.0] + [round(world.rng.uniform(1.5, 2.5), 2)] * (expiries - 1)
    ended: list[int] = []

    def during(elapsed: float) -> None:
        if len(ended) < expiries and elapsed >= sum(moments[:len(ended) + 1]):
            world.api.compact()
            ended.append(world.api.expire_watches(PODS))

    run = FaultRun(world, _seconds(world))
    run.run(f"history compacted and the pod watch ended with 410, {expiries} time(s)",
            lambda: None, lambda: None, during)
    run.recover()
    with env.step("one relist per 410, then watching again"):
        # Each relist comes after the reflector's back-off, which doubles from one 410 to
        # the next (0.8 s, then 1.6 s...): wait for them, then count.
        wait_clear(env, lambda: inv.relists(
            inv.reflector_requests(world.requests(run.started)), sum(ended), 2 * sum(ended),
            "for the 410s"), 15.0, "the relists")
        seen = inv.reflector_requests(world.requests(run.started))
        env.notes.append(f"410s: {ended}; requests: "
                         + ", ".join(f"{r.verb}@{r.resource_version or '-'}" for r in seen))
        # A relist from the gone version answers 410 too, and is followed by a consistent
        # one: at most two lists per 410.
        _check(env, inv.relists(seen, sum(ended), 2 * sum(ended), "for the 410s"))


def partition(env: Env) -> None:
    """The API server unreachable (connections refused, open ones cut) for a while."""
    world = join(env)
    run = FaultRun(world, _seconds(world))
    run.run("the API server unreachable (partition)", world.api.partition, world.api.heal)
    run.recover()
    with env.step("after the partition: the watch reopened without a relist"):
        seen = inv.reflector_requests(world.requests(run.started))
        _check(env, inv.relists(seen, 0, 0, "after the partition"))


def slow_writes(env: Env) -> None:
    """PATCH and PUT answered late (latency drawn from the seed, past the heartbeat
    client's timeout): statuses land in order, the lease resumes."""
    world = join(env)
    latency = round(world.rng.uniform(1.2, 2.5), 2)
    run = FaultRun(world, _seconds(world))

    def slow() -> None:
        world.api.inject(verb="patch", latency=latency)
        world.api.inject(verb="update", latency=latency)

    run.run(f"every PATCH and PUT {latency} s late", slow, world.api.clear_faults)
    run.recover()
    with env.step("no status landed out of order"):
        history = world.api.pod_history()
        _check(env, inv.regressions(history, "job") + inv.ready_flips(history, "web"))


def kubelet_restart(env: Env) -> None:
    """The kubelet stopped and started again (an upgrade): no container restarted, no
    Ready pod shown not Ready in the API, and a container that ended meanwhile shown
    terminated."""
    world = join(env)
    before = world.running_ids()
    web_id = world.container_id("web")
    with env.step("stop the kubelet; job ends while it is away"):
        started = time.time()
        env.stop_kubelet()
        env.fault()
        world.end_job()
        env.wait(lambda: any(c.pod == "job" and c.state == "EXITED"
                             for c in env.containers()), 30.0, "job's container to exit")
    with env.step("start the kubelet again; an API pod is added"):
        env.start_kubelet()
        world.api.create("pods", NS, api_pod(env, "late"))
    run = FaultRun(world, 0.0, started=started, ended=time.time(), before=before,
                   web_id=web_id)
    env.write_pod("gamma")
    run.recover()
    with env.step("the restarted kubelet adopted its pods"):
        mirror = world.mirror("alpha") or {}
        env.notes.append(f"web {web_id[:25]}; mirror alpha "
                         f"{(mirror.get('metadata') or {}).get('uid', '')}")


API_DRILLS = (
    Drill("api-500s", "every API request answered 500 and watches cut: static pods run, "
          "nothing restarted, reflector backs off, all catches up", server_errors),
    Drill("api-429s", "every API request answered 429 with Retry-After: each client waits "
          "that long, nothing restarted, all catches up", too_many_requests),
    Drill("api-dropped-watches", "the pod watch cut mid-stream a few times: reopened "
          "without relist, no event lost", dropped_watches),
    Drill("api-410-gone", "history compacted, the pod watch ends 410: one relist per "
          "410, no loop, all catches up", gone),
    Drill("api-partition", "the API server unreachable for seconds: static pods and the "
          "file source work on, lease and statuses resume", partition),
    Drill("api-slow-writes", "PATCH and PUT seconds late: statuses land in order, lease "
          "resumes, nothing restarted", slow_writes),
    Drill("api-kubelet-restart", "the kubelet restarted in cluster mode: no container "
          "restarted, no Ready pod shown not Ready, exits seen", kubelet_restart),
)
"""Every API drill needs the emulated API server: a source checkout (emulator.py)."""

API_DRILL_NAMES = frozenset(d.name for d in API_DRILLS)
