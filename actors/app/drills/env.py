"""A drill's world: a private embedded containerd, a kubelet on it, pods, and cleanup.

The machinery is the test bed's (actors.app.testbed, shared with the e2e tests and the
benchmarks): the machine-wide lock, the loopback registry with the images, and the cleanup
of a containerd's directory (pods, containerd, shims, mounts, bridge, dir). The drills have
their own corner of it (testbed.DRILLS: directory prefix, bridge and subnet); drills run
side by side each take a slot of it (``DRILLS.slot(n)``: a bridge and subnet of their own)
and a cgroup root of their own (``--cgroup-root /<slot>``): a kubelet starting removes
the empty pod cgroups no pod of its runtime holds, which under a shared root included a
pod cgroup another slot's kubelet had just made.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import msgspec
from loguru import logger

from actors.app.config.flags import parse_flags
from actors.app.daemon import Kubelet, start_kubelet
from actors.app.drills.invariants import RUNNING, SeenContainer, SeenPod, all_problems, duplicates
from actors.app.node import node_ip
from actors.app.testbed import (
    BUSYBOX_IMAGE,
    DRILLS,
    LOCK_WAIT_S,
    Bed,
    cleanup_runtime_dir,
    machine_lock,
    new_embedded,
    own_cgroup_root,
    serve_images,
)
from actors.core.faults import FaultPlan
from actors.core.supervision import SupervisorSpec
from actors.kubelet import names
from actors.kubelet.faults import CrashAfterCreate
from actors.kubelet.messages import GetPods
from runtime.cri.client import CRIClient
from runtime.errors import CRIError, KubeletError
from runtime.kuberuntime import labels as L

T = TypeVar("T")

NODE = "drill-node"
SERVE = "trap 'exit 0' TERM; while true; do sleep 1; done"
WATCH_EVERY = 0.2


class DrillFailed(Exception):
    """A step of a drill failed: ``step`` names it, the message says how."""

    def __init__(self, step: str, detail: str) -> None:
        super().__init__(detail)
        self.step = step
        self.detail = detail


@contextlib.contextmanager
def session(take_lock: bool = True, serve_registry: bool = True,
            lock_wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """The machine-wide lock (waiting up to ``lock_wait_s`` for it) and the registry, for a
    run of drills; without the lock (the caller holds it), the drills' dirs of dead runs
    are still cleaned up.

    Raises actors.app.testbed.TestbedError when the test bed cannot be set up here.
    """
    with contextlib.ExitStack() as stack:
        if take_lock:
            stack.enter_context(machine_lock(DRILLS, lock_wait_s))
        else:
            for stale in DRILLS.dirs():
                logger.warning("cleaning up the drill dir {} of an earlier run", stale)
                cleanup_runtime_dir(stale, DRILLS.slot_of(stale).bridge)
        if serve_registry:
            stack.enter_context(serve_images())
        yield


def manifest(name: str, image: str) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: {image}
    command: ["sh", "-c", "{SERVE}"]
"""


