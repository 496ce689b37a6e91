"""What a log rotation pass costs in CRI calls, counted on the fake runtime and pinned.

A pass lists the running containers once; the log of a container the kubelet made is
found from its labels and metadata (runtime.kuberuntime.log_layout) and statted, and the
runtime is asked for the container's status only when that log has reached the size or
is missing, or when the container is not the kubelet's (no labels to find the log by).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from runtime.clock import FakeClock
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ImageSpec,
    PodSandboxConfig,
    PodSandboxMetadata,
)
from runtime.ids import ContainerID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.labels import parse_container_labels
from runtime.kuberuntime.log_layout import container_log_path
from runtime.kuberuntime.log_rotation import LogRotatePolicy
from runtime.kuberuntime.log_rotator import ContainerLogRotator
from runtime.testing.fake_runtime import FakeRuntime

POLICY = LogRotatePolicy(max_size=100, max_files=4)


class Node:
    """A fake runtime with ``pods`` pods of one running container each (``app``), their
    logs real files under ``root``."""

    def __init__(self, root: Path, pods: int, attempt: int = 0) -> None:
        self.logs = root / "pods"
        self.fake = FakeRuntime(FakeClock(), images=("busybox",))
        self.ids: list[ContainerID] = []
        for i in range(pods):
            self.ids.append(self.add(f"web-{i}", f"uid-{i}", attempt))
        self.rotator = ContainerLogRotator(self.fake, POLICY, str(self.logs),
                                           now=lambda: 1_800_000_000.0)

    def add(self, name: str, uid: str, attempt: int, labelled: bool = True,
            log_name: str | None = None) -> ContainerID:
        pod_dir = self.logs / f"default_{name}_{uid}"
        sandbox = self.fake.run_pod_sandbox(PodSandboxConfig(
            PodSandboxMetadata(name, uid, "default"), log_directory=str(pod_dir)))
        labels = {L.POD_NAME: name, L.POD_NAMESPACE: "default", L.POD_UID: uid,
                  L.CONTAINER_NAME: "app"} if labelled else {}
        config = ContainerConfig(
            ContainerMetadata("app", attempt), ImageSpec("busybox"),
            log_path=log_name or f"app/{attempt}.log", labels=labels)
        cid = self.fake.create_container(sandbox, config, self.fake.sandbox_config(sandbox))
        (pod_dir / "app").mkdir(parents=True)
        self.fake.start_container(cid)  # creates the log, as containerd does
        return cid

    def log(self, cid: ContainerID) -> Path:
        return Path(self.fake.container_status(cid).log_path)

    def calls(self) -> dict[str, int]:
        """The calls of one pass."""
        self.fake.clear_calls()
        self.rotator.rotate_all()
        return dict(Counter(c.method for c in self.fake.calls))


def test_a_pass_over_small_logs_is_one_list_containers(tmp_path: Path) -> None:
    node = Node(tmp_path, 110)
    for cid in node.ids:
        node.log(cid).write_bytes(b"x" * 99)
    assert node.calls() == {"list_containers": 1}
    assert node.calls() == {"list_containers": 1}  # and so every pass


def test_a_log_at_the_size_is_asked_about_then_rotated(tmp_path: Path) -> None:
    node = Node(tmp_path, 10)
    big = node.ids[3]
    node.log(big).write_bytes(b"x" * 100)
    assert node.calls() == {"list_containers": 1, "container_status": 1,
                            "reopen_container_log": 1}
    assert sorted(os.listdir(node.log(big).parent))[0] == "0.log"
    assert node.log(big).stat().st_size == 0  # reopened: the next pass asks nothing
    assert node.calls() == {"list_containers": 1}


def test_a_missing_log_is_asked_about_and_reopened(tmp_path: Path) -> None:
    node = Node(tmp_path, 3)
    node.log(node.ids[0]).unlink()
    assert node.calls() == {"list_containers": 1, "container_status": 1,
                            "reopen_container_log": 1}
    assert node.log(node.ids[0]).exists()
    assert node.calls() == {"list_containers": 1}


def test_the_log_of_a_later_attempt_is_found_by_its_restart_count(tmp_path: Path) -> None:
    node = Node(tmp_path, 2, attempt=4)
    assert node.log(node.ids[0]).name == "4.log"
    assert node.calls() == {"list_containers": 1}


def test_a_container_without_the_kubelets_labels_is_asked_every_pass(tmp_path: Path) -> None:
    node = Node(tmp_path, 2)
    node.add("foreign", "uid-f", 0, labelled=False)
    assert node.calls() == {"list_containers": 1, "container_status": 1}
    assert node.calls() == {"list_containers": 1, "container_status": 1}


def test_a_log_elsewhere_than_the_labels_say_is_rotated_where_the_runtime_writes(
        tmp_path: Path) -> None:
    """The labels' path missing, the runtime is asked; its path is the one acted on."""
    node = Node(tmp_path, 0)
    odd = node.add("odd", "uid-o", 0, log_name="app/7.log")
    node.log(odd).write_bytes(b"x" * 150)
    (rotation,) = node.rotator.rotate_all().rotations
    assert rotation.error == "" and rotation.path == str(node.log(odd))
    assert rotation.rotated_to.startswith(str(node.log(odd)) + ".")


def test_expected_log_path_is_the_layouts(tmp_path: Path) -> None:
    node = Node(tmp_path, 1, attempt=2)
    (listed,) = node.fake.list_containers()
    info = parse_container_labels(listed.labels, listed.annotations)
    want = container_log_path(str(node.logs), "default", "web-0", "uid-0", "app", 2)
    assert node.rotator.expected_log_path(listed, info) == want == str(node.log(listed.id))
