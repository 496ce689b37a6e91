"""The file and HTTP config sources, against a real directory, inotify and HTTP server."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger

from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.testing import Inbox
from actors.kubelet.messages import SourceSnapshot
from actors.kubelet.sources.file import NAME as FILE_NAME
from actors.kubelet.sources.file import RELIST_TICK, FileSource
from actors.kubelet.sources.http import NAME as HTTP_NAME
from actors.kubelet.sources.http import POLL_TICK, HTTPSource
from runtime.clock import FakeClock
from runtime.pod.static import CONFIG_SOURCE
from tests.helpers import wait_for

NODE = "Node1"
INOTIFY_DEADLINE = 3.0  # generous for loaded CI; measured latency is ~20 ms


def manifest(name: str, image: str = "busybox", *, extra: str = "") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{extra}"
        f"spec:\n  containers:\n  - name: c\n    image: {image}\n"
    )


POD_LIST = (
    b'{"apiVersion": "v1", "kind": "PodList", "items": ['
    b'{"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}},'
    b'{"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}'
    b"]}"
)


class Harness:
    def __init__(self) -> None:
        self.dispatch = Dispatch()
        self.supervisor = Inbox(self.dispatch, "supervisor")
        self.refs: list[Any] = []

    def snapshots(self) -> list[SourceSnapshot]:
        return self.supervisor.all(SourceSnapshot)

    def count(self) -> int:
        return self.supervisor.count()

    def last(self) -> SourceSnapshot:
        return self.snapshots()[-1]

    def wait_snapshot(self, predicate: Any, what: str, timeout: float = INOTIFY_DEADLINE) -> Any:
        def check() -> SourceSnapshot | None:
            snaps = self.snapshots()
            return snaps[-1] if snaps and predicate(snaps[-1]) else None

        return wait_for(check, timeout, what, interval=0.005)

    def start(self, actor_class: Any, *args: Any, **kwargs: Any) -> Any:
        ref = actor_class.start(self.dispatch, *args, **kwargs)
        self.dispatch.register(ref.proxy().name.get(), ref)  # as the supervisor would
        self.refs.append(ref)
        return ref

    def settle(self, ref: Any) -> None:
        """Wait until ``ref`` and then the collector have handled everything queued."""
        ref.proxy().sent.get()
        self.count()

    def stop(self) -> None:
        for ref in reversed(self.refs):
            ref.stop()
        self.supervisor.stop()


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.stop()


def names(snapshot: SourceSnapshot) -> list[str]:
    return sorted(p.metadata.name for p in snapshot.pods)


# --- the file source ---------------------------------------------------------------------


def test_initial_snapshot_skips_dot_files(harness: Harness, tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(manifest("web"))
    (tmp_path / "db.yaml").write_text(manifest("db"))
    (tmp_path / ".web.yaml.swp").write_text(manifest("hidden"))
    harness.start(FileSource, str(tmp_path), NODE, FakeClock())
    snap = harness.wait_snapshot(lambda s: True, "the first snapshot")
    assert snap.source == "file"
    assert names(snap) == ["db-node1", "web-node1"]
    assert snap.problems == ()
    assert all(p.metadata.annotations[CONFIG_SOURCE] == "file" for p in snap.pods)
    assert harness.dispatch.ref(FILE_NAME) is not None


def test_missing_directory_is_an_empty_set_then_watched(harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "manifests"
    harness.start(FileSource, str(path), NODE, FakeClock())
    first = harness.wait_snapshot(lambda s: True, "the first snapshot")
    assert first.pods == () and first.problems == ()
    path.mkdir()
    (path / "web.yaml").write_text(manifest("web"))
    harness.wait_snapshot(lambda s: names(s) == ["web-node1"], "the pod of a new directory")
    # The watch has moved to the directory: later files are seen too.
    (path / "db.yaml").write_text(manifest("db"))
    harness.wait_snapshot(lambda s: len(s.pods) == 2, "a second file in the new directory")


def test_add_edit_delete_seen_through_inotify(harness: Harness, tmp_path: Path) -> None:
    (tmp_path / "db.yaml").write_text(manifest("db"))
    harness.start(FileSource, str(tmp_path), NODE, FakeClock())
    harness.wait_snapshot(lambda s: names(s) == ["db-node1"], "the first snapshot")

    started = time.monotonic()
    (tmp_path / "web.yaml").write_text(manifest("web"))
    added = harness.wait_snapshot(lambda s: "web-node1" in names(s), "an added manifest")
    latency = time.monotonic() - started
    old_uid = next(p.uid for p in added.pods if p.metadata.name == "web-node1")

    (tmp_path / "web.yaml").write_text(manifest("web", image="busybox:1.36"))
    edited = harness.wait_snapshot(
        lambda s: old_uid not in {p.uid for p in s.pods} and "web-node1" in names(s),
        "an edited manifest (new UID)",
    )
    new = next(p for p in edited.pods if p.metadata.name == "web-node1")
    assert new.spec.containers[0].image == "busybox:1.36"
    assert len(edited.pods) == 2

    (tmp_path / "web.yaml").unlink()
    harness.wait_snapshot(lambda s: names(s) == ["db-node1"], "a deleted manifest")
    print(f"inotify add latency: {latency * 1000:.1f} ms")
    assert latency < INOTIFY_DEADLINE


def test_broken_edit_is_a_problem_and_the_last_good_pod_stays(
    harness: Harness, tmp_path: Path
) -> None:
    web = tmp_path / "web.yaml"
    web.write_text(manifest("web"))
    (tmp_path / "db.yaml").write_text(manifest("db"))
    harness.start(FileSource, str(tmp_path), NODE, FakeClock())
    harness.wait_snapshot(lambda s: len(s.pods) == 2, "the first snapshot")

    web.write_text(manifest("web").replace("    image: busybox\n", ""))
    # Waits for the broken field's problem, not any: the watcher's first listing (once its
    # watch is in place) may read the file while write_text has it empty ("no pod in the
    # file"), and the problem the edit makes comes with the listing after.
    snap = harness.wait_snapshot(
        lambda s: [p.path for p in s.problems] == ["spec.containers[0].image"],
        "a problem for the broken file")
    (problem,) = snap.problems
    assert problem.source == str(web)
    assert problem.path == "spec.containers[0].image"
    # A typo must not stop a running pod: the file's last good version stays.
    assert names(snap) == ["db-node1", "web-node1"]

    web.write_text(manifest("web"))
    fixed = harness.wait_snapshot(lambda s: not s.problems, "the repaired file")
    assert names(fixed) == ["db-node1", "web-node1"]

    web.write_text(manifest("web").replace("    image: busybox\n", ""))
    harness.wait_snapshot(lambda s: bool(s.problems), "the file broken again")
    web.unlink()  # deleting a broken file does remove its pod
    gone = harness.wait_snapshot(lambda s: not s.problems and names(s) == ["db-node1"],
                                 "the deleted file's pod to go")
    assert names(gone) == ["db-node1"]


def test_relist_sends_only_changes_and_logs_problems_once(
    harness: Harness, tmp_path: Path
) -> None:
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING", format="{message}")
    try:
        (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {}\n")
        (tmp_path / "web.yaml").write_text(manifest("web"))
        ref = harness.start(FileSource, str(tmp_path), NODE, FakeClock(), watch=False)
        harness.wait_snapshot(lambda s: True, "the first snapshot")

        for _ in range(3):
            harness.dispatch.tell(FILE_NAME, Tick(RELIST_TICK, 0.0))
        harness.settle(ref)
        assert ref.proxy().listings.get() == 4
        assert len(harness.snapshots()) == 1
        rejected = [line for line in lines if "bad.yaml" in line]
        assert len(rejected) == 1, lines
        assert "metadata.name" in rejected[0]

        # Without a watcher only the relist notices a change.
        (tmp_path / "db.yaml").write_text(manifest("db"))
        harness.dispatch.tell(FILE_NAME, Tick(RELIST_TICK, 20.0))
        harness.settle(ref)
        assert len(harness.snapshots()) == 2
        assert names(harness.last()) == ["db-node1", "web-node1"]
    finally:
        logger.remove(sink)


def test_stop_ends_the_watcher_thread(harness: Harness, tmp_path: Path) -> None:
    ref = harness.start(FileSource, str(tmp_path), NODE, FakeClock())
    harness.wait_snapshot(lambda s: True, "the first snapshot")
    watch_name = f"watch:{tmp_path}"
    assert any(t.name == watch_name for t in threading.enumerate())
    ref.stop()
    wait_for(
        lambda: not any(t.name == watch_name for t in threading.enumerate()),
        2.0,
        "the watcher thread to end",
    )


# --- the HTTP source ---------------------------------------------------------------------


class Responses:
    """An injectable fetch: answers with whatever the test set last."""

    def __init__(self, code: int = 200, body: bytes = b"") -> None:
        self.code = code
        self.body = body
        self.error: OSError | None = None
        self.calls: list[tuple[str, float]] = []

    def __call__(self, url: str, timeout: float) -> tuple[int, bytes]:
        self.calls.append((url, timeout))
        if self.error is not None:
            raise self.error
        return self.code, self.body


URL = "http://config.example/pods"


def poll(harness: Harness, ref: Any) -> None:
    harness.dispatch.tell(HTTP_NAME, Tick(POLL_TICK, 0.0))
    harness.settle(ref)


def test_http_pod_list(harness: Harness) -> None:
    fetch = Responses(body=POD_LIST)
    harness.start(HTTPSource, URL, NODE, FakeClock(), fetch=fetch)
    snap = harness.wait_snapshot(lambda s: True, "the first snapshot")
    assert snap.source == "http"
    assert names(snap) == ["a-node1", "b-node1"]
    assert all(p.metadata.annotations[CONFIG_SOURCE] == "http" for p in snap.pods)
    assert fetch.calls == [(URL, 10.0)]


def test_http_single_pod_and_unchanged_body(harness: Harness) -> None:
    fetch = Responses(body=manifest("web").encode())
    ref = harness.start(HTTPSource, URL, NODE, FakeClock(), fetch=fetch)
    snap = harness.wait_snapshot(lambda s: True, "the first snapshot")
    assert names(snap) == ["web-node1"]
    poll(harness, ref)
    poll(harness, ref)
    assert len(fetch.calls) == 3
    assert len(harness.snapshots()) == 1


def test_http_errors_keep_the_last_good_pods(harness: Harness) -> None:
    fetch = Responses(body=POD_LIST)
    ref = harness.start(HTTPSource, URL, NODE, FakeClock(), fetch=fetch)
    good = harness.wait_snapshot(lambda s: True, "the first snapshot")

    fetch.code = 500
    poll(harness, ref)
    failed = harness.last()
    assert failed.pods == good.pods
    assert [(p.source, p.cause) for p in failed.problems] == [(URL, "HTTP 500")]
    poll(harness, ref)
    assert len(harness.snapshots()) == 2  # the same error again: nothing new

    fetch.code = 200  # the same good body again: the problem is gone
    poll(harness, ref)
    assert harness.last().problems == () and harness.last().pods == good.pods

    fetch.body = b"kind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c}]}\n"
    poll(harness, ref)
    bad = harness.last()
    assert bad.pods == good.pods
    (problem,) = bad.problems
    assert problem.path == "spec.containers[0].image"

    fetch.error = ConnectionRefusedError(111, "Connection refused")
    poll(harness, ref)
    assert harness.last().pods == good.pods
    assert "cannot fetch" in harness.last().problems[0].cause


def test_http_nothing_sent_before_the_first_good_body(harness: Harness) -> None:
    fetch = Responses(code=503)
    ref = harness.start(HTTPSource, URL, NODE, FakeClock(), fetch=fetch)
    harness.settle(ref)
    assert harness.snapshots() == []
    fetch.code, fetch.body = 200, manifest("web").encode()
    poll(harness, ref)
    assert names(harness.last()) == ["web-node1"]


def test_http_empty_body_is_an_empty_set(harness: Harness) -> None:
    fetch = Responses(body=b"")
    ref = harness.start(HTTPSource, URL, NODE, FakeClock(), fetch=fetch)
    harness.settle(ref)
    (snap,) = harness.snapshots()
    assert snap.pods == ()
    assert "zero-length" in snap.problems[0].cause


class _Server:
    """A real HTTP server on 127.0.0.1 (ephemeral port) answering a settable response."""

    def __init__(self) -> None:
        self.code = 200
        self.body = b""
        self.requests = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests += 1
                self.send_response(server.code)
                self.send_header("Content-Length", str(len(server.body)))
                self.end_headers()
                self.wfile.write(server.body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/pods"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.close()


def test_http_against_a_real_server(harness: Harness, server: _Server) -> None:
    server.body = POD_LIST
    ref = harness.start(HTTPSource, server.url, NODE, FakeClock())
    snap = harness.wait_snapshot(lambda s: True, "the first snapshot")
    assert names(snap) == ["a-node1", "b-node1"]
    uids = {p.uid for p in snap.pods}

    poll(harness, ref)  # unchanged body
    assert server.requests == 2 and len(harness.snapshots()) == 1

    server.body = manifest("web").encode()  # a single pod
    poll(harness, ref)
    assert names(harness.last()) == ["web-node1"]

    server.code, server.body = 404, b"not found"
    poll(harness, ref)
    assert names(harness.last()) == ["web-node1"]
    assert harness.last().problems[0].cause == "HTTP 404"

    server.code, server.body = 200, b"{not yaml: ["
    poll(harness, ref)
    assert names(harness.last()) == ["web-node1"]
    assert harness.last().problems and harness.last().problems[0].source == server.url

    server.body = POD_LIST
    poll(harness, ref)
    assert {p.uid for p in harness.last().pods} == uids  # UIDs stable for the same URL
    assert harness.last().problems == ()


def test_http_unreachable_server_is_a_problem(harness: Harness) -> None:
    # A port nothing listens on: bind one, close it, use it.
    s = _Server()
    url = s.url
    s.close()
    ref = harness.start(HTTPSource, url, NODE, FakeClock(), timeout=2.0)
    harness.settle(ref)
    assert harness.snapshots() == []  # no good body yet: nothing sent
    assert ref.proxy().fetches.get() == 1


def test_directory_removed_and_recreated(harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "manifests"
    path.mkdir()
    (path / "web.yaml").write_text(manifest("web"))
    harness.start(FileSource, str(path), NODE, FakeClock())
    harness.wait_snapshot(lambda s: names(s) == ["web-node1"], "the first snapshot")
    (path / "web.yaml").unlink()
    path.rmdir()
    harness.wait_snapshot(lambda s: s.pods == (), "the pods of a removed directory gone")
    path.mkdir()
    (path / "db.yaml").write_text(manifest("db"))
    harness.wait_snapshot(lambda s: names(s) == ["db-node1"], "a recreated directory's pod")


def test_an_edit_that_keeps_the_manifests_own_uid_is_sent(harness: Harness,
                                                            tmp_path: Path) -> None:
    """A manifest with metadata.uid keeps it through an edit (upstream's file source
    keeps a set UID): the edited pod must still be sent, as an update of the same UID."""
    path = tmp_path / "web.yaml"
    path.write_text(manifest("web", extra="  uid: fixed-uid\n"))
    harness.start(FileSource, str(tmp_path), NODE, FakeClock())
    harness.wait_snapshot(lambda s: [p.uid for p in s.pods] == ["fixed-uid"], "the pod")
    path.write_text(manifest("web", image="busybox:1.36", extra="  uid: fixed-uid\n"))
    edited = harness.wait_snapshot(
        lambda s: [p.spec.containers[0].image for p in s.pods] == ["busybox:1.36"],
        "the edited pod")
    assert [p.uid for p in edited.pods] == ["fixed-uid"]
