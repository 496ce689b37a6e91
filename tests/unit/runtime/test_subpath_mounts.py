"""A container's subPath mounts as make_mounts plans them: the checks upstream's makeMounts
makes before touching the node, subPathExpr from the container's env, what it asks the
node to bind-mount (a recording HostPaths), and the words a failure gives the pod."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.cri.types import MountPropagation
from runtime.errors import SyncError
from runtime.kuberuntime.container_config import (
    expand_sub_path_expr,
    generate_container_config,
    wants_recursive_read_only,
)
from runtime.kuberuntime.host_paths import EnvFileRead, SubPathMount
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.subpath import SubPath, has_sub_paths
from runtime.kuberuntime.volumes import set_up_volumes
from runtime.pod.model import (
    Container,
    EmptyDirVolumeSource,
    EnvVar,
    HostPathVolumeSource,
    ObjectMeta,
    Pod,
    PodSpec,
    Volume,
    VolumeMount,
)

UID = "uid-sub"


class RecordingHostPaths:
    """Answers ``mount_sub_path`` with ``answer`` (its target when none) and records it."""

    def __init__(self, answer: SubPathMount | None = None) -> None:
        self.answer = answer
        self.sub_paths: list[SubPath] = []

    def prepare(self, path: str, kind: str) -> str:
        return ""

    def mount_sub_path(self, sub: SubPath) -> SubPathMount:
        self.sub_paths.append(sub)
        return self.answer or SubPathMount(host_path=f"/bound/{sub.mount_index}")

    def clean_sub_paths(self, pod_dir: str) -> str:
        return ""

    def read_env_key(self, volume_path: str, path: str, key: str) -> EnvFileRead:
        raise AssertionError("no env file here")


@pytest.fixture
def settings(tmp_path: Path) -> NodeSettings:
    return NodeSettings(node_name="node-a", root_dir=str(tmp_path / "root"),
                        pod_logs_dir=str(tmp_path / "logs"))


def pod_with(*mounts: VolumeMount, env: tuple[EnvVar, ...] = (),
             volume: Volume | None = None) -> tuple[Pod, Container]:
    c = Container(name="app", image="busybox", volume_mounts=mounts, env=env,
                  termination_message_path="")
    v = volume or Volume(name="data", empty_dir=EmptyDirVolumeSource())
    pod = Pod(metadata=ObjectMeta(name="p", namespace="default", uid=UID),
              spec=PodSpec(containers=(c,), volumes=(v,)))
    return pod, c


def mounts_of(pod: Pod, c: Container, settings: NodeSettings,
              host_paths: RecordingHostPaths) -> list[tuple[str, str]]:
    assert set_up_volumes(pod, settings) == ()
    cfg = generate_container_config(pod, c, "", 0, "", settings, host_paths=host_paths)
    return [(m.container_path, m.host_path) for m in cfg.mounts]


def test_a_sub_path_is_bound_by_the_node_and_its_bind_target_is_mounted(
        settings: NodeSettings) -> None:
    pod, c = pod_with(VolumeMount(name="data", mount_path="/whole"),
                      VolumeMount(name="data", mount_path="/part", sub_path="a/b"))
    node = RecordingHostPaths()
    volume = os.path.join(settings.pod_dir(UID), "volumes", "kubernetes.io~empty-dir", "data")
    assert mounts_of(pod, c, settings, node) == [("/whole", volume), ("/part", "/bound/1")]
    assert node.sub_paths == [SubPath(path=f"{volume}/a/b", volume_path=volume,
                                      pod_dir=settings.pod_dir(UID), volume_name="data",
                                      container_name="app", mount_index=1)]


def test_a_host_path_volume_sub_path_is_bound_inside_the_host_path(
        settings: NodeSettings, tmp_path: Path) -> None:
    (tmp_path / "host").mkdir()
    pod, c = pod_with(VolumeMount(name="h", mount_path="/h", sub_path="x"),
                      volume=Volume(name="h", host_path=HostPathVolumeSource(
                          path=str(tmp_path / "host"))))
    node = RecordingHostPaths()
    assert mounts_of(pod, c, settings, node) == [("/h", "/bound/0")]
    assert (node.sub_paths[0].path, node.sub_paths[0].volume_path) == (
        f"{tmp_path}/host/x", f"{tmp_path}/host")


@pytest.mark.parametrize(("sub_path", "message"), [
    ("/etc", "error SubPath `/etc` must not be an absolute path"),
    ("../../etc", "unable to provision SubPath `../../etc`: must not contain '..'"),
    ("a/../../b", "unable to provision SubPath `a/../../b`: must not contain '..'"),
])
def test_sub_paths_upstream_refuses_before_touching_the_node(
        sub_path: str, message: str, settings: NodeSettings) -> None:
    pod, c = pod_with(VolumeMount(name="data", mount_path="/d", sub_path=sub_path))
    node = RecordingHostPaths()
    with pytest.raises(SyncError) as err:
        mounts_of(pod, c, settings, node)
    assert (err.value.reason, err.value.message) == ("CreateContainerConfigError", message)
    assert node.sub_paths == []


@pytest.mark.parametrize(("failed", "message"), [
    ("create", 'failed to create subPath directory for volumeMount "data" of container "app"'),
    ("prepare", 'failed to prepare subPath for volumeMount "data" of container "app"'),
])
def test_a_sub_path_the_node_refuses_fails_the_container_in_upstreams_words(
        failed: str, message: str, settings: NodeSettings) -> None:
    pod, c = pod_with(VolumeMount(name="data", mount_path="/d", sub_path="escape"))
    node = RecordingHostPaths(SubPathMount(
        failed=failed,  # type: ignore[arg-type]
        detail='subpath "/" not within volume path "/v"'))
    with pytest.raises(SyncError) as err:
        mounts_of(pod, c, settings, node)
    assert (err.value.reason, err.value.message) == ("CreateContainerConfigError", message)


@pytest.mark.parametrize("sub_path", ["c/.", "c/", "./c", "c//."])
def test_the_sub_path_is_cleaned_as_upstreams_join_cleans_it(
        sub_path: str, settings: NodeSettings) -> None:
    pod, c = pod_with(VolumeMount(name="data", mount_path="/d", sub_path=sub_path))
    node = RecordingHostPaths()
    mounts_of(pod, c, settings, node)
    assert node.sub_paths[0].path.endswith("/data/c")


def test_sub_path_expr_is_expanded_from_the_containers_env(settings: NodeSettings) -> None:
    pod, c = pod_with(VolumeMount(name="data", mount_path="/d",
                                  sub_path_expr="logs/$(POD)/$$x"),
                      env=(EnvVar(name="POD", value="web-1"),))
    node = RecordingHostPaths()
    mounts_of(pod, c, settings, node)
    assert node.sub_paths[0].path.endswith("/data/logs/web-1/$x")


@pytest.mark.parametrize(("expr", "env", "message"), [
    ("$(A)/$(B)", {"A": "a"}, "missing value for B"),
    ("$(B)/$(A)", {"A": ""}, "missing value for A, B"),
])
def test_a_sub_path_expr_missing_a_value_fails(expr: str, env: dict[str, str],
                                               message: str) -> None:
    with pytest.raises(SyncError) as err:
        expand_sub_path_expr(expr, env)
    assert (err.value.reason, err.value.message) == ("CreateContainerConfigError", message)


def test_an_expanded_sub_path_expr_gets_the_sub_path_checks(settings: NodeSettings) -> None:
    pod, c = pod_with(VolumeMount(name="data", mount_path="/d", sub_path_expr="$(P)"),
                      env=(EnvVar(name="P", value="../../../etc"),))
    node = RecordingHostPaths()
    with pytest.raises(SyncError) as err:
        mounts_of(pod, c, settings, node)
    assert err.value.message == (
        "unable to provision SubPath `../../../etc`: must not contain '..'")
    assert node.sub_paths == []


@pytest.mark.parametrize(("mode", "propagation"), [
    ("", MountPropagation.PRIVATE), ("None", MountPropagation.PRIVATE),
    ("HostToContainer", MountPropagation.HOST_TO_CONTAINER),
    ("Bidirectional", MountPropagation.BIDIRECTIONAL),
])
def test_mount_propagation_reaches_the_runtime(mode: str, propagation: MountPropagation,
                                               settings: NodeSettings) -> None:
    pod, c = pod_with(VolumeMount(name="data", mount_path="/d", mount_propagation=mode))
    assert set_up_volumes(pod, settings) == ()
    cfg = generate_container_config(pod, c, "", 0, "", settings,
                                    host_paths=RecordingHostPaths())
    assert [m.propagation for m in cfg.mounts] == [propagation]


def test_an_unknown_mount_propagation_fails_the_container(settings: NodeSettings) -> None:
    pod, c = pod_with(VolumeMount(name="data", mount_path="/d", mount_propagation="Sideways"))
    with pytest.raises(SyncError) as err:
        mounts_of(pod, c, settings, RecordingHostPaths())
    assert err.value.message == 'invalid MountPropagation mode: "Sideways"'


def test_only_a_pod_with_a_sub_path_has_bind_mounts_to_clean() -> None:
    assert not has_sub_paths(pod_with(VolumeMount(name="data", mount_path="/d"))[0])
    assert has_sub_paths(pod_with(VolumeMount(name="data", mount_path="/d", sub_path="x"))[0])
    assert has_sub_paths(pod_with(VolumeMount(name="data", mount_path="/d",
                                              sub_path_expr="$(X)"))[0])


# --- recursiveReadOnly (upstream's resolveRecursiveReadOnly) --------------------------------

RRO_UNSUPPORTED = ('failed to resolve recursive read-only mode: volume "data" requested '
                   "recursive read-only mode, but it is not supported by the runtime")


@pytest.mark.parametrize(("mode", "read_only", "propagation", "supported", "outcome"), [
    (None, True, "", False, False),
    ("Disabled", True, "", True, False),
    ("IfPossible", True, "", False, False),
    ("IfPossible", True, "", True, True),
    ("Enabled", True, "", True, True),
    ("Enabled", True, "None", True, True),
    ("Enabled", True, "", False, RRO_UNSUPPORTED),
    ("Enabled", False, "", True,
     'failed to resolve recursive read-only mode: volume "data" requested recursive '
     "read-only mode, but it is not read-only"),
    ("IfPossible", True, "HostToContainer", True,
     'failed to resolve recursive read-only mode: volume "data" requested recursive '
     'read-only mode, but it is not compatible with propagation "HostToContainer"'),
    ("Sometimes", True, "", True,
     'failed to resolve recursive read-only mode: unknown recursive read-only mode '
     '"Sometimes"'),
])
def test_recursive_read_only_as_upstream_resolves_it(
        mode: str | None, read_only: bool, propagation: str, supported: bool,
        outcome: bool | str, settings: NodeSettings) -> None:
    pod, c = pod_with(VolumeMount(name="data", mount_path="/d", read_only=read_only,
                                  mount_propagation=propagation, recursive_read_only=mode))
    assert set_up_volumes(pod, settings) == ()
    if isinstance(outcome, str):
        with pytest.raises(SyncError) as err:
            generate_container_config(pod, c, "", 0, "", settings,
                                      host_paths=RecordingHostPaths(),
                                      recursive_read_only=supported)
        assert (err.value.reason, err.value.message) == ("CreateContainerConfigError", outcome)
        return
    cfg = generate_container_config(pod, c, "", 0, "", settings,
                                    host_paths=RecordingHostPaths(),
                                    recursive_read_only=supported)
    assert [m.recursive_read_only is True for m in cfg.mounts] == [outcome]
    assert wants_recursive_read_only(c) == (mode not in (None, "Disabled"))
