"""PLEG: upstream's event table, diffs between relists, and the runtime pod listing."""

from __future__ import annotations

import pytest

from actors.kubelet.messages import EventType as E
from actors.kubelet.messages import PodLifecycleEvent
from actors.kubelet.pleg import PlegState as S
from actors.kubelet.pleg import diff, events_for, take_snapshot
from runtime.clock import FakeClock
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ImageSpec,
    PodSandboxConfig,
    PodSandboxMetadata,
)
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime import labels as L
from runtime.testing.fake_runtime import FakeRuntime

UID, CID = PodUID("u"), ContainerID("c")


@pytest.mark.parametrize(("old", "new", "expected"), [
    (S.NON_EXISTENT, S.RUNNING, [E.CONTAINER_STARTED]),
    (S.UNKNOWN, S.RUNNING, [E.CONTAINER_STARTED]),
    (S.EXITED, S.RUNNING, [E.CONTAINER_STARTED]),
    (S.RUNNING, S.EXITED, [E.CONTAINER_DIED]),
    (S.NON_EXISTENT, S.EXITED, [E.CONTAINER_DIED]),
    (S.RUNNING, S.UNKNOWN, [E.CONTAINER_CHANGED]),
    (S.EXITED, S.NON_EXISTENT, [E.CONTAINER_REMOVED]),
    (S.RUNNING, S.NON_EXISTENT, [E.CONTAINER_DIED, E.CONTAINER_REMOVED]),
    (S.UNKNOWN, S.NON_EXISTENT, [E.CONTAINER_DIED, E.CONTAINER_REMOVED]),
    (S.RUNNING, S.RUNNING, []),
    (S.EXITED, S.EXITED, []),
])
def test_upstream_event_table(old: S, new: S, expected: list[E]) -> None:
    assert [e.type for e in events_for(UID, CID, old, new)] == expected


def test_diff_covers_new_gone_and_changed_pods() -> None:
    a, b = PodUID("a"), PodUID("b")
    old = {a: {ContainerID("a1"): S.RUNNING, ContainerID("a2"): S.RUNNING}}
    new = {a: {ContainerID("a1"): S.EXITED}, b: {ContainerID("b1"): S.RUNNING}}
    assert diff(old, new) == (
        PodLifecycleEvent(a, E.CONTAINER_DIED, ContainerID("a1")),
        PodLifecycleEvent(a, E.CONTAINER_DIED, ContainerID("a2")),
        PodLifecycleEvent(a, E.CONTAINER_REMOVED, ContainerID("a2")),
        PodLifecycleEvent(b, E.CONTAINER_STARTED, ContainerID("b1")),
    )


def _pod(fake: FakeRuntime, uid: str, name: str) -> tuple[str, str]:
    labels = {L.POD_UID: uid, L.POD_NAME: name, L.POD_NAMESPACE: "default"}
    sandbox_config = PodSandboxConfig(PodSandboxMetadata(name, uid, "default"), labels=labels)
    sandbox = fake.run_pod_sandbox(sandbox_config)
    config = ContainerConfig(ContainerMetadata("c"), ImageSpec("img"),
                             labels={**labels, L.CONTAINER_NAME: "c"})
    container = fake.create_container(sandbox, config, sandbox_config)
    fake.start_container(container)
    return sandbox, container


def test_snapshot_names_pods_counts_running_and_treats_sandboxes_as_containers() -> None:
    fake = FakeRuntime(FakeClock(), images=["img"])
    sandbox, container = _pod(fake, "uid-1", "web")
    _pod(fake, "uid-2", "db")
    fake.exit_container(ContainerID(container), 1)
    snap = take_snapshot(fake)
    assert snap.running_containers == 1
    assert snap.states[PodUID("uid-1")] == {sandbox: S.RUNNING, container: S.EXITED}
    (web,) = [p for p in snap.pods if p.uid == "uid-1"]
    assert (web.name, web.namespace, web.running) == ("web", "default", True)
    assert [(c.name, c.state) for c in web.containers] == [("c", "exited")]
