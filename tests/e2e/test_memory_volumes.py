"""Memory-backed volumes on a real containerd, through the daemon as a user runs it.

Upstream's emptyDir ``medium: Memory`` cases (test/e2e/common/storage/empty_dir.go) and
its hugepages volume cases (test/e2e_node/hugepages_test.go), ported without an API
server: the container sees a tmpfs (or hugetlbfs) at its mount path, the node sees one at
the volume's directory while the pod runs, and nothing stays mounted once it is gone, a
kubelet restart included.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.volume_mounts import MountPoint, NodeVolumeMounts
from tests.e2e.test_security_context import Node
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

TIMEOUT = 60.0
MI = 2**20
HUGEPAGES_2M = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")

# What the container saw of its volumes, then it waits to be stopped.
SHOW = "grep -E ' /(mem|bypod|sec|disk|hp) ' /proc/mounts; echo shown; sleep 3600"


@pytest.fixture
def workdir(containerd: EmbeddedContainerd) -> Path:
    path = containerd.base_dir / "memvol" / uuid.uuid4().hex[:8]
    (path / "manifests").mkdir(parents=True)
    return path


@pytest.fixture
def node(containerd: EmbeddedContainerd, cri: CRIClient, workdir: Path) -> Iterator[Node]:
    """The daemon; at the end it stops, the ``cri`` fixture removes what it made, and
    whatever a failed test left mounted under its root goes."""
    n = Node(containerd, workdir)
    yield n
    n.daemon.stop()
    if n.daemon.log_path.exists():
        print(n.daemon.log())  # pytest shows it when the test failed
    mounts = NodeVolumeMounts()
    for point in mounts.mounts_under(str(workdir)):
        mounts.tear_down(os.path.join(workdir, point.path))


def pods_mounts(workdir: Path) -> dict[str, MountPoint]:
    """The node's mounts under the daemon's pods dir, by ``<uid>/volumes/<plugin>/<name>``."""
    return {p.path: p for p in NodeVolumeMounts().mounts_under(str(workdir / "root" / "pods"))}


def running_log(node: Node, pod: str) -> str:
    """The container's log once it showed its mounts."""
    def shown() -> str | None:
        code, body = node.daemon.get(f"/containerLogs/default/{pod}/main")
        return body if code == 200 and "shown" in body else None

    log = wait_for(shown, TIMEOUT, f"{pod} to show its mounts")
    assert log is not None
    return log


def mount_line(log: str, path: str) -> tuple[str, str]:
    """(fstype, options) of the container's /proc/mounts line for ``path``."""
    match = re.search(rf"^\S+ {re.escape(path)} (\S+) (\S+)", log, re.MULTILINE)
    assert match, log
    return match.group(1), match.group(2)


def uid_of(node: Node, pod: str) -> str:
    found = node.daemon.pod(pod)
    assert found is not None
    return str(found["metadata"]["uid"])


