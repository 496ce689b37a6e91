"""The gRPC CRI v1 client: RuntimeService and ImageService against a real runtime socket.

``CRIClient`` is the one place the kubelet talks gRPC. Every method converts its arguments
to CRI messages, calls the runtime with a deadline, converts the answer back into frozen
domain values (runtime.cri.types), and turns any ``grpc.RpcError`` into the project's
runtime.errors.CRIError family, chained with ``from``:

    NOT_FOUND -> CRINotFound            UNAVAILABLE -> CRIUnavailable
    DEADLINE_EXCEEDED -> CRIDeadlineExceeded    UNIMPLEMENTED -> CRIUnimplemented
    anything else -> CRIError

Deadlines follow upstream's remote runtime client: ``timeout`` (runtimeRequestTimeout, 2 min)
for most calls, twice that for RunPodSandbox, ``timeout`` plus the grace period for
StopContainer, ``timeout`` plus the command's timeout for ExecSync.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, Self, TypeVar

import grpc
from google.protobuf.message import Message

from proto import api_pb2, api_pb2_grpc
from runtime.cri.convert import (
    frozen_map,
    image_spec_to_proto,
    pod_sandbox_from_proto,
    resources_to_proto,
    runtime_status_from_proto,
    sandbox_config_to_proto,
    sandbox_filter_to_proto,
    sandbox_status_from_proto,
    version_from_proto,
)
from runtime.cri.convert_containers import (
    container_config_to_proto,
    container_filter_to_proto,
    container_from_proto,
    container_status_from_proto,
)
from runtime.cri.convert_images import (
    auth_config_to_proto,
    container_stats_from_proto,
    exec_result_from_proto,
    filesystem_usage_from_proto,
    image_from_proto,
)
from runtime.cri.sandbox_stats import SandboxStats, container_stats_full, sandbox_stats_from_proto
from runtime.cri.service import CRIRuntime
from runtime.cri.streaming import StreamingCRI
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
from runtime.errors import (
    ConfigError,
    CRIDeadlineExceeded,
    CRIError,
    CRINotFound,
    CRIUnavailable,
    CRIUnimplemented,
)
from runtime.ids import ContainerID, SandboxID

CRI_API_VERSION: Final = "v1"
"""What the kubelet sends as VersionRequest.version."""

MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
"""Largest gRPC message sent or accepted, as upstream's kubelet (16 MiB)."""

_ERRORS: Final[dict[str, type[CRIError]]] = {
    "NOT_FOUND": CRINotFound,
    "UNAVAILABLE": CRIUnavailable,
    "DEADLINE_EXCEEDED": CRIDeadlineExceeded,
    "UNIMPLEMENTED": CRIUnimplemented,
}

_R = TypeVar("_R", bound=Message)


class _Default(enum.Enum):
    """Marks "use the client's default deadline" where None means "no deadline"."""

    TIMEOUT = enum.auto()


def grpc_target(endpoint: str) -> str:
    """The gRPC target for a CRI endpoint: ``unix:///run/x.sock`` or a bare socket path."""
    if endpoint.startswith("unix://"):
        path = endpoint[len("unix://") :]
    elif "://" in endpoint:
        raise ConfigError(f"unsupported CRI endpoint {endpoint!r}: only unix sockets")
    else:
        path = endpoint
    if not path:
        raise ConfigError(f"CRI endpoint {endpoint!r} names no socket")
    return f"unix://{path}" if path.startswith("/") else f"unix:{path}"


def map_rpc_error(method: str, err: grpc.RpcError) -> CRIError:
    """The project error for a failed gRPC call; the caller raises it ``from err``."""
    code_fn = getattr(err, "code", None)
    details_fn = getattr(err, "details", None)
    code = code_fn() if callable(code_fn) else None
    details = details_fn() if callable(details_fn) else None
    code_name = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
    message = details if isinstance(details, str) and details else str(err)
    return _ERRORS.get(code_name, CRIError)(method, message, code_name)


