"""What a restarted kubelet costs in CRI calls to adopt its running pods, on the fake runtime.

A kubelet starts PODS pods and stops (its pods keep running); a second one starts on the
same runtime and the same pods come back from its source. The PLEG's first relist lists
the whole runtime once (ListPodSandbox, ListContainers), and each pod's first sync reads
its status from what that relist listed (Relisted.listings, carried to the pod's worker
in its first UpdatePod): one PodSandboxStatus and one ContainerStatus per pod, no listing
per pod, as upstream's pod workers read the cache the PLEG's relist filled. No container
is made, started or stopped; a container that died while the kubelet was down is still
restarted; and the restarted kubelet's trace replays without divergence.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.core.trace.names import MESSAGES
from actors.core.trace.reader import read_trace
from actors.core.trace.replay import format_report, replay
from actors.kubelet.pleg import take_snapshot
from actors.kubelet.trace import KubeletWorld
from runtime.clock import FakeClock
from runtime.cri.types import (
    ContainerConfig,
    ContainerMetadata,
    ContainerState,
    ImageSpec,
    PodSandboxConfig,
    PodSandboxMetadata,
)
from runtime.ids import ContainerID, PodUID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.podstatus import get_pod_status
from runtime.testing.fake_runtime import FakeRuntime
from tests.traces.scenarios import RecordedNode, pod

PODS = 20

RELIST = {"list_pod_sandbox": 1, "list_containers": 1}
"""The PLEG's first relist: the whole runtime, listed once."""
ADOPT_ONE = {"pod_sandbox_status": 1, "container_status": 1}
"""Each adopted pod's first sync: the status of its sandbox and of its container, from
what the relist listed (without the listing: 4 calls, the two filtered listings too)."""


def running(node: RecordedNode) -> dict[str, ContainerID]:
    """The running container of each pod, by pod UID."""
    return {c.labels["io.kubernetes.pod.uid"]: c.id for c in node.fake.list_containers()
            if c.state is ContainerState.RUNNING}


@pytest.fixture
def scratch() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="adopt-"))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def first_kubelet(tmp_path: Path, scratch: Path) -> RecordedNode:
    """A kubelet that started PODS pods, stopped with them running."""
    node = RecordedNode(tmp_path / "first", scratch)
    try:
        node.snapshot(*(pod(f"u{i}", f"web-{i}") for i in range(PODS)))
        node.until("the pods to run", lambda: len(running(node)) == PODS)
        assert node.settle()
    finally:
        node.close()
    return node


def restart(first: RecordedNode, tmp_path: Path, scratch: Path, snapshot_first: bool = False
            ) -> RecordedNode:
    """The second kubelet on the same runtime: its PLEG relists (at start, as the daemon's
    first tick does), then its source tells the same pods; ``snapshot_first``: the source
    tells them before the first relist is in (the race of a restart)."""
    node = RecordedNode(tmp_path / "second", scratch, restart_of=first)
    node.fake.clear_calls()
    pods = tuple(pod(f"u{i}", f"web-{i}") for i in range(PODS))
    if snapshot_first:
        node.snapshot(*pods)
        assert node.settle()
    node.advance(0.0)  # the timers due at start: the PLEG's first relist among them
    assert node.settle()
    if not snapshot_first:
        node.snapshot(*pods)
        assert node.settle()
    return node


def adopt_counts(node: RecordedNode) -> Counter[str]:
    counts = Counter(c.method for c in node.fake.calls)
    counts.pop("status", None)  # the runtime monitor's check, due at start too
    return counts


def adopt_once() -> Counter[str]:
    """The calls of adopting PODS running pods: one relist, their status calls."""
    want = Counter(RELIST)
    for method, n in ADOPT_ONE.items():
        want[method] += n * PODS
    return want


def test_adopting_running_pods_lists_the_runtime_once(tmp_path: Path, scratch: Path) -> None:
    first = first_kubelet(tmp_path, scratch)
    before = running(first)
    second = restart(first, tmp_path, scratch)
    try:
        assert adopt_counts(second) == adopt_once()
        assert running(second) == before  # every container kept: none made, none stopped
    finally:
        second.close()
    report = replay(read_trace(tmp_path / "second"), KubeletWorld())
    assert report.ok, format_report(report)


def test_a_snapshot_before_the_first_relist_waits_for_it(tmp_path: Path, scratch: Path
                                                         ) -> None:
    """The file source's snapshot reaches the sync loop before the PLEG's first relist:
    the workers' first syncs wait for the relist and adopt from its listings (upstream's
    workers wait on a pod cache newer than their start), so the calls are those of the
    other order."""
    first = first_kubelet(tmp_path, scratch)
    before = running(first)
    second = restart(first, tmp_path, scratch, snapshot_first=True)
    try:
        assert adopt_counts(second) == adopt_once()
        assert running(second) == before
    finally:
        second.close()
    assert all(updates_with_listing(tmp_path / "second").values())
    report = replay(read_trace(tmp_path / "second"), KubeletWorld())
    assert report.ok, format_report(report)


