"""ConfigMaps, Secrets, Services, tokens, pull secrets and RuntimeClasses read from the emulated API
server as the runtime manager reads them (runtime.kubeapi.objects, runtime.kuberuntime's
api_volumes, api_env and pull_secrets)."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest

from runtime.clock import FakeClock
from runtime.cri.service import ImageService
from runtime.cri.types import AuthConfig, ImageSpec, PodSandboxConfig
from runtime.errors import CRIError, SyncError
from runtime.kubeapi.client import CONFIGMAPS, RUNTIMECLASSES, SECRETS, SERVICES, KubeClient
from runtime.kubeapi.objects import WatchingObjects
from runtime.kubeapi.tokens import CachedToken, TokenManager, requires_refresh
from runtime.kuberuntime.api_volumes import referenced_objects
from runtime.kuberuntime.atomic_writer import DATA_DIR
from runtime.kuberuntime.container_config import make_env
from runtime.kuberuntime.images import ImageManager
from runtime.kuberuntime.pull_secrets import Keyring, pull_credentials
from runtime.kuberuntime.runtime_class import RuntimeClassError, lookup_runtime_handler
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.volumes import VolumeSetupError, set_up_volume
from runtime.pod.defaults import apply_defaults
from runtime.pod.model import Pod
from tests.apiserver import EmulatedAPIServer
from tests.helpers import FakeVolumeMounts, wait_for


def make_pod(spec: dict[str, Any], name: str = "p", uid: str = "uid-1") -> Pod:
    raw = {"metadata": {"name": name, "namespace": "default", "uid": uid},
           "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}
    return apply_defaults(msgspec.convert(raw, Pod))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def objects(client: KubeClient) -> Iterator[WatchingObjects]:
    watching = WatchingObjects(client)
    yield watching
    watching.stop()


def test_a_watch_per_referenced_object_sees_updates_and_stops_when_unreferenced_emulated_apiserver(
        client: KubeClient, objects: WatchingObjects) -> None:
    client.create(CONFIGMAPS, {"metadata": {"name": "cm"}, "data": {"k": "1"}}, "default")
    objects.register_pod("a", "default", ("cm", "absent"), ())
    objects.register_pod("b", "default", ("cm",), ())
    assert objects.get("configmap", "default", "cm")["object"]["data"] == {"k": "1"}
    assert objects.get("configmap", "default", "absent") == {"notFound": True}
    assert "not registered" in objects.get("secret", "default", "cm")["error"]
    cm = client.get(CONFIGMAPS, "cm", "default")
    client.update(CONFIGMAPS, {**cm, "data": {"k": "2"}}, "default")
    wait_for(lambda: objects.get("configmap", "default", "cm")["object"]["data"] == {"k": "2"},
             10, "the update in the watched ConfigMap")
    client.create(CONFIGMAPS, {"metadata": {"name": "absent"}, "data": {}}, "default")
    wait_for(lambda: "object" in objects.get("configmap", "default", "absent"), 10,
             "the created ConfigMap")
    objects.unregister_pod("a")
    assert objects.watched() == (("configmap", "default", "cm"),)
    objects.unregister_pod("b")
    assert objects.watched() == ()


def test_configmap_and_secret_volumes_are_written_atomically_emulated_apiserver(
        client: KubeClient, objects: WatchingObjects, tmp_path: Path) -> None:
    settings = NodeSettings(node_name="n1", root_dir=str(tmp_path))
    mounts = FakeVolumeMounts()
    client.create(CONFIGMAPS, {"metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}},
                  "default")
    client.create(SECRETS, {"metadata": {"name": "s"}, "data": {"pw": b64("hunter2")}},
                  "default")
    pod = make_pod({"volumes": [
        {"name": "cfg", "configMap": {"name": "cm", "defaultMode": 0o600,
                                      "items": [{"key": "a", "path": "dir/a"}]}},
        {"name": "sec", "secret": {"secretName": "s"}},
        {"name": "opt", "configMap": {"name": "none", "optional": True}},
        {"name": "req", "configMap": {"name": "none"}}]})
    objects.register_pod(pod.uid, "default", *referenced_objects(pod))
    cfg, sec, opt, req = pod.spec.volumes
    path = Path(set_up_volume(pod, cfg, settings, objects, mounts=mounts))
    assert (path / "dir" / "a").read_text() == "1" and not (path / "b").exists()
    assert (path / "dir" / "a").stat().st_mode & 0o777 == 0o600
    first = os.readlink(path / DATA_DIR)
    secret = set_up_volume(pod, sec, settings, objects, mounts=mounts)
    assert Path(secret, "pw").read_text() == "hunter2"
    # The secret on a tmpfs, written after the mount; the ConfigMap on the disk.
    assert [(c[0], c[1]) for c in mounts.calls] == [("mount", secret)]
    visible = os.listdir(set_up_volume(pod, opt, settings, objects, mounts=mounts))
    assert [n for n in visible if not n.startswith("..")] == []  # empty, as upstream
    with pytest.raises(VolumeSetupError, match='configmap "none" not found'):
        set_up_volume(pod, req, settings, objects, mounts=mounts)
    cm = client.get(CONFIGMAPS, "cm", "default")
    client.update(CONFIGMAPS, {**cm, "data": {"a": "new"}}, "default")
    wait_for(lambda: objects.get("configmap", "default", "cm")["object"]["data"]["a"] == "new",
             10, "the new ConfigMap data")
    set_up_volume(pod, cfg, settings, objects, mounts=mounts)
    assert (path / "dir" / "a").read_text() == "new"
    assert os.readlink(path / DATA_DIR) != first  # a new version swapped in


def test_env_from_configmaps_secrets_and_service_links_emulated_apiserver(
        client: KubeClient, objects: WatchingObjects) -> None:
    client.create(CONFIGMAPS, {"metadata": {"name": "cm"}, "data": {"A": "1", "B": "2"}},
                  "default")
    client.create(SECRETS, {"metadata": {"name": "s"}, "data": {"pw": b64("x")}}, "default")
    client.create(SERVICES, {"metadata": {"name": "my-db"}, "spec": {
        "clusterIP": "10.96.0.9", "ports": [{"name": "sql", "port": 5432, "protocol": "TCP"}]}},
        "default")
    pod = make_pod({"containers": [{"name": "c", "image": "busybox",
                                    "envFrom": [{"configMapRef": {"name": "cm"},
                                                 "prefix": "CM_"},
                                                {"secretRef": {"name": "gone",
                                                               "optional": True}}],
                                    "env": [{"name": "PW", "valueFrom": {"secretKeyRef": {
                                        "name": "s", "key": "pw"}}},
                                            {"name": "X", "value": "$(MY_DB_SERVICE_HOST)"}]}]})
    objects.register_pod(pod.uid, "default", *referenced_objects(pod))
    wait_for(lambda: "items" in objects.services(), 10, "the Service informer's list")
    wait_for(lambda: len(objects.services()["items"]) == 2, 10, "both Services")
    env = make_env(pod, pod.spec.containers[0], "10.0.0.2", "10.0.0.1", objects=objects)
    assert env["CM_A"] == "1" and env["CM_B"] == "2" and env["PW"] == "x"
    assert env["X"] == "10.96.0.9"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert env["KUBERNETES_SERVICE_PORT"] == "443"
    assert env["KUBERNETES_PORT"] == "tcp://10.96.0.1:443"
    assert env["MY_DB_SERVICE_PORT_SQL"] == "5432"
    assert env["MY_DB_PORT_5432_TCP_ADDR"] == "10.96.0.9"
    unlinked = make_pod({"enableServiceLinks": False})
    assert "MY_DB_SERVICE_HOST" not in make_env(unlinked, unlinked.spec.containers[0], "", "",
                                                objects=objects)
    missing = make_pod({"containers": [{"name": "c", "image": "busybox", "env": [
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "x", "key": "k"}}}]}]})
    objects.register_pod(missing.uid + "m", "default", ("x",), ())
    with pytest.raises(SyncError, match='configmap "x" not found') as err:
        make_env(missing, missing.spec.containers[0], "", "", objects=objects)
    assert err.value.reason == "CreateContainerConfigError"


def test_kube_api_access_volume_holds_a_bound_token_ca_and_namespace_emulated_apiserver(
        server: EmulatedAPIServer, client: KubeClient, tmp_path: Path) -> None:
    clock = FakeClock(start=time.time())
    tokens = TokenManager(client, clock)
    watching = WatchingObjects(client, clock, tokens)
    try:
        pod = make_pod({"serviceAccountName": "default", "volumes": [{
            "name": "kube-api-access-x", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt",
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                    "fieldPath": "metadata.namespace"}}]}}]}}]})
        watching.register_pod(pod.uid, "default", *referenced_objects(pod))
        settings = NodeSettings(node_name="n1", root_dir=str(tmp_path))
        mounts = FakeVolumeMounts()
        path = Path(set_up_volume(pod, pod.spec.volumes[0], settings, watching, mounts=mounts))
        token = (path / "token").read_text()
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
        assert claims["kubernetes.io"]["pod"] == {"name": "p", "uid": pod.uid}
        assert claims["exp"] - claims["iat"] == 3607
        assert (path / "ca.crt").read_text() == server.ca.cert_pem.decode()
        assert (path / "namespace").read_text() == "default"
        set_up_volume(pod, pod.spec.volumes[0], settings, watching, mounts=mounts)
        assert tokens.requests == 1  # cached
        clock.step(3607 * 0.8 + 1)  # past 80% of its life: asked again
        set_up_volume(pod, pod.spec.volumes[0], settings, watching, mounts=mounts)
        assert tokens.requests == 2 and (path / "token").read_text() != token
    finally:
        watching.stop()


def test_token_refresh_rule_as_upstream() -> None:
    token = CachedToken("t", "", expires=10_000.0, expiration_seconds=3600)
    issued = 10_000.0 - 3600
    assert not requires_refresh(token, issued + 2879, 0)
    assert requires_refresh(token, issued + 2881, 0)
    assert requires_refresh(token, issued + 2875, 10)  # jitter brings it forward
    day = CachedToken("t", "", expires=200_000.0, expiration_seconds=200_000)
    assert requires_refresh(day, 24 * 3600 + 1, 0)


def test_pull_secret_credentials_match_by_registry_host_emulated_apiserver(
        client: KubeClient, objects: WatchingObjects) -> None:
    config = {"auths": {"127.0.0.1:5000": {"auth": b64("u:p")},
                        "https://index.docker.io/v1/": {"username": "hub", "password": "h"}}}
    client.create(SECRETS, {"metadata": {"name": "reg"},
                            "type": "kubernetes.io/dockerconfigjson",
                            "data": {".dockerconfigjson": b64(json.dumps(config))}}, "default")
    pod = make_pod({"imagePullSecrets": [{"name": "reg"}, {"name": "gone"}]})
    objects.register_pod(pod.uid, "default", *referenced_objects(pod))
    local = pull_credentials(objects, pod, "127.0.0.1:5000/busybox:1")
    assert [(a.username, a.password) for a in local] == [("u", "p")]
    assert [a.username for a in pull_credentials(objects, pod, "busybox")] == ["hub"]
    assert pull_credentials(objects, pod, "quay.io/x/y") == []


def test_keyring_globs_ports_and_paths() -> None:
    keyring = Keyring()
    keyring.add({"*.example.com": {"username": "glob"},
                 "reg.example.com:8443/team": {"username": "team"}})
    assert [a.username for a in keyring.lookup("a.example.com/x")] == ["glob"]
    assert [a.username for a in keyring.lookup("reg.example.com:8443/team/app")] == ["team"]
    assert keyring.lookup("reg.example.com:8443/other/app") == []
    assert keyring.lookup("a.b.example.com/x") == []


class _Registry:
    """An image service that accepts only user ``good``'s pulls, and records each try."""

    def __init__(self) -> None:
        self.tries: list[str] = []

    def image_status(self, image: ImageSpec) -> None:
        return None

    def pull_image(self, image: ImageSpec, auth: AuthConfig | None = None,
                   sandbox_config: PodSandboxConfig | None = None) -> str:
        self.tries.append(auth.username if auth else "")
        if auth is None or auth.username != "good":
            raise CRIError("PullImage", "401 Unauthorized")
        return "sha256:1"