class CRIClient:
    """A CRI v1 runtime endpoint (containerd, CRI-O...) over gRPC on a unix socket.

    Implements runtime.cri.service.RuntimeService and ImageService. Thread-safe: calls may
    come from several threads at once over the one channel. Close it (or use it as a context
    manager) to release the channel.
    """

    def __init__(
        self, endpoint: str, timeout: float = 120.0, image_pull_timeout: float | None = None
    ) -> None:
        """Connect lazily to ``endpoint``.

        ``timeout`` is the per-call deadline in seconds; ``image_pull_timeout`` the deadline
        for PullImage (None: the same as ``timeout``).
        """
        self.endpoint = endpoint
        self.timeout = timeout
        self.image_pull_timeout = timeout if image_pull_timeout is None else image_pull_timeout
        self._channel: Any = grpc.insecure_channel(
            grpc_target(endpoint),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ],
        )
        self._runtime = api_pb2_grpc.RuntimeServiceStub(self._channel)
        self._images = api_pb2_grpc.ImageServiceStub(self._channel)

    # --- plumbing ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the channel; calls made afterwards fail."""
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call(
        self,
        method: str,
        request: Message,
        response_type: type[_R],
        timeout: float | _Default | None = _Default.TIMEOUT,
        *,
        image: bool = False,
    ) -> _R:
        """Invoke ``method`` on the runtime or image service and check the answer's type.

        ``timeout``: the deadline in seconds, None for none; by default ``self.timeout``.
        """
        stub: Any = self._images if image else self._runtime
        deadline = self.timeout if isinstance(timeout, _Default) else timeout
        try:
            response = getattr(stub, method)(request, timeout=deadline)
        except grpc.RpcError as err:
            raise map_rpc_error(method, err) from err
        if not isinstance(response, response_type):
            raise CRIError(method, f"unexpected response type {type(response).__name__}")
        return response

    # --- RuntimeService ------------------------------------------------------------------

    def version(self) -> VersionInfo:
        """The runtime's name and versions (also a cheap liveness check)."""
        req = api_pb2.VersionRequest(version=CRI_API_VERSION)
        return version_from_proto(self._call("Version", req, api_pb2.VersionResponse))

    def status(self) -> RuntimeStatus:
        """The runtime's RuntimeReady / NetworkReady conditions and its handlers."""
        resp = self._call("Status", api_pb2.StatusRequest(), api_pb2.StatusResponse)
        return runtime_status_from_proto(resp)

    def run_pod_sandbox(self, config: PodSandboxConfig, runtime_handler: str = "") -> SandboxID:
        """Create and start a pod sandbox; returns its id."""
        req = api_pb2.RunPodSandboxRequest(
            config=sandbox_config_to_proto(config), runtime_handler=runtime_handler
        )
        resp = self._call("RunPodSandbox", req, api_pb2.RunPodSandboxResponse, self.timeout * 2)
        if not resp.pod_sandbox_id:
            raise CRIError("RunPodSandbox", f"no sandbox id returned for {config.metadata}")
        return SandboxID(resp.pod_sandbox_id)

    def stop_pod_sandbox(self, sandbox_id: SandboxID) -> None:
        """Stop the sandbox and every container in it (idempotent)."""
        req = api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox_id)
        self._call("StopPodSandbox", req, api_pb2.StopPodSandboxResponse)

    def remove_pod_sandbox(self, sandbox_id: SandboxID) -> None:
        """Remove the sandbox and its containers (idempotent)."""
        req = api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id)
        self._call("RemovePodSandbox", req, api_pb2.RemovePodSandboxResponse)

    def pod_sandbox_status(self, sandbox_id: SandboxID) -> PodSandboxStatus:
        """The sandbox's state, IPs and metadata; CRINotFound if it does not exist."""
        req = api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id)
        resp = self._call("PodSandboxStatus", req, api_pb2.PodSandboxStatusResponse)
        if not resp.HasField("status"):
            raise CRIError("PodSandboxStatus", f"no status returned for {sandbox_id}")
        return sandbox_status_from_proto(resp.status)

    def pod_sandbox_info(self, sandbox_id: SandboxID) -> Mapping[str, str]:
        """The runtime's verbose information about the sandbox (PodSandboxStatus with
        ``verbose``, what ``crictl inspectp`` shows): containerd's ``info`` key is a JSON
        document with the config it was given and the pause container's OCI spec. For
        diagnostics and tests; nothing the kubelet decides on."""
        req = api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id, verbose=True)
        resp = self._call("PodSandboxStatus", req, api_pb2.PodSandboxStatusResponse)
        return frozen_map(resp.info)

    def list_pod_sandbox(self, filter: SandboxFilter | None = None) -> tuple[PodSandbox, ...]:
        """The sandboxes matching ``filter`` (all of them when None)."""
        req = api_pb2.ListPodSandboxRequest()
        if filter is not None:
            req.filter.CopyFrom(sandbox_filter_to_proto(filter))
        resp = self._call("ListPodSandbox", req, api_pb2.ListPodSandboxResponse)
        return tuple(pod_sandbox_from_proto(item) for item in resp.items)

    def create_container(
        self,
        sandbox_id: SandboxID,
        config: ContainerConfig,
        sandbox_config: PodSandboxConfig,
    ) -> ContainerID:
        """Create a container in the sandbox; returns its id."""
        req = api_pb2.CreateContainerRequest(
            pod_sandbox_id=sandbox_id,
            config=container_config_to_proto(config, sandbox_config),
            sandbox_config=sandbox_config_to_proto(sandbox_config),
        )
        resp = self._call("CreateContainer", req, api_pb2.CreateContainerResponse)
        if not resp.container_id:
            raise CRIError("CreateContainer", f"no container id returned for {config.metadata}")
        return ContainerID(resp.container_id)

    def start_container(self, container_id: ContainerID) -> None:
        """Start a created container."""
        req = api_pb2.StartContainerRequest(container_id=container_id)
        self._call("StartContainer", req, api_pb2.StartContainerResponse)

    def stop_container(self, container_id: ContainerID, timeout: int) -> None:
        """Stop the container, killing it after ``timeout`` seconds of grace (idempotent)."""
        req = api_pb2.StopContainerRequest(container_id=container_id, timeout=timeout)
        deadline = self.timeout + max(timeout, 0)
        self._call("StopContainer", req, api_pb2.StopContainerResponse, deadline)

    def remove_container(self, container_id: ContainerID) -> None:
        """Remove the container, forcibly if it runs (idempotent)."""
        req = api_pb2.RemoveContainerRequest(container_id=container_id)
        self._call("RemoveContainer", req, api_pb2.RemoveContainerResponse)

    def list_containers(self, filter: ContainerFilter | None = None) -> tuple[Container, ...]:
        """The containers matching ``filter`` (all of them when None)."""
        req = api_pb2.ListContainersRequest()
        if filter is not None:
            req.filter.CopyFrom(container_filter_to_proto(filter))
        resp = self._call("ListContainers", req, api_pb2.ListContainersResponse)
        return tuple(container_from_proto(c) for c in resp.containers)

    def container_status(self, container_id: ContainerID) -> ContainerStatus:
        """The container's state, times, exit code and reason; CRINotFound if unknown."""
        req = api_pb2.ContainerStatusRequest(container_id=container_id)
        resp = self._call("ContainerStatus", req, api_pb2.ContainerStatusResponse)
        if not resp.HasField("status"):
            raise CRIError("ContainerStatus", f"no status returned for {container_id}")
        return container_status_from_proto(resp.status)

    def exec_sync(
        self, container_id: ContainerID, cmd: tuple[str, ...], timeout: float
    ) -> ExecResult:
        """Run ``cmd`` in the container and wait for it (``timeout`` <= 0: no limit)."""
        seconds = math.ceil(timeout) if timeout > 0 else 0
        req = api_pb2.ExecSyncRequest(container_id=container_id, cmd=cmd, timeout=seconds)
        deadline = self.timeout + timeout if timeout > 0 else None
        resp = self._call("ExecSync", req, api_pb2.ExecSyncResponse, deadline)
        return exec_result_from_proto(resp)

    def container_stats(self, container_id: ContainerID) -> ContainerStats:
        """Resource usage of one container."""
        req = api_pb2.ContainerStatsRequest(container_id=container_id)
        resp = self._call("ContainerStats", req, api_pb2.ContainerStatsResponse)
        return container_stats_from_proto(resp.stats)

    def list_container_stats(self) -> tuple[ContainerStats, ...]:
        """Resource usage of every running container."""
        req = api_pb2.ListContainerStatsRequest()
        resp = self._call("ListContainerStats", req, api_pb2.ListContainerStatsResponse)
        return tuple(container_stats_full(s) for s in resp.stats)

    def list_pod_sandbox_stats(self) -> tuple[SandboxStats, ...]:
        """Resource usage of every pod sandbox (CRIUnimplemented on runtimes without it)."""
        req = api_pb2.ListPodSandboxStatsRequest()
        resp = self._call("ListPodSandboxStats", req, api_pb2.ListPodSandboxStatsResponse)
        return tuple(sandbox_stats_from_proto(s) for s in resp.stats)

    def update_container_resources(
        self, container_id: ContainerID, resources: LinuxContainerResources
    ) -> None:
        """Change a container's Linux resource limits in place."""
        req = api_pb2.UpdateContainerResourcesRequest(
            container_id=container_id, linux=resources_to_proto(resources)
        )
        self._call("UpdateContainerResources", req, api_pb2.UpdateContainerResourcesResponse)

    def reopen_container_log(self, container_id: ContainerID) -> None:
        """Ask the runtime to reopen the container's log file (after a rotation)."""
        req = api_pb2.ReopenContainerLogRequest(container_id=container_id)
        self._call("ReopenContainerLog", req, api_pb2.ReopenContainerLogResponse)

    def update_runtime_config(self, pod_cidr: str) -> None:
        """Tell the runtime the node's pod CIDRs (comma-joined), as upstream's
        UpdatePodCIDR sends them; containerd renders its CNI config template with them."""
        req = api_pb2.UpdateRuntimeConfigRequest(runtime_config=api_pb2.RuntimeConfig(
            network_config=api_pb2.NetworkConfig(pod_cidr=pod_cidr)))
        self._call("UpdateRuntimeConfig", req, api_pb2.UpdateRuntimeConfigResponse)

    # --- streaming (runtime.cri.streaming.StreamingRuntime) ---------------------------------

    def exec(self, container_id: ContainerID, cmd: tuple[str, ...], tty: bool, stdin: bool,
             stdout: bool, stderr: bool) -> str:
        """The runtime's streaming URL for ``cmd`` in the container."""
        req = api_pb2.ExecRequest(container_id=container_id, cmd=cmd, tty=tty, stdin=stdin,
                                  stdout=stdout, stderr=stderr)
        return self._call("Exec", req, api_pb2.ExecResponse).url

    def attach(self, container_id: ContainerID, tty: bool, stdin: bool, stdout: bool,
               stderr: bool) -> str:
        """The runtime's streaming URL for attaching to the container."""
        req = api_pb2.AttachRequest(container_id=container_id, tty=tty, stdin=stdin,
                                    stdout=stdout, stderr=stderr)
        return self._call("Attach", req, api_pb2.AttachResponse).url

    def port_forward(self, sandbox_id: SandboxID, ports: tuple[int, ...]) -> str:
        """The runtime's streaming URL for forwarding to ports of the sandbox."""
        req = api_pb2.PortForwardRequest(pod_sandbox_id=sandbox_id, port=ports)
        return self._call("PortForward", req, api_pb2.PortForwardResponse).url

    # --- ImageService --------------------------------------------------------------------

    def image_status(self, image: ImageSpec) -> Image | None:
        """The image, or None when the runtime does not have it."""
        req = api_pb2.ImageStatusRequest(image=image_spec_to_proto(image))
        resp = self._call("ImageStatus", req, api_pb2.ImageStatusResponse, image=True)
        if not resp.HasField("image") or not resp.image.id:
            return None
        return image_from_proto(resp.image)

    def pull_image(
        self,
        image: ImageSpec,
        auth: AuthConfig | None = None,
        sandbox_config: PodSandboxConfig | None = None,
    ) -> str:
        """Pull the image; returns the image reference the runtime resolved it to."""
        req = api_pb2.PullImageRequest(image=image_spec_to_proto(image))
        if auth is not None:
            req.auth.CopyFrom(auth_config_to_proto(auth))
        if sandbox_config is not None:
            req.sandbox_config.CopyFrom(sandbox_config_to_proto(sandbox_config))
        resp = self._call(
            "PullImage", req, api_pb2.PullImageResponse, self.image_pull_timeout, image=True
        )
        if not resp.image_ref:
            raise CRIError("PullImage", f"no image reference returned for {image.image}")
        return resp.image_ref

    def list_images(self, filter: ImageSpec | None = None) -> tuple[Image, ...]:
        """The images present (only those matching ``filter`` when given)."""
        req = api_pb2.ListImagesRequest()
        if filter is not None:
            req.filter.image.CopyFrom(image_spec_to_proto(filter))
        resp = self._call("ListImages", req, api_pb2.ListImagesResponse, image=True)
        return tuple(image_from_proto(i) for i in resp.images)

    def remove_image(self, image: ImageSpec) -> None:
        """Remove the image (idempotent)."""
        req = api_pb2.RemoveImageRequest(image=image_spec_to_proto(image))
        self._call("RemoveImage", req, api_pb2.RemoveImageResponse, image=True)

    def image_fs_info(self) -> tuple[FilesystemUsage, ...]:
        """Usage of the filesystems that hold images."""
        req = api_pb2.ImageFsInfoRequest()
        resp = self._call("ImageFsInfo", req, api_pb2.ImageFsInfoResponse, image=True)
        return tuple(filesystem_usage_from_proto(f) for f in resp.image_filesystems)


def _implements_cri_runtime(client: CRIClient) -> CRIRuntime:
    """Never called: lets mypy check that CRIClient implements both CRI protocols."""
    return client


def _implements_streaming(client: CRIClient) -> StreamingCRI:
    """Never called: lets mypy check that CRIClient implements the streaming calls."""
    return client
