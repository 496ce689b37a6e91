"""Starting and killing one container (upstream startContainer and killContainer)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from loguru import logger
from msgspec import Struct

from runtime.clock import Clock
from runtime.cri.service import CRIRuntime
from runtime.cri.types import (
    ContainerState,
    Image,
    ImageSpec,
    PodSandboxConfig,
    RuntimeHandlerFeatures,
)
from runtime.errors import CRIError, CRINotFound, SyncError
from runtime.events import reasons
from runtime.events.recorder import NULL_RECORDER, EventRecorder, container_ref
from runtime.ids import ContainerID, SandboxID
from runtime.kuberuntime.actions import KillReason
from runtime.kuberuntime.backoff import Backoff, Observe, unobserved
from runtime.kuberuntime.container_config import (
    generate_container_config,
    termination_message_file,
    wants_recursive_read_only,
)
from runtime.kuberuntime.hook_transport import NODE_HOOK_TRANSPORT, HookTransport
from runtime.kuberuntime.hooks import HandlerRunner
from runtime.kuberuntime.host_paths import HostPaths
from runtime.kuberuntime.images import ImageManager
from runtime.kuberuntime.labels import hash_container, parse_container_labels
from runtime.kuberuntime.log_layout import container_log_dir, restart_count_from_logs
from runtime.kuberuntime.object_source import ObjectSource
from runtime.kuberuntime.podstatus import RuntimePodStatus
from runtime.kuberuntime.security_context import image_user
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.termination_order import TerminationOrdering
from runtime.kuberuntime.volumes import NODE_HOST_PATHS
from runtime.pod.model import Container, LifecycleHandler, Pod

MIN_GRACE_SECONDS = 2
CRASH_BACKOFF_INITIAL = 10.0
"""Upstream's initial crash-loop back-off (initialContainerRestartBackoff)."""
_IMAGE_ERRORS = frozenset({"InvalidImageName", "ErrImageNeverPull", "ImagePullBackOff",
                           "ErrImagePull"})
"""Image errors whose Failed event says only the reason ("Error: ErrImagePull"): upstream's
message is the image error's own text, the reason."""
STOPPING = "Stopping container"
"""The kill message of a pod's containers (upstream passes none and writes this one)."""


class CrashKey(Struct, frozen=True):
    """Stable per pod and container spec, as upstream's GetStableKey; a changed spec
    (another hash) starts a fresh back-off."""

    uid: str
    name: str
    namespace: str
    container: str
    spec_hash: str


def backoff_key(pod: Pod, container: Container) -> CrashKey:
    m = pod.metadata
    return CrashKey(m.uid, m.name, m.namespace, container.name, hash_container(container))


class StartFiles(Struct, frozen=True):
    """What a container's start makes on the node before CreateContainer that neither the
    sandbox nor the pod's IP decide, made ahead (ContainerLifecycle.prepare_start)."""

    restart_count: int  # from the logs, as the start would have counted it
    message_file: str | None  # its termination-message file, made empty (None: none)