def memory_pod_spec() -> dict[str, Any]:
    return {
        "volumes": [{"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
                    {"name": "bypod", "emptyDir": {"medium": "Memory"}},
                    {"name": "sec", "secret": {"secretName": "absent", "optional": True}},
                    {"name": "disk", "emptyDir": {}}],
    }


def memory_container() -> dict[str, Any]:
    return {"name": "main", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", SHOW],
            "resources": {"limits": {"memory": "48Mi"}},
            "volumeMounts": [{"name": n, "mountPath": f"/{n}"}
                             for n in ("mem", "bypod", "sec", "disk")]}


def test_memory_volumes_are_tmpfs_sized_as_upstream_and_unmounted_with_the_pod(
        node: Node, workdir: Path) -> None:
    """sizeLimit 8Mi under a 48Mi pod limit: 8Mi; no sizeLimit: the pod's 48Mi; an
    optional secret that does not exist: an empty tmpfs too; a disk emptyDir: no tmpfs."""
    pod = node.run("mem", [memory_container()], **memory_pod_spec())
    log = running_log(node, pod)
    fstype, options = mount_line(log, "/mem")
    assert fstype == "tmpfs" and "size=8192k" in options
    fstype, options = mount_line(log, "/bypod")
    assert fstype == "tmpfs" and "size=49152k" in options
    assert mount_line(log, "/sec")[0] == "tmpfs"
    assert mount_line(log, "/disk")[0] != "tmpfs"

    uid = uid_of(node, pod)
    on_node = pods_mounts(workdir)
    volumes = f"{uid}/volumes"
    assert {k: (p.fstype, next(o for o in p.options if o.startswith("size="))) for k, p in
            on_node.items()} == {
        f"{volumes}/kubernetes.io~empty-dir/mem": ("tmpfs", "size=8192k"),
        f"{volumes}/kubernetes.io~empty-dir/bypod": ("tmpfs", "size=49152k"),
        f"{volumes}/kubernetes.io~secret/sec": ("tmpfs", "size=49152k")}
    # The syncs since (the container's start among them) mounted nothing twice.
    assert len(NodeVolumeMounts().mounts_under(str(workdir / "root" / "pods"))) == 3

    (node.daemon.manifests / "mem.yaml").unlink()
    wait_for(lambda: node.daemon.pod(pod) is None, TIMEOUT, "the pod removed")
    wait_for(lambda: not pods_mounts(workdir), TIMEOUT, "its tmpfs volumes unmounted")
    wait_for(lambda: not (workdir / "root" / "pods" / uid).exists(), TIMEOUT,
             "its pod directory removed")


def test_a_restarted_kubelet_unmounts_the_volumes_of_pods_gone(
        node: Node, workdir: Path, cri: CRIClient) -> None:
    """The kubelet stops (its pods keep running); the pod is then removed behind its back;
    the next kubelet finds the pod's tmpfs mounts of no pod and unmounts them."""
    pod = node.run("left", [memory_container()], **memory_pod_spec())
    running_log(node, pod)
    uid = uid_of(node, pod)
    assert len(pods_mounts(workdir)) == 3
    node.daemon.stop()
    (node.daemon.manifests / "left.yaml").unlink()
    for sandbox in cri.list_pod_sandbox():
        if sandbox.labels.get(L.POD_UID) == uid:
            cri.stop_pod_sandbox(sandbox.id)
            cri.remove_pod_sandbox(sandbox.id)
    assert len(pods_mounts(workdir)) == 3  # the kubelet stopped with them mounted
    node.daemon.start()
    assert pods_mounts(workdir) == {}  # gone before the daemon answered


def test_huge_pages_without_a_request_are_refused_in_upstreams_words(node: Node) -> None:
    pod = node.run("hp-none", [{
        "name": "main", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", SHOW],
        "resources": {"limits": {"memory": "32Mi"}},
        "volumeMounts": [{"name": "hp", "mountPath": "/hp"}]}],
        volumes=[{"name": "hp", "emptyDir": {"medium": "HugePages"}}])
    node.waiting(pod, "ContainerCreating")
    node.event(r'MountVolume\.SetUp failed for volume "hp" : medium HugePages: hugePages '
               r"storage requested, but there is no resource request for huge pages")


@contextlib.contextmanager
def reserved_huge_pages(count: int) -> Iterator[bool]:
    """``count`` 2Mi pages reserved (False when the machine will not), then the number
    there was before put back."""
    try:
        before = HUGEPAGES_2M.read_text().strip()
        HUGEPAGES_2M.write_text(str(count))
        reserved = int(HUGEPAGES_2M.read_text()) >= count
    except OSError:
        yield False
        return
    try:
        yield reserved
    finally:
        HUGEPAGES_2M.write_text(before)


def test_huge_pages_volume_is_a_hugetlbfs_of_the_requested_page_size(
        node: Node, workdir: Path) -> None:
    """Where the machine lets 2Mi pages be reserved the pod runs on a hugetlbfs with
    pagesize=2M; where it has none, admission refuses the request (OutOfhugepages-2Mi)."""
    huge = {"hugepages-2Mi": "4Mi", "memory": "32Mi", "cpu": "100m"}
    with reserved_huge_pages(4) as reserved:
        pod = node.run("hp", [{
            "name": "main", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", SHOW],
            "resources": {"limits": huge, "requests": huge},
            "volumeMounts": [{"name": "hp", "mountPath": "/hp"}]}],
            volumes=[{"name": "hp", "emptyDir": {"medium": "HugePages-2Mi"}}])
        if not reserved:
            found = node.finished(pod)
            assert found["status"]["reason"] == "OutOfhugepages-2Mi", found["status"]
            return
        fstype, options = mount_line(running_log(node, pod), "/hp")
        assert fstype == "hugetlbfs" and "pagesize=2M" in options.split(",")
        uid = uid_of(node, pod)
        (point,) = pods_mounts(workdir).values()
        assert point.path == f"{uid}/volumes/kubernetes.io~empty-dir/hp"
        assert point.fstype == "hugetlbfs"
        (node.daemon.manifests / "hp.yaml").unlink()
        wait_for(lambda: node.daemon.pod(pod) is None, TIMEOUT, "the pod removed")
        wait_for(lambda: not pods_mounts(workdir), TIMEOUT, "its hugetlbfs unmounted")
