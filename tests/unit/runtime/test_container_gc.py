"""Container GC planning (runtime.kuberuntime.container_gc), as upstream's kuberuntime_gc_test
tables check containerGC: which dead containers, sandboxes and log directories go, and why."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from runtime.ids import ContainerID, PodUID, SandboxID
from runtime.kuberuntime.container_gc import (
    ContainerGCPolicy,
    GCContainer,
    GCSandbox,
    GCState,
    PodsForGC,
    RemovalReason,
    plan_container_gc,
    pod_uid_of_log_dir,
)

NOW = 10_000.0
EXITED, RUNNING = GCState.EXITED, GCState.RUNNING
CREATED, UNKNOWN = GCState.CREATED, GCState.UNKNOWN


def ctr(pod: str, name: str, created: float, state: GCState = EXITED,
        sandbox: str = "") -> GCContainer:
    cid = f"{pod}-{name}-{created:g}"
    return GCContainer(ContainerID(cid), SandboxID(sandbox or f"sb-{pod}"), PodUID(pod),
                       f"name-{pod}", "default", name, state, created)


def sb(pod: str, created: float, ready: bool = False, sid: str = "") -> GCSandbox:
    return GCSandbox(SandboxID(sid or f"sb-{pod}-{created:g}"), PodUID(pod), f"name-{pod}",
                     "default", ready, created)


LIVE = PodsForGC(keep_content=(PodUID("a"), PodUID("b"), PodUID("c")),
                 keep_runtime=(PodUID("a"), PodUID("b"), PodUID("c")), sources_ready=True)
"""Pods a, b, c are live; any other pod is gone."""


@dataclass
class Case:
    name: str
    containers: list[GCContainer]
    removed: list[str]  # container IDs, in removal order
    policy: ContainerGCPolicy = field(default_factory=ContainerGCPolicy)
    pods: PodsForGC = LIVE
    reclaim: bool = False


CASES = [
    Case("nothing to collect", [], []),
    Case("the only dead instance of a live pod's container stays",
         [ctr("a", "main", 1)], []),
    Case("older dead instances go, the newest stays (default max 1 per container)",
         [ctr("a", "main", 1), ctr("a", "main", 3), ctr("a", "main", 2)],
         ["a-main-1", "a-main-2"]),
    Case("running containers are never evictable and do not count",
         [ctr("a", "main", 1), ctr("a", "main", 2, RUNNING)], []),
    Case("a created (not yet started) container is not dead",
         [ctr("a", "main", 1), ctr("a", "main", 2, CREATED), ctr("a", "main", 3, CREATED)],
         []),
    Case("an unknown-state container is dead",
         [ctr("a", "main", 1, UNKNOWN), ctr("a", "main", 2)], ["a-main-1"]),
    Case("containers younger than the minimum age stay",
         [ctr("a", "main", NOW - 5), ctr("a", "main", NOW - 50), ctr("a", "main", NOW - 60)],
         ["a-main-9940"], ContainerGCPolicy(min_age=30.0)),
    Case("each container of a pod is its own unit",
         [ctr("a", "x", 1), ctr("a", "x", 2), ctr("a", "y", 1), ctr("a", "y", 2)],
         ["a-x-1", "a-y-1"]),
    Case("max per container -1: no per-container limit",
         [ctr("a", "main", 1), ctr("a", "main", 2)], [],
         ContainerGCPolicy(max_per_pod_container=-1)),
    Case("max per container 2", [ctr("a", "main", t) for t in (1, 2, 3, 4)],
         ["a-main-1", "a-main-2"], ContainerGCPolicy(max_per_pod_container=2)),
    Case("every dead container of a deleted pod goes, first",
         [ctr("z", "main", 1), ctr("z", "main", 2), ctr("a", "main", 3)],
         ["z-main-1", "z-main-2"]),
    Case("a deleted pod keeps the per-container limit until every source has spoken",
         [ctr("z", "main", 1), ctr("z", "main", 2)], ["z-main-1"],
         pods=PodsForGC(sources_ready=False)),
    Case("a terminated pod still wanted keeps its newest dead instance",
         [ctr("c", "main", 1), ctr("c", "main", 2)], ["c-main-1"],
         pods=PodsForGC((PodUID("c"),), (), True)),
    Case("a reclaim takes every dead container of a terminated pod",
         [ctr("c", "main", 1), ctr("c", "main", 2), ctr("a", "main", 3)],
         ["c-main-1", "c-main-2"], pods=PodsForGC((PodUID("a"), PodUID("c")), (PodUID("a"),),
                                                  True), reclaim=True),
    Case("max containers: units cut evenly, at least one each",
         [ctr(p, "main", t) for p in "abc" for t in (1, 2)],
         ["a-main-1", "b-main-1", "c-main-1"],
         ContainerGCPolicy(max_per_pod_container=-1, max_containers=4)),
    Case("max containers below the number of units: then the oldest of all go",
         [ctr("a", "main", 5), ctr("b", "main", 2), ctr("c", "main", 9)],
         ["b-main-2", "a-main-5"], ContainerGCPolicy(max_containers=1)),
    Case("max containers 0: every dead container goes",
         [ctr("a", "main", 1), ctr("b", "main", 2)], ["a-main-1", "b-main-2"],
         ContainerGCPolicy(max_containers=0)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_which_containers_go(case: Case) -> None:
    plan = plan_container_gc(case.containers, (), (), case.pods, case.policy, NOW,
                             evict_non_deleted=case.reclaim)
    assert [r.container.id for r in plan.containers] == case.removed


def test_removals_say_why() -> None:
    plan = plan_container_gc([ctr("z", "main", 1), ctr("a", "main", 1), ctr("a", "main", 2)],
                             (), (), LIVE, ContainerGCPolicy(), NOW)
    assert [(r.container.id, r.reason) for r in plan.containers] == [
        ("z-main-1", RemovalReason.POD_GONE), ("a-main-1", RemovalReason.MAX_PER_CONTAINER)]


@dataclass
class SandboxCase:
    name: str
    sandboxes: list[GCSandbox]
    removed: list[str]
    containers: list[GCContainer] = field(default_factory=list)
    pods: PodsForGC = LIVE


SANDBOX_CASES = [
    SandboxCase("a live pod's only sandbox stays, ready or not", [sb("a", 1)], []),
    SandboxCase("a live pod keeps its newest sandbox; older inactive ones go",
                [sb("a", 1), sb("a", 2), sb("a", 3)], ["sb-a-1", "sb-a-2"]),
    SandboxCase("an older sandbox that is ready stays",
                [sb("a", 1, ready=True), sb("a", 2)], []),
    SandboxCase("an older sandbox that still has containers stays",
                [sb("a", 1), sb("a", 2)], [], [ctr("a", "main", 1, sandbox="sb-a-1")]),
    SandboxCase("a gone pod's inactive sandboxes all go",
                [sb("z", 1), sb("z", 2)], ["sb-z-1", "sb-z-2"]),
    SandboxCase("a gone pod's ready sandbox stays (the killer stops it first)",
                [sb("z", 1, ready=True)], []),
    SandboxCase("a gone pod's sandbox with containers left stays this round",
                [sb("z", 1)], [], [ctr("z", "main", 1, sandbox="sb-z-1")]),
    SandboxCase("before every source has spoken no pod counts as gone",
                [sb("z", 1), sb("z", 2)], ["sb-z-1"], pods=PodsForGC(sources_ready=False)),
]


@pytest.mark.parametrize("case", SANDBOX_CASES, ids=[c.name for c in SANDBOX_CASES])
def test_which_sandboxes_go(case: SandboxCase) -> None:
    plan = plan_container_gc(case.containers, case.sandboxes, (), case.pods,
                             ContainerGCPolicy(), NOW)
    assert [r.sandbox.id for r in plan.sandboxes] == case.removed


def test_log_directories_of_gone_pods_go_once_sources_are_ready() -> None:
    dirs = ["default_web_a", "kube-system_dns_z", "ns_with_underscores_in_name_y"]
    plan = plan_container_gc((), (), dirs, LIVE, ContainerGCPolicy(), NOW)
    assert plan.log_dirs == ("kube-system_dns_z", "ns_with_underscores_in_name_y")
    early = plan_container_gc((), (), dirs, PodsForGC(sources_ready=False),
                              ContainerGCPolicy(), NOW)
    assert early.log_dirs == () and early.empty


def test_pod_uid_of_log_dir_is_after_the_last_underscore() -> None:
    assert pod_uid_of_log_dir("default_web_1234-abcd") == "1234-abcd"
    assert pod_uid_of_log_dir("a_b_c_d") == "d"
