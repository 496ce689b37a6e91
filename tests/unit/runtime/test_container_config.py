"""generate_container_config and its parts (upstream generateContainerConfig, the downward
API, expansion.Expand, MilliCPUToShares/Quota, hostPath types), and runtime.pod.quantity."""

from __future__ import annotations

import json
import os
import stat
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest

from runtime.cm.container_resources import linux_container_resources
from runtime.errors import SyncError
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.container_config import (
    expand,
    generate_container_config,
    make_env,
)
from runtime.kuberuntime.settings import NodeSettings
from runtime.kuberuntime.volumes import set_up_volumes
from runtime.pod.model import (
    Container,
    ContainerPort,
    EmptyDirVolumeSource,
    EnvVar,
    EnvVarSource,
    ExecAction,
    HostPathVolumeSource,
    Lifecycle,
    LifecycleHandler,
    ObjectFieldSelector,
    ObjectMeta,
    Pod,
    PodSpec,
    ResourceFieldSelector,
    ResourceRequirements,
    Volume,
    VolumeMount,
)
from runtime.pod.quantity import bytes_of, milli_cpu, parse_quantity
from tests.helpers import host_path_case

UID = "uid-123"


def make_pod(container: Container, volumes: tuple[Volume, ...] = (), **spec: Any) -> Pod:
    return Pod(
        metadata=ObjectMeta(name="web", namespace="prod", uid=UID,
                            labels={"app": "web", "tier": "front"},
                            annotations={"owner": "ops"}),
        spec=PodSpec(containers=(container,), volumes=volumes, node_name="node-a", **spec),
    )


@pytest.fixture
def settings(tmp_path: Path) -> NodeSettings:
    return NodeSettings(node_name="node-a", root_dir=str(tmp_path / "root"),
                        pod_logs_dir=str(tmp_path / "logs"))


# --- $(VAR) expansion ------------------------------------------------------------------------

ENV = {"A": "alpha", "B_2": "beta", "EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "out"),
    [
        ("$(A)", "alpha"),
        ("x-$(A)-$(B_2)-y", "x-alpha-beta-y"),
        ("$(EMPTY)", ""),
        ("$(UNDEFINED)", "$(UNDEFINED)"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$$$(A)", "$alpha"),
        ("$A", "$A"),
        ("$(A", "$(A"),
        ("plain", "plain"),
        ("", ""),
    ],
)
def test_expand(text: str, out: str) -> None:
    assert expand(text, ENV) == out


def env_var(name: str, value: str = "", field: str = "", resource: str = "",
            container: str = "", divisor: str = "1") -> EnvVar:
    if field:
        return EnvVar(name=name, value_from=EnvVarSource(
            field_ref=ObjectFieldSelector(field_path=field)))
    if resource:
        return EnvVar(name=name, value_from=EnvVarSource(resource_field_ref=ResourceFieldSelector(
            resource=resource, container_name=container, divisor=divisor)))
    return EnvVar(name=name, value=value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("metadata.name", "web"),
        ("metadata.namespace", "prod"),
        ("metadata.uid", UID),
        ("metadata.labels['app']", "web"),
        ("metadata.labels['missing']", ""),
        ("metadata.annotations['owner']", "ops"),
        ("status.podIP", "10.88.0.7"),
        ("status.hostIP", "192.0.2.1"),
        ("spec.nodeName", "node-a"),
    ],
)
def test_field_ref(field: str, value: str) -> None:
    c = Container(name="app", env=(env_var("X", field=field),))
    assert make_env(make_pod(c), c, "10.88.0.7", "192.0.2.1") == {"X": value}


@pytest.mark.parametrize("field", ["metadata.generation", "status.phase", "spec.foo",
                                   "metadata.labels[app]"])
def test_unsupported_field_ref(field: str, settings: NodeSettings) -> None:
    c = Container(name="app", image="busybox", env=(env_var("X", field=field),))
    with pytest.raises(SyncError) as err:
        generate_container_config(make_pod(c), c, "", 0, "10.88.0.7", settings)
    assert err.value.reason == "CreateContainerConfigError"
    assert field in err.value.message


def test_env_refers_to_earlier_vars_only() -> None:
    c = Container(name="app", env=(
        env_var("A", "one"), env_var("B", "$(A)-two"), env_var("C", "$(D)"), env_var("D", "x"),
        env_var("POD", field="metadata.name"), env_var("E", "$(POD)"),
    ))
    assert make_env(make_pod(c), c, "", "") == {
        "A": "one", "B": "one-two", "C": "$(D)", "D": "x", "POD": "web", "E": "web"}


