"""runtime.kuberuntime.volume_ownership: upstream volume_linux_test.go's cases
(TestSkipPermissionChange, TestSetVolumeOwnershipMode) and the per-plugin rules."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.volume_ownership import (
    apply_fs_group,
    requires_permission_change,
    set_volume_ownership,
)
from runtime.kuberuntime.volumes import set_up_volume, set_up_volumes
from runtime.pod.model import (
    DownwardAPIVolumeFile,
    DownwardAPIVolumeSource,
    EmptyDirVolumeSource,
    HostPathVolumeSource,
    ObjectFieldSelector,
    ObjectMeta,
    Pod,
    PodSecurityContext,
    PodSpec,
    Volume,
)
from tests.helpers import FakeVolumeMounts

GID = 4321


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode) | (path.stat().st_mode & stat.S_ISGID)


@pytest.mark.parametrize(
    ("description", "gid", "mode", "setgid", "expect"),
    [
        ("skippermissionchange returns true if gid and mode match", GID, 0o770, True, False),
        ("changes when the gid differs", 0, 0o770, True, True),
        ("changes when the permission bits are not a superset", GID, 0o750, True, True),
        ("superset bits are fine", GID, 0o775, True, False),
        ("changes when setgid is missing", GID, 0o770, False, True),
    ],
)
def test_requires_permission_change(tmp_path: Path, description: str, gid: int, mode: int,
                                    setgid: bool, expect: bool) -> None:
    root = tmp_path / "vol"
    root.mkdir()
    os.chown(root, -1, gid)
    os.chmod(root, mode | (stat.S_ISGID if setgid else 0))
    assert requires_permission_change(str(root), GID, readonly=False) is expect, description


def test_readonly_volumes_need_only_read_bits(tmp_path: Path) -> None:
    root = tmp_path / "vol"
    root.mkdir()
    os.chown(root, -1, GID)
    os.chmod(root, 0o550 | stat.S_ISGID)
    assert not requires_permission_change(str(root), GID, readonly=True)
    assert requires_permission_change(str(root), GID, readonly=False)


def test_a_file_root_always_changes(tmp_path: Path) -> None:
    root = tmp_path / "file"
    root.write_text("x")
    os.chown(root, -1, GID)
    assert requires_permission_change(str(root), GID, readonly=False)


def test_set_volume_ownership_walks_everything(tmp_path: Path) -> None:
    root = tmp_path / "vol"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f").write_text("x")
    os.chmod(root / "sub" / "f", 0o600)
    (root / "link").symlink_to("sub/f")
    os.chmod(root, 0o700)
    assert set_volume_ownership(str(root), GID)
    for path in (root, root / "sub", root / "sub" / "f"):
        assert path.stat().st_gid == GID
    assert os.lstat(root / "link").st_gid == GID
    assert _mode(root) == 0o770 | stat.S_ISGID
    assert _mode(root / "sub") == 0o755 | 0o070 | stat.S_ISGID
    assert _mode(root / "sub" / "f") == 0o660  # files: rw for the group, no x, no setgid


def test_no_fs_group_and_on_root_mismatch(tmp_path: Path) -> None:
    root = tmp_path / "vol"
    root.mkdir()
    assert not set_volume_ownership(str(root), None)
    assert set_volume_ownership(str(root), GID, "OnRootMismatch")  # root gid differs
    (root / "new").write_text("x")  # root now matches: OnRootMismatch skips the walk
    os.chown(root / "new", -1, 0)
    assert not set_volume_ownership(str(root), GID, "OnRootMismatch")
    assert (root / "new").stat().st_gid == 0
    assert set_volume_ownership(str(root), GID, "Always")
    assert (root / "new").stat().st_gid == GID


def _pod(fs_group: int | None, *volumes: Volume) -> Pod:
    return Pod(metadata=ObjectMeta(name="p", namespace="default", uid="uid-9",
                                   labels={"a": "b"}),
               spec=PodSpec(volumes=volumes,
                            security_context=PodSecurityContext(fs_group=fs_group)))


def test_plugins_apply_it_as_upstream(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    pod = _pod(
        GID,
        Volume(name="scratch", empty_dir=EmptyDirVolumeSource()),
        Volume(name="info", downward_api=DownwardAPIVolumeSource(items=(
            DownwardAPIVolumeFile(path="labels",
                                  field_ref=ObjectFieldSelector(field_path="metadata.labels")),
        ))),
        Volume(name="host", host_path=HostPathVolumeSource(path=str(host))),
    )
    settings = NodeSettings(node_name="n", root_dir=str(tmp_path / "root"))
    assert set_up_volumes(pod, settings, mounts=FakeVolumeMounts()) == ()
    volumes = Path(settings.pod_dir("uid-9"), "volumes")
    scratch = volumes / "kubernetes.io~empty-dir" / "scratch"
    assert scratch.stat().st_gid == GID and _mode(scratch) == 0o777 | stat.S_ISGID
    info = volumes / "kubernetes.io~downward-api" / "info"
    assert info.stat().st_gid == GID
    assert host.stat().st_gid != GID or os.getgid() == GID  # hostPath is never changed
    # emptyDir only once: a file the container made later keeps its group on a resync.
    (scratch / "later").write_text("x")
    os.chown(scratch / "later", -1, 0)
    apply_fs_group(pod, pod.spec.volumes[0], str(scratch), settings)
    assert (scratch / "later").stat().st_gid == 0


def test_looking_an_empty_dir_up_again_keeps_its_setgid(tmp_path: Path) -> None:
    """make_mounts sets a volume up again per container: that must not chmod away the
    setgid bit the fsGroup gave it (upstream's setupDir chmods only on other bits)."""
    volume = Volume(name="scratch", empty_dir=EmptyDirVolumeSource())
    pod = _pod(GID, volume)
    settings = NodeSettings(node_name="n", root_dir=str(tmp_path / "root"))
    assert set_up_volumes(pod, settings, mounts=FakeVolumeMounts()) == ()
    path = Path(set_up_volume(pod, volume, settings, mounts=FakeVolumeMounts()))
    assert _mode(path) == 0o777 | stat.S_ISGID
