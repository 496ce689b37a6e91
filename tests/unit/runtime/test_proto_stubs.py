"""The generated CRI stubs are current, and api.proto keeps upstream's wire numbers."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from proto import api_pb2, generate

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_committed_stubs_are_current() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "proto.generate", "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_check_names_stale_files(tmp_path: Path) -> None:
    (tmp_path / "proto").mkdir()
    for rel in generate.GENERATED:
        shutil.copyfile(REPO_ROOT / rel, tmp_path / rel)
    assert generate.stale_files(tmp_path) == []
    (tmp_path / "proto/api_pb2.py").write_text("# edited by hand\n")
    (tmp_path / "proto/api_pb2_grpc.pyi").unlink()
    assert generate.stale_files(tmp_path) == ["proto/api_pb2.py", "proto/api_pb2_grpc.pyi"]


def _number(message: str, field: str) -> int:
    return int(api_pb2.DESCRIPTOR.message_types_by_name[message].fields_by_name[field].number)


@pytest.mark.parametrize(
    ("message", "field", "number"),
    [
        ("ContainerConfig", "log_path", 11),
        ("ContainerConfig", "linux", 15),
        ("ContainerConfig", "annotations", 10),
        ("PodSandboxConfig", "port_mappings", 5),
        ("PodSandboxConfig", "linux", 8),
        ("ContainerStatus", "exit_code", 7),
        ("ContainerStatus", "log_path", 15),
        ("LinuxSandboxSecurityContext", "run_as_group", 8),
        ("LinuxContainerSecurityContext", "run_as_user", 5),
        ("LinuxContainerSecurityContext", "run_as_group", 12),
        ("LinuxContainerSecurityContext", "namespace_options", 3),
        ("LinuxContainerSecurityContext", "no_new_privs", 11),
        ("LinuxContainerSecurityContext", "masked_paths", 13),
        ("LinuxContainerSecurityContext", "readonly_paths", 14),
        ("LinuxContainerSecurityContext", "seccomp", 15),
        ("LinuxContainerSecurityContext", "supplemental_groups_policy", 17),
        ("LinuxSandboxSecurityContext", "seccomp", 9),
        ("LinuxSandboxSecurityContext", "supplemental_groups_policy", 11),
        ("PortMapping", "protocol", 1),
        ("PortMapping", "container_port", 2),
        ("Mount", "propagation", 5),
        ("ImageSpec", "user_specified_image", 18),
        ("Container", "image_id", 10),
        ("FilesystemUsage", "inodes_used", 4),
        ("ContainerStats", "writable_layer", 4),
    ],
)
def test_field_numbers_match_cri_api(message: str, field: str, number: int) -> None:
    assert _number(message, field) == number


def test_package_services_and_enums() -> None:
    assert api_pb2.DESCRIPTOR.package == "runtime.v1"
    runtime = api_pb2.DESCRIPTOR.services_by_name["RuntimeService"]
    assert runtime.full_name == "runtime.v1.RuntimeService"
    for rpc in ("RunPodSandbox", "ListContainers", "ExecSync", "ReopenContainerLog", "Status"):
        assert rpc in runtime.methods_by_name
    images = api_pb2.DESCRIPTOR.services_by_name["ImageService"]
    for rpc in ("ImageStatus", "PullImage", "ListImages", "RemoveImage", "ImageFsInfo"):
        assert rpc in images.methods_by_name
    assert api_pb2.CONTAINER_EXITED == 2
    assert api_pb2.SANDBOX_NOTREADY == 1
    assert api_pb2.NODE == 2
    assert api_pb2.PROPAGATION_BIDIRECTIONAL == 2
    assert api_pb2.SCTP == 2
