"""The mutable records behind runtime.testing.fake_runtime.FakeRuntime.

A ``SandboxRecord`` or ``ContainerRecord`` is the fake's state for one sandbox or container;
its methods render the frozen domain values the CRI protocol methods return and decide
whether a list filter selects it. Only FakeRuntime mutates them, under its lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from msgspec import UNSET

from runtime.cri.types import (
    Container,
    ContainerConfig,
    ContainerFilter,
    ContainerState,
    ContainerStats,
    ContainerStatus,
    FilesystemUsage,
    Image,
    LinuxContainerResources,
    PodSandbox,
    PodSandboxConfig,
    PodSandboxStatus,
    SandboxFilter,
    SandboxState,
)
from runtime.cri.usage import CpuUsage, MemoryUsage
from runtime.ids import ContainerID, SandboxID


@dataclass(frozen=True, slots=True)
class FakeRuntimeSnapshot:
    """Everything the fake holds, as the statuses its protocol methods would return."""

    sandboxes: tuple[PodSandboxStatus, ...]
    containers: tuple[ContainerStatus, ...]
    images: tuple[Image, ...]


def labels_match(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    """CRI label selectors: every selector pair must be among the labels (exact match)."""
    return all(labels.get(k) == v for k, v in selector.items())


@dataclass(slots=True)
class SandboxRecord:
    """One pod sandbox the fake runs."""

    id: SandboxID
    config: PodSandboxConfig
    runtime_handler: str
    ip: str
    created_at: float
    state: SandboxState = SandboxState.READY

    def status(self) -> PodSandboxStatus:
        """As PodSandboxStatus reports it (no IP once stopped, as containerd)."""
        return PodSandboxStatus(
            id=self.id,
            metadata=self.config.metadata,
            state=self.state,
            created_at=self.created_at,
            ip=self.ip if self.state is SandboxState.READY else "",
            network_mode=self.config.network_mode,
            labels=dict(self.config.labels),
            annotations=dict(self.config.annotations),
            runtime_handler=self.runtime_handler or UNSET,
        )

    def summary(self) -> PodSandbox:
        """As ListPodSandbox reports it."""
        return PodSandbox(
            id=self.id,
            metadata=self.config.metadata,
            state=self.state,
            created_at=self.created_at,
            labels=dict(self.config.labels),
            annotations=dict(self.config.annotations),
            runtime_handler=self.runtime_handler,
        )

    def matches(self, flt: SandboxFilter) -> bool:
        """Whether ``flt`` selects this sandbox (its fields are ANDed; unset ones match)."""
        return (
            (not flt.id or self.id == flt.id)
            and (flt.state is None or self.state is flt.state)
            and labels_match(self.config.labels, flt.label_selector)
        )


@dataclass(slots=True)
class ContainerRecord:
    """One container the fake holds."""

    id: ContainerID
    sandbox_id: SandboxID
    config: ContainerConfig
    image_ref: str
    log_path: str
    created_at: float
    state: ContainerState = ContainerState.CREATED
    started_at: float = 0.0
    finished_at: float = 0.0
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    stop_exit: tuple[int, str] | None = None  # exit code and reason once stopped
    resources: LinuxContainerResources | None = None
    usage: tuple[int | None, int | None, int | None] = (None, None, None)  # cpu, mem, disk

    def status(self) -> ContainerStatus:
        """As ContainerStatus reports it."""
        return ContainerStatus(
            id=self.id,
            metadata=self.config.metadata,
            state=self.state,
            created_at=self.created_at,
            started_at=self.started_at,
            finished_at=self.finished_at,
            exit_code=self.exit_code,
            image=self.config.image,
            image_ref=self.image_ref,
            reason=self.reason,
            message=self.message,
            labels=dict(self.config.labels),
            annotations=dict(self.config.annotations),
            mounts=self.config.mounts,
            log_path=self.log_path,
        )

    def summary(self) -> Container:
        """As ListContainers reports it."""
        return Container(
            id=self.id,
            pod_sandbox_id=self.sandbox_id,
            metadata=self.config.metadata,
            image=self.config.image,
            image_ref=self.image_ref,
            state=self.state,
            created_at=self.created_at,
            labels=dict(self.config.labels),
            annotations=dict(self.config.annotations),
        )

    def matches(self, flt: ContainerFilter) -> bool:
        """Whether ``flt`` selects this container (its fields are ANDed; unset ones match)."""
        return (
            (not flt.id or self.id == flt.id)
            and (flt.state is None or self.state is flt.state)
            and (not flt.pod_sandbox_id or self.sandbox_id == flt.pod_sandbox_id)
            and labels_match(self.config.labels, flt.label_selector)
        )

    def stats(self, now: float) -> ContainerStats:
        """As ContainerStats reports it, sampled at ``now``."""
        cpu, memory, writable = self.usage
        return ContainerStats(
            id=self.id,
            name=self.config.metadata.name,
            labels=dict(self.config.labels),
            cpu_usage_core_nanoseconds=cpu,
            memory_working_set_bytes=memory,
            writable_layer_used_bytes=writable,
            timestamp=now,
            cpu=None if cpu is None else CpuUsage(now, cpu),
            memory=None if memory is None else MemoryUsage(now, memory, usage_bytes=memory),
            writable_layer=(None if writable is None
                            else FilesystemUsage("/var/lib/containerd", writable, 1, now)),
        )