RESOURCES = ResourceRequirements(limits={"cpu": "500m", "memory": "128Mi"},
                                 requests={"cpu": "250m", "memory": "100M"})


@pytest.mark.parametrize(
    ("resource", "divisor", "container", "value"),
    [
        ("limits.cpu", "1", "", "1"),  # 0.5 rounds up
        ("limits.cpu", "1m", "", "500"),
        ("requests.cpu", "1m", "", "250"),
        ("limits.memory", "1", "", str(128 * 2**20)),
        ("limits.memory", "1Mi", "", "128"),
        ("requests.memory", "1Mi", "", "96"),  # 95.37 Mi rounds up, as upstream
        ("requests.memory", "1", "", "100000000"),
        ("limits.cpu", "1m", "other", "2000"),
        ("limits.memory", "1", "nothing-set", "0"),
    ],
)
def test_resource_field_ref(resource: str, divisor: str, container: str, value: str) -> None:
    c = Container(name="app", resources=RESOURCES,
                  env=(env_var("X", resource=resource, container=container, divisor=divisor),))
    pod = make_pod(c)
    pod = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, containers=(
        c, Container(name="other", resources=ResourceRequirements(limits={"cpu": 2})),
        Container(name="nothing-set"))))
    assert make_env(pod, c, "", "")["X"] == value


# --- resources ------------------------------------------------------------------------------


# upstream calculateLinuxResources: the period is 100 ms whether or not a limit is set.
@pytest.mark.parametrize(
    ("limits", "requests", "shares", "quota", "period", "memory"),
    [
        ({}, {}, 2, 0, 100_000, 0),
        ({"cpu": "100m"}, {}, 102, 10_000, 100_000, 0),
        ({"cpu": "0.5"}, {"cpu": "0.5"}, 512, 50_000, 100_000, 0),
        ({"cpu": 2}, {"cpu": "1"}, 1024, 200_000, 100_000, 0),
        ({}, {"cpu": "1m"}, 2, 0, 100_000, 0),
        ({"cpu": "1m"}, {}, 2, 1000, 100_000, 0),  # quota floor of 1 ms
        ({"memory": "64Mi"}, {}, 2, 0, 100_000, 64 * 2**20),
        ({"memory": "1G"}, {"memory": "512Mi"}, 2, 0, 100_000, 10**9),
    ],
)
def test_resources(limits: dict[str, Any], requests: dict[str, Any], shares: int, quota: int,
                   period: int, memory: int) -> None:
    c = Container(name="c", resources=ResourceRequirements(limits=limits, requests=requests))
    r = linux_container_resources(make_pod(c), c, 2**30)
    assert (r.cpu_shares, r.cpu_quota, r.cpu_period, r.memory_limit_in_bytes) == (
        shares, quota, period, memory)


def test_bad_quantity_is_config_error(settings: NodeSettings) -> None:
    c = Container(name="app", image="busybox",
                  resources=ResourceRequirements(limits={"cpu": "lots"}))
    with pytest.raises(SyncError) as err:
        generate_container_config(make_pod(c), c, "", 0, "", settings)
    assert err.value.reason == "CreateContainerConfigError"


# --- mounts ---------------------------------------------------------------------------------


def config_with(
    volume: Volume, mount: VolumeMount, settings: NodeSettings
) -> list[tuple[str, str, bool]]:
    """The mounts of a container of a pod whose volumes were set up first, as the kubelet
    sets them up before the sandbox (KubeRuntimeManager.mount_volumes)."""
    c = Container(name="app", image="busybox", volume_mounts=(mount,),
                  termination_message_path="")
    pod = make_pod(c, (volume,))
    assert set_up_volumes(pod, settings) == ()
    cfg = generate_container_config(pod, c, "", 0, "", settings)
    return [(m.container_path, m.host_path, m.readonly) for m in cfg.mounts]


def test_empty_dir(settings: NodeSettings) -> None:
    mounts = config_with(Volume(name="cache", empty_dir=EmptyDirVolumeSource()),
                         VolumeMount(name="cache", mount_path="/cache", read_only=True), settings)
    host = os.path.join(settings.root_dir, "pods", UID, "volumes", "kubernetes.io~empty-dir",
                        "cache")
    assert mounts == [("/cache", host, True)]
    assert os.path.isdir(host)
    assert stat.S_IMODE(os.stat(host).st_mode) == 0o777


