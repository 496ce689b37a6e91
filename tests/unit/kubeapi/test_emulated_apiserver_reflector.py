"""The reflector against the emulated API server: list then watch with the node's field
selector, whole-set snapshots, bookmarks advancing the version, a cut stream reopened
without a relist, 410 answered by a relist after a back-off, a partition backed off and
recovered; and the back-off itself, client-go's numbers, in virtual time."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from runtime import errors
from runtime.clock import FakeClock
from runtime.kubeapi.client import PODS, KubeClient
from runtime.kubeapi.reflector import Backoff, Reflector, Snapshot
from tests.apiserver import EmulatedAPIServer
from tests.helpers import wait_for


def _pod(name: str, node: str = "n1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}}


class Recorder:
    """Collects snapshots, and the back-off delays the reflector asks to wait (waiting
    only a moment for each, so the test runs in real time but short)."""

    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []
        self.delays: list[float] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def on_snapshot(self, snapshot: Snapshot) -> None:
        with self.lock:
            self.snapshots.append(snapshot)

    def wait(self, seconds: float) -> bool:
        with self.lock:
            self.delays.append(seconds)
        return self.stop.wait(0.02)

    def names(self) -> list[str]:
        with self.lock:
            last = self.snapshots[-1] if self.snapshots else None
        return [] if last is None else [str(o["metadata"]["name"]) for o in last.items]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def reflector(client: KubeClient, recorder: Recorder) -> Iterator[Reflector]:
    ref = Reflector(client, PODS, recorder.on_snapshot, field_selector="spec.nodeName=n1",
                    wait=recorder.wait, rng=random.Random(1), name="pods of n1")
    yield ref
    recorder.stop.set()
    ref.stop()


def test_emulated_apiserver_reflector_lists_then_watches_the_nodes_pods(
        client: KubeClient, reflector: Reflector, recorder: Recorder) -> None:
    client.create(PODS, _pod("before"), "default")
    client.create(PODS, _pod("elsewhere", node="n2"), "default")
    reflector.start()
    wait_for(lambda: recorder.names() == ["before"], 10, "the listed pod")
    first = recorder.snapshots[0]
    assert first.relisted and first.resource_version
    client.create(PODS, _pod("after"), "default")
    wait_for(lambda: recorder.names() == ["after", "before"], 10, "the watched pod")
    assert not recorder.snapshots[-1].relisted
    client.delete(PODS, "before", "default", grace_period_seconds=0)
    wait_for(lambda: recorder.names() == ["after"], 10, "the deletion")
    assert reflector.lists == 1 and reflector.watches == 1


def test_emulated_apiserver_reflector_bookmarks_advance_the_version_without_snapshots(
        client: KubeClient, reflector: Reflector, recorder: Recorder) -> None:
    reflector.start()
    wait_for(lambda: recorder.snapshots, 10, "the first list")
    client.create(PODS, _pod("elsewhere", node="n2"), "default")  # not ours: no event
    listed = int(recorder.snapshots[0].resource_version)
    wait_for(lambda: int(reflector.last_sync_resource_version or 0) > listed, 10,
             "a bookmark past the other node's pod")
    assert len(recorder.snapshots) == 1


def test_emulated_apiserver_reflector_reopens_a_cut_watch_without_relisting(
        client: KubeClient, server: EmulatedAPIServer, reflector: Reflector,
        recorder: Recorder) -> None:
    reflector.start()
    wait_for(lambda: recorder.snapshots, 10, "the first list")
    listed = int(recorder.snapshots[0].resource_version)
    client.create(PODS, _pod("elsewhere", node="n2"), "default")
    # A bookmark first: a watch cut in under a second with no event at all is a "very
    # short watch", which upstream answers with a relist.
    wait_for(lambda: int(reflector.last_sync_resource_version) > listed, 10, "a bookmark")
    server.drop_watches("pods")
    client.create(PODS, _pod("during"), "default")
    wait_for(lambda: recorder.names() == ["during"], 10, "the pod made while cut")
    assert reflector.lists == 1 and reflector.watches >= 2


def test_emulated_apiserver_reflector_relists_after_410(
        client: KubeClient, server: EmulatedAPIServer, reflector: Reflector,
        recorder: Recorder) -> None:
    reflector.start()
    wait_for(lambda: server.open_watches("pods") == 1, 10, "the watch")
    client.create(PODS, _pod("p"), "default")
    wait_for(lambda: recorder.names() == ["p"], 10, "the pod")
    server.compact()
    server.expire_watches("pods")
    wait_for(lambda: reflector.lists == 2, 10, "the relist")
    assert recorder.snapshots[-1].relisted and recorder.names() == ["p"]
    assert 0.8 <= recorder.delays[0] < 1.6  # client-go's first back-off, jitter 1.0


def test_emulated_apiserver_reflector_backs_off_through_a_partition(
        client: KubeClient, server: EmulatedAPIServer, reflector: Reflector,
        recorder: Recorder) -> None:
    reflector.start()
    wait_for(lambda: server.open_watches("pods") == 1, 10, "the watch")
    server.partition()
    wait_for(lambda: len(recorder.delays) >= 4, 10, "back-offs while partitioned")
    with recorder.lock:
        delays = list(recorder.delays[:4])
    for i, delay in enumerate(delays):
        assert 0.8 * 2 ** i <= delay < 1.6 * 2 ** i, delays
    assert reflector.lists == 1  # refused watches are retried without a relist
    server.heal()
    client.create(PODS, _pod("after"), "default")
    wait_for(lambda: recorder.names() == ["after"], 10, "the pod after the heal")


def test_emulated_apiserver_reflector_watch_429_waits_retry_after_without_relist(
        client: KubeClient, server: EmulatedAPIServer, reflector: Reflector,
        recorder: Recorder) -> None:
    """A watch answered 429 with Retry-After is asked again after it by the client (as
    client-go's Request.Watch); past the client's retries the reflector backs off; never
    a relist."""
    rule = server.faults.inject(verb="watch", resource="pods", code=429, retry_after=1,
                                times=2)
    reflector.start()
    wait_for(lambda: rule.hits == 2, 10, "two refused watches")
    client.create(PODS, _pod("p"), "default")
    wait_for(lambda: recorder.names() == ["p"], 10, "the pod")
    assert reflector.lists == 1 and recorder.delays == []
    assert client.transport.retries == 2


def test_backoff_is_client_go_exponential_backoff_manager() -> None:
    clock = FakeClock()
    backoff = Backoff(clock, random.Random(7))
    delays = [backoff.next() for _ in range(8)]
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    for delay, base in zip(delays, bases, strict=True):
        assert base <= delay < 2 * base
    clock.step(121)  # quiet for longer than 2 min: back to the start
    assert 0.8 <= backoff.next() < 1.6


def test_reflector_watch_timeout_is_five_to_ten_minutes(server: EmulatedAPIServer,
                                                        client: KubeClient,
                                                        recorder: Recorder) -> None:
    asked: list[int | None] = []
    real_watch = client.watch

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("timeout_seconds"))
        recorder.stop.set()
        return real_watch(*args, **kwargs)

    client.watch = spy  # type: ignore[method-assign]
    ref = Reflector(client, PODS, recorder.on_snapshot, wait=recorder.wait,
                    rng=random.Random(3))
    ref.start()
    wait_for(lambda: asked, 10, "a watch")
    ref.stop()
    assert asked[0] is not None and 300 <= asked[0] < 600


def test_emulated_apiserver_relist_from_a_version_the_server_has_not_seen(
        client: KubeClient, reflector: Reflector, recorder: Recorder) -> None:
    # As after a reconnect to a server that is behind: it waits 3 s, answers 504 "Too large
    # resource version", and the reflector lists again from storage.
    client.create(PODS, _pod("p"), "default")
    reflector.last_sync_resource_version = "999999"
    reflector._list()
    assert recorder.names() == ["p"] and reflector.lists == 1
    assert int(reflector.last_sync_resource_version) < 999999


class _ExpiringClient(KubeClient):
    """Answers the first LIST asking for a version with 410 Expired."""

    asked: list[str]

    def list_all(self, *args: Any, **kwargs: Any) -> Any:
        self.asked.append(kwargs.get("resource_version", ""))
        if len(self.asked) == 1:
            raise errors.APIGone("too old resource version: 5 (9)", code=410,
                                 reason="Expired")
        return super().list_all(*args, **kwargs)


def test_emulated_apiserver_relist_after_expired_list_is_a_consistent_read(
        client: KubeClient, recorder: Recorder) -> None:
    expiring = _ExpiringClient(client.transport)
    expiring.asked = []
    ref = Reflector(expiring, PODS, recorder.on_snapshot, wait=recorder.wait)
    ref.last_sync_resource_version = "5"
    ref._list()
    assert expiring.asked == ["5", ""]
    assert recorder.snapshots[-1].relisted


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_emulated_apiserver_reflector_converges_through_random_changes_and_faults(
        client: KubeClient, server: EmulatedAPIServer, reflector: Reflector,
        recorder: Recorder, seed: int) -> None:
    """Seeded changes (adds, label updates, deletes, pods moving between nodes) mixed with
    cut watches, forced 410s and compactions: the last snapshot always ends equal to what
    the server holds for the node, object by object and version by version."""
    rng = random.Random(seed)
    reflector.start()
    names = [f"p{i}" for i in range(8)]
    for step in range(60):
        name = rng.choice(names)
        action = rng.random()
        try:
            if action < 0.35:
                client.create(PODS, _pod(name, node=rng.choice(["n1", "n1", "n2"])),
                              "default")
            elif action < 0.65:
                client.patch(PODS, name, {"metadata": {"labels": {"step": str(step)}}},
                             namespace="default")
            elif action < 0.85:
                client.delete(PODS, name, "default", grace_period_seconds=0)
            elif action < 0.9:
                server.drop_watches("pods")
            elif action < 0.95:
                server.compact()
                server.expire_watches("pods")
            else:
                server.compact()
        except (errors.APINotFound, errors.APIAlreadyExists):
            pass

    def converged() -> bool:
        held = client.list(PODS, field_selector="spec.nodeName=n1").items
        want = {(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in held}
        with recorder.lock:
            last = recorder.snapshots[-1] if recorder.snapshots else None
        got = set() if last is None else {
            (o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in last.items}
        return got == want

    wait_for(converged, 20, "the reflector to hold what the server holds")
