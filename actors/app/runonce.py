"""Run-once mode (upstream's --runonce): start the manifests' pods, wait, report.

Each pod is brought up by its own loop (sync, look, sync again) until it runs, fails, or the
deadline passes. Reasons that no retry can fix soon (a missing image, a bad config) end
that pod's wait at once, so one bad pod never holds up the report on the others.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from loguru import logger
from msgspec import Struct

from runtime.clock import Clock
from runtime.errors import CRIError
from runtime.ids import PodUID
from runtime.kuberuntime.manager import KubeRuntimeManager
from runtime.kuberuntime.result import PodSyncResult
from runtime.pod.admission import Node, admit, rejected_message
from runtime.pod.model import Pod
from runtime.status.generate import generate_pod_status
from runtime.status.types import PodStatus

# Waiting reasons that a retry within run-once's deadline will not fix.
HOPELESS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "FailedMount",
    }
)


class PodOutcome(Struct, frozen=True):
    """How one pod ended up: ``ok`` when every container runs (or the pod succeeded)."""

    pod: Pod
    status: PodStatus
    ok: bool
    error: str = ""


def pod_is_up(status: PodStatus) -> bool:
    if status.phase == "Succeeded":
        return True
    return status.phase == "Running" and all(
        c.state.running is not None for c in status.container_statuses
    )


class RunOnce:
    """Brings a set of pods up on a runtime manager, each pod in its own thread."""

    def __init__(
        self,
        manager: KubeRuntimeManager,
        clock: Clock,
        timeout: float,
        parallelism: int = 8,
        host_ip: str = "",
        node: Node | None = None,
        allowed_unsafe_sysctls: tuple[str, ...] = (),
    ) -> None:
        self._manager = manager
        self._clock = clock
        self._timeout = timeout
        self._parallelism = parallelism
        self._host_ip = host_ip
        self._node = node
        self._allowed_unsafe_sysctls = allowed_unsafe_sysctls

    def run(self, pods: tuple[Pod, ...]) -> tuple[PodOutcome, ...]:
        """Admit the pods one by one (upstream's runOnce: against those admitted before
        it), then bring the admitted ones up; a refused pod is Failed with its reason."""
        if not pods:
            return ()
        admitted: list[Pod] = []
        refused: dict[str, PodOutcome] = {}
        for pod in pods:
            rejection = None if self._node is None else admit(
                pod, self._node, admitted, self._allowed_unsafe_sysctls)
            if rejection is None:
                admitted.append(pod)
                continue
            reason, message = rejection
            logger.bind(pod=pod.metadata.name, uid=pod.uid, container="").warning(
                "rejected: {}: {}", reason, message)
            status = PodStatus(phase="Failed", reason=reason,
                               message=rejected_message(message))
            refused[pod.uid] = PodOutcome(pod, status, ok=False, error=f"{reason}: {message}")
        deadline = self._clock.monotonic() + self._timeout
        workers = min(self._parallelism, max(len(admitted), 1))
        with ThreadPoolExecutor(workers, thread_name_prefix="runonce") as pool:
            ran = dict(zip((p.uid for p in admitted),
                           pool.map(lambda p: self._run_pod(p, deadline), admitted), strict=True))
        return tuple(refused.get(p.uid) or ran[p.uid] for p in pods)

    def _run_pod(self, pod: Pod, deadline: float) -> PodOutcome:
        log = logger.bind(pod=pod.metadata.name, uid=pod.uid, container="")
        sync: PodSyncResult | None = None
        delay = 0.05
        status = PodStatus(phase="Pending")
        try:
            while True:
                runtime_status = self._manager.get_pod_status(
                    PodUID(pod.uid), pod.metadata.name, pod.metadata.namespace
                )
                status = generate_pod_status(
                    pod, runtime_status, sync, now=self._clock.now(), host_ip=self._host_ip
                )
                if pod_is_up(status):
                    log.info("pod is {}", status.phase)
                    return PodOutcome(pod, status, ok=True)
                if status.phase == "Failed":
                    return PodOutcome(pod, status, ok=False, error="the pod failed")
                hopeless = [f for f in (sync.failures if sync else ()) if f.error in HOPELESS]
                if hopeless:
                    first = hopeless[0]
                    return PodOutcome(pod, status, ok=False,
                                      error=f"{first.target}: {first.error}: {first.message}")
                if self._clock.monotonic() >= deadline:
                    error = str(sync) if sync and not sync.ok else "not running by the deadline"
                    return PodOutcome(pod, status, ok=False, error=f"timed out: {error}")
                sync = self._manager.sync_pod(pod, runtime_status)
                if sync.ok and not sync.steps:
                    # Nothing to do right now (an init container or a start in flight).
                    self._clock.sleep(delay)
                    delay = min(delay * 2, 1.0)
                else:
                    delay = 0.05
        except CRIError as err:
            log.error("the runtime failed: {}", err)
            return PodOutcome(pod, status, ok=False, error=str(err))
