"""CRIClient against an in-process gRPC CRI server on a unix socket.

The fake server subclasses the generated servicers, keeps what it was sent, and answers
from it, so the tests see both directions of every conversion over the real wire format.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import msgspec
import pytest
from google.protobuf import json_format

from proto import api_pb2, api_pb2_grpc
from runtime.cri.client import CRIClient, grpc_target
from runtime.cri.convert import sandbox_config_from_proto, seconds_to_ns
from runtime.cri.convert_containers import container_config_from_proto
from runtime.cri.types import (
    AuthConfig,
    Capability,
    ContainerConfig,
    ContainerFilter,
    ContainerMetadata,
    ContainerState,
    DNSConfig,
    ImageSpec,
    KeyValue,
    LinuxContainerResources,
    LinuxContainerSecurityContext,
    LinuxSandboxSecurityContext,
    Mount,
    MountPropagation,
    NamespaceMode,
    PodSandboxConfig,
    PodSandboxMetadata,
    PortMapping,
    Protocol,
    RuntimeHandler,
    RuntimeHandlerFeatures,
    SandboxFilter,
    SandboxState,
    SecurityProfile,
    SecurityProfileType,
    SELinuxOption,
    SupplementalGroupsPolicy,
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

CREATED = 1_700_000_000.25
STARTED = 1_700_000_001.5
FINISHED = 1_700_000_009.123456


class FakeCRI(api_pb2_grpc.RuntimeServiceServicer, api_pb2_grpc.ImageServiceServicer):
    """Both CRI services, answering from what they were sent."""

    def __init__(self) -> None:
        self.sandboxes: dict[str, api_pb2.PodSandboxConfig] = {}
        self.sandbox_handlers: dict[str, str] = {}
        self.containers: dict[str, api_pb2.CreateContainerRequest] = {}
        self.requests: list[Any] = []
        self.release = threading.Event()  # lets the slow handler finish
        self.images = {"busybox:latest": "sha256:b0b"}
        self.handlers: list[api_pb2.RuntimeHandler] = []  # containerd 1.6 reports none

    def Version(self, request: Any, context: Any) -> Any:
        self.requests.append(request)
        return api_pb2.VersionResponse(
            version="0.1.0",
            runtime_name="fake",
            runtime_version="1.6.20",
            runtime_api_version="v1",
        )

    def Status(self, request: Any, context: Any) -> Any:
        conditions = [
            api_pb2.RuntimeCondition(type="RuntimeReady", status=True),
            api_pb2.RuntimeCondition(
                type="NetworkReady", status=False, reason="NoCNI", message="no config"
            ),
        ]
        return api_pb2.StatusResponse(status=api_pb2.RuntimeStatus(conditions=conditions),
                                      runtime_handlers=self.handlers)

    def RunPodSandbox(self, request: Any, context: Any) -> Any:
        sid = f"sb-{len(self.sandboxes) + 1}"
        self.sandboxes[sid] = request.config
        self.sandbox_handlers[sid] = request.runtime_handler
        self.requests.append(request)
        return api_pb2.RunPodSandboxResponse(pod_sandbox_id=sid)

    def PodSandboxStatus(self, request: Any, context: Any) -> Any:
        config = self.sandboxes.get(request.pod_sandbox_id)
        if config is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"sandbox {request.pod_sandbox_id}")
        assert config is not None  # abort() raised otherwise
        ns = api_pb2.NamespaceOption(
            network=config.linux.security_context.namespace_options.network
        )
        status = api_pb2.PodSandboxStatus(
            id=request.pod_sandbox_id,
            metadata=config.metadata,
            state=api_pb2.SANDBOX_READY,
            created_at=seconds_to_ns(CREATED),
            network=api_pb2.PodSandboxNetworkStatus(
                ip="10.88.0.2", additional_ips=[api_pb2.PodIP(ip="fd00::2")]
            ),
            linux=api_pb2.LinuxPodSandboxStatus(namespaces=api_pb2.Namespace(options=ns)),
            labels=config.labels,
            annotations=config.annotations,
            runtime_handler=self.sandbox_handlers[request.pod_sandbox_id],
        )
        info = ({"info": json_format.MessageToJson(config)} if request.verbose else {})
        return api_pb2.PodSandboxStatusResponse(status=status, info=info)

    def ListPodSandbox(self, request: Any, context: Any) -> Any:
        self.requests.append(request)
        items = [
            api_pb2.PodSandbox(
                id=sid,
                metadata=config.metadata,
                state=api_pb2.SANDBOX_NOTREADY,
                created_at=seconds_to_ns(CREATED),
                labels=config.labels,
                annotations=config.annotations,
                runtime_handler="runc",
            )
            for sid, config in self.sandboxes.items()
        ]
        return api_pb2.ListPodSandboxResponse(items=items)

    def CreateContainer(self, request: Any, context: Any) -> Any:
        cid = f"c-{len(self.containers) + 1}"
        self.containers[cid] = request
        return api_pb2.CreateContainerResponse(container_id=cid)

    def ListContainers(self, request: Any, context: Any) -> Any:
        self.requests.append(request)
        out = []
        for cid, req in self.containers.items():
            out.append(
                api_pb2.Container(
                    id=cid,
                    pod_sandbox_id=req.pod_sandbox_id,
                    metadata=req.config.metadata,
                    image=req.config.image,
                    image_ref="sha256:b0b",
                    state=api_pb2.CONTAINER_RUNNING,
                    created_at=seconds_to_ns(CREATED),
                    labels=req.config.labels,
                    annotations=req.config.annotations,
                )
            )
        out.append(api_pb2.Container(id="c-future", state=api_pb2.ContainerState.ValueType(42)))
        return api_pb2.ListContainersResponse(containers=out)

    def ContainerStatus(self, request: Any, context: Any) -> Any:
        req = self.containers.get(request.container_id)
        if req is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"container {request.container_id}")
        assert req is not None  # abort() raised otherwise
        status = api_pb2.ContainerStatus(
            id=request.container_id,
            metadata=req.config.metadata,
            state=api_pb2.CONTAINER_EXITED,
            created_at=seconds_to_ns(CREATED),
            started_at=seconds_to_ns(STARTED),
            finished_at=seconds_to_ns(FINISHED),
            exit_code=137,
            image=req.config.image,
            image_ref="sha256:b0b",
            reason="OOMKilled",
            message="out of memory",
            labels=req.config.labels,
            annotations=req.config.annotations,
            mounts=req.config.mounts,
            log_path="/var/log/pods/x/c/0.log",
        )
        return api_pb2.ContainerStatusResponse(status=status)

    def ExecSync(self, request: Any, context: Any) -> Any:
        self.requests.append(request)
        if request.cmd[0] == "hang":
            self.release.wait(10)  # the one sleep: a handler slower than the deadline
        return api_pb2.ExecSyncResponse(stdout=b"out", stderr=b"err", exit_code=3)

    def ContainerStats(self, request: Any, context: Any) -> Any:
        stats = api_pb2.ContainerStats(
            attributes=api_pb2.ContainerAttributes(
                id=request.container_id,
                metadata=api_pb2.ContainerMetadata(name="app"),
                labels={"a": "b"},
            ),
            cpu=api_pb2.CpuUsage(
                timestamp=seconds_to_ns(STARTED),
                usage_core_nano_seconds=api_pb2.UInt64Value(value=12345),
            ),
            memory=api_pb2.MemoryUsage(timestamp=seconds_to_ns(FINISHED)),
        )
        return api_pb2.ContainerStatsResponse(stats=stats)

    def ImageStatus(self, request: Any, context: Any) -> Any:
        ref = self.images.get(request.image.image)
        if ref is None:
            return api_pb2.ImageStatusResponse()
        image = api_pb2.Image(id=ref, repo_tags=[request.image.image], size=1234, pinned=True)
        return api_pb2.ImageStatusResponse(image=image)

    def PullImage(self, request: Any, context: Any) -> Any:
        self.requests.append(request)
        if request.image.image == "nope:1":
            context.abort(grpc.StatusCode.UNKNOWN, "failed to resolve reference: not found")
        return api_pb2.PullImageResponse(image_ref="sha256:new")

    def ImageFsInfo(self, request: Any, context: Any) -> Any:
        usage = api_pb2.FilesystemUsage(
            timestamp=seconds_to_ns(CREATED),
            fs_id=api_pb2.FilesystemIdentifier(mountpoint="/var/lib/containerd"),
            used_bytes=api_pb2.UInt64Value(value=4096),
            inodes_used=api_pb2.UInt64Value(value=7),
        )
        return api_pb2.ImageFsInfoResponse(image_filesystems=[usage])


def _socket_dir(tmp_path: Path) -> Path:
    """tmp_path, unless it is too long for a unix socket path (108 bytes)."""
    if len(str(tmp_path)) < 90:
        return tmp_path
    return Path(tempfile.mkdtemp(prefix="cri-"))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[FakeCRI, CRIClient]]:
    directory = _socket_dir(tmp_path)
    sock = directory / "cri.sock"
    fake = FakeCRI()  # type: ignore[abstract]  # serves only the calls the tests make
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    api_pb2_grpc.add_RuntimeServiceServicer_to_server(fake, server)
    api_pb2_grpc.add_ImageServiceServicer_to_server(fake, server)
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    client = CRIClient(f"unix://{sock}", timeout=10)
    yield fake, client
    fake.release.set()
    client.close()
    server.stop(grace=None).wait(5)
    if directory != tmp_path:
        shutil.rmtree(directory, ignore_errors=True)


def _sandbox_config() -> PodSandboxConfig:
    return PodSandboxConfig(
        metadata=PodSandboxMetadata(name="web", uid="uid-1", namespace="default", attempt=2),
        hostname="web",
        log_directory="/var/log/pods/default_web_uid-1",
        dns_config=DNSConfig(servers=("10.0.0.10",), searches=("svc.local",), options=("ndots:5",)),
        port_mappings=(
            PortMapping(container_port=80, host_port=8080, protocol=Protocol.TCP),
            PortMapping(container_port=53, protocol=Protocol.UDP, host_ip="127.0.0.1"),
        ),
        labels={"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.pod.name": "web"},
        annotations={"kubernetes.io/config.source": "file"},
        cgroup_parent="/kubepods/besteffort/poduid-1",
        network_mode=NamespaceMode.NODE,
        pid_mode=NamespaceMode.CONTAINER,
        sysctls={"net.ipv4.ip_unprivileged_port_start": "0"},
        security=LinuxSandboxSecurityContext(
            run_as_user=1000, run_as_group=0, supplemental_groups=(3000, 4000),
            supplemental_groups_policy=SupplementalGroupsPolicy.STRICT, privileged=True,
            seccomp=SecurityProfile(SecurityProfileType.RUNTIME_DEFAULT),
            selinux_options=SELinuxOption(level="s0:c1"),
        ),
    )


def _container_config() -> ContainerConfig:
    return ContainerConfig(
        metadata=ContainerMetadata(name="app", attempt=1),
        image=ImageSpec("busybox:latest", annotations={"arch": "amd64"}),
        command=("/bin/sh", "-c"),
        args=("sleep 3600",),
        working_dir="/",
        envs=(KeyValue("A", "1"), KeyValue("B", "2")),
        mounts=(
            Mount("/data", "/srv/data"),
            Mount("/etc/x", "/srv/x", readonly=True, propagation=MountPropagation.BIDIRECTIONAL),
        ),
        labels={"io.kubernetes.container.name": "app"},
        annotations={"io.kubernetes.container.restartCount": "1"},
        log_path="app/1.log",
        tty=True,
        resources=LinuxContainerResources(cpu_shares=2, memory_limit_in_bytes=64 << 20),
        security=LinuxContainerSecurityContext(
            capabilities=Capability(("NET_ADMIN",), ("ALL",)), privileged=True,
            run_as_user=0, run_as_group=5, readonly_rootfs=True, supplemental_groups=(7,),
            no_new_privs=True, masked_paths=("/proc/kcore",), readonly_paths=("/proc/sys",),
            seccomp=SecurityProfile(SecurityProfileType.LOCALHOST, "/var/lib/k/seccomp/p.json"),
            apparmor=SecurityProfile(SecurityProfileType.RUNTIME_DEFAULT),
        ),
    )


def test_grpc_target_accepts_unix_urls_and_paths() -> None:
    assert grpc_target("unix:///run/containerd.sock") == "unix:///run/containerd.sock"
    assert grpc_target("/run/containerd.sock") == "unix:///run/containerd.sock"
    assert grpc_target("run/c.sock") == "unix:run/c.sock"
    with pytest.raises(ConfigError):
        grpc_target("tcp://127.0.0.1:1234")


def test_version_and_status(served: tuple[FakeCRI, CRIClient]) -> None:
    fake, client = served
    info = client.version()
    assert (info.runtime_name, info.runtime_version, info.runtime_api_version) == (
        "fake",
        "1.6.20",
        "v1",
    )
    assert fake.requests[-1].version == "v1"
    status = client.status()
    ready = status.condition("RuntimeReady")
    network = status.condition("NetworkReady")
    assert ready is not None and ready.status
    assert network is not None and not network.status and network.reason == "NoCNI"
    assert status.handlers == ()


def test_status_reports_the_runtime_handlers_and_their_features(
        served: tuple[FakeCRI, CRIClient]) -> None:
    """Upstream's kubelet reads each handler's features from Status (user namespaces,
    recursive read-only mounts); a handler without features supports neither."""
    fake, client = served
    fake.handlers = [
        api_pb2.RuntimeHandler(name="", features=api_pb2.RuntimeHandlerFeatures(
            user_namespaces=True, recursive_read_only_mounts=False)),
        api_pb2.RuntimeHandler(name="kata", features=api_pb2.RuntimeHandlerFeatures(
            recursive_read_only_mounts=True)),
        api_pb2.RuntimeHandler(name="bare"),
    ]
    assert client.status().handlers == (
        RuntimeHandler("", RuntimeHandlerFeatures(user_namespaces=True)),
        RuntimeHandler("kata", RuntimeHandlerFeatures(recursive_read_only_mounts=True)),
        RuntimeHandler("bare", RuntimeHandlerFeatures()),
    )


def test_sandbox_round_trip(served: tuple[FakeCRI, CRIClient]) -> None:
    fake, client = served
    config = _sandbox_config()
    sid = client.run_pod_sandbox(config, runtime_handler="runc")
    assert sid == "sb-1"
    assert fake.requests[-1].runtime_handler == "runc"
    sent = fake.sandboxes[sid]
    assert sandbox_config_from_proto(sent) == config
    assert sent.linux.security_context.privileged
    assert sent.port_mappings[1].protocol == api_pb2.UDP

    status = client.pod_sandbox_status(sid)
    assert status.id == sid and status.metadata == config.metadata
    assert status.state is SandboxState.READY
    assert status.created_at == CREATED
    assert (status.ip, status.additional_ips) == ("10.88.0.2", ("fd00::2",))
    assert status.network_mode is NamespaceMode.NODE
    assert status.labels == config.labels and status.annotations == config.annotations
    assert status.handler == status.runtime_handler == "runc"

    items = client.list_pod_sandbox(
        SandboxFilter(state=SandboxState.READY, label_selector={"io.kubernetes.pod.uid": "uid-1"})
    )
    flt = fake.requests[-1].filter
    assert flt.HasField("state") and flt.state.state == api_pb2.SANDBOX_READY
    assert dict(flt.label_selector) == {"io.kubernetes.pod.uid": "uid-1"}
    assert [(s.id, s.state, s.runtime_handler) for s in items] == [
        ("sb-1", SandboxState.NOTREADY, "runc")
    ]
    client.list_pod_sandbox()
    assert not fake.requests[-1].HasField("filter")


def test_sandbox_overhead_and_resources_round_trip(served: tuple[FakeCRI, CRIClient]) -> None:
    """LinuxPodSandboxConfig.overhead and .resources reach the runtime, a zero overhead as
    a message sent empty (as upstream's), and come back; a config without them sends
    neither."""
    fake, client = served
    overhead = LinuxContainerResources(cpu_period=100_000, cpu_quota=25_000, cpu_shares=256,
                                       memory_limit_in_bytes=120 * 2**20)
    resources = LinuxContainerResources(cpu_period=100_000, cpu_quota=50_000, cpu_shares=358)
    config = msgspec.structs.replace(_sandbox_config(), overhead=overhead, resources=resources)
    sent = fake.sandboxes[client.run_pod_sandbox(config)]
    assert sandbox_config_from_proto(sent) == config
    assert (sent.linux.overhead.cpu_shares, sent.linux.overhead.memory_limit_in_bytes,
            sent.linux.resources.cpu_quota) == (256, 120 * 2**20, 50_000)

    zero = msgspec.structs.replace(config, overhead=LinuxContainerResources())
    sid = client.run_pod_sandbox(zero)
    sent = fake.sandboxes[sid]
    assert sent.linux.HasField("overhead") and sent.linux.overhead.ByteSize() == 0
    assert sandbox_config_from_proto(sent) == zero
    info = json.loads(client.pod_sandbox_info(sid)["info"])
    assert info["linux"]["resources"]["cpuShares"] == "358"

    sent = fake.sandboxes[client.run_pod_sandbox(_sandbox_config())]
    assert not sent.linux.HasField("overhead") and not sent.linux.HasField("resources")
    assert sandbox_config_from_proto(sent) == _sandbox_config()


def test_container_round_trip(served: tuple[FakeCRI, CRIClient]) -> None:
    fake, client = served
    sandbox = _sandbox_config()
    sid = client.run_pod_sandbox(sandbox)
    config = _container_config()
    cid = client.create_container(sid, config, sandbox)
    sent = fake.containers[cid]
    assert sent.pod_sandbox_id == sid
    assert container_config_from_proto(sent.config) == config
    assert sandbox_config_from_proto(sent.sandbox_config) == sandbox
    security = sent.config.linux.security_context
    assert security.HasField("run_as_user") and security.run_as_user.value == 0
    assert security.namespace_options.network == api_pb2.NODE
    assert security.namespace_options.pid == api_pb2.CONTAINER

    listed = client.list_containers(ContainerFilter(pod_sandbox_id=sid))
    assert fake.requests[-1].filter.pod_sandbox_id == sid
    assert not fake.requests[-1].filter.HasField("state")
    first, future = listed
    assert first.id == cid and first.pod_sandbox_id == sid
    assert first.state is ContainerState.RUNNING and first.created_at == CREATED
    assert first.image == config.image and first.labels == config.labels
    assert future.state is ContainerState.UNKNOWN  # an enum value newer than this code

    status = client.container_status(cid)
    assert status.state is ContainerState.EXITED and status.exit_code == 137
    assert (status.created_at, status.started_at, status.finished_at) == (
        CREATED,
        STARTED,
        FINISHED,
    )
    assert status.mounts == config.mounts
    assert (status.reason, status.message) == ("OOMKilled", "out of memory")
    assert status.annotations == config.annotations


def test_no_run_as_user_leaves_the_wrapper_unset(served: tuple[FakeCRI, CRIClient]) -> None:
    fake, client = served
    sid = client.run_pod_sandbox(_sandbox_config())
    config = ContainerConfig(ContainerMetadata("c"), ImageSpec("busybox:latest"))
    cid = client.create_container(sid, config, _sandbox_config())
    linux = fake.containers[cid].config.linux
    assert not linux.security_context.HasField("run_as_user")
    assert not linux.HasField("resources")


def test_exec_stats_and_images(served: tuple[FakeCRI, CRIClient]) -> None:
    fake, client = served
    result = client.exec_sync(ContainerID("c-1"), ("cat", "/etc/hostname"), timeout=1.5)
    assert (result.stdout, result.stderr, result.exit_code) == (b"out", b"err", 3)
    assert fake.requests[-1].timeout == 2 and list(fake.requests[-1].cmd) == [
        "cat",
        "/etc/hostname",
    ]

    stats = client.container_stats(ContainerID("c-9"))
    assert (stats.id, stats.name, dict(stats.labels)) == ("c-9", "app", {"a": "b"})
    assert stats.cpu_usage_core_nanoseconds == 12345
    assert stats.memory_working_set_bytes is None and stats.writable_layer_used_bytes is None
    assert stats.timestamp == FINISHED

    image = client.image_status(ImageSpec("busybox:latest"))
    assert image is not None
    assert (image.id, image.repo_tags, image.size, image.pinned) == (
        "sha256:b0b",
        ("busybox:latest",),
        1234,
        True,
    )
    assert client.image_status(ImageSpec("missing:1")) is None

    ref = client.pull_image(ImageSpec("new:1"), auth=AuthConfig(username="u", password="p"))
    assert ref == "sha256:new"
    assert fake.requests[-1].auth.username == "u"
    assert not fake.requests[-1].HasField("sandbox_config")
    with pytest.raises(CRIError, match="not found") as info:
        client.pull_image(ImageSpec("nope:1"))
    assert type(info.value) is CRIError and info.value.code == "UNKNOWN"

    (fs,) = client.image_fs_info()
    assert (fs.mountpoint, fs.used_bytes, fs.inodes_used, fs.timestamp) == (
        "/var/lib/containerd",
        4096,
        7,
        CREATED,
    )


def test_not_found_maps_to_cri_not_found(served: tuple[FakeCRI, CRIClient]) -> None:
    _, client = served
    with pytest.raises(CRINotFound) as info:
        client.container_status(ContainerID("nope"))
    err = info.value
    assert (err.method, err.code) == ("ContainerStatus", "NOT_FOUND")
    assert "container nope" in err.detail
    assert isinstance(err.__cause__, grpc.RpcError)
    with pytest.raises(CRINotFound):
        client.pod_sandbox_status(SandboxID("nope"))


def test_unimplemented_maps_to_cri_unimplemented(served: tuple[FakeCRI, CRIClient]) -> None:
    _, client = served
    with pytest.raises(CRIUnimplemented) as info:
        client.reopen_container_log(ContainerID("c-1"))
    assert (info.value.method, info.value.code) == ("ReopenContainerLog", "UNIMPLEMENTED")


def test_deadline_exceeded_on_a_slow_handler(served: tuple[FakeCRI, CRIClient]) -> None:
    _, client = served
    quick = CRIClient(client.endpoint, timeout=0.05)
    with quick, pytest.raises(CRIDeadlineExceeded) as info:
        quick.exec_sync(ContainerID("c-1"), ("hang",), timeout=0.01)
    assert (info.value.method, info.value.code) == ("ExecSync", "DEADLINE_EXCEEDED")
    assert isinstance(info.value.__cause__, grpc.RpcError)


def test_unavailable_when_nothing_listens(tmp_path: Path) -> None:
    client = CRIClient(str(_socket_dir(tmp_path) / "absent.sock"), timeout=5)
    with client, pytest.raises(CRIUnavailable) as info:
        client.version()
    assert (info.value.method, info.value.code) == ("Version", "UNAVAILABLE")
    assert isinstance(info.value.__cause__, grpc.RpcError)


def test_a_sandbox_on_the_default_handler_encodes_as_before_the_field(
        served: tuple[FakeCRI, CRIClient]) -> None:
    """PodSandboxStatus.runtime_handler is left out of the JSON for the default handler,
    so traces recorded before it existed replay equal."""
    import msgspec

    _, client = served
    status = client.pod_sandbox_status(client.run_pod_sandbox(_sandbox_config()))
    assert status.handler == ""
    assert b"runtime_handler" not in msgspec.json.encode(status)
