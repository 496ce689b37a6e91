"""FakeRuntime: an in-memory CRI runtime for unit tests, actor tests and fault injection.

It implements runtime.cri.service.RuntimeService and ImageService the way containerd 1.6
behaves where the kubelet can tell: ``run_pod_sandbox`` makes a READY sandbox with an IP
(10.88.0.2 for sandbox-1, 10.88.0.3 for sandbox-2...; none in the node's network namespace);
``stop_pod_sandbox`` stops its containers and makes it NOTREADY without an IP;
``create_container`` needs a READY sandbox and a present image; start -> RUNNING; stop ->
EXITED (137, "Error", unless the test set an exit code); removals are idempotent; pod and
container names (metadata with attempt) stay reserved until removed. Ids are deterministic
(``sandbox-1``, ``container-1``...), timestamps come from the injected clock.

Test hooks: every protocol call is recorded (``calls``, ``called``); errors can be injected
per method (``fail``, ``fail_always``, ``clear_failures``); ``exit_container`` simulates a
process exiting; ``set_exec_result`` scripts ``exec_sync``; ``add_image`` and
``make_pullable`` stock the image store; ``snapshot`` and friends show the state without
recording a call. ``update_runtime_config`` keeps the pod CIDRs it is given
(``pod_cidr``), as containerd takes them; the addresses stay 10.88.0.x. Thread-safe: one
lock guards everything. The image store and the call recorder live in
runtime.testing.fake_images and runtime.testing.fake_calls.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from runtime.clock import Clock
from runtime.cri.sandbox_stats import SandboxStats
from runtime.cri.service import CRIRuntime
from runtime.cri.types import (
    Container,
    ContainerConfig,
    ContainerFilter,
    ContainerState,
    ContainerStats,
    ContainerStatus,
    ExecResult,
    LinuxContainerResources,
    NamespaceMode,
    PodSandbox,
    PodSandboxConfig,
    PodSandboxStatus,
    RuntimeCondition,
    RuntimeHandler,
    RuntimeStatus,
    SandboxFilter,
    SandboxState,
    VersionInfo,
)
from runtime.cri.usage import CpuUsage, MemoryUsage
from runtime.errors import CRIError, CRINotFound
from runtime.ids import ContainerID, SandboxID
from runtime.testing.fake_calls import Call
from runtime.testing.fake_images import (
    IMAGE_FS_MOUNTPOINT,
    FakeImages,
    image_id_for,
    normalize_image_ref,
)
from runtime.testing.fake_records import ContainerRecord, FakeRuntimeSnapshot, SandboxRecord

STOP_EXIT_CODE = 137
"""Exit code of a container killed by stop_container or stop_pod_sandbox."""

_OK = ExecResult(stdout=b"", stderr=b"", exit_code=0)


class FakeRuntime(FakeImages):
    """An in-memory CRI runtime (RuntimeService and ImageService) with test hooks."""

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        images: Iterable[str] = (),
        pullable: Iterable[str] = (),
    ) -> None:
        """``images`` start present, ``pullable`` can be pulled; ``clock`` stamps times."""
        super().__init__(clock)
        self._sandboxes: dict[SandboxID, SandboxRecord] = {}
        self._containers: dict[ContainerID, ContainerRecord] = {}
        self._exec: dict[tuple[ContainerID | None, tuple[str, ...]], ExecResult] = {}
        self._next_sandbox = 0
        self._next_container = 0
        self.runtime_ready = True
        self.network_ready = True
        self.pod_cidr = ""
        """What the last UpdateRuntimeConfig gave (comma-joined CIDRs)."""
        # The handlers Status reports: none, as containerd 1.6 reports none.
        self.handlers: tuple[RuntimeHandler, ...] = ()
        for ref in images:
            self.add_image(ref)
        for ref in pullable:
            self.make_pullable(ref)

    # --- test hooks ----------------------------------------------------------------------

    def exit_container(self, container_id: ContainerID, exit_code: int, reason: str = "",
                       message: str = "") -> None:
        """Simulate the container's process exiting; ``reason`` defaults like containerd's,
        ``message`` is what the runtime reports as the exit's message."""
        with self._lock:
            c = self._container(container_id, "exit_container")
            if c.state is not ContainerState.RUNNING:
                raise CRIError("exit_container", f"container {container_id} is not running")
            self._exit(c, exit_code, reason, message)

    def set_stop_exit_code(
        self, container_id: ContainerID, exit_code: int, reason: str = ""
    ) -> None:
        """The exit code (and reason) the container shows once stopped, instead of 137."""
        with self._lock:
            self._container(container_id, "set_stop_exit_code").stop_exit = (exit_code, reason)

    def set_exec_result(
        self, container_id: ContainerID | None, cmd_prefix: tuple[str, ...], result: ExecResult
    ) -> None:
        """What ``exec_sync`` answers for commands starting with ``cmd_prefix``.

        ``container_id`` None applies to every container; a container's own entries win,
        then the longest prefix. Unscripted commands succeed with no output.
        """
        with self._lock:
            self._exec[(container_id, tuple(cmd_prefix))] = result

    def set_stats(
        self,
        container_id: ContainerID,
        cpu_usage_core_nanoseconds: int | None = None,
        memory_working_set_bytes: int | None = None,
        writable_layer_used_bytes: int | None = None,
    ) -> None:
        """The usage ``container_stats`` reports for the container (None: not measured)."""
        with self._lock:
            c = self._container(container_id, "set_stats")
            c.usage = (
                cpu_usage_core_nanoseconds,
                memory_working_set_bytes,
                writable_layer_used_bytes,
            )

    def set_conditions(self, runtime_ready: bool = True, network_ready: bool = True) -> None:
        """The RuntimeReady / NetworkReady conditions ``status`` reports."""
        with self._lock:
            self.runtime_ready = runtime_ready
            self.network_ready = network_ready

    def snapshot(self) -> FakeRuntimeSnapshot:
        """Every sandbox, container and image, without recording a call."""
        with self._lock:
            return FakeRuntimeSnapshot(
                sandboxes=tuple(s.status() for s in self._sandboxes.values()),
                containers=tuple(c.status() for c in self._containers.values()),
                images=tuple(self._images.values()),
            )

    def sandbox_config(self, sandbox_id: SandboxID) -> PodSandboxConfig:
        """The config the sandbox was created with."""
        with self._lock:
            return self._sandbox(sandbox_id, "sandbox_config").config

    def container_config(self, container_id: ContainerID) -> ContainerConfig:
        """The config the container was created with."""
        with self._lock:
            return self._container(container_id, "container_config").config

    def container_sandbox(self, container_id: ContainerID) -> SandboxID:
        """The sandbox the container belongs to."""
        with self._lock:
            return self._container(container_id, "container_sandbox").sandbox_id

    def container_resources(self, container_id: ContainerID) -> LinuxContainerResources | None:
        """The container's resources, as created or last updated."""
        with self._lock:
            return self._container(container_id, "container_resources").resources

    # --- internals -----------------------------------------------------------------------

    def _sandbox(self, sandbox_id: SandboxID, method: str) -> SandboxRecord:
        s = self._sandboxes.get(sandbox_id)
        if s is None:
            raise CRINotFound(method, f"sandbox {sandbox_id!r}: not found", "NOT_FOUND")
        return s

    def _container(self, container_id: ContainerID, method: str) -> ContainerRecord:
        c = self._containers.get(container_id)
        if c is None:
            raise CRINotFound(method, f"container {container_id!r}: not found", "NOT_FOUND")
        return c

    def _exit(self, c: ContainerRecord, exit_code: int, reason: str, message: str = "") -> None:
        c.state = ContainerState.EXITED
        c.finished_at = self.clock.now()
        c.exit_code = exit_code
        c.reason = reason or ("Completed" if exit_code == 0 else "Error")
        c.message = message

    def _stop(self, c: ContainerRecord) -> None:
        if c.state is not ContainerState.RUNNING:
            return
        code, reason = c.stop_exit if c.stop_exit is not None else (STOP_EXIT_CODE, "Error")
        self._exit(c, code, reason)

    # --- RuntimeService: runtime ---------------------------------------------------------

    def version(self) -> VersionInfo:
        with self._lock:
            self._enter("version")
            return VersionInfo("0.1.0", "fake", "0.0.0", "v1")

    def status(self) -> RuntimeStatus:
        with self._lock:
            self._enter("status")
            return RuntimeStatus(
                conditions=(
                    RuntimeCondition("RuntimeReady", self.runtime_ready),
                    RuntimeCondition(
                        "NetworkReady",
                        self.network_ready,
                        "" if self.network_ready else "NetworkPluginNotReady",
                    ),
                ),
                handlers=self.handlers,
            )

    def update_runtime_config(self, pod_cidr: str) -> None:
        with self._lock:
            self._enter("update_runtime_config", pod_cidr)
            if pod_cidr:  # containerd ignores an empty pod CIDR
                self.pod_cidr = pod_cidr

    # --- RuntimeService: sandboxes -------------------------------------------------------

    def run_pod_sandbox(self, config: PodSandboxConfig, runtime_handler: str = "") -> SandboxID:
        with self._lock:
            self._enter("run_pod_sandbox", config, runtime_handler)
            for other in self._sandboxes.values():
                if other.config.metadata == config.metadata:
                    raise CRIError(
                        "RunPodSandbox", f"name for {config.metadata} is reserved by {other.id}"
                    )
            self._next_sandbox += 1
            sid = SandboxID(f"sandbox-{self._next_sandbox}")
            host_network = config.network_mode is NamespaceMode.NODE
            ip = "" if host_network else f"10.88.0.{self._next_sandbox + 1}"
            self._sandboxes[sid] = SandboxRecord(sid, config, runtime_handler, ip, self.clock.now())
            return sid

    def stop_pod_sandbox(self, sandbox_id: SandboxID) -> None:
        with self._lock:
            self._enter("stop_pod_sandbox", sandbox_id)
            s = self._sandbox(sandbox_id, "StopPodSandbox")
            for c in self._containers.values():
                if c.sandbox_id == sandbox_id:
                    self._stop(c)
            s.state = SandboxState.NOTREADY

    def remove_pod_sandbox(self, sandbox_id: SandboxID) -> None:
        with self._lock:
            self._enter("remove_pod_sandbox", sandbox_id)
            if self._sandboxes.pop(sandbox_id, None) is None:
                return
            for cid in [c.id for c in self._containers.values() if c.sandbox_id == sandbox_id]:
                del self._containers[cid]

    def pod_sandbox_status(self, sandbox_id: SandboxID) -> PodSandboxStatus:
        with self._lock:
            self._enter("pod_sandbox_status", sandbox_id)
            return self._sandbox(sandbox_id, "PodSandboxStatus").status()

    def list_pod_sandbox(self, filter: SandboxFilter | None = None) -> tuple[PodSandbox, ...]:
        with self._lock:
            self._enter("list_pod_sandbox", filter)
            flt = filter or SandboxFilter()
            return tuple(s.summary() for s in self._sandboxes.values() if s.matches(flt))

    # --- RuntimeService: containers ------------------------------------------------------

    def create_container(
        self,
        sandbox_id: SandboxID,
        config: ContainerConfig,
        sandbox_config: PodSandboxConfig,
    ) -> ContainerID:
        with self._lock:
            self._enter("create_container", sandbox_id, config, sandbox_config)
            s = self._sandbox(sandbox_id, "CreateContainer")
            if s.state is not SandboxState.READY:
                raise CRIError("CreateContainer", f"sandbox {sandbox_id} is not ready")
            image = self._find_image(config.image.image)
            if image is None:
                raise CRINotFound(
                    "CreateContainer",
                    f"failed to get image {config.image.image!r}: not found",
                    "NOT_FOUND",
                )
            for other in self._containers.values():
                if other.sandbox_id == sandbox_id and other.config.metadata == config.metadata:
                    raise CRIError(
                        "CreateContainer", f"name for {config.metadata} is reserved by {other.id}"
                    )
            self._next_container += 1
            cid = ContainerID(f"container-{self._next_container}")
            log_dir = s.config.log_directory
            log_path = (
                f"{log_dir.rstrip('/')}/{config.log_path}" if log_dir and config.log_path else ""
            )
            self._containers[cid] = ContainerRecord(
                id=cid,
                sandbox_id=sandbox_id,
                config=config,
                image_ref=image.id,
                log_path=log_path,
                created_at=self.clock.now(),
                resources=config.resources,
            )
            return cid

    def start_container(self, container_id: ContainerID) -> None:
        with self._lock:
            self._enter("start_container", container_id)
            c = self._container(container_id, "StartContainer")
            if c.state is not ContainerState.CREATED:
                raise CRIError(
                    "StartContainer", f"container {container_id} is in {c.state.name} state"
                )
            if self._sandboxes[c.sandbox_id].state is not SandboxState.READY:
                raise CRIError("StartContainer", f"sandbox {c.sandbox_id} is not running")
            c.state = ContainerState.RUNNING
            c.started_at = self.clock.now()
            # As containerd does on start: the log is opened (created) at its path, when
            # the directory the kubelet made for it exists.
            if c.log_path and os.path.isdir(os.path.dirname(c.log_path)):
                Path(c.log_path).open("ab").close()  # opened for appending: made if missing

    def stop_container(self, container_id: ContainerID, timeout: int) -> None:
        with self._lock:
            self._enter("stop_container", container_id, timeout)
            self._stop(self._container(container_id, "StopContainer"))

    def remove_container(self, container_id: ContainerID) -> None:
        with self._lock:
            self._enter("remove_container", container_id)
            self._containers.pop(container_id, None)

    def list_containers(self, filter: ContainerFilter | None = None) -> tuple[Container, ...]:
        with self._lock:
            self._enter("list_containers", filter)
            flt = filter or ContainerFilter()
            return tuple(c.summary() for c in self._containers.values() if c.matches(flt))

    def container_status(self, container_id: ContainerID) -> ContainerStatus:
        with self._lock:
            self._enter("container_status", container_id)
            return self._container(container_id, "ContainerStatus").status()

    def exec_sync(
        self, container_id: ContainerID, cmd: tuple[str, ...], timeout: float
    ) -> ExecResult:
        with self._lock:
            self._enter("exec_sync", container_id, cmd, timeout)
            c = self._container(container_id, "ExecSync")
            if c.state is not ContainerState.RUNNING:
                raise CRIError("ExecSync", f"container {container_id} is not running")
            best: tuple[int, int, ExecResult] | None = None
            for (target, prefix), result in self._exec.items():
                if target not in (None, container_id) or tuple(cmd[: len(prefix)]) != prefix:
                    continue
                rank = (int(target is not None), len(prefix), result)
                if best is None or rank[:2] > best[:2]:
                    best = rank
            return best[2] if best is not None else _OK

    def container_stats(self, container_id: ContainerID) -> ContainerStats:
        with self._lock:
            self._enter("container_stats", container_id)
            return self._container(container_id, "ContainerStats").stats(self.clock.now())

    def list_container_stats(self) -> tuple[ContainerStats, ...]:
        with self._lock:
            self._enter("list_container_stats")
            return tuple(
                c.stats(self.clock.now())
                for c in self._containers.values()
                if c.state is ContainerState.RUNNING
            )

    def list_pod_sandbox_stats(self) -> tuple[SandboxStats, ...]:
        """Each READY sandbox with its running containers' stats; its CPU and memory are
        their sums (a real pod cgroup also counts the pause process)."""
        with self._lock:
            self._enter("list_pod_sandbox_stats")
            now = self.clock.now()
            out: list[SandboxStats] = []
            for s in self._sandboxes.values():
                if s.state is not SandboxState.READY:
                    continue
                stats = tuple(c.stats(now) for c in self._containers.values()
                              if c.sandbox_id == s.id and c.state is ContainerState.RUNNING)
                cpu = sum(c.cpu_usage_core_nanoseconds or 0 for c in stats)
                memory = sum(c.memory_working_set_bytes or 0 for c in stats)
                meta = s.config.metadata
                out.append(SandboxStats(
                    s.id, meta.name, meta.namespace, meta.uid, dict(s.config.labels),
                    CpuUsage(now, cpu), MemoryUsage(now, memory, usage_bytes=memory),
                    process_count=len(stats) + 1, containers=stats))
            return tuple(out)

    def update_container_resources(
        self, container_id: ContainerID, resources: LinuxContainerResources
    ) -> None:
        with self._lock:
            self._enter("update_container_resources", container_id, resources)
            c = self._container(container_id, "UpdateContainerResources")
            if c.state not in (ContainerState.CREATED, ContainerState.RUNNING):
                raise CRIError(
                    "UpdateContainerResources", f"container {container_id} is not running"
                )
            c.resources = resources

    def reopen_container_log(self, container_id: ContainerID) -> None:
        with self._lock:
            self._enter("reopen_container_log", container_id)
            c = self._container(container_id, "ReopenContainerLog")
            if c.state is not ContainerState.RUNNING:
                raise CRIError("ReopenContainerLog", f"container {container_id} is not running")
            # As a runtime does: the log at its path is opened again (created if a
            # rotation renamed it away), when its pod's log directory exists.
            if c.log_path and os.path.isdir(os.path.dirname(c.log_path)):
                Path(c.log_path).open("ab").close()  # opened for appending: made if missing


def _implements_cri_runtime(fake: FakeRuntime) -> CRIRuntime:
    """Never called: lets mypy check that FakeRuntime implements both CRI protocols."""
    return fake


__all__ = [
    "IMAGE_FS_MOUNTPOINT",
    "STOP_EXIT_CODE",
    "Call",
    "FakeRuntime",
    "FakeRuntimeSnapshot",
    "image_id_for",
    "normalize_image_ref",
]