@pytest.mark.parametrize(
    ("kind", "prepare", "made"),
    [
        ("DirectoryOrCreate", None, "dir"),
        ("DirectoryOrCreate", "dir", "dir"),
        ("Directory", "dir", "dir"),
        ("FileOrCreate", None, "file"),
        ("FileOrCreate", "file", "file"),
        ("File", "file", "file"),
        ("", None, None),
    ],
)
def test_host_path_ok(kind: str, prepare: str | None, made: str | None, tmp_path: Path,
                      settings: NodeSettings) -> None:
    path = tmp_path / "host" / "thing"
    (tmp_path / "host").mkdir()
    if prepare == "dir":
        path.mkdir()
    elif prepare == "file":
        path.write_text("x")
    mounts = config_with(Volume(name="h", host_path=HostPathVolumeSource(path=str(path),
                                                                         type=kind)),
                         VolumeMount(name="h", mount_path="/h"), settings)
    assert mounts == [("/h", str(path), False)]
    assert {None: not path.exists(), "dir": path.is_dir(), "file": path.is_file()}[made]
    if made == "file" and prepare is None:
        assert path.read_bytes() == b""


@pytest.mark.parametrize(
    ("kind", "prepare"),
    [
        ("Directory", None),
        ("Directory", "file"),
        ("File", None),
        ("File", "dir"),
        ("Socket", "file"),
        ("FileOrCreate", "no-parent"),
    ],
)
def test_host_path_errors(kind: str, prepare: str | None, tmp_path: Path,
                          settings: NodeSettings) -> None:
    """The volume's set-up fails (the pod's sync stops at FailedMount, before any config)."""
    path = host_path_case(tmp_path, prepare)
    c = Container(name="app", image="busybox",
                  volume_mounts=(VolumeMount(name="h", mount_path="/h"),))
    pod = make_pod(c, (Volume(name="h", host_path=HostPathVolumeSource(path=str(path),
                                                                       type=kind)),))
    [(volume, _)] = set_up_volumes(pod, settings)
    assert volume == "h"
    assert not (tmp_path / "missing").exists()


def test_mounts_look_volumes_up_without_touching_the_node(tmp_path: Path,
                                                          settings: NodeSettings) -> None:
    """A container's config binds where its volumes were set up; it makes nothing
    itself, but the subPath directories it binds."""
    path = tmp_path / "never-made"
    c = Container(name="app", image="busybox", termination_message_path="",
                  volume_mounts=(VolumeMount(name="h", mount_path="/h"),
                                 VolumeMount(name="e", mount_path="/e")))
    pod = make_pod(c, (Volume(name="h", host_path=HostPathVolumeSource(
        path=str(path), type="DirectoryOrCreate")), Volume(name="e")))
    cfg = generate_container_config(pod, c, "", 0, "", settings)
    assert [m.host_path for m in cfg.mounts] == [str(path), os.path.join(
        settings.pod_dir(UID), "volumes", "kubernetes.io~empty-dir", "e")]
    assert not path.exists()
    assert not os.path.exists(settings.pod_dir(UID))


def test_mount_naming_no_volume(settings: NodeSettings) -> None:
    c = Container(name="app", image="busybox",
                  volume_mounts=(VolumeMount(name="nope", mount_path="/x"),))
    with pytest.raises(SyncError, match="nope"):
        generate_container_config(make_pod(c), c, "", 0, "", settings)


def test_termination_message_file(settings: NodeSettings) -> None:
    c = Container(name="app", image="busybox")
    cfg = generate_container_config(make_pod(c), c, "", 3, "", settings)
    [mount] = cfg.mounts
    assert mount.container_path == "/dev/termination-log"
    assert mount.host_path.startswith(os.path.join(settings.pod_dir(UID), "containers", "app"))
    assert os.path.isfile(mount.host_path)
    assert stat.S_IMODE(os.stat(mount.host_path).st_mode) == 0o666


def test_no_termination_message_mount_when_path_empty(settings: NodeSettings) -> None:
    c = Container(name="app", image="busybox", termination_message_path="")
    assert generate_container_config(make_pod(c), c, "", 0, "", settings).mounts == ()


# --- the whole config -----------------------------------------------------------------------

PRE_STOP = LifecycleHandler(exec=ExecAction(command=("sh", "-c", "sleep 1")))