def test_a_container_that_died_while_down_is_restarted(tmp_path: Path, scratch: Path) -> None:
    """The listing says which containers there are; their states come from the status
    calls, so an exit while the kubelet was down is seen and acted on as before."""
    first = first_kubelet(tmp_path, scratch)
    before = running(first)
    first.fake.exit_container(before["u0"], 1)
    second = restart(first, tmp_path, scratch)
    try:
        second.until("u0 to run again", lambda: "u0" in running(second))
        after = running(second)
        assert after["u0"] != before["u0"]
        assert {u: c for u, c in after.items() if u != "u0"} == \
            {u: c for u, c in before.items() if u != "u0"}
        restarted = next(c for c in second.fake.list_containers() if c.id == after["u0"])
        assert restarted.annotations["io.kubernetes.container.restartCount"] == "1"
    finally:
        second.close()
    report = replay(read_trace(tmp_path / "second"), KubeletWorld())
    assert report.ok, format_report(report)


def test_a_pod_new_at_start_lists_nothing_before_its_sandbox(tmp_path: Path,
                                                             scratch: Path) -> None:
    """A pod the first relist did not show has an empty listing: its first sync makes its
    sandbox without listing the runtime for it."""
    node = RecordedNode(tmp_path / "trace", scratch)
    try:
        node.advance(0.0)
        assert node.settle()
        node.fake.clear_calls()
        node.snapshot(pod("u1", "web"))
        assert node.settle()
        methods = [c.method for c in node.fake.calls]
        # Before the sandbox only its image's check (asked beside RunPodSandbox); no
        # listing of the runtime. Then the PLEG relists: the sync asks.
        before = methods[:methods.index("run_pod_sandbox")]
        assert set(before) <= {"image_status"}, before
    finally:
        node.close()
    report = replay(read_trace(tmp_path / "trace"), KubeletWorld())
    assert report.ok, format_report(report)


def updates_with_listing(directory: Path) -> dict[str, bool]:
    """Per pod UID: whether its worker's first UpdatePod carried a listing."""
    out: dict[str, bool] = {}
    for record in read_trace(directory).messages():
        if MESSAGES.short(record["type"]) == "UpdatePod":
            uid = record["body"]["pod"]["metadata"]["uid"]
            out.setdefault(uid, record["body"].get("listing") is not None)
    return out


def test_every_first_update_carries_a_listing(tmp_path: Path, scratch: Path) -> None:
    """No worker syncs before the first relist, so the early pod's first update waits for
    it and carries its listing; the late pod, admitted once every source has spoken (and
    housekeeping ran), which no relist showed and no worker had, gets an empty one (the
    PLEG's cache never saw it)."""
    node = RecordedNode(tmp_path / "trace", scratch)
    try:
        node.snapshot(pod("early", "early"))  # before the first relist: a worker syncs
        assert node.settle()
        node.advance(0.0)  # the PLEG's first relist, with its listings
        assert node.settle()
        node.advance(2.0)  # housekeeping, the file source heard: the listings go
        node.snapshot(pod("early", "early"), pod("late", "late"))
        assert node.settle()
    finally:
        node.close()
    relists = [r["body"].get("listings") for r in read_trace(tmp_path / "trace").messages()
               if MESSAGES.short(r["type"]) == "Relisted"]
    assert relists[0] is not None and all(r is None for r in relists[1:])
    assert updates_with_listing(tmp_path / "trace") == {"early": True, "late": True}
    report = replay(read_trace(tmp_path / "trace"), KubeletWorld())
    assert report.ok, format_report(report)


def test_a_snapshot_of_many_pods_starts_every_worker_before_any_syncs(
        tmp_path: Path, scratch: Path) -> None:
    """The sync loop holds what it sends while it handles a snapshot: each worker's thread
    starts while the others are idle, not busy with their first syncs; the updates then
    go out in the order they were made (a replay compares that order)."""
    first = first_kubelet(tmp_path, scratch)
    restart(first, tmp_path, scratch).close()
    records = read_trace(tmp_path / "second").records
    spawns = [i for i, r in enumerate(records)
              if r["k"] == "spawn" and r["actor"].startswith("pod/")]
    updates = [i for i, r in enumerate(records) if r["k"] == "msg"
               and MESSAGES.short(r["type"]) == "UpdatePod"]
    assert len(spawns) == len(updates) == PODS
    assert max(spawns) < min(updates)


