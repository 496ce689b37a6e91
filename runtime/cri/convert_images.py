"""CRI v1 image, stats and exec messages <-> domain types (see runtime.cri.convert).

Optional CRI values (``UInt64Value`` wrappers) become ``None`` when the runtime left them
out, so "not measured" stays distinct from zero. Times as in runtime.cri.convert.
"""

from __future__ import annotations

from proto import api_pb2
from runtime.cri.convert import frozen_map, ns_to_seconds
from runtime.cri.types import (
    AuthConfig,
    ContainerStats,
    ExecResult,
    FilesystemUsage,
    Image,
)
from runtime.ids import ContainerID

# --- images ------------------------------------------------------------------------------


def auth_config_to_proto(auth: AuthConfig) -> api_pb2.AuthConfig:
    """Domain AuthConfig -> CRI AuthConfig."""
    return api_pb2.AuthConfig(
        username=auth.username,
        password=auth.password,
        auth=auth.auth,
        server_address=auth.server_address,
        identity_token=auth.identity_token,
        registry_token=auth.registry_token,
    )


def image_from_proto(msg: api_pb2.Image) -> Image:
    """CRI Image -> domain Image."""
    return Image(
        id=msg.id,
        repo_tags=tuple(msg.repo_tags),
        repo_digests=tuple(msg.repo_digests),
        size=msg.size,
        pinned=msg.pinned,
        uid=msg.uid.value if msg.HasField("uid") else None,
        username=msg.username,
    )


def image_to_proto(image: Image) -> api_pb2.Image:
    """Domain Image -> CRI Image (for fake servers and recorders)."""
    return api_pb2.Image(
        id=image.id,
        repo_tags=image.repo_tags,
        repo_digests=image.repo_digests,
        size=image.size,
        pinned=image.pinned,
        uid=None if image.uid is None else api_pb2.Int64Value(value=image.uid),
        username=image.username,
    )


def filesystem_usage_from_proto(msg: api_pb2.FilesystemUsage) -> FilesystemUsage:
    """CRI FilesystemUsage -> domain FilesystemUsage (absent counters read as 0)."""
    return FilesystemUsage(
        mountpoint=msg.fs_id.mountpoint,
        used_bytes=msg.used_bytes.value,
        inodes_used=msg.inodes_used.value,
        timestamp=ns_to_seconds(msg.timestamp),
    )


# --- exec --------------------------------------------------------------------------------


def exec_result_from_proto(msg: api_pb2.ExecSyncResponse) -> ExecResult:
    """CRI ExecSyncResponse -> ExecResult."""
    return ExecResult(stdout=msg.stdout, stderr=msg.stderr, exit_code=msg.exit_code)


# --- stats -------------------------------------------------------------------------------


def container_stats_from_proto(msg: api_pb2.ContainerStats) -> ContainerStats:
    """CRI ContainerStats -> domain ContainerStats.

    ``timestamp`` is the newest of the CPU, memory and writable-layer sample times.
    """
    cpu = None
    if msg.HasField("cpu") and msg.cpu.HasField("usage_core_nano_seconds"):
        cpu = msg.cpu.usage_core_nano_seconds.value
    memory = None
    if msg.HasField("memory") and msg.memory.HasField("working_set_bytes"):
        memory = msg.memory.working_set_bytes.value
    writable = None
    if msg.HasField("writable_layer") and msg.writable_layer.HasField("used_bytes"):
        writable = msg.writable_layer.used_bytes.value
    stamp = max(msg.cpu.timestamp, msg.memory.timestamp, msg.writable_layer.timestamp)
    attrs = msg.attributes
    return ContainerStats(
        id=ContainerID(attrs.id),
        name=attrs.metadata.name,
        labels=frozen_map(attrs.labels),
        cpu_usage_core_nanoseconds=cpu,
        memory_working_set_bytes=memory,
        writable_layer_used_bytes=writable,
        timestamp=ns_to_seconds(stamp),
    )
