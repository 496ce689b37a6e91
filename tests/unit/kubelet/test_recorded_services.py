"""The recorded services are declared once (actors.kubelet.recorded): the daemon's
recording, the replay and the test scenarios all make them from that table."""

from __future__ import annotations

import dataclasses
import itertools
import re
import socket
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet import recorded
from actors.kubelet.recorded import SERVICES, Services
from actors.kubelet.trace import KubeletWorld
from actors.kubelet.tree import ReplayConfig
from runtime.cm.fake import FakeCgroupManager
from runtime.cm.pod_cgroups import PodCgroups
from runtime.cri.intercept import Proceed, methods_of
from runtime.cri.types import ContainerState
from runtime.ids import ContainerID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.settings import NodeSettings
from runtime.pod.model import (
    EmptyDirVolumeSource,
    Lifecycle,
    LifecycleHandler,
    TCPSocketAction,
    Volume,
    VolumeMount,
)
from tests.helpers import FakeVolumeMounts
from tests.traces.scenarios import RecordedNode, pod, with_host_paths

REPO = Path(__file__).resolve().parents[3]


class Seen:
    """An interceptor that notes each call's target and answers it itself."""

    def __init__(self) -> None:
        self.targets: list[str] = []

    def around(self, target: str, method: str, args: tuple[Any, ...],
               proceed: Proceed) -> Any:
        self.targets.append(target)
        return None


class Given:
    """Stands for a service the daemon's wiring makes itself (containerd, the API
    server's objects, the pod cgroups): only its identity matters here."""


CONFIGS = [ReplayConfig(node=NodeSettings("node", cgroups_per_qos=per_qos), embedded=embedded,
                        cluster=cluster)
           for embedded, cluster, per_qos in itertools.product((False, True), repeat=3)]


def _given(config: ReplayConfig) -> dict[str, object]:
    return {"containerd": Given() if config.embedded else None,
            "objects": Given() if config.cluster else None,
            "cgroups": Given() if config.node.cgroups_per_qos else None}


def _called(services: Services, seen: Seen) -> set[str]:
    """Call one method of each service there is; the targets ``seen`` noted."""
    seen.targets.clear()
    for row in SERVICES:
        service = getattr(services, row.field)
        if service is not None:
            method = sorted(methods_of(row.protocol))[0]
            getattr(service, method)()
    return set(seen.targets)


def test_the_table_fills_every_service_once() -> None:
    fields = [row.field for row in SERVICES]
    assert sorted(fields) == sorted(f.name for f in dataclasses.fields(Services))
    assert len({row.name for row in SERVICES}) == len(SERVICES)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"embedded={c.embedded}-"
                         f"cluster={c.cluster}-qos={c.node.cgroups_per_qos}")
def test_recording_and_replay_make_the_same_services_with_the_same_targets(
        config: ReplayConfig) -> None:
    recording, answers = Seen(), Seen()
    live = recorded.live(config, (recording,), **_given(config))
    replayed = recorded.replayed(config, answers)
    expected = {row.name for row in recorded.present(config)}
    assert _called(live, recording) == expected
    assert _called(replayed, answers) == expected
    # Present with the configuration, not by a switch of their own.
    assert (live.containerd is not None) is config.embedded is (replayed.containerd is not None)
    assert (live.objects is not None) is config.cluster is (replayed.objects is not None)
    assert (live.cgroups is not None) is config.node.cgroups_per_qos \
        is (replayed.cgroups is not None)


def test_live_refuses_a_service_the_configuration_does_not_match() -> None:
    config = ReplayConfig(node=NodeSettings("node"), embedded=True)
    with pytest.raises(ValueError, match="'containerd' service"):
        recorded.live(config)
    with pytest.raises(ValueError, match="'objects'"):
        recorded.live(config, containerd=Given(), objects=Given())