class Env:
    """One drill's containerd, kubelet(s), pods and trace; ``close`` undoes all of it.

    ``bed`` is the drills' slot the containerd runs in (its dir prefix, bridge, subnet).
    """

    def __init__(self, name: str, seed: int, trace_root: Path, bed: Bed = DRILLS) -> None:
        self.name = name
        self.bed = bed
        self.plan = FaultPlan(seed)
        self.crash = CrashAfterCreate(self.plan)  # armed by the drill that wants it
        self._cgroups = contextlib.ExitStack()  # closed last, once no pod is left
        self.cgroup_root = self._cgroups.enter_context(own_cgroup_root(bed))
        self.base = bed.new_dir()
        self.manifests = self.base / "manifests"
        self.manifests.mkdir()
        self.trace_dir = trace_root / name
        self.trace_dirs: list[Path] = []
        self.image = BUSYBOX_IMAGE
        self.emb = new_embedded(self.base, bed.bridge, bed.subnet)
        self.cri: CRIClient | None = None
        self.kubelet: Kubelet | None = None
        self.desired: set[str] = set()
        self.removed: set[str] = set()
        self.step_name = "setup"
        self.fault_at: float | None = None
        self.recovered_at: float | None = None
        self.notes: list[str] = []
        self.violations: list[str] = []
        self.supervision: SupervisorSpec | None = None  # None: the kubelet's own
        self.expect_escalation = False
        self.view_override: Callable[[], list[SeenPod] | None] | None = None
        self.extra_flags: list[str] = []  # e.g. the API drills' --kubeconfig
        # The read-only port: 0 (off), or ANY_PORT for a drill that polls it (bound_ports).
        self.read_only_port = 0
        self.closers: list[Callable[[], None]] = []  # run first by close(), last added first
        self._watching = threading.Event()
        self._watcher: threading.Thread | None = None

    # --- steps -----------------------------------------------------------------------

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        self.step_name = name
        logger.info("drill {}: {}", self.name, name)
        yield

    def fail(self, detail: str) -> DrillFailed:
        return DrillFailed(self.step_name, detail)

    def wait(self, predicate: Callable[[], T], timeout: float, what: str,
             interval: float = 0.1) -> T:
        """Poll ``predicate`` until truthy; else fail the step naming ``what``."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            try:
                value = predicate()
            except (CRIError, KubeletError, OSError) as err:
                value, last = None, f"{type(err).__name__}: {err}"
            else:
                if value:
                    return value
                last = value if last is None or value else last
            if time.monotonic() >= deadline:
                raise self.fail(f"{what} not within {timeout:g} s (last: {last!r})")
            time.sleep(interval)

    # --- the runtime and the kubelet ---------------------------------------------------

    def start(self, kubelet: bool = True, supervision: SupervisorSpec | None = None) -> None:
        with self.step("start containerd"):
            self.emb.start()
            self.cri = CRIClient(self.emb.endpoint, timeout=30.0)
        if kubelet:
            self.start_kubelet(supervision)
        self._watcher = threading.Thread(target=self._watch, name=f"drill-{self.name}-watch",
                                         daemon=True)
        self._watcher.start()

    def flags(self, trace_dir: Path) -> list[str]:
        return ["--pod-manifest-path", str(self.manifests),
                "--root-dir", str(self.base / "root"), "--pod-logs-dir", str(self.base / "logs"),
                "--node-name", NODE, "--file-check-frequency", "2s",
                "--cgroup-root", self.cgroup_root,
                "--trace-dir", str(trace_dir), *self.extra_flags]

    def start_kubelet(self, supervision: SupervisorSpec | None = None) -> Kubelet:
        with self.step("start the kubelet"):
            trace_dir = self.trace_dir / f"run{len(self.trace_dirs) + 1}"
            self.trace_dirs.append(trace_dir)
            flags = parse_flags([*self.flags(trace_dir), "--enable-server=false",
                                 "--read-only-port", "0", "--healthz-port", "0",
                                 "--container-runtime-endpoint", self.emb.endpoint])
            if self.read_only_port:  # any free port: past the flags' check, on purpose
                flags = msgspec.structs.replace(flags, read_only_port=self.read_only_port)
            runtime = CRIClient(self.emb.endpoint, timeout=flags.runtime_request_timeout)
            # Joined to a cluster, the Node's InternalIP is this machine's (as the daemon's).
            address = node_ip(flags) if flags.kubeconfig else ""
            self.kubelet = start_kubelet(flags, runtime, address, self.emb, faults=self.plan,
                                         runtime_faults=(self.plan, self.crash),
                                         supervision=supervision,
                                         runtime_endpoint=self.emb.endpoint)
            return self.kubelet

    def stop_kubelet(self) -> None:
        if self.kubelet is not None:
            kubelet, self.kubelet = self.kubelet, None
            kubelet.stop()

    # --- pods --------------------------------------------------------------------------

    def write_pod(self, name: str, text: str | None = None) -> str:
        """Write (atomically) the manifest of pod ``name``; returns its full name."""
        staging = self.base / f".{name}.yaml"
        staging.write_text(text if text is not None else manifest(name, self.image))
        os.replace(staging, self.manifests / f"{name}.yaml")
        full = f"{name}-{NODE}"
        self.desired.add(full)
        self.removed.discard(full)
        return full

    def remove_pod(self, name: str) -> str:
        (self.manifests / f"{name}.yaml").unlink()
        full = f"{name}-{NODE}"
        self.desired.discard(full)
        self.removed.add(full)
        return full

    def containers(self) -> list[SeenContainer]:
        assert self.cri is not None
        return [SeenContainer(c.id, c.labels.get(L.POD_NAME, "?"),
                              c.labels.get(L.CONTAINER_NAME, c.metadata.name), c.state.name)
                for c in self.cri.list_containers()]

    def running(self, pod: str) -> list[SeenContainer]:
        return [c for c in self.containers() if c.pod == pod and c.state == RUNNING]

    def view(self) -> list[SeenPod] | None:
        """The kubelet's view of its pods; None while the status manager does not answer."""
        if self.view_override is not None:
            return self.view_override()
        kubelet = self.kubelet
        ref = kubelet.dispatch.ref(names.STATUS) if kubelet is not None else None
        if ref is None:
            return None
        try:
            pods = ref.ask(GetPods(), block=True, timeout=5.0)
        except Exception:  # down or restarting: not converged yet
            return None
        return [SeenPod(p.metadata.name, s.phase,
                        sum(1 for c in s.container_statuses if c.state.running is not None),
                        len(p.spec.containers)) for p, s in pods]

    def problems(self, view: list[SeenPod] | None = None) -> list[str]:
        seen = view if view is not None else self.view()
        if seen is None:
            return ["the status manager does not answer"]
        return all_problems(self.containers(), seen, self.desired, self.removed)

    def converge(self, timeout: float, what: str = "every invariant to hold") -> float:
        """Wait until the steady-state invariants hold; returns when (and marks recovery)."""
        last: list[str] = []

        def holds() -> bool:
            nonlocal last
            try:
                last = self.problems()
            except CRIError as err:
                last = [f"the runtime does not answer: {err.detail}"]
            return not last

        deadline = time.monotonic() + timeout
        while not holds():
            if time.monotonic() >= deadline:
                raise self.fail(f"{what} not within {timeout:g} s: " + "; ".join(last[:4]))
            time.sleep(0.1)
        now = time.monotonic()
        if self.fault_at is None:
            self.fault_at = self.plan.first_fired
        if self.fault_at is not None and self.recovered_at is None:
            self.recovered_at = now
        return now

    def fault(self) -> None:
        """Mark the moment the drill injected its fault (when it is not the plan's)."""
        if self.fault_at is None:
            self.fault_at = time.monotonic()

    # --- watching while the drill runs -------------------------------------------------

    def _watch(self) -> None:
        self._watching.set()
        client = CRIClient(self.emb.endpoint, timeout=5.0)
        try:
            while self._watching.is_set():
                try:
                    seen = [SeenContainer(c.id, c.labels.get(L.POD_NAME, "?"),
                                          c.labels.get(L.CONTAINER_NAME, ""), c.state.name)
                            for c in client.list_containers()]
                except CRIError:
                    seen = []
                for problem in duplicates(seen):
                    if problem not in self.violations:
                        self.violations.append(problem)
                time.sleep(WATCH_EVERY)
        finally:
            client.close()

    # --- cleanup -----------------------------------------------------------------------

    def close(self) -> None:
        """Stop everything and remove everything, whatever state the drill left."""
        self._watching.clear()
        if self._watcher is not None:
            self._watcher.join(timeout=10.0)
        try:
            self.stop_kubelet()
        except Exception as err:
            logger.opt(exception=err).error("drill {}: stopping the kubelet failed", self.name)
        for closer in reversed(self.closers):
            try:
                closer()
            except Exception as err:
                logger.opt(exception=err).error("drill {}: cleanup failed", self.name)
        if self.cri is not None:
            self.cri.close()
        if not self.emb.is_running():
            with contextlib.suppress(Exception):
                self.emb.start()  # so the pods can be removed through CRI
        cleanup_runtime_dir(self.base, self.bed.bridge, self.emb)
        shutil.rmtree(self.base, ignore_errors=True)
        try:
            self._cgroups.close()
        except OSError as err:
            logger.error("drill {}: removing its cgroup root failed: {}", self.name, err)