def test_a_first_relists_listing_is_what_the_label_filtered_listings_find() -> None:
    """Per pod, the sandboxes and containers get_pod_status would list with its label
    filter: the same status comes of the listing, with two calls fewer."""
    fake = FakeRuntime(FakeClock(), images=["img"])
    for uid in ("a", "b"):
        labels = {L.POD_UID: uid, L.POD_NAME: uid, L.POD_NAMESPACE: "default"}
        config = PodSandboxConfig(PodSandboxMetadata(uid, uid, "default"), labels=labels)
        sandbox = fake.run_pod_sandbox(config)
        made = fake.create_container(sandbox, ContainerConfig(
            ContainerMetadata("c"), ImageSpec("img"), labels={**labels, L.CONTAINER_NAME: "c"}),
            config)
        fake.start_container(made)
    # A sandbox without the kubelet's UID label is a pod's to the PLEG, not to the filter.
    fake.run_pod_sandbox(PodSandboxConfig(PodSandboxMetadata("x", "unlabelled", "default")))
    assert take_snapshot(fake).listings == ()  # only a first relist lists
    listings = {p.uid: p for p in take_snapshot(fake, with_listings=True).listings}
    assert set(listings) == {"a", "b"}
    for uid, listing in listings.items():
        fake.clear_calls()
        listed = get_pod_status(fake, PodUID(uid), uid, "default", listing=listing)
        assert [c.method for c in fake.calls] == ["pod_sandbox_status", "container_status"]
        assert listed == get_pod_status(fake, PodUID(uid), uid, "default")


def create_listings(directory: Path, uid: str) -> list[object]:
    """The listing of each CREATE update to ``uid``'s workers, in order."""
    return [r["body"].get("listing") for r in read_trace(directory).messages()
            if MESSAGES.short(r["type"]) == "UpdatePod" and r["body"]["kind"] == "create"
            and r["body"]["pod"]["metadata"]["uid"] == uid]


def relists_since_forgotten(directory: Path, uid: str) -> list[int | None]:
    """For each CREATE update to ``uid``'s workers, in order: how many relists reached the
    sync loop since it last forgot a worker of ``uid`` (its PodForgotten to the status
    manager; None: it forgot none before)."""
    records = list(read_trace(directory).messages())
    # The sync loop's mailbox is first in, first out: a relist counts when it was sent
    # after the message whose handling forgot the worker (the PodForgotten's parent).
    forgotten_at = [r["parent"] for r in records if MESSAGES.short(r["type"]) == "PodForgotten"
                    and r["to"] == "status" and r["body"]["uid"] == uid]
    relists = [r["id"] for r in records
               if MESSAGES.short(r["type"]) == "Relisted" and r["to"] == "supervisor"]
    found: list[int | None] = []
    for r in records:
        if (MESSAGES.short(r["type"]) == "UpdatePod" and r["body"]["kind"] == "create"
                and r["body"]["pod"]["metadata"]["uid"] == uid):
            before = [f for f in forgotten_at if f < r["id"]]
            found.append(None if not before else
                         sum(1 for i in relists if before[-1] < i < r["parent"]))
    return found


def test_a_pod_back_under_the_uid_of_a_forgotten_worker_lists_until_two_relists_are_in(
        tmp_path: Path, scratch: Path) -> None:
    """An empty listing only for a pod no relist shows and no worker had since a
    relist listed the runtime after that worker's last call: a pod put back under the UID
    of one just removed lists for itself until two relists are in, then not."""
    node = RecordedNode(tmp_path / "trace", scratch)
    try:
        node.snapshot()
        node.advance(2.0)  # the first relist, housekeeping: its listings gone
        for _ in range(2):
            node.snapshot(pod("u1", "web"))
            assert node.settle()
            node.snapshot()
            node.until("u1's worker forgotten", lambda: not node.fake.list_pod_sandbox())
        node.advance(2.0)  # two relists
        node.snapshot(pod("u1", "web"))
        assert node.settle()
    finally:
        node.close()
    listings = create_listings(tmp_path / "trace", "u1")
    relists = relists_since_forgotten(tmp_path / "trace", "u1")
    assert len(listings) == len(relists) == 3
    empty = {"uid": "u1", "sandboxes": [], "containers": []}
    assert listings[0] == empty and relists[0] is None
    # Back soon after its worker was forgotten: how many relists came between depends on
    # the runtime's events; the rule decides the listing from that count.
    for listing, since in zip(listings[1:], relists[1:], strict=True):
        assert since is not None
        assert listing == (None if since < 2 else empty), (listing, since)
    assert relists[2] is not None and relists[2] >= 2
    report = replay(read_trace(tmp_path / "trace"), KubeletWorld())
    assert report.ok, format_report(report)