def full_container() -> Container:
    return Container(
        name="app", image="busybox:1.35", command=("sh", "-c", "echo $(GREETING) $$HOME"),
        args=("$(GREETING)", "$(NOPE)"), working_dir="/w",
        env=(env_var("GREETING", "hi"),),
        ports=(ContainerPort(container_port=8080, name="http"),),
        lifecycle=Lifecycle(pre_stop=PRE_STOP), tty=True,
    )


@pytest.mark.parametrize("restart", [0, 4])
def test_generate_config(restart: int, settings: NodeSettings) -> None:
    c = full_container()
    pod = make_pod(c, termination_grace_period_seconds=45)
    cfg = generate_container_config(pod, c, "sha256:img", restart, "10.88.0.7", settings)
    assert (cfg.metadata.name, cfg.metadata.attempt) == ("app", restart)
    assert cfg.image.image == "sha256:img"
    assert cfg.command == ("sh", "-c", "echo hi $HOME")
    assert cfg.args == ("hi", "$(NOPE)")
    assert cfg.working_dir == "/w"
    assert [(kv.key, kv.value) for kv in cfg.envs] == [("GREETING", "hi")]
    assert cfg.log_path == f"app/{restart}.log"
    assert cfg.tty
    assert dict(cfg.labels) == {
        L.POD_NAME: "web", L.POD_NAMESPACE: "prod", L.POD_UID: UID, L.CONTAINER_NAME: "app"}
    ann = dict(cfg.annotations)
    assert ann[L.CONTAINER_HASH] == L.hash_container(c)
    assert ann[L.RESTART_COUNT] == str(restart)
    assert ann[L.TERMINATION_MESSAGE_PATH] == "/dev/termination-log"
    assert ann[L.TERMINATION_MESSAGE_POLICY] == "File"
    assert ann[L.POD_TERMINATION_GRACE] == "45"
    assert json.loads(ann[L.CONTAINER_PORTS]) == [{"containerPort": 8080, "name": "http"}]
    assert json.loads(ann[L.PRE_STOP_HANDLER]) == {"exec": {"command": ["sh", "-c", "sleep 1"]}}
    info = L.parse_container_labels(cfg.labels, cfg.annotations)
    assert (info.pod_name, info.pod_namespace, info.pod_uid, info.container_name) == (
        "web", "prod", UID, "app")
    assert (info.hash, info.restart_count, info.termination_grace_period) == (
        L.hash_container(c), restart, 45)
    assert info.pre_stop == PRE_STOP
    assert info.deletion_grace_period is None


def test_image_defaults_to_spec(settings: NodeSettings) -> None:
    c = Container(name="app", image="busybox:1.35")
    cfg = generate_container_config(make_pod(c), c, "", 0, "", settings)
    assert cfg.image.image == "busybox:1.35"
    assert L.PRE_STOP_HANDLER not in cfg.annotations
    assert L.CONTAINER_PORTS not in cfg.annotations


@pytest.mark.parametrize(
    ("annotations", "restart", "pre_stop"),
    [({}, 0, None), ({L.RESTART_COUNT: "x", L.PRE_STOP_HANDLER: "{not json"}, 0, None),
     ({L.RESTART_COUNT: "7"}, 7, None)],
)
def test_parse_labels_tolerates_foreign(annotations: dict[str, str], restart: int,
                                        pre_stop: LifecycleHandler | None) -> None:
    info = L.parse_container_labels({}, annotations)
    assert (info.restart_count, info.pre_stop, info.container_name) == (restart, pre_stop, "")


# --- quantities -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Decimal("0.1")), ("0.5", Decimal("0.5")), ("2", Decimal(2)), (2, Decimal(2)),
        (0.25, Decimal("0.25")), ("64Mi", Decimal(64 * 2**20)), ("1G", Decimal(10**9)),
        ("1Ki", Decimal(1024)), ("1k", Decimal(1000)), ("1.5Gi", Decimal(3 * 2**29)),
        ("1e3", Decimal(1000)), ("1E", Decimal(10**18)), (" 3 ", Decimal(3)),
        ("+1", Decimal(1)), (".5", Decimal("0.5")),
    ],
)
def test_parse_quantity(text: str | int | float, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "10 Mi", "1mi", "Mi", "1KB", "--1", True])
def test_parse_quantity_errors(text: Any) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "milli", "nbytes"),
    [("100m", 100, 0), ("1", 1000, 1), ("0.5", 500, 0), ("2", 2000, 2), ("1Ki", 1024000, 1024)],
)
def test_milli_cpu_and_bytes(text: str, milli: int, nbytes: int) -> None:
    assert (milli_cpu(text), bytes_of(text)) == (milli, nbytes)
