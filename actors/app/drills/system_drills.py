"""Drills that fail what surrounds the actors: the runtime, the process, the inputs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import actors
from actors.app.drills.actor_drills import (
    RECOVER_TIMEOUT,
    START_TIMEOUT,
    restarts_of,
    sample,
    start_pods,
    uid_of,
)
from actors.app.drills.env import NODE, Env
from actors.app.drills.invariants import SeenPod
from actors.app.drills.runner import Drill
from actors.kubelet import names
from actors.kubelet.messages import GetPods, UpdateKind, UpdatePod

FLOOD = 10_000
FLOOD_MAX_SYNCS = 20


def running_ids(env: Env) -> set[str]:
    return {c.id for c in env.containers() if c.state == "RUNNING"}


def same_containers(env: Env, before: set[str], what: str) -> None:
    now = running_ids(env)
    if now != before:
        raise env.fail(f"{what}: containers changed: gone {sorted(i[:13] for i in before - now)}"
                       f", new {sorted(i[:13] for i in now - before)}")


def crash_between_create_and_start(env: Env) -> None:
    """A pod worker dies right after CreateContainer: the new worker must not leave the
    CREATED container behind, nor start two."""
    env.start()
    start_pods(env, ("alpha",))
    env.crash.count = 1
    env.plan.arm()
    with env.step("a new pod's worker crashes between CreateContainer and StartContainer"):
        env.write_pod("beta")
        env.wait(lambda: env.plan.fired, START_TIMEOUT, "the worker to create a container")
    with env.step("recover: one running container, nothing left CREATED"):
        env.converge(RECOVER_TIMEOUT)
        beta = [c for c in env.containers() if c.pod == f"beta-{NODE}"]
        if len(beta) != 1:
            raise env.fail(f"beta has {len(beta)} containers: {beta}")
        if beta[0].id in env.crash.created:
            raise env.fail("the never-started container was started instead of replaced")
    with env.step("the worker was restarted"):
        env.wait(lambda: restarts_of(env, "pod") >= 1, 10.0, "a pod worker restart")


def kill_containerd(env: Env) -> None:
    """SIGKILL the embedded containerd: the runtime monitor starts it again; pods untouched."""
    env.start()
    start_pods(env)
    before = running_ids(env)
    old = env.emb.pid
    with env.step("SIGKILL containerd"):
        assert old is not None
        os.kill(old, signal.SIGKILL)
        env.fault()
    with env.step("the runtime monitor restarts containerd"):
        env.wait(lambda: sample(env, "kubelet_actors_containerd_restarts_total") >= 1,
                 30.0, "a containerd restart")
        if env.emb.pid in (None, old):
            raise env.fail("containerd runs under its old pid")
    with env.step("recover: pods converge, same containers"):
        env.converge(RECOVER_TIMEOUT)
        same_containers(env, before, "after the containerd restart")


def _code_root() -> str:
    """The directory this process's code comes from (a checkout, or site-packages of an
    install), so the daemon subprocess runs the same code as the drill."""
    return str(Path(actors.__file__).resolve().parents[1])


class _Daemon:
    """``kubelet-actors`` as a subprocess, with its own trace dir and read-only port."""

    def __init__(self, env: Env) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        trace_dir = env.trace_dir / f"run{len(env.trace_dirs) + 1}"
        env.trace_dirs.append(trace_dir)
        self.log = env.base / f"daemon-{len(env.trace_dirs)}.log"
        args = [sys.executable, "-m", "bin.main", *env.flags(trace_dir),
                "--container-runtime-endpoint", env.emb.endpoint, "--enable-server=false",
                "--healthz-port", "0", "--read-only-port", str(self.port)]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(args, cwd=env.base, stdout=out,
                                         stderr=subprocess.STDOUT,
                                         env={**os.environ, "PYTHONPATH": _code_root()})

    def view(self) -> list[SeenPod] | None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"the daemon exited with {self.proc.returncode}: "
                               f"{self.log.read_text(errors='replace')[-2000:]}")
        try:
            url = f"http://127.0.0.1:{self.port}/pods"
            with urllib.request.urlopen(url, timeout=5) as response:
                items = json.loads(response.read())["items"]
        except OSError:
            return None
        return [SeenPod(p["metadata"]["name"], p["status"].get("phase", ""),
                        sum(1 for c in p["status"].get("containerStatuses", [])
                            if "running" in c.get("state", {})),
                        len(p["spec"]["containers"])) for p in items]

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                return self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait(timeout=10)


def sigkill_daemon(env: Env) -> None:
    """SIGKILL the daemon process and start it again: its containers are adopted."""
    env.start(kubelet=False)
    daemons: list[_Daemon] = []
    try:
        first = _Daemon(env)
        daemons.append(first)
        env.view_override = first.view
        start_pods(env)
        before = running_ids(env)
        with env.step("SIGKILL the daemon"):
            code = first.stop(signal.SIGKILL)
            if code != -signal.SIGKILL:
                raise env.fail(f"the daemon exited with {code}")
            env.fault()
        with env.step("start it again: it adopts the containers"):
            second = _Daemon(env)
            daemons.append(second)
            env.view_override = second.view
            env.converge(RECOVER_TIMEOUT)
            same_containers(env, before, "after the daemon restart")
        with env.step("the restarted daemon stops cleanly on SIGTERM"):
            code = second.stop()
            if code != 0:
                raise env.fail(f"the daemon exited with {code} on SIGTERM")
            same_containers(env, before, "after SIGTERM")
    finally:
        env.view_override = None
        for daemon in daemons:
            with contextlib.suppress(Exception):
                daemon.stop(signal.SIGKILL)


def flood_mailbox(env: Env) -> None:
    """10k SYNC updates to one pod worker: coalescing keeps it to a few syncs."""
    env.start()
    start_pods(env, ("alpha",))
    assert env.kubelet is not None
    dispatch = env.kubelet.dispatch
    uid = uid_of(env, f"alpha-{NODE}")
    status = dispatch.ref(names.STATUS)
    if status is None:
        raise env.fail("the status manager is not running")
    pod = next(p for p, _ in status.ask(GetPods(), block=True, timeout=5.0) if p.uid == uid)
    before = running_ids(env)

    def syncs() -> float:
        return sample(env, "kubelet_pod_worker_duration_seconds_count", operation_type="sync")

    synced = syncs()
    with env.step(f"flood pod/{uid[:8]} with {FLOOD} SYNC updates"):
        env.fault()
        for _ in range(FLOOD):
            dispatch.tell(names.worker_name(uid), UpdatePod(pod, UpdateKind.SYNC), sender="drill")
    with env.step("the mailbox drains"):
        env.wait(lambda: dispatch.mailbox_depths(names.actor_group).get(
            names.WORKER_GROUP, 0) == 0, 60.0, "the pod workers' mailboxes to drain",
            interval=0.05)
        env.recovered_at = time.monotonic()
    with env.step("coalescing: a few syncs for the whole flood"):
        ran = syncs() - synced
        env.notes.append(f"{FLOOD} updates -> {ran:g} syncs")
        if ran > FLOOD_MAX_SYNCS:
            raise env.fail(f"{ran:g} syncs for {FLOOD} updates (at most {FLOOD_MAX_SYNCS})")
    with env.step("the pod keeps running"):
        env.converge(RECOVER_TIMEOUT)
        same_containers(env, before, "after the flood")


GARBAGE = "apiVersion: v1\nkind: Pod\nmetadata: {name: [\n\x00\x01 not yaml ]]]\n"


def corrupt_manifest(env: Env) -> None:
    """Garbage over a running pod's manifest: it keeps running as it was and the problem is
    reported; the fixed file changes nothing; the deleted file removes the pod."""
    env.start()
    start_pods(env)
    before = running_ids(env)
    original = (env.manifests / "alpha.yaml").read_text()

    def problems_reported() -> float:
        return sample(env, "kubelet_actors_manifest_errors_current", source="file")

    with env.step("write garbage over alpha's manifest"):
        env.write_pod("alpha", GARBAGE)
        env.fault()
    with env.step("the problem is reported, the pod keeps running"):
        env.wait(lambda: problems_reported() >= 1, 15.0, "the manifest error to be reported")
        env.converge(RECOVER_TIMEOUT)
        same_containers(env, before, "with the corrupt manifest")
    with env.step("fix the manifest: nothing changes"):
        env.write_pod("alpha", original)
        env.wait(lambda: problems_reported() == 0, 15.0, "the manifest error to clear")
        env.converge(RECOVER_TIMEOUT)
        same_containers(env, before, "after the fix")
    with env.step("delete the manifest: the pod is removed"):
        gone = {c.id for c in env.running(f"alpha-{NODE}")}
        env.remove_pod("alpha")
        env.converge(RECOVER_TIMEOUT, "alpha to be removed")
        same_containers(env, before - gone, "after the delete")


SYSTEM_DRILLS = (
    Drill("crash-between-create-and-start", "a pod worker dies after CreateContainer, "
          "before StartContainer: no CREATED leftover, never two started",
          crash_between_create_and_start),
    Drill("kill-containerd", "SIGKILL the embedded containerd: restarted by the runtime "
          "monitor, pods untouched", kill_containerd),
    Drill("sigkill-daemon", "SIGKILL the daemon process and start it again: containers "
          "adopted, not restarted", sigkill_daemon),
    Drill("flood-mailbox", f"{FLOOD} SYNC updates to one pod worker: coalesced into a few "
          "syncs, mailbox drains, pod keeps running", flood_mailbox),
    Drill("corrupt-manifest", "garbage over a running pod's manifest: last good version "
          "kept and the problem reported; fixed: no change; deleted: pod removed",
          corrupt_manifest),
)