def test_a_pull_tries_each_matching_pull_secret_credential_in_turn_emulated_apiserver(
        client: KubeClient, objects: WatchingObjects) -> None:
    config = {"auths": {"127.0.0.1:5000/team": {"username": "stale", "password": "x"},
                        "127.0.0.1:5000": {"username": "good", "password": "y"}}}
    client.create(SECRETS, {"metadata": {"name": "reg"},
                            "type": "kubernetes.io/dockerconfigjson",
                            "data": {".dockerconfigjson": b64(json.dumps(config))}}, "default")
    pod = make_pod({"imagePullSecrets": [{"name": "reg"}], "containers": [
        {"name": "c", "image": "127.0.0.1:5000/team/app:1"}]})
    objects.register_pod(pod.uid, "default", *referenced_objects(pod))
    registry = _Registry()
    images = ImageManager(cast(ImageService, registry), FakeClock())
    images.objects = objects
    assert images.ensure_image(pod, pod.spec.containers[0], None) == "sha256:1"
    assert registry.tries == ["stale", "good"]  # the most specific key first
    registry.tries.clear()
    images.objects = None  # standalone: anonymous, as before
    with pytest.raises(SyncError, match="401 Unauthorized"):
        images.ensure_image(make_pod({}, uid="u2"), make_pod({}).spec.containers[0], None)
    assert registry.tries == [""]


