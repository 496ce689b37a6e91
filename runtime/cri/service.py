"""The narrow interfaces the kubelet uses to reach a container runtime.

``RuntimeService`` and ``ImageService`` name every CRI call the kubelet makes, in domain
types. The gRPC client (runtime.cri.client.CRIClient) implements both against a real
runtime; runtime.testing.fake_runtime.FakeRuntime implements both in memory for tests, and a
trace replayer can implement them from recorded responses. Every method raises a
runtime.errors.CRIError subclass on failure, never a grpc error.
"""

from __future__ import annotations

from typing import Protocol

from runtime.cri.sandbox_stats import SandboxStats
from runtime.cri.types import (
    AuthConfig,
    Container,
    ContainerConfig,
    ContainerFilter,
    ContainerStats,
    ContainerStatus,
    ExecResult,
    FilesystemUsage,
    Image,
    ImageSpec,
    LinuxContainerResources,
    PodSandbox,
    PodSandboxConfig,
    PodSandboxStatus,
    RuntimeStatus,
    SandboxFilter,
    VersionInfo,
)
from runtime.ids import ContainerID, SandboxID


class RuntimeService(Protocol):
    """CRI v1 RuntimeService, as the kubelet uses it."""

    def version(self) -> VersionInfo: ...

    def status(self) -> RuntimeStatus: ...

    def run_pod_sandbox(self, config: PodSandboxConfig, runtime_handler: str = "") -> SandboxID: ...

    def stop_pod_sandbox(self, sandbox_id: SandboxID) -> None: ...

    def remove_pod_sandbox(self, sandbox_id: SandboxID) -> None: ...

    def pod_sandbox_status(self, sandbox_id: SandboxID) -> PodSandboxStatus: ...

    def list_pod_sandbox(self, filter: SandboxFilter | None = None) -> tuple[PodSandbox, ...]: ...

    def create_container(
        self,
        sandbox_id: SandboxID,
        config: ContainerConfig,
        sandbox_config: PodSandboxConfig,
    ) -> ContainerID: ...

    def start_container(self, container_id: ContainerID) -> None: ...

    def stop_container(self, container_id: ContainerID, timeout: int) -> None: ...

    def remove_container(self, container_id: ContainerID) -> None: ...

    def list_containers(self, filter: ContainerFilter | None = None) -> tuple[Container, ...]: ...

    def container_status(self, container_id: ContainerID) -> ContainerStatus: ...

    def exec_sync(
        self, container_id: ContainerID, cmd: tuple[str, ...], timeout: float
    ) -> ExecResult: ...

    def container_stats(self, container_id: ContainerID) -> ContainerStats: ...

    def list_container_stats(self) -> tuple[ContainerStats, ...]: ...

    def list_pod_sandbox_stats(self) -> tuple[SandboxStats, ...]: ...

    def update_container_resources(
        self, container_id: ContainerID, resources: LinuxContainerResources
    ) -> None: ...

    def reopen_container_log(self, container_id: ContainerID) -> None: ...

    def update_runtime_config(self, pod_cidr: str) -> None:
        """UpdateRuntimeConfig with ``runtime_config.network_config.pod_cidr``: the node's
        pod CIDRs, comma-joined (upstream's UpdatePodCIDR)."""
        ...


class ImageService(Protocol):
    """CRI v1 ImageService, as the kubelet uses it."""

    def image_status(self, image: ImageSpec) -> Image | None:
        """The image, or None when the runtime does not have it."""
        ...

    def pull_image(
        self,
        image: ImageSpec,
        auth: AuthConfig | None = None,
        sandbox_config: PodSandboxConfig | None = None,
    ) -> str:
        """Pull the image; returns the image reference the runtime resolved it to."""
        ...

    def list_images(self, filter: ImageSpec | None = None) -> tuple[Image, ...]: ...

    def remove_image(self, image: ImageSpec) -> None: ...

    def image_fs_info(self) -> tuple[FilesystemUsage, ...]: ...


class CRIRuntime(RuntimeService, ImageService, Protocol):
    """Both services together, as one runtime endpoint serves them."""
