"""The runtime manager: sync_pod carries out compute_pod_actions' plan (upstream SyncPod).

Order, as upstream: kill the pod (or the containers not to keep), create the sandbox,
start the next init containers, then the regular containers. Every container start first
checks the crash-loop back-off. Each step's outcome lands in a PodSyncResult, so the caller
(a pod worker) can report waiting reasons and decide when to retry.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from loguru import logger

from runtime.clock import Clock
from runtime.cm.pod_cgroups import PodCgroupService, pod_cgroup_spec
from runtime.cri.service import CRIRuntime
from runtime.cri.types import (
    ContainerState,
    ContainerStatus,
    PodSandboxConfig,
    PodSandboxStatus,
    RuntimeHandlerFeatures,
)
from runtime.errors import CgroupError, CRIError, CRINotFound, LogRotationError, SyncError
from runtime.events import reasons
from runtime.events.recorder import NULL_RECORDER, EventRecorder, pod_ref
from runtime.ids import ContainerID, PodUID, SandboxID
from runtime.kuberuntime.actions import (
    KillReason,
    PodActions,
    ProbeVerdicts,
    compute_pod_actions,
)
from runtime.kuberuntime.api_volumes import referenced_objects
from runtime.kuberuntime.backoff import Observe, unobserved
from runtime.kuberuntime.beside_sandbox import beside, first_starts, side_pool
from runtime.kuberuntime.container import STOPPING, ContainerLifecycle, StartFiles
from runtime.kuberuntime.container_logs import ContainerLogFiles, NodeContainerLogFiles
from runtime.kuberuntime.dns import ResolvConfError
from runtime.kuberuntime.dra import prepare_error
from runtime.kuberuntime.ephemeral import as_container, ephemeral_containers, target_id
from runtime.kuberuntime.hook_transport import NODE_HOOK_TRANSPORT, HookTransport
from runtime.kuberuntime.host_paths import HostPaths
from runtime.kuberuntime.hostname import HostnameError
from runtime.kuberuntime.image_checks import (
    NO_IMAGES,
    PresentImages,
    check_images,
    images_to_check,
)
from runtime.kuberuntime.images import ImageManager
from runtime.kuberuntime.kill_status import listed_pod_status, needs_full_status
from runtime.kuberuntime.made import MadeBySync
from runtime.kuberuntime.object_source import ObjectSource
from runtime.kuberuntime.podstatus import (
    ContainerRuntimeStatus,
    PodListing,
    RuntimePodStatus,
    get_pod_status,
)
from runtime.kuberuntime.result import PodSyncResult, StepResult
from runtime.kuberuntime.runtime_class import RuntimeClassError, lookup_runtime_handler
from runtime.kuberuntime.sandbox import generate_sandbox_config
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.termination_message import read_termination_message
from runtime.kuberuntime.termination_order import TerminationOrdering, has_sidecars
from runtime.kuberuntime.userns import UserNamespaceError, user_namespace_error
from runtime.kuberuntime.volume_mounts import VolumeMounts
from runtime.kuberuntime.volumes import (
    NODE_HOST_PATHS,
    NODE_VOLUME_MOUNTS,
    set_up_volumes,
    tear_down_pod_volumes,
)
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
        cgroups: PodCgroupService | None = None,
        objects: ObjectSource | None = None,
        events: EventRecorder = NULL_RECORDER,
        host_paths: HostPaths = NODE_HOST_PATHS,
        container_logs: ContainerLogFiles | None = None,
        volume_mounts: VolumeMounts = NODE_VOLUME_MOUNTS,
        hook_transport: HookTransport = NODE_HOOK_TRANSPORT,
    ) -> None:
        """``observe``: what reads of the back-off tables go through (see
        runtime.kuberuntime.backoff; a kubelet passes its Dispatch's ``observe``).
        ``cgroups``: the pod cgroups to create and remove (with cgroupsPerQOS; a trace
        records their answers); without it the sandboxes still name their pod cgroup,
        which nothing creates.
        ``objects``: the API server's ConfigMaps, Secrets, Services and tokens (cluster
        mode); None standalone, where those are missing. ``events``: where the events
        of what it does go (upstream's recorder; actors.kubelet.events sends them on).
        ``host_paths``: what prepares hostPath volumes (a trace records its answers).
        ``container_logs``: what removes a removed container's log files (the node's by
        default; a trace records its answers). ``volume_mounts``: what mounts and
        unmounts memory-backed volumes (a trace records its answers). ``hook_transport``:
        what lifecycle hooks' httpGet and tcpSocket reach the container through (the
        node's network by default; a trace records its answers)."""
        self.runtime = runtime
        self.cgroups = cgroups
        self.settings = settings
        self.clock = clock
        self.node_ip = node_ip
        self.images = ImageManager(runtime, clock, observe)
        self.containers = ContainerLifecycle(runtime, self.images, settings, clock, node_ip,
                                             observe, hook_transport)
        self._kill_parallelism = kill_parallelism
        self._observe_input: Callable[[str, Any], Any] = observe
        self.objects = objects
        self.host_paths = self.containers.host_paths = host_paths
        self.images.objects = self.containers.objects = objects
        self.events = events
        self.images.events = self.containers.events = events
        self.containers.handler_features = self.handler_features
        self._side_pool = side_pool()  # its threads start with the first sandbox made
        self.container_logs = container_logs or NodeContainerLogFiles()
        self.volume_mounts = volume_mounts
        self._runtime_classes = dict(settings.runtime_classes)

    def get_pod_status(self, uid: PodUID, name: str, namespace: str,
                       listing: PodListing | None = None,
                       known: Mapping[SandboxID, PodSandboxStatus] | None = None
                       ) -> RuntimePodStatus:
        """``listing``: what a listing of the whole runtime showed of the pod (the PLEG's
        first relist, or a sync's MadeBySync): its sandboxes and containers are not
        listed again. ``known``: sandbox statuses just read, not asked again."""
        return get_pod_status(self.runtime, uid, name, namespace, self._termination_message,
                              listing, known)

    def more_to_do(self, pod: Pod, status: RuntimePodStatus,
                   liveness: ProbeVerdicts | None = None,
                   startup: ProbeVerdicts | None = None) -> bool:
        """Whether a sync of ``pod`` on ``status`` would change the runtime (the plan
        alone: a pure check, no runtime call)."""
        return compute_pod_actions(pod, status, liveness or {}, startup or {}
                                   ).changes_anything()

    def removal_status(self, pod: Pod) -> RuntimePodStatus:
        """What stopping and removing ``pod`` reads of the runtime first: its listings
        alone unless a preStop hook needs the pod IP (see kill_status); its status is never
        shown again, as the pod goes."""
        uid = PodUID(pod.uid)
        if not needs_full_status(pod):
            return listed_pod_status(self.runtime, uid, pod.metadata.name,
                                     pod.metadata.namespace)
        return self.get_pod_status(uid, pod.metadata.name, pod.metadata.namespace)

    def _termination_message(self, status: ContainerStatus) -> str:
        """Read from the node's files, so observed: a replay answers as recorded."""
        return str(self._observe_input("termination-message", read_termination_message(status)))

    def sync_pod(
        self,
        pod: Pod,
        status: RuntimePodStatus,
        liveness: ProbeVerdicts | None = None,
        startup: ProbeVerdicts | None = None,
        cancelled: Callable[[], bool] | None = None,
        made: MadeBySync | None = None,
    ) -> PodSyncResult:
        """Compute the plan for ``pod`` and carry it out.

        ``cancelled`` is asked before each container start: a pod worker sets it when a
        kill arrives mid-sync, so no more containers start for a pod being stopped.
        ``made``: filled with the sandbox and containers the sync makes (MadeBySync).
        """
        plan = compute_pod_actions(pod, status, liveness or {}, startup or {})
        ensured = self.ensure_pod_cgroup(pod)
        if not ensured.ok:
            return ensured
        if self.objects is not None:
            # upstream's podManager registers the pod's references (the watches start).
            self.objects.register_pod(pod.uid, pod.metadata.namespace,
                                      *referenced_objects(pod))
        # Every sync sets the volumes up again, as upstream's WaitForAttachAndMount has
        # them remounted: a downwardAPI volume follows the pod's labels and annotations,
        # a ConfigMap or Secret volume its object, a token volume its rotation.
        mounted = self.mount_volumes(pod)
        if not mounted.ok:
            return mounted
        return self.execute(pod, status, plan, cancelled, made)

    def ensure_pod_cgroup(self, pod: Pod) -> PodSyncResult:
        """The pod's cgroup exists before anything of it starts (upstream syncPod's
        pcm.EnsureExists); a failure is upstream's FailedCreatePodContainer."""
        if self.cgroups is None or not self.settings.cgroups_per_qos:
            return PodSyncResult()
        try:
            self.cgroups.ensure(pod_cgroup_spec(pod))
        except CgroupError as err:
            message = f"unable to ensure pod container exists: {err}"
            logger.bind(pod=pod.metadata.name, uid=pod.uid, container="").warning(
                "FailedCreatePodContainer: {}", message)
            self.events.event(pod_ref(pod), reasons.WARNING,
                              reasons.FAILED_TO_CREATE_POD_CONTAINER, message)
            return PodSyncResult((StepResult("CreatePodCgroup", pod.metadata.name,
                                             "FailedCreatePodContainer", message),))
        return PodSyncResult()

    def destroy_pod_cgroup(self, uid: PodUID) -> None:
        """Remove a stopped pod's cgroup (upstream SyncTerminatedPod's pcm.Destroy); a
        failure is logged and left to the orphan clean-up."""
        if self.cgroups is not None and self.settings.cgroups_per_qos:
            self.cgroups.destroy(str(uid))

    def runtime_handler(self, pod: Pod) -> str:
        """The CRI runtime handler of the pod's runtime class ("" for none); raises
        RuntimeClassError (upstream's NotFound) for a class neither the API server
        (cluster mode) nor the node's table (standalone) knows."""
        return lookup_runtime_handler(pod.spec.runtime_class_name, self._runtime_classes,
                                      self.objects)

    def handler_features(self, pod: Pod) -> RuntimeHandlerFeatures:
        """What the pod's runtime handler can do, as the runtime's Status says (asked each
        time: only a pod that needs a feature asks); nothing optional for a handler the
        runtime does not list, or a runtime class no longer known."""
        try:
            name = self.runtime_handler(pod)
        except RuntimeClassError:
            return RuntimeHandlerFeatures()
        return next((h.features for h in self.runtime.status().handlers if h.name == name),
                    RuntimeHandlerFeatures())

    def sandbox_config(self, pod: Pod, attempt: int, report: bool = True) -> PodSandboxConfig:
        """The sandbox config (``report``: log what forming its DNS config dropped, when
        the sandbox is made, not each sync)."""
        return generate_sandbox_config(pod, attempt, self.settings, report=report)

    def _check_user_namespace(self, pod: Pod, handler: str) -> None:
        """UserNamespaceError with upstream's words when the pod asks for a user namespace
        (``hostUsers: false``) its runtime ``handler`` cannot give it. Only such a pod costs a
        Status call: the handlers' features, which upstream's kubelet keeps from its
        periodic Status, are read when they are needed."""
        if pod.spec.host_users is not False:
            return
        error = user_namespace_error(pod, self.runtime.status().handlers, handler)
        if error is not None:
            raise UserNamespaceError(error)

    def prepare_dynamic_resources(self, pod: Pod) -> StepResult | None:
        """Upstream's PrepareDynamicResources before the sandbox is made: None when the
        pod has no claim to prepare, else the failed step; the pod's sandbox is not made
        and the failure is upstream's FailedPrepareDynamicResources event (runtime.
        kuberuntime.dra: this node prepares no claim)."""
        error = prepare_error(pod)
        if error is None:
            return None
        message = f"Failed to prepare dynamic resources: {error}"
        logger.bind(pod=pod.metadata.name, uid=pod.uid, container="").warning(
            "{}: {}", reasons.FAILED_PREPARE_DYNAMIC_RESOURCES, message)
        self.events.event(pod_ref(pod), reasons.WARNING,
                          reasons.FAILED_PREPARE_DYNAMIC_RESOURCES, message)
        return StepResult("PrepareDynamicResources", pod.metadata.name,
                          reasons.FAILED_PREPARE_DYNAMIC_RESOURCES, message)

    def mount_volumes(self, pod: Pod) -> PodSyncResult:
        """Set up the pod's volumes before anything of it starts (upstream's
        WaitForAttachAndMount): when one cannot be had, nothing starts, the pod stays
        Pending with its containers ContainerCreating, and each failure is logged as
        upstream's FailedMount event. An empty result when every volume is ready."""
        failures = set_up_volumes(pod, self.settings, self.objects, self.host_paths,
                                  self.volume_mounts)
        if not failures:
            return PodSyncResult()
        log = logger.bind(pod=pod.metadata.name, uid=pod.uid, container="")
        ref = pod_ref(pod)
        for volume, error in failures:
            log.warning('FailedMount: MountVolume.SetUp failed for volume "{}" : {}', volume, error)
            self.events.event(ref, reasons.WARNING, reasons.FAILED_MOUNT_VOLUME,
                              f'MountVolume.SetUp failed for volume "{volume}" : {error}')
        unmounted = " ".join(name for name, _ in failures)
        message = (f"Unable to attach or mount volumes: unmounted volumes=[{unmounted}]: "
                   + "; ".join(error for _, error in failures))
        self.events.event(ref, reasons.WARNING, reasons.FAILED_MOUNT_VOLUME, message)
        return PodSyncResult((StepResult("MountVolumes", pod.metadata.name, "FailedMount",
                                         message),))

    def unmount_volumes(self, uid: str, name: str = "", sub_paths: bool = True) -> bool:
        """Unmount a stopped pod's subPath bind mounts (``sub_paths``: it may have some;
        upstream's CleanSubPaths) and its memory-backed volumes, removing their directories
        (upstream's volume manager, once the pod terminated); False, each failure logged,
        while one stays mounted (a kubelet's next start tries again)."""
        errors: list[str] = []
        if sub_paths:  # first: a bind may show a file of the pod's tmpfs
            error = self.host_paths.clean_sub_paths(self.settings.pod_dir(uid))
            errors += [error] if error else []
        errors += tear_down_pod_volumes(uid, self.settings, self.volume_mounts)
        for error in errors:
            logger.bind(pod=name, uid=uid, container="").warning(
                "UnmountVolume.TearDown failed: {}", error)
        return not errors

    def execute(
        self,
        pod: Pod,
        status: RuntimePodStatus,
        plan: PodActions,
        cancelled: Callable[[], bool] | None = None,
        made: MadeBySync | None = None,
    ) -> PodSyncResult:
        made = made if made is not None else MadeBySync()
        steps: list[StepResult] = []
        log = logger.bind(pod=pod.metadata.name, uid=pod.uid, container="")
        if plan.create_sandbox and plan.sandbox_id:
            self.events.event(pod_ref(pod), reasons.NORMAL, reasons.SANDBOX_CHANGED,
                              "Pod sandbox changed, it will be killed and re-created.")
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
        if pod.spec.host_network:
            pod_ip = self.node_ip  # upstream: a host-network pod's IPs are the node's
        sandbox_id = plan.sandbox_id
        config: PodSandboxConfig | None = None
        present_images: PresentImages = NO_IMAGES
        start_files: Mapping[str, StartFiles] = {}
        if plan.create_sandbox:
            unprepared = self.prepare_dynamic_resources(pod)
            if unprepared is not None:
                steps.append(unprepared)
                return PodSyncResult(tuple(steps))
            try:
                # Before anything of the sandbox is made, as upstream's
                # generatePodSandboxConfig looks the class up first (NamespacesForPod).
                handler = self.runtime_handler(pod)
                if handler:
                    log.debug("running pod with runtime handler {}", handler)
                config = self.sandbox_config(pod, plan.attempt)
                self._check_user_namespace(pod, handler)
                os.makedirs(config.log_directory, exist_ok=True)
                wanted = config  # for the closure: the sandbox this sync makes
                checked = images_to_check(pod, plan)
                preparing = first_starts(pod, plan)

                def create() -> tuple[SandboxID, PodSandboxStatus]:
                    made_id = self.runtime.run_pod_sandbox(wanted, handler)
                    return made_id, self.runtime.pod_sandbox_status(made_id)

                def side() -> tuple[PresentImages, dict[str, StartFiles]]:
                    files: dict[str, StartFiles] = {}
                    for container in preparing:
                        made_files = self.containers.prepare_start(pod, container, wanted,
                                                                   status)
                        if made_files is not None:
                            files[container.name] = made_files
                    return check_images(self.runtime, checked), files

                (sandbox_id, sandbox), (present_images, start_files) = beside(
                    create, side, self._side_pool)
            except (CRIError, OSError, HostnameError, ResolvConfError,
                    UserNamespaceError, RuntimeClassError) as err:
                detail = err.detail if isinstance(err, CRIError) else str(err)
                log.warning("creating the pod sandbox failed: {}", detail)
                self.events.event(pod_ref(pod), reasons.WARNING,
                                  reasons.FAILED_CREATE_POD_SANDBOX,
                                  f"Failed to create pod sandbox: {detail}")
                steps.append(
                    StepResult("CreatePodSandbox", pod.metadata.name, "CreatePodSandboxError",
                               detail)
                )
                return PodSyncResult(tuple(steps))
            steps.append(StepResult("CreatePodSandbox", pod.metadata.name))
            made.sandboxes.append(sandbox)
            if not pod.spec.host_network:
                pod_ip = sandbox.ip
            log.info("created sandbox {} (attempt {}) ip={}", sandbox_id[:13], plan.attempt,
                     pod_ip or "-")
        if sandbox_id is None:
            return PodSyncResult(tuple(steps))
        if not (plan.ephemeral_containers_to_start or plan.init_containers_to_start
                or plan.containers_to_start):
            # Nothing to start (most syncs: a PLEG event, a resync): no sandbox config,
            # which reads the node's resolv.conf and forms the pod's DNS each time.
            return PodSyncResult(tuple(steps))
        if config is None:
            try:
                config = self.sandbox_config(pod, plan.attempt, report=False)
            except (OSError, HostnameError, ResolvConfError) as err:
                steps.append(StepResult("CreatePodSandbox", pod.metadata.name,
                                        "CreatePodSandboxError", str(err)))
                return PodSyncResult(tuple(steps))

        stop = cancelled or (lambda: False)
        # Ephemeral containers first, so a debug container runs even while an init
        # container fails (upstream SyncPod step 5); a failed one stops nothing else.
        for index in plan.ephemeral_containers_to_start:
            if stop():
                return PodSyncResult(tuple(steps))
            steps.append(self._start_ephemeral(pod, index, sandbox_id, config, status, pod_ip,
                                               present_images, made))
        for index in plan.init_containers_to_start:
            if stop():
                return PodSyncResult(tuple(steps))
            container = pod.spec.init_containers[index]
            step = self._start(pod, container, sandbox_id, config, status, pod_ip,
                               present_images=present_images, made=made,
                               prepared=start_files.get(container.name))
            steps.append(step)
            if not step.ok and not container.is_restartable_init:
                return PodSyncResult(tuple(steps))  # a failed init container aborts the sync
        for index in plan.containers_to_start:
            if stop():
                return PodSyncResult(tuple(steps))
            container = pod.spec.containers[index]
            steps.append(self._start(pod, container, sandbox_id, config, status, pod_ip,
                                     present_images=present_images, made=made,
                                     prepared=start_files.get(container.name)))
        return PodSyncResult(tuple(steps))

    def _start_ephemeral(
        self,
        pod: Pod,
        index: int,
        sandbox_id: SandboxID,
        config: PodSandboxConfig,
        status: RuntimePodStatus,
        pod_ip: str,
        present_images: PresentImages = NO_IMAGES,
        made: MadeBySync | None = None,
    ) -> StepResult:
        container = as_container(pod.spec.ephemeral_containers[index])
        try:
            target = target_id(pod, container.name, status) or ""
        except SyncError as err:
            logger.bind(pod=pod.metadata.name, uid=pod.uid, container=container.name).warning(
                "{}: {}", err.reason, err.message)
            return StepResult.failed("StartContainer", container.name, err)
        return self._start(pod, container, sandbox_id, config, status, pod_ip, target,
                           present_images, made)

    def _start(
        self,
        pod: Pod,
        container: Container,
        sandbox_id: SandboxID,
        config: PodSandboxConfig,
        status: RuntimePodStatus,
        pod_ip: str,
        pid_target: str = "",
        present_images: PresentImages = NO_IMAGES,
        made: MadeBySync | None = None,
        prepared: StartFiles | None = None,
    ) -> StepResult:
        try:
            started = self.containers.start_container(pod, container, sandbox_id, config,
                                                      status, pod_ip, pid_target, present_images,
                                                      prepared)
            if made is not None:
                made.containers.append(started)
        except SyncError as err:
            logger.bind(pod=pod.metadata.name, uid=pod.uid, container=container.name).warning(
                "{}: {}", err.reason, err.message
            )
            return StepResult.failed("StartContainer", container.name, err)
        return StepResult("StartContainer", container.name)

    def kill_pod(
        self, pod: Pod | None, status: RuntimePodStatus, grace_override: int | None
    ) -> PodSyncResult:
        """Stop every running container in parallel, then every sandbox of the pod.
        Sidecars stop after the regular containers, in reverse order (termination_order)."""
        running = [c for c in status.container_statuses if c.state == ContainerState.RUNNING]
        specs = {c.name: c for c in (*pod.all_containers(), *ephemeral_containers(pod))
                 } if pod else {}
        pod_ip = _first(status.ips)
        ordering = (TerminationOrdering(pod, (c.name for c in running), self.clock)
                    if pod is not None and has_sidecars(pod) else None)

        def kill(entry_id: ContainerID, name: str) -> StepResult:
            try:
                self.containers.kill_container(
                    pod, specs.get(name), entry_id, name, STOPPING,
                    KillReason.NONE, grace_override, pod_ip, ordering, announce=False,
                )
                return StepResult("KillContainer", name)
            except SyncError as err:
                return StepResult.failed("KillContainer", name, err)

        steps: list[StepResult] = []
        for entry in running:
            # Killing events here, in the pod's order, not from the kill threads: what a
            # handler sends must come in one order for a replay to compare.
            self.containers.announce_kill(pod, entry.name, STOPPING)
        if len(running) == 1 and ordering is None:
            # One container (most pods): stopped on this thread. A pool for it would start
            # a thread per pod killed, hundreds when a node's pods are removed at once.
            steps.append(kill(running[0].id, running[0].name))
        elif running:
            # A sidecar's kill waits for others: each needs a thread of its own, or the
            # ones it waits on could queue behind it.
            workers = len(running) if ordering else min(self._kill_parallelism, len(running))
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
                self._remove(pod, entry)

    def _prune_init_containers(self, pod: Pod, status: RuntimePodStatus) -> None:
        """Keep only the newest exited instance of each init container."""
        for container in pod.spec.init_containers:
            exited = [
                c for c in status.instances(container.name) if c.state == ContainerState.EXITED
            ]
            for entry in exited[1:]:
                self._remove(pod, entry)

    def _remove(self, pod: Pod, entry: ContainerRuntimeStatus) -> None:
        """Upstream's removeContainer: the container, then its log and what its rotations
        left beside it."""
        log = logger.bind(pod=pod.metadata.name, uid=pod.uid, container=entry.name)
        try:
            self.runtime.remove_container(entry.id)
        except CRINotFound:
            pass
        except CRIError as err:
            log.warning("removing container {} failed: {}", entry.id[:13], err.detail)
            return
        try:
            self.container_logs.clean(entry.log_path)
        except LogRotationError as err:
            log.warning("removing the logs of container {} failed: {}", entry.id[:13], err)


def _first(values: tuple[str, ...]) -> str:
    return values[0] if values else ""