def test_an_immutable_configmap_is_read_once_and_no_longer_watched_emulated_apiserver(
        client: KubeClient, objects: WatchingObjects) -> None:
    client.create(CONFIGMAPS, {"metadata": {"name": "frozen"}, "immutable": True,
                               "data": {"k": "v"}}, "default")
    objects.register_pod("a", "default", ("frozen",), ())
    assert objects.get("configmap", "default", "frozen")["object"]["data"] == {"k": "v"}
    (item,) = objects._watched.values()
    wait_for(lambda: item.reflector.stopped, 10, "the reflector stopped")
    assert objects.get("configmap", "default", "frozen")["object"]["data"] == {"k": "v"}


class _ServicesNotListed:
    """An ObjectSource whose Service informer has not listed yet (the API server away)."""

    def services(self) -> dict[str, Any]:
        return {"error": "services have not yet been read at least once, cannot construct "
                         "envvars"}


def test_a_static_pod_does_not_wait_for_the_service_informer() -> None:
    """Upstream makeEnvironmentVariables waits for services only for pods from the API
    server: a static pod must start while the API server is away."""
    from runtime.kuberuntime.api_env import service_env
    from runtime.kuberuntime.object_source import ObjectSource

    objects = cast(ObjectSource, _ServicesNotListed())
    from_api = make_pod({"containers": [{"name": "c", "image": "busybox"}]})
    with pytest.raises(SyncError, match="services have not yet been read"):
        service_env(from_api, objects)
    static = msgspec.structs.replace(from_api, metadata=msgspec.structs.replace(
        from_api.metadata, annotations={"kubernetes.io/config.source": "file"}))
    assert service_env(static, objects) == {}


