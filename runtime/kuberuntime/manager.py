"""The runtime manager: sync_pod carries out compute_pod_actions' plan (upstream SyncPod).

Order, as upstream: kill the pod (or the containers not to keep), create the sandbox,
start the next init containers, then the regular containers. Every container start first
checks the crash-loop back-off. Each step's outcome lands in a PodSyncResult, so the caller
(a pod worker) can report waiting reasons and decide when to retry.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from loguru import logger

from runtime.clock import Clock
from runtime.cri.service import CRIRuntime
from runtime.cri.types import ContainerState, PodSandboxConfig
from runtime.errors import CRIError, CRINotFound, SyncError
from runtime.ids import ContainerID, PodUID, SandboxID
from runtime.kuberuntime.actions import (
    KillReason,
    PodActions,
    ProbeVerdicts,
    compute_pod_actions,
)
from runtime.kuberuntime.api_volumes import referenced_objects
from runtime.kuberuntime.backoff import Observe, unobserved
from runtime.kuberuntime.container import ContainerLifecycle
from runtime.kuberuntime.images import ImageManager
from runtime.kuberuntime.object_source import ObjectSource
from runtime.kuberuntime.podstatus import RuntimePodStatus, get_pod_status
from runtime.kuberuntime.result import PodSyncResult, StepResult
from runtime.kuberuntime.sandbox import generate_sandbox_config
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.volumes import set_up_volumes
from runtime.pod.model import Container, Pod


class KubeRuntimeManager:
    """Brings pods to their spec on one CRI runtime, and takes them down."""

    def __init__(
        self,
        runtime: CRIRuntime,
        settings: NodeSettings,
        clock: Clock,
        node_ip: str = "",
        kill_parallelism: int = 8,
        observe: Observe = unobserved,
        objects: ObjectSource | None = None,
    ) -> None:
        """``observe``: what reads of the back-off tables go through (see
        runtime.kuberuntime.backoff; a kubelet passes its Dispatch's ``observe``).
        ``objects``: the API server's ConfigMaps, Secrets, Services and tokens (cluster
        mode); None standalone, where those are missing."""
        self.runtime = runtime
        self.settings = settings
        self.clock = clock
        self.images = ImageManager(runtime, clock, observe)
        self.containers = ContainerLifecycle(runtime, self.images, settings, clock, node_ip,
                                             observe)
        self._kill_parallelism = kill_parallelism
        self.objects = objects
        self.images.objects = self.containers.objects = objects

    def get_pod_status(self, uid: PodUID, name: str, namespace: str) -> RuntimePodStatus:
        return get_pod_status(self.runtime, uid, name, namespace)

    def sync_pod(
        self,
        pod: Pod,
        status: RuntimePodStatus,
        liveness: ProbeVerdicts | None = None,
        startup: ProbeVerdicts | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> PodSyncResult:
        """Compute the plan for ``pod`` and carry it out.

        ``cancelled`` is asked before each container start: a pod worker sets it when a
        kill arrives mid-sync, so no more containers start for a pod being stopped.
        """
        plan = compute_pod_actions(pod, status, liveness or {}, startup or {})
        if self.objects is not None:
            # upstream's podManager registers the pod's references (the watches start).
            self.objects.register_pod(pod.uid, pod.metadata.namespace,
                                      *referenced_objects(pod))
        if plan.create_sandbox or plan.init_containers_to_start or plan.containers_to_start:
            mounted = self.mount_volumes(pod)
            if not mounted.ok:
                return mounted
        elif self.objects is not None and not plan.kill_pod:
            # A running pod's API volumes are remounted at each sync (upstream's
            # RequiresRemount): ConfigMap and Secret updates and new tokens reach the
            # files; a failure is logged, the running containers are left alone.
            self.mount_volumes(pod)
        return self.execute(pod, status, plan, cancelled)

    def mount_volumes(self, pod: Pod) -> PodSyncResult:
        """Set up the pod's volumes before anything of it starts (upstream's
        WaitForAttachAndMount): when one cannot be had, nothing starts, the pod stays
        Pending with its containers ContainerCreating, and each failure is logged as
        upstream's FailedMount event. An empty result when every volume is ready."""
        failures = set_up_volumes(pod, self.settings, self.objects)
        if not failures:
            return PodSyncResult()
        log = logger.bind(pod=pod.metadata.name, uid=pod.uid, container="")
        for volume, error in failures:
            log.warning('FailedMount: MountVolume.SetUp failed for volume "{}" : {}', volume, error)
        unmounted = " ".join(name for name, _ in failures)
        message = (f"Unable to attach or mount volumes: unmounted volumes=[{unmounted}]: "
                   + "; ".join(error for _, error in failures))
        return PodSyncResult((StepResult("MountVolumes", pod.metadata.name, "FailedMount",
                                         message),))

    def execute(
        self,
        pod: Pod,
        status: RuntimePodStatus,
        plan: PodActions,
        cancelled: Callable[[], bool] | None = None,
    ) -> PodSyncResult:
        steps: list[StepResult] = []
        log = logger.bind(pod=pod.metadata.name, uid=pod.uid, container="")
        if plan.kill_pod:
            killed = self.kill_pod(pod, status, None)
            steps.extend(killed.steps)
            if not killed.ok:
                return PodSyncResult(tuple(steps))
            if plan.create_sandbox:
                self._purge_init_containers(pod, status)
        else:
            specs = {c.name: c for c in pod.all_containers()}
            for kill in plan.containers_to_kill:
                try:
                    self.containers.kill_container(
                        pod, specs.get(kill.name), kill.container_id, kill.name,
                        kill.message, kill.reason, None, _first(status.ips),
                    )
                    steps.append(StepResult("KillContainer", kill.name))
                except SyncError as err:
                    steps.append(StepResult.failed("KillContainer", kill.name, err))
                    return PodSyncResult(tuple(steps))
        self._prune_init_containers(pod, status)

        pod_ip = _first(status.ips)
        sandbox_id = plan.sandbox_id
        if plan.create_sandbox:
            config = generate_sandbox_config(pod, plan.attempt, self.settings)
            try:
                os.makedirs(config.log_directory, exist_ok=True)
                sandbox_id = self.runtime.run_pod_sandbox(config, self.settings.runtime_handler)
                sandbox = self.runtime.pod_sandbox_status(sandbox_id)
            except (CRIError, OSError) as err:
                detail = err.detail if isinstance(err, CRIError) else str(err)
                log.warning("creating the pod sandbox failed: {}", detail)
                steps.append(
                    StepResult("CreatePodSandbox", pod.metadata.name, "CreatePodSandboxError",
                               detail)
                )
                return PodSyncResult(tuple(steps))
            steps.append(StepResult("CreatePodSandbox", pod.metadata.name))
            if not pod.spec.host_network:
                pod_ip = sandbox.ip
            log.info("created sandbox {} (attempt {}) ip={}", sandbox_id[:13], plan.attempt,
                     pod_ip or "-")
        if sandbox_id is None:
            return PodSyncResult(tuple(steps))
        config = generate_sandbox_config(pod, plan.attempt, self.settings)

        stop = cancelled or (lambda: False)
        for index in plan.init_containers_to_start:
            if stop():
                return PodSyncResult(tuple(steps))
            container = pod.spec.init_containers[index]
            step = self._start(pod, container, sandbox_id, config, status, pod_ip)
            steps.append(step)
            if not step.ok and not container.is_restartable_init:
                return PodSyncResult(tuple(steps))  # a failed init container aborts the sync
        for index in plan.containers_to_start:
            if stop():
                return PodSyncResult(tuple(steps))
            container = pod.spec.containers[index]
            steps.append(self._start(pod, container, sandbox_id, config, status, pod_ip))
        return PodSyncResult(tuple(steps))

    def _start(
        self,
        pod: Pod,
        container: Container,
        sandbox_id: SandboxID,
        config: PodSandboxConfig,
        status: RuntimePodStatus,
        pod_ip: str,
    ) -> StepResult:
        try:
            self.containers.start_container(pod, container, sandbox_id, config, status, pod_ip)
        except SyncError as err:
            logger.bind(pod=pod.metadata.name, uid=pod.uid, container=container.name).warning(
                "{}: {}", err.reason, err.message
            )
            return StepResult.failed("StartContainer", container.name, err)
        return StepResult("StartContainer", container.name)

    def kill_pod(
        self, pod: Pod | None, status: RuntimePodStatus, grace_override: int | None
    ) -> PodSyncResult:
        """Stop every running container in parallel, then every sandbox of the pod."""
        running = [c for c in status.container_statuses if c.state == ContainerState.RUNNING]
        specs = {c.name: c for c in pod.all_containers()} if pod else {}
        pod_ip = _first(status.ips)

        def kill(entry_id: ContainerID, name: str) -> StepResult:
            try:
                self.containers.kill_container(
                    pod, specs.get(name), entry_id, name, "Stopping container",
                    KillReason.NONE, grace_override, pod_ip,
                )
                return StepResult("KillContainer", name)
            except SyncError as err:
                return StepResult.failed("KillContainer", name, err)

        steps: list[StepResult] = []
        if running:
            workers = min(self._kill_parallelism, len(running))
            with ThreadPoolExecutor(workers, thread_name_prefix="kill-container") as pool:
                # Each kill runs in a copy of the caller's context, so whatever the caller
                # tracks there (a trace's current handler) covers the kill threads too.
                futures = [pool.submit(contextvars.copy_context().run, kill, c.id, c.name)
                           for c in running]
                steps.extend(f.result() for f in futures)
        if not all(s.ok for s in steps):
            return PodSyncResult(tuple(steps))
        for sandbox in status.sandbox_statuses:
            try:
                self.runtime.stop_pod_sandbox(sandbox.id)
                steps.append(StepResult("KillPodSandbox", status.name))
            except CRINotFound:
                continue
            except CRIError as err:
                steps.append(
                    StepResult("KillPodSandbox", status.name, "KillPodSandboxError", err.detail)
                )
        return PodSyncResult(tuple(steps))

    def remove_pod_sandboxes(self, status: RuntimePodStatus) -> None:
        """Remove every sandbox of a stopped pod, and with them its containers; then
        forget the pod's back-offs, since the pod is gone from the node.

        A sandbox the runtime no longer knows is already gone; any other failure raises
        CRIError, so the caller keeps the pod and tries again.
        """
        for sandbox in status.sandbox_statuses:
            try:
                self.runtime.remove_pod_sandbox(sandbox.id)
            except CRINotFound:
                continue
        self.forget_pod(status.uid)

    def forget_pod(self, uid: PodUID) -> None:
        """Drop the crash-loop and image-pull back-offs of a pod that is gone, and those
        idle for twice their maximum (upstream's housekeeping Backoff.GC): without this
        the tables would hold an entry for every pod the daemon ever ran."""
        if self.objects is not None:
            self.objects.unregister_pod(uid)  # its watches stop unless others need them
        self.containers.crash_backoff.forget(lambda key: key.uid == uid)
        self.containers.crash_backoff.gc()
        self.images.backoff.forget(lambda key: key.uid == uid)
        self.images.backoff.gc()

    def _purge_init_containers(self, pod: Pod, status: RuntimePodStatus) -> None:
        """A new sandbox starts initialization over: remove every old init container."""
        names = {c.name for c in pod.spec.init_containers}
        for entry in status.container_statuses:
            if entry.name in names:
                self._remove(entry.id)

    def _prune_init_containers(self, pod: Pod, status: RuntimePodStatus) -> None:
        """Keep only the newest exited instance of each init container."""
        for container in pod.spec.init_containers:
            exited = [
                c for c in status.instances(container.name) if c.state == ContainerState.EXITED
            ]
            for entry in exited[1:]:
                self._remove(entry.id)

    def _remove(self, container_id: ContainerID) -> None:
        try:
            self.runtime.remove_container(container_id)
        except CRINotFound:
            pass
        except CRIError as err:
            logger.warning("removing container {} failed: {}", container_id[:13], err.detail)


def _first(values: tuple[str, ...]) -> str:
    return values[0] if values else ""
