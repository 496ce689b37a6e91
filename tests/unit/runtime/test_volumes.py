"""Volumes a node without an API server or volume plugins can and cannot provide
(runtime.kuberuntime.volumes), and env from ConfigMaps and Secrets (make_env): each
failure in upstream's words, optional references skipped."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec
import pytest

from runtime.errors import SyncError
from runtime.kuberuntime.container_config import make_env
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.volumes import VolumeSetupError, set_up_volume, set_up_volumes
from runtime.pod.model import Pod, Volume
from tests.helpers import FakeVolumeMounts, host_path_case


@pytest.fixture
def settings(tmp_path: Path) -> NodeSettings:
    return NodeSettings("node", root_dir=str(tmp_path / "root"),
                        pod_logs_dir=str(tmp_path / "logs"))


def make_pod(volumes: tuple[dict[str, object], ...] = (),
             container: dict[str, object] | None = None) -> Pod:
    return msgspec.convert({
        "metadata": {"name": "web", "namespace": "prod", "uid": "uid-1"},
        "spec": {"volumes": list(volumes),
                 "containers": [{"name": "c", "image": "busybox", **(container or {})}]},
    }, Pod)


def volume(**source: object) -> Volume:
    return make_pod(({"name": "v", **source},)).spec.volumes[0]


@pytest.mark.parametrize(("source", "message"), [
    ({"configMap": {"name": "cfg"}}, 'configmap "cfg" not found'),
    ({"secret": {"secretName": "creds"}}, 'secret "creds" not found'),
    ({"persistentVolumeClaim": {"claimName": "data"}},
     'error processing PVC prod/data: failed to fetch PVC from API server: '
     'persistentvolumeclaims "data" not found'),
    ({"ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
     'error processing PVC prod/web-v: failed to fetch PVC from API server: '
     'persistentvolumeclaims "web-v" not found'),
    ({"csi": {"driver": "inline.storage.kubernetes.io"}},
     "kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name "
     "inline.storage.kubernetes.io not found in the list of registered CSI drivers"),
    ({"gcePersistentDisk": {"pdName": "disk"}},
     "no volume plugin matched: this kubelet cannot mount gcePersistentDisk volumes"),
    ({"projected": {"sources": [{"configMap": {"name": "a"}}]}}, 'configmap "a" not found'),
    ({"projected": {"sources": [{"configMap": {"name": "a"}}, {"secret": {"name": "b"}}]}},
     '[configmap "a" not found, secret "b" not found]'),
    ({"projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
     "failed to fetch token: no API server to request a service account token from"),
])
def test_volumes_the_node_cannot_provide(source: dict[str, object], message: str,
                                         settings: NodeSettings) -> None:
    v = volume(**source)
    with pytest.raises(VolumeSetupError) as caught:
        set_up_volume(make_pod(), v, settings, mounts=FakeVolumeMounts())
    assert str(caught.value) == message


@pytest.mark.parametrize(("source", "plugin"), [
    ({"configMap": {"name": "cfg", "optional": True}}, "configmap"),
    ({"secret": {"secretName": "creds", "optional": True}}, "secret"),
    ({"projected": {"sources": [{"configMap": {"name": "a", "optional": True}},
                                {"secret": {"name": "b", "optional": True}}]}}, "projected"),
])
def test_optional_objects_give_an_empty_volume(source: dict[str, object], plugin: str,
                                               settings: NodeSettings) -> None:
    path = set_up_volume(make_pod(), volume(**source), settings, mounts=FakeVolumeMounts())
    assert path == os.path.join(settings.pod_dir("uid-1"), "volumes", f"kubernetes.io~{plugin}",
                                "v")
    # Nothing visible; a projected volume still has its (empty) ..data version.
    assert [n for n in os.listdir(path) if not n.startswith("..")] == []


def test_empty_dir_is_world_writable(settings: NodeSettings) -> None:
    path = set_up_volume(make_pod(), volume(emptyDir={}), settings, mounts=FakeVolumeMounts())
    assert path.endswith("kubernetes.io~empty-dir/v")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o777


@pytest.mark.parametrize(("kind", "prepare", "message"), [
    ("Directory", None, "hostPath type check failed: {} is not a directory"),
    ("Directory", "file", "hostPath type check failed: {} is not a directory"),
    ("DirectoryOrCreate", "file", "hostPath type check failed: {} is not a directory"),
    ("File", "dir", "hostPath type check failed: {} is not a file"),
    ("Socket", "file", "hostPath type check failed: {} is not a socket file"),
    ("CharDevice", "file", "hostPath type check failed: {} is not a character device"),
    ("BlockDevice", "file", "hostPath type check failed: {} is not a block device"),
    ("FileOrCreate", "no-parent", "open {}: no such file or directory"),
])
def test_host_path_type_checks_in_upstream_s_words(
        kind: str, prepare: str | None, message: str, tmp_path: Path,
        settings: NodeSettings) -> None:
    path = host_path_case(tmp_path, prepare)
    with pytest.raises(VolumeSetupError) as caught:
        set_up_volume(make_pod(), volume(hostPath={"path": str(path), "type": kind}), settings)
    assert str(caught.value) == message.format(path)


def test_set_up_volumes_lists_every_failure_and_sets_up_the_rest(
        settings: NodeSettings) -> None:
    pod = make_pod(({"name": "scratch", "emptyDir": {}},
                    {"name": "config", "configMap": {"name": "cfg"}},
                    {"name": "token", "secret": {"secretName": "t"}}))
    assert set_up_volumes(pod, settings, mounts=FakeVolumeMounts()) == (
        ("config", 'configmap "cfg" not found'), ("token", 'secret "t" not found'))
    assert os.path.isdir(os.path.join(settings.pod_dir("uid-1"), "volumes",
                                      "kubernetes.io~empty-dir", "scratch"))


@pytest.mark.parametrize(("container", "message"), [
    ({"envFrom": [{"configMapRef": {"name": "cfg"}}]}, 'configmap "cfg" not found'),
    ({"envFrom": [{"secretRef": {"name": "creds"}}]}, 'secret "creds" not found'),
    ({"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "a"}}}]},
     'configmap "cfg" not found'),
    ({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "a"}}}]},
     'secret "creds" not found'),
])
def test_env_from_missing_objects_is_a_config_error(container: dict[str, object],
                                                    message: str) -> None:
    pod = make_pod(container=container)
    with pytest.raises(SyncError) as caught:
        make_env(pod, pod.spec.containers[0], "", "")
    assert (caught.value.reason, caught.value.message) == ("CreateContainerConfigError", message)


def test_optional_env_references_are_skipped() -> None:
    pod = make_pod(container={
        "envFrom": [{"configMapRef": {"name": "cfg", "optional": True}},
                    {"secretRef": {"name": "creds", "optional": True}}],
        "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {
                    "name": "cfg", "key": "a", "optional": True}}},
                {"name": "B", "value": "b"},
                {"name": "C", "valueFrom": {"secretKeyRef": {
                    "name": "creds", "key": "c", "optional": True}}}]})
    assert make_env(pod, pod.spec.containers[0], "", "") == {"B": "b"}


def test_downward_api_volumes_hold_the_pod_s_fields(settings: NodeSettings) -> None:
    pod = msgspec.convert({
        "metadata": {"name": "web", "namespace": "prod", "uid": "uid-1",
                     "labels": {"zone": "us-est-coast", "rack": "a\"1"}},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
            "limits": {"memory": "64Mi"}, "requests": {"cpu": "250m"}}}],
                 "volumes": [
                     {"name": "info", "downwardAPI": {"items": [
                         {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                         {"path": "sub/name", "fieldRef": {"fieldPath": "metadata.name"}},
                         {"path": "cpu", "mode": 0o600, "resourceFieldRef": {
                             "containerName": "c", "resource": "requests.cpu",
                             "divisor": "1m"}}]}},
                     {"name": "both", "projected": {"sources": [
                         {"downwardAPI": {"items": [{"path": "mem", "resourceFieldRef": {
                             "containerName": "c", "resource": "limits.memory",
                             "divisor": "1Mi"}}]}},
                         {"configMap": {"name": "x", "optional": True}}]}}]},
    }, Pod)
    mounts = FakeVolumeMounts()
    info = set_up_volume(pod, pod.spec.volumes[0], settings, mounts=mounts)
    assert Path(info, "labels").read_text() == 'rack="a\\"1"\nzone="us-est-coast"\n'
    assert Path(info, "sub", "name").read_text() == "web"
    assert Path(info, "cpu").read_text() == "250"
    assert stat.S_IMODE(os.stat(Path(info, "cpu")).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(Path(info, "labels")).st_mode) == 0o644
    both = set_up_volume(pod, pod.spec.volumes[1], settings, mounts=mounts)
    assert Path(both, "mem").read_text() == "64"
