"""Ephemeral containers: what starts, as what, and which PID namespace it joins."""

from __future__ import annotations

import pytest

from runtime.cri.types import ContainerState
from runtime.errors import SyncError
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime.ephemeral import as_container, ephemeral_to_start, target_id
from runtime.kuberuntime.podstatus import ContainerRuntimeStatus, RuntimePodStatus
from runtime.pod.model import (
    Container,
    ContainerPort,
    EphemeralContainer,
    ObjectMeta,
    Pod,
    PodSpec,
    Probe,
)


def _pod(*ephemeral: EphemeralContainer) -> Pod:
    return Pod(metadata=ObjectMeta(name="p", uid="u"),
               spec=PodSpec(containers=(Container(name="main", image="x"),),
                            ephemeral_containers=ephemeral))


def _status(*running: tuple[str, ContainerState]) -> RuntimePodStatus:
    return RuntimePodStatus(PodUID("u"), "p", "default", container_statuses=tuple(
        ContainerRuntimeStatus(ContainerID(f"id-{n}"), n, state, 1.0) for n, state in running))


def test_only_ephemeral_containers_that_never_ran_start() -> None:
    pod = _pod(EphemeralContainer(name="a", image="x"), EphemeralContainer(name="b", image="x"))
    assert ephemeral_to_start(pod, _status()) == (0, 1)
    assert ephemeral_to_start(pod, _status(("a", ContainerState.EXITED))) == (1,)
    assert ephemeral_to_start(pod, _status(("a", ContainerState.RUNNING),
                                           ("b", ContainerState.UNKNOWN))) == ()


def test_an_ephemeral_container_runs_without_ports_or_probes() -> None:
    debug = EphemeralContainer(name="d", image="busybox", command=("sh",), tty=True,
                               ports=(ContainerPort(container_port=80),),
                               readiness_probe=Probe(), target_container_name="main")
    c = as_container(debug)
    assert (c.name, c.image, c.command, c.tty) == ("d", "busybox", ("sh",), True)
    assert c.ports == () and c.readiness_probe is None and c.lifecycle is None
    assert c.resources is None and c.restart_policy is None


@pytest.mark.parametrize(("target", "status", "expected"), [
    ("", _status(), None),
    ("main", _status(("main", ContainerState.RUNNING)), "id-main"),
    ("main", _status(("main", ContainerState.EXITED)), "id-main"),  # upstream: any status
])
def test_target_id(target: str, status: RuntimePodStatus, expected: str | None) -> None:
    pod = _pod(EphemeralContainer(name="d", image="x", target_container_name=target))
    assert target_id(pod, "d", status) == expected


def test_a_target_that_never_ran_is_a_config_error() -> None:
    pod = _pod(EphemeralContainer(name="d", image="x", target_container_name="nosuch"))
    with pytest.raises(SyncError) as caught:
        target_id(pod, "d", _status(("main", ContainerState.RUNNING)))
    assert caught.value.reason == "CreateContainerConfigError"
    assert caught.value.message == "unable to find target container nosuch"