class ContainerLifecycle:
    """Creates, starts and stops containers of pods through the CRI runtime."""

    def __init__(
        self,
        runtime: CRIRuntime,
        images: ImageManager,
        settings: NodeSettings,
        clock: Clock,
        node_ip: str = "",
        observe: Observe = unobserved,
        hook_transport: HookTransport = NODE_HOOK_TRANSPORT,
    ) -> None:
        """``hook_transport``: what hooks' httpGet and tcpSocket reach the container
        through (the node's network by default; a trace records its answers)."""
        self._runtime = runtime
        self._images = images
        self._settings = settings
        self._clock = clock
        self._node_ip = node_ip
        self._hooks = HandlerRunner(runtime, clock, hook_transport)
        # The API server's objects (cluster mode; set by KubeRuntimeManager), else None.
        self.objects: ObjectSource | None = None
        self.host_paths: HostPaths = NODE_HOST_PATHS  # the manager's (a trace records it)
        self.events: EventRecorder = NULL_RECORDER  # set by KubeRuntimeManager
        # What the pod's runtime handler can do (set by KubeRuntimeManager; by default a
        # handler that can do nothing optional).
        self.handler_features: Callable[[Pod], RuntimeHandlerFeatures] = (
            lambda pod: RuntimeHandlerFeatures())
        # Upstream: 10 s doubling to 5 m; with crashLoopBackOff.maxContainerRestartPeriod
        # the cap is that, and the first wait no longer than it.
        cap = settings.max_container_restart_period
        self.crash_backoff: Backoff[CrashKey] = Backoff(
            clock, initial=min(CRASH_BACKOFF_INITIAL, cap), maximum=cap,
            name="crash-backoff", observe=observe)

    def check_crash_backoff(self, pod: Pod, container: Container, status: RuntimePodStatus) -> None:
        """Raise CrashLoopBackOff while the last exit of this container is too recent."""
        last = next(
            (
                c
                for c in status.container_statuses
                if c.name == container.name and c.state == ContainerState.EXITED
            ),
            None,
        )
        if last is None:
            return
        key = backoff_key(pod, container)
        if self.crash_backoff.in_backoff_since(key, last.finished_at) > 0:
            delay = self.crash_backoff.get(key)
            self.events.event(
                container_ref(pod, container), reasons.WARNING, reasons.BACK_OFF_START_CONTAINER,
                f"Back-off restarting failed container {container.name} in pod "
                f"{pod.metadata.name}_{pod.metadata.namespace}({pod.uid})")
            raise SyncError(
                "CrashLoopBackOff",
                f"back-off {delay:g}s restarting failed container={container.name} "
                f"pod={pod.metadata.name}_{pod.metadata.namespace}({pod.uid})",
                backoff=delay,
            )
        self.crash_backoff.next(key, last.finished_at)

    def prepare_start(self, pod: Pod, container: Container, sandbox_config: PodSandboxConfig,
                      status: RuntimePodStatus) -> StartFiles | None:
        """Make what a start of ``container`` makes first that neither the sandbox nor
        the pod's IP decide (its log directory, its termination-message file) and count
        its restarts from its logs, as the start would; run beside RunPodSandbox
        (runtime.kuberuntime.beside_sandbox). None for a container with an instance (its
        start decides from that one) or when a file could not be made (the start makes
        it again and reports the error)."""
        if status.find_container(container.name) is not None:
            return None
        log_dir = container_log_dir(sandbox_config.log_directory, container.name)
        restart_count = restart_count_from_logs(log_dir)
        try:
            message_file = termination_message_file(pod, container, self._settings,
                                                    restart_count)
            os.makedirs(log_dir, exist_ok=True)
        except OSError:
            return None
        return StartFiles(restart_count, message_file)

    def start_container(
        self,
        pod: Pod,
        container: Container,
        sandbox_id: SandboxID,
        sandbox_config: PodSandboxConfig,
        status: RuntimePodStatus,
        pod_ip: str,
        pid_target: str = "",
        present_images: Mapping[str, Image] | None = None,
        prepared: StartFiles | None = None,
    ) -> ContainerID:
        """Pull, create, start and run the postStart hook; SyncError with the reason.
        ``pid_target``: the container whose PID namespace this one joins (ephemeral).
        ``present_images``: images this sync already found present (ImageManager).
        ``prepared``: what prepare_start made of this start beside the sandbox."""
        self.check_crash_backoff(pod, container, status)
        try:
            return self._start(pod, container, sandbox_id, sandbox_config, status, pod_ip,
                               pid_target, present_images, prepared)
        except SyncError as err:
            if err.reason != "PostStartHookError":  # that one has its own event
                text = err.reason if err.reason in _IMAGE_ERRORS else err.message
                self.events.event(container_ref(pod, container), reasons.WARNING,
                                  reasons.FAILED_TO_CREATE_CONTAINER, f"Error: {text}")
            raise

    def _start(
        self,
        pod: Pod,
        container: Container,
        sandbox_id: SandboxID,
        sandbox_config: PodSandboxConfig,
        status: RuntimePodStatus,
        pod_ip: str,
        pid_target: str,
        present_images: Mapping[str, Image] | None = None,
        prepared: StartFiles | None = None,
    ) -> ContainerID:
        log = logger.bind(pod=pod.metadata.name, uid=pod.uid, container=container.name)
        ref = container_ref(pod, container)
        image_ref, image = self._images.ensure_image_status(pod, container, sandbox_config,
                                                            present_images)
        log_dir = container_log_dir(sandbox_config.log_directory, container.name)
        previous = status.find_container(container.name)
        # prepare_start makes only a first instance's files.
        made = prepared if previous is None else None
        if previous is not None and previous.state == ContainerState.CREATED:
            # Created but never started (the sync that created it died before
            # StartContainer): remove it, so a pod never keeps a CREATED leftover next to
            # the instance started now; it never ran, so it does not count as a restart.
            self._remove_never_started(previous.id, log)
            restart_count = previous.restart_count
        elif previous is not None:
            restart_count = previous.restart_count + 1
        elif made is not None:
            restart_count = made.restart_count
        else:
            restart_count = restart_count_from_logs(log_dir)
        if image is None:
            try:
                image = self._runtime.image_status(ImageSpec(image_ref))
            except CRIError as err:  # upstream getImageUser: the config cannot be made
                raise SyncError("CreateContainerConfigError", err.detail) from err
        user = image_user(image)
        config = generate_container_config(
            pod, container, image_ref, restart_count, pod_ip, self._settings, self._node_ip,
            pid_target,
            image_user=user,
            objects=self.objects,
            host_paths=self.host_paths,
            made_message_file=made.message_file if made is not None else None,
            # Only a container that asks costs the handler's features (a Status call).
            recursive_read_only=(wants_recursive_read_only(container) and
                                 self.handler_features(pod).recursive_read_only_mounts),
        )
        if made is None:
            os.makedirs(log_dir, exist_ok=True)
        try:
            container_id = self._runtime.create_container(sandbox_id, config, sandbox_config)
        except CRIError as err:
            raise SyncError("CreateContainerError", err.detail) from err
        self.events.event(ref, reasons.NORMAL, reasons.CREATED_CONTAINER,
                          f"Created container: {container.name}")
        try:
            self._runtime.start_container(container_id)
        except CRIError as err:
            raise SyncError("RunContainerError", err.detail) from err
        self.events.event(ref, reasons.NORMAL, reasons.STARTED_CONTAINER,
                          f"Started container {container.name}")
        log.info("started container {} (restart {})", container_id[:13], restart_count)
        hook = container.lifecycle.post_start if container.lifecycle else None
        if hook is not None:
            timeout = float(pod.spec.termination_grace_period_seconds or 30)
            failure = self._hooks.run(hook, container, container_id, pod_ip, timeout)
            if failure is not None:
                log.warning("postStart hook failed: {}", failure.message)
                # The event without the hook's output: it may hold secrets (as upstream);
                # the output goes with it to the node's own record only.
                self.events.event(ref, reasons.WARNING, reasons.FAILED_POST_START_HOOK,
                                  "PostStartHook failed", failure.said)
                self.kill_container(
                    pod, container, container_id, container.name,
                    "FailedPostStartHook", KillReason.NONE, None,
                )
                raise SyncError("PostStartHookError", failure.message)
        return container_id

    def _remove_never_started(self, container_id: ContainerID, log: Any) -> None:
        try:
            self._runtime.remove_container(container_id)
        except CRINotFound:
            return
        except CRIError as err:
            raise SyncError("CreateContainerError", f"removing the never-started container "
                            f"{container_id[:13]} failed: {err.detail}") from err
        log.info("removed the never-started container {}", container_id[:13])

    def grace_period(self, pod: Pod | None, container: Container | None, reason: KillReason,
                     labels_grace: int | None) -> int:
        """Upstream setTerminationGracePeriod: deletion grace, else the pod's, else labels."""
        grace: int | None = None
        if pod is not None:
            grace = pod.metadata.deletion_grace_period_seconds
            if grace is None:
                grace = pod.spec.termination_grace_period_seconds
        if grace is None:
            grace = labels_grace if labels_grace is not None else 30
        if container is not None:
            probe = None
            if reason == KillReason.LIVENESS_PROBE:
                probe = container.liveness_probe
            elif reason == KillReason.STARTUP_PROBE:
                probe = container.startup_probe
            if probe is not None and probe.termination_grace_period_seconds is not None:
                grace = probe.termination_grace_period_seconds
        return grace

    def kill_container(
        self,
        pod: Pod | None,
        container: Container | None,
        container_id: ContainerID,
        name: str,
        message: str,
        reason: KillReason,
        grace_override: int | None,
        pod_ip: str = "",
        ordering: TerminationOrdering | None = None,
        announce: bool = True,
    ) -> None:
        """preStop (if there is time), then StopContainer; NotFound counts as stopped.

        ``announce``: record the Killing event here (a caller that kills several
        containers on threads records them itself first, in one order).

        As upstream's killContainer: an override replaces the grace period first; the
        preStop hook's time, then the wait for this container's turn (``ordering``, for
        pods with sidecars), come off it; the runtime always gets at least 2 s.

        With no pod or container spec (an orphan, or a kubelet restarted since), the grace
        period and preStop hook come from the container's own annotations.
        """
        log = logger.bind(
            pod=pod.metadata.name if pod else "", uid=pod.uid if pod else "", container=name
        )
        pre_stop: LifecycleHandler | None = None
        labels_grace: int | None = None
        if container is not None and container.lifecycle is not None:
            pre_stop = container.lifecycle.pre_stop
        if pod is None or container is None:
            try:
                found = self._runtime.container_status(container_id)
            except CRINotFound:
                return
            info = parse_container_labels(found.labels, found.annotations)
            labels_grace = info.deletion_grace_period
            if labels_grace is None:
                labels_grace = info.termination_grace_period
            if container is None:
                pre_stop = info.pre_stop
        grace = self.grace_period(pod, container, reason, labels_grace)
        if announce:
            self.announce_kill(pod, name, message)
        if grace_override is not None:
            grace = grace_override
        if pre_stop is not None and grace > 0:
            started = self._clock.monotonic()
            spec = container or Container(name=name)
            failure = self._hooks.run(pre_stop, spec, container_id, pod_ip, float(grace))
            if failure is not None:
                log.warning("preStop hook failed: {}", failure.message)
                if pod is not None:
                    # As the postStart hook's: the output beside the event, not in it.
                    self.events.event(container_ref(pod, name), reasons.WARNING,
                                      reasons.FAILED_PRE_STOP_HOOK, "PreStopHook failed",
                                      failure.said)
            grace -= int(self._clock.monotonic() - started)
        if ordering is not None and grace > 0:
            # Seconds only, so the time waited is truncated downward, as upstream's.
            grace -= int(ordering.wait_for_turn(name, grace))
        grace = max(grace, MIN_GRACE_SECONDS)
        log.info("killing container {} with {}s grace: {}", container_id[:13], grace, message)
        try:
            self._runtime.stop_container(container_id, grace)
        except CRINotFound:
            pass
        except CRIError as err:
            raise SyncError("KillContainerError", err.detail) from err
        if ordering is not None:
            ordering.container_terminated(name)

    def announce_kill(self, pod: Pod | None, name: str, message: str) -> None:
        """The Killing event of one container (upstream killContainer's first record)."""
        if pod is None:
            return  # an orphan: no pod to name (its labels' pod may be long gone)
        text = message if message and message != STOPPING else f"{STOPPING} {name}"
        self.events.event(container_ref(pod, name), reasons.NORMAL,
                          reasons.KILLING_CONTAINER, text)