def test_no_module_wires_a_recorded_service_by_hand() -> None:
    """The targets appear in the table and the services' own modules only: the daemon,
    the replay and the scenarios loop over the table."""
    wiring = [REPO / "actors", REPO / "bin", REPO / "tests" / "traces"]
    owners = {REPO / "actors" / "kubelet" / "recorded.py"}
    constants = re.compile(r"\b(MANAGED_CONTAINERD|OBJECTS|HOST_PATHS|POD_CGROUPS|"
                           r"CONTAINER_LOGS|VOLUME_MOUNTS|HOOK_TRANSPORT)_TARGET\b")
    literals = re.compile(r"target=\"(" + "|".join(row.name for row in SERVICES) + r")\"")
    offending = [str(path.relative_to(REPO)) for root in wiring for path in root.rglob("*.py")
                 if path not in owners
                 and (constants.search(text := path.read_text()) or literals.search(text))]
    assert offending == []


def _init_instances(node: RecordedNode) -> list[tuple[ContainerID, ContainerState]]:
    return [(c.id, c.state) for c in node.fake.list_containers()
            if c.labels.get(L.CONTAINER_NAME) == "init"]


def test_a_recorded_scenario_replays_every_node_service_it_called(tmp_path: Path) -> None:
    """A pod in its own cgroup with a hostPath and a memory-backed volume, whose init
    container fails until its first instance is pruned, then succeeds, then removed (its
    container's preStop hook opening a connection): every node service the table has is
    recorded, and answers its replay."""
    cgroups = PodCgroups(FakeCgroupManager(), (), "cgroupfs", 2000, 2**30)
    cgroups.start()
    directory = tmp_path / "trace"
    node = RecordedNode(directory, tmp_path / "scratch", pod_cgroups=cgroups,
                        volume_mounts=FakeVolumeMounts())
    p = with_host_paths(pod("u1", "web"), ("h", str(tmp_path / "made"), "DirectoryOrCreate"))
    listening = socket.create_server(("127.0.0.1", 0))
    hook = LifecycleHandler(tcp_socket=TCPSocketAction(
        port=listening.getsockname()[1], host="127.0.0.1"))
    container = msgspec.structs.replace(p.spec.containers[0], volume_mounts=(
        *p.spec.containers[0].volume_mounts, VolumeMount(name="m", mount_path="/m")),
        lifecycle=Lifecycle(pre_stop=hook))
    init = msgspec.structs.replace(p.spec.containers[0], name="init", volume_mounts=())
    p = msgspec.structs.replace(p, spec=msgspec.structs.replace(
        p.spec, init_containers=(init,), containers=(container,), volumes=(
            *p.spec.volumes, Volume(name="m", empty_dir=EmptyDirVolumeSource(
                medium="Memory")))))
    try:
        node.snapshot(p)
        node.until("the init container to run", lambda: any(
            s == ContainerState.RUNNING for _, s in _init_instances(node)))
        for n in range(3):  # under Always the older exited instances are pruned
            ((running, _),) = [i for i in _init_instances(node)
                               if i[1] == ContainerState.RUNNING]
            node.fake.exit_container(running, 1)
            node.until(f"init restart {n + 1}", lambda r=running: any(
                s == ContainerState.RUNNING and c != r for c, s in _init_instances(node)))
        ((running, _),) = [i for i in _init_instances(node) if i[1] == ContainerState.RUNNING]
        node.fake.exit_container(running, 0)
        node.until("the container to run", lambda: len(node.running("u1")) == 1)
        node.snapshot()
        node.until("the pod to be removed", lambda: node.fake.list_pod_sandbox() == ())
    finally:
        node.close()
        listening.close()
    trace = read_trace(directory)
    config = ReplayConfig.from_header(trace.header["config"])
    targets = {r["target"] for r in trace.records if r["k"] == "call"}
    assert targets == {"runtime"} | {row.name for row in recorded.present(config)}
    report = replay(trace, KubeletWorld())
    assert report.ok, format_report(report)
