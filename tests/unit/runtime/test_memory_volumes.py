"""Memory-backed volumes (runtime.kuberuntime.memory_volumes): what is mounted, sized how,
refused in upstream's words, set up once, and torn down before its directory goes; with
a mount table in memory (tests.helpers.FakeVolumeMounts)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

from runtime.kuberuntime.memory_volumes import (
    memory_mount,
    sweep_leftover_mounts,
    tmpfs_noswap,
)
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.volume_mounts import MountPoint
from runtime.kuberuntime.volumes import (
    set_up_volume,
    set_up_volumes,
    tear_down_pod_volumes,
)
from runtime.mounts import parse_mountinfo
from runtime.pod.model import Pod
from tests.helpers import FakeVolumeMounts

GI = 2**30


def settings_for(tmp_path: Path, memory: str = "8Gi", noswap: bool = False) -> NodeSettings:
    return NodeSettings("node", root_dir=str(tmp_path / "root"),
                        allocatable=(("memory", memory),), tmpfs_noswap=noswap)


def make_pod(volumes: list[dict[str, Any]], *resources: dict[str, Any],
             init: dict[str, Any] | None = None) -> Pod:
    containers = [{"name": f"c{i}", "image": "busybox", "resources": r}
                  for i, r in enumerate(resources or ({},))]
    return msgspec.convert({
        "metadata": {"name": "p", "namespace": "default", "uid": "uid-1"},
        "spec": {"volumes": volumes, "containers": containers,
                 "initContainers": [{"name": "i", "image": "busybox", "resources": init}]
                 if init else []}}, Pod)


def memory_dir(size_limit: str | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"medium": "Memory"}
    if size_limit is not None:
        source["sizeLimit"] = size_limit
    return {"name": "m", "emptyDir": source}


@pytest.mark.parametrize(("size_limit", "limits", "size"), [
    (None, (), 8 * GI),  # no limit at all: the node's allocatable memory
    (None, ({"memory": "1Gi"}, {"memory": "512Mi"}), 1536 * 2**20),  # the pod's limit
    (None, ({"memory": "1Gi"}, {}), 8 * GI),  # one container unlimited: the pod is too
    ("256Mi", ({"memory": "1Gi"},), 256 * 2**20),  # sizeLimit, smaller than the pod's
    ("2Gi", ({"memory": "1Gi"},), GI),  # sizeLimit larger than the pod's: the pod's
    ("16Gi", (), 8 * GI),  # sizeLimit larger than the node's: the node's
    ("0", (), 8 * GI),  # a zero sizeLimit is no limit
])
def test_a_memory_empty_dir_is_a_tmpfs_of_the_smallest_limit(
        tmp_path: Path, size_limit: str | None, limits: tuple[dict[str, str], ...],
        size: int) -> None:
    """upstream calculateEmptyDirMemorySize."""
    pod = make_pod([memory_dir(size_limit)], *({"limits": lim} for lim in limits))
    mount = memory_mount(pod, pod.spec.volumes[0], settings_for(tmp_path))
    assert mount is not None
    assert (mount.source, mount.fstype, mount.options) == ("tmpfs", "tmpfs", (f"size={size}",))


def test_tmpfs_options_add_noswap_where_the_kernel_takes_it(tmp_path: Path) -> None:
    pod = make_pod([memory_dir()])
    mount = memory_mount(pod, pod.spec.volumes[0], settings_for(tmp_path, noswap=True))
    assert mount is not None and mount.options == (f"size={8 * GI}", "noswap")
    assert tmpfs_noswap("6.4.0") and tmpfs_noswap("6.18.44-fc") and not tmpfs_noswap("6.1.0")
    assert not tmpfs_noswap("5.15.0-91-generic")


def test_with_no_allocatable_memory_known_only_the_limits_size_it(tmp_path: Path) -> None:
    settings = NodeSettings("node", root_dir=str(tmp_path))
    unlimited = make_pod([memory_dir()])
    mount = memory_mount(unlimited, unlimited.spec.volumes[0], settings)
    assert mount is not None and mount.options == ()  # the kernel's default size
    limited = make_pod([memory_dir("64Mi")])
    mount = memory_mount(limited, limited.spec.volumes[0], settings)
    assert mount is not None and mount.options == (f"size={64 * 2**20}",)


@pytest.mark.parametrize(("volume", "plugin", "on_tmpfs"), [
    ({"secret": {"secretName": "s", "optional": True}}, "secret", True),
    ({"projected": {"sources": []}}, "projected", True),
    ({"downwardAPI": {"items": []}}, "downward-api", True),
    ({"configMap": {"name": "c", "optional": True}}, "configmap", False),
    ({"emptyDir": {}}, "empty-dir", False),
])
def test_which_plugins_put_their_files_on_a_tmpfs(
        tmp_path: Path, volume: dict[str, Any], plugin: str, on_tmpfs: bool) -> None:
    """Secret, projected and downwardAPI wrap an emptyDir of medium Memory upstream;
    configMap a disk one."""
    pod = make_pod([{"name": "v", **volume}], {"limits": {"memory": "128Mi"}})
    mounts = FakeVolumeMounts()
    path = set_up_volume(pod, pod.spec.volumes[0], settings_for(tmp_path), mounts=mounts)
    assert path.endswith(f"kubernetes.io~{plugin}/v")
    expected = [MountPoint(path, "tmpfs", (f"size={128 * 2**20}",))] if on_tmpfs else []
    assert mounts.table == expected


def test_set_up_mounts_once_then_finds_it_mounted(tmp_path: Path) -> None:
    """Set-up runs at every sync: a tmpfs already there is not mounted again, and its
    root (1777 on a real tmpfs) is not chmodded."""
    pod = make_pod([memory_dir("1Mi")])
    mounts = FakeVolumeMounts()
    settings = settings_for(tmp_path)
    path = set_up_volume(pod, pod.spec.volumes[0], settings, mounts=mounts)
    assert [c[0] for c in mounts.calls] == ["mount"]
    assert mounts.calls[0][2]  # the directory was made before the mount
    os.chmod(path, 0o1777)
    assert set_up_volume(pod, pod.spec.volumes[0], settings, mounts=mounts) == path
    assert [c[0] for c in mounts.calls] == ["mount"] and len(mounts.table) == 1
    assert os.stat(path).st_mode & 0o7777 == 0o1777


def test_a_failed_mount_is_upstreams_failed_mount(tmp_path: Path) -> None:
    error = ("mount failed: exit status 32\nMounting command: mount\nMounting arguments: "
             "-t tmpfs -o size=1048576 tmpfs /x\nOutput: mount: /x: permission denied.\n")
    pod = make_pod([memory_dir("1Mi")])
    assert set_up_volumes(pod, settings_for(tmp_path), mounts=FakeVolumeMounts(error)) == (
        ("m", error),)


def hugepages(medium: str) -> dict[str, Any]:
    return {"name": "hp", "emptyDir": {"medium": medium}}


HUGE_2M = {"requests": {"hugepages-2Mi": "4Mi", "memory": "64Mi"},
           "limits": {"hugepages-2Mi": "4Mi", "memory": "64Mi"}}
HUGE_1G = {"requests": {"hugepages-1Gi": "1Gi", "memory": "64Mi"},
           "limits": {"hugepages-1Gi": "1Gi", "memory": "64Mi"}}


@pytest.mark.parametrize(("medium", "resources", "init", "outcome"), [
    ("HugePages", (HUGE_2M,), None, "pagesize=2Mi"),
    ("HugePages-2Mi", (HUGE_2M, HUGE_1G), None, "pagesize=2Mi"),
    ("HugePages-1Gi", (HUGE_2M,), HUGE_1G, "pagesize=1Gi"),  # init containers count too
    ("HugePages", ({"limits": {"memory": "64Mi"}},), None,
     "medium HugePages: hugePages storage requested, but there is no resource request for "
     "huge pages"),
    ("HugePages-1Gi", (HUGE_2M,), None,
     "medium HugePages-1Gi: hugePages storage requested, but there is no resource request "
     "for huge pages"),
    ("HugePages", (HUGE_2M, HUGE_1G), None,
     "medium: HugePages can't be used if container requests multiple huge page sizes"),
    ("HugePages-x", (HUGE_2M,), None,
     "quantities must match the regular expression "
     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ("Disk", (), None, 'unknown storage medium "Disk"'),
])
def test_huge_pages_mount_a_hugetlbfs_of_the_requested_page_size(
        tmp_path: Path, medium: str, resources: tuple[dict[str, Any], ...],
        init: dict[str, Any] | None, outcome: str) -> None:
    """upstream setupHugepages and getPageSizeMountOption, refusals in their words."""
    pod = make_pod([hugepages(medium)], *resources, init=init)
    mounts = FakeVolumeMounts()
    failures = set_up_volumes(pod, settings_for(tmp_path), mounts=mounts)
    if outcome.startswith("pagesize="):
        assert failures == ()
        ((_, path, _),) = mounts.calls
        assert mounts.table == [MountPoint(path, "hugetlbfs", (outcome[:-1],))]
    else:
        assert failures == (("hp", outcome),) and mounts.calls == []


def test_a_hugetlbfs_of_another_page_size_is_refused(tmp_path: Path) -> None:
    pod = make_pod([hugepages("HugePages-2Mi")], HUGE_2M)
    settings = settings_for(tmp_path)
    path = os.path.join(settings.pod_dir("uid-1"), "volumes", "kubernetes.io~empty-dir", "hp")
    mounts = FakeVolumeMounts()
    mounts.table.append(MountPoint(path, "hugetlbfs", ("rw", "pagesize=1024M")))
    assert set_up_volumes(pod, settings, mounts=mounts) == (
        ("hp", f"pod uid-1: mounted dir {path} pagesize '1Gi' and requested medium size "
               "'2Mi' differ"),)
    mounts.table[0] = MountPoint(path, "hugetlbfs", ("rw", "pagesize=2M"))
    assert set_up_volumes(pod, settings, mounts=mounts) == () and mounts.calls == []


def test_teardown_unmounts_each_memory_volume_before_its_directory_goes(
        tmp_path: Path) -> None:
    pod = make_pod([memory_dir(), {"name": "s", "secret": {"secretName": "s",
                                                            "optional": True}},
                    {"name": "disk", "emptyDir": {}}])
    settings = settings_for(tmp_path)
    mounts = FakeVolumeMounts()
    assert set_up_volumes(pod, settings, mounts=mounts) == ()
    volumes = Path(settings.pod_dir("uid-1"), "volumes")
    mounted = sorted(p.path for p in mounts.table)
    # Something mounted elsewhere (not the kubelet's) is left alone.
    mounts.table.append(MountPoint(str(volumes / "kubernetes.io~csi" / "x"), "ext4"))
    mounts.calls.clear()
    assert tear_down_pod_volumes("uid-1", settings, mounts) == ()
    assert sorted(c[1] for c in mounts.calls) == mounted
    assert all(method == "tear_down" and existed for method, _, existed in mounts.calls)
    assert [p.fstype for p in mounts.table] == ["ext4"]
    assert not any(Path(p).exists() for p in mounted)
    assert (volumes / "kubernetes.io~empty-dir" / "disk").is_dir()  # not the disk's


def test_a_restart_tears_down_only_the_mounts_of_pods_gone(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    mounts = FakeVolumeMounts()
    for uid in ("gone", "kept"):
        for plugin in ("kubernetes.io~secret/s", "kubernetes.io~empty-dir/m"):
            path = pods / uid / "volumes" / plugin
            path.mkdir(parents=True)
            mounts.table.append(MountPoint(str(path), "tmpfs"))
    mounts.table.append(MountPoint(str(pods / "gone" / "volumes" / "other"), "ext4"))
    assert sweep_leftover_mounts(str(pods), frozenset({"kept"}), mounts) == ()
    assert sorted(c[1] for c in mounts.calls) == sorted(
        str(pods / "gone" / "volumes" / p)
        for p in ("kubernetes.io~secret/s", "kubernetes.io~empty-dir/m"))
    assert sorted(Path(p.path).relative_to(pods).parts[0] for p in mounts.table) == [
        "gone", "kept", "kept"]


def test_mountinfo_is_read_with_its_escapes_and_super_options() -> None:
    text = (
        "36 35 98:0 / /mnt/a\\040b rw,noatime master:1 - tmpfs tmpfs rw,size=1024k\n"
        "37 35 98:0 / /mnt/hp rw shared:2 master:3 - hugetlbfs nodev rw,pagesize=2M\n"
        "38 35 98:0 / /mnt/c rw - ext4 /dev/sda1 rw\n")
    assert parse_mountinfo(text) == (
        MountPoint("/mnt/a b", "tmpfs", ("rw", "size=1024k")),
        MountPoint("/mnt/hp", "hugetlbfs", ("rw", "pagesize=2M")),
        MountPoint("/mnt/c", "ext4", ("rw",)))
