"""The manifest directory's watcher: inotify events handed over as they come, one
FilesChanged waiting at a time, files read only once written."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.core.dispatch import Dispatch
from actors.core.testing import Inbox
from actors.kubelet.sources.file import (
    NAME,
    WATCHED_EVENTS,
    FilesChanged,
    _Watcher,
    without_files_being_written,
)
from runtime.kuberuntime.inotify import (
    IN_CLOSE_WRITE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_MOVED_TO,
    DirectoryEvent,
    DirectoryEvents,
    parse_events,
)
from runtime.pod.static import read_manifest_dir
from tests.helpers import wait_for

DEADLINE = 5.0


class Watching:
    """A watcher on a directory, telling an inbox registered as the file source."""

    def __init__(self, directory: Path) -> None:
        self.dispatch = Dispatch()
        self.inbox = Inbox(self.dispatch, NAME)
        self.watcher = _Watcher(str(directory), None, self.dispatch, NAME)
        self.watcher.start()
        self.inbox.wait(FilesChanged, lambda m: m.paths == (), DEADLINE)  # the watch is in

    def told(self) -> list[FilesChanged]:
        return self.inbox.all(FilesChanged)

    def read_at_least(self, events: int) -> None:
        wait_for(lambda: self.watcher.events_read >= events, DEADLINE,
                 f"the watcher to read {events} events")

    def stop(self) -> None:
        self.watcher.stop()
        self.inbox.stop()


@pytest.fixture
def watching(tmp_path: Path) -> Iterator[Watching]:
    w = Watching(tmp_path)
    yield w
    w.stop()


def test_parse_events_reads_names_and_masks() -> None:
    def event(mask: int, name: bytes, padded: int) -> bytes:
        return struct.pack("iIII", 1, mask, 0, padded) + name.ljust(padded, b"\0")

    buffer = event(IN_MOVED_TO, b"web.yaml", 16) + event(IN_DELETE_SELF, b"", 0)
    assert parse_events(buffer) == (DirectoryEvent("web.yaml", IN_MOVED_TO),
                                    DirectoryEvent("", IN_DELETE_SELF))
    assert parse_events(buffer)[1].gone and DirectoryEvent("", IN_IGNORED).gone


def test_directory_events_hand_over_a_rename_and_wake(tmp_path: Path) -> None:
    events = DirectoryEvents(str(tmp_path), WATCHED_EVENTS)
    try:
        (tmp_path / ".web.yaml.tmp").write_text("x")
        os.rename(tmp_path / ".web.yaml.tmp", tmp_path / "web.yaml")
        seen: list[DirectoryEvent] = []
        while not any(e.mask & IN_MOVED_TO for e in seen):
            batch = events.read()
            assert batch is not None
            seen.extend(batch)
        assert [e.name for e in seen if e.mask & IN_MOVED_TO] == ["web.yaml"]
        assert any(e.name == ".web.yaml.tmp" and e.mask & IN_CLOSE_WRITE for e in seen)
        events.wake()
        assert events.read() is None
    finally:
        events.close()
    events.wake()  # after close: nothing is written anywhere


def test_a_rename_is_told_with_its_path_and_not_the_temporary_file(
        watching: Watching, tmp_path: Path) -> None:
    watching.watcher.taken()
    (tmp_path / ".web.yaml.tmp").write_text("x")
    os.rename(tmp_path / ".web.yaml.tmp", tmp_path / "web.yaml")
    told = watching.inbox.wait(FilesChanged, lambda m: m.paths != (), DEADLINE)
    assert told.paths == (str(tmp_path / "web.yaml"),)


def test_changes_before_the_actor_takes_a_message_up_are_not_told_again(
        watching: Watching, tmp_path: Path) -> None:
    # The "watch is in place" message is not taken up: a burst is one listing's worth.
    for i in range(5):
        (tmp_path / f"pod-{i}.yaml").write_text("x")
    watching.read_at_least(10)  # each file: IN_CREATE, IN_CLOSE_WRITE
    assert len(watching.told()) == 1
    watching.watcher.taken()
    (tmp_path / "pod-5.yaml").write_text("x")
    watching.inbox.wait(FilesChanged, lambda m: str(tmp_path / "pod-5.yaml") in m.paths,
                        DEADLINE)
    assert len(watching.told()) == 2


def test_a_file_made_empty_is_told_once_written_and_closed(
        watching: Watching, tmp_path: Path) -> None:
    watching.watcher.taken()
    path = tmp_path / "web.yaml"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        watching.read_at_least(1)  # its IN_CREATE: not told, the file is still empty
        assert len(watching.told()) == 1
        os.write(fd, b"apiVersion: v1\n")
    finally:
        os.close(fd)
    told = watching.inbox.wait(FilesChanged, lambda m: m.paths != (), DEADLINE)
    assert told.paths == (str(path),)


def test_a_symlink_made_is_told_at_once(watching: Watching, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "web.yaml").write_text("x")
    watching.read_at_least(1)  # the directory's IN_CREATE, absorbed by the untaken message
    watching.watcher.taken()
    before = watching.watcher.events_read
    os.symlink(target / "web.yaml", tmp_path / "web.yaml")
    told = watching.inbox.wait(FilesChanged, lambda m: str(tmp_path / "web.yaml") in m.paths,
                               DEADLINE)
    assert watching.watcher.events_read > before and told.paths == (str(tmp_path / "web.yaml"),)


def test_the_directory_removed_ends_the_watch(watching: Watching, tmp_path: Path) -> None:
    watched = tmp_path / "manifests"
    watched.mkdir()
    inner = _Watcher(str(watched), None, watching.dispatch, NAME)
    inner.start()
    try:
        wait_for(lambda: len(watching.told()) >= 2, DEADLINE, "the inner watch in place")
        inner.taken()
        watched.rmdir()
        watching.inbox.wait(FilesChanged, lambda m: str(watched) in m.paths, DEADLINE)
        wait_for(lambda: not inner.alive(), DEADLINE, "the watch to end")
    finally:
        inner.stop()


def _manifest(name: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n"
            "spec:\n  containers:\n  - name: c\n    image: busybox\n")


def test_a_listing_for_another_change_leaves_out_a_new_file_still_empty(
        tmp_path: Path) -> None:
    """A burst written one file after another: the listing for the first one's close
    finds the second just created, empty; it is no error until its own close says so."""
    written, empty = tmp_path / "a.yaml", tmp_path / "b.yaml"
    written.write_text(_manifest("a"))
    empty.touch()
    listing = read_manifest_dir(tmp_path, "node")
    assert [e.source for e in listing.errors] == [str(empty)]  # as read, without the rule
    told_a = without_files_being_written(listing, frozenset({str(written)}))
    assert told_a.errors == () and len(told_a.pods) == 1
    told_b = without_files_being_written(listing, frozenset({str(empty)}))
    assert [e.source for e in told_b.errors] == [str(empty)]
    empty.write_text("{not yaml")  # a broken file that is not empty stays reported
    broken = read_manifest_dir(tmp_path, "node")
    assert without_files_being_written(broken, frozenset({str(written)})).errors == \
        broken.errors != ()