def test_runtime_classes_come_from_one_informer_emulated_apiserver(
        client: KubeClient, objects: WatchingObjects) -> None:
    client.create(RUNTIMECLASSES, {"metadata": {"name": "alt"}, "handler": "runc-alt"})
    assert lookup_runtime_handler("alt", {}, objects) == "runc-alt"
    assert objects.runtime_class("ghost") == {"notFound": True}
    with pytest.raises(RuntimeClassError) as caught:
        lookup_runtime_handler("ghost", {"ghost": "runc"}, objects)
    assert str(caught.value) == 'runtimeclass.node.k8s.io "ghost" not found'
    client.create(RUNTIMECLASSES, {"metadata": {"name": "late"}, "handler": "runc"})
    wait_for(lambda: "object" in objects.runtime_class("late"), 10, "the new class seen")
    client.delete(RUNTIMECLASSES, "alt")
    wait_for(lambda: objects.runtime_class("alt") == {"notFound": True}, 10,
             "the deleted class gone")


def test_a_runtime_class_read_before_the_informer_lists_is_an_error_emulated_apiserver(
        server: EmulatedAPIServer, client: KubeClient) -> None:
    server.partition()
    watching = WatchingObjects(client, sync_timeout=0.2)
    try:
        answer = watching.runtime_class("alt")
    finally:
        server.heal()
        watching.stop()
    assert answer == {"error": "failed to sync runtimeclass cache: timed out waiting for the "
                               "condition"}
