"""The file config source: a static-pod manifest directory, watched and re-listed.

Upstream's file source (pkg/kubelet/config/file*.go) lists the directory's top level,
turns each manifest into a static pod and sends the whole set (a SET) whenever inotify
reports a change, and re-lists every --file-check-frequency (20 s) in case an event was
missed. This actor does the same: it sends a SourceSnapshot("file", ...) to the supervisor
on start (always, even an empty one for a missing path, so the source becomes ready), on
each Tick("file-relist") the daemon schedules, and on each FilesChanged its watcher thread
sends. A listing identical to the last one sent (same pods, same problems) is not sent.

The watcher is a thread reading the directory's inotify events as they come
(runtime.kuberuntime.inotify.DirectoryEvents): a new manifest reaches the supervisor
within a millisecond or so, with no polling while nothing changes. It only ever tells
the actor ``FilesChanged`` through the dispatch, at most one waiting at a time (a burst
of files costs a few listings, not one each); the actor does the listing in its own
thread. A path that does not exist yet (or a single manifest file) is
watched through its parent directory; the actor moves the watch to the directory once it
appears, and restarts a watcher that died on the next listing.
"""

from __future__ import annotations

import os
import stat
import threading
from types import TracebackType
from typing import Any

from loguru import logger
from msgspec import Struct

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.trace.names import message
from actors.kubelet import names
from actors.kubelet.messages import ManifestProblem, SourceSnapshot
from runtime.clock import Clock
from runtime.errors import ManifestError
from runtime.kuberuntime.inotify import (
    IN_ATTRIB,
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_ISDIR,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    DirectoryEvent,
    DirectoryEvents,
    InotifyError,
)
from runtime.pod.model import Pod
from runtime.pod.static import ManifestDirResult, read_manifest_dir

__all__ = [
    "NAME",
    "RELIST_TICK",
    "WATCHED_EVENTS",
    "FileSource",
    "FilesChanged",
    "ProblemLog",
    "problem_from_error",
]

NAME = names.SOURCE_FILE
RELIST_TICK = names.TICK_FILE_RELIST
SOURCE = "file"

WATCHED_EVENTS = (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE
                  | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
"""What changes a listing: a file written and closed, moved in or out, made, deleted or
its mode changed (upstream's fsnotify Create, Write, Remove, Rename and Chmod); and the
directory itself going away. Not each write: a listing waits for the writer's close."""

_log = logger.bind(pod="", uid="", container="")


@message("FilesChanged")
class FilesChanged(Struct, frozen=True):
    """The watcher saw changes under the manifest path (empty: its watch is now in place)."""

    paths: tuple[str, ...]


def problem_from_error(err: ManifestError) -> ManifestProblem:
    """A ManifestError as a message value: the file, the (first) field, every cause."""
    cause = "; ".join((err.cause, *err.errors[1:]))
    if err.document is not None:
        cause = f"document {err.document}: {cause}"
    return ManifestProblem(err.source, err.path, cause)


class ProblemLog:
    """Logs each manifest problem and warning once, when it first appears.

    A problem that persists across listings is not logged again; one that goes away and
    comes back is.
    """

    def __init__(self, what: str = "static pod manifest {} rejected:") -> None:
        self._what = what
        self._problems: frozenset[ManifestProblem] = frozenset()
        self._warnings: frozenset[str] = frozenset()

    def note(self, problems: tuple[ManifestProblem, ...], warnings: tuple[str, ...]) -> None:
        """Log what is new in this listing, and remember it."""
        for problem in problems:
            if problem not in self._problems:
                field = f" {problem.path}:" if problem.path else ""
                where = self._what.format(problem.source)
                _log.warning("{}{} {}", where, field, problem.cause)
        for warning in warnings:
            if warning not in self._warnings:
                _log.warning("{}", warning)
        self._problems = frozenset(problems)
        self._warnings = frozenset(warnings)


def _watch_target(path: str) -> tuple[str, str | None] | None:
    """Which directory to watch for ``path``, and the one entry of it that matters.

    A directory is watched itself (every entry matters); a file or a missing path through
    its parent; nothing when the parent is missing too (the relist tick tries again).
    """
    if os.path.isdir(path):
        return path, None
    parent = os.path.dirname(path) or "."
    return (parent, path) if os.path.isdir(parent) else None


def _wanted(event: DirectoryEvent, directory: str, only: str | None) -> bool:
    """Whether an event of the watched directory may change the listing.

    Every entry but dot-files (editors' swap files, a writer's temporary file before its
    rename) matters; with ``only``, that one entry alone. A regular file just created
    empty is left to its IN_CLOSE_WRITE, so a listing does not read it half written; a
    directory, a symlink or a hard link made is reported at once (no write follows).
    """
    if event.gone or event.mask & IN_Q_OVERFLOW:
        return True  # the watch ended, or events were lost: list again
    path = os.path.join(directory, event.name)
    if only is not None:
        if path != only:
            return False
    elif event.name.startswith("."):
        return False
    if event.mask & IN_CREATE and not event.mask & IN_ISDIR:
        try:
            st = os.lstat(path)
        except OSError:
            return True  # gone again already: its deletion is the next event
        return not (stat.S_ISREG(st.st_mode) and st.st_size == 0)
    return True


def without_files_being_written(result: ManifestDirResult, changed: frozenset[str]
                                ) -> ManifestDirResult:
    """A listing told by a change of other files, without the errors of files still empty.

    A new file is empty from its creation until its writer writes: a listing made for
    another file's change (a burst of manifests written one after another) may find it
    so. Its own close is told with its path, and that listing reports it if it is still
    empty then (a manifest with no pod); the periodic relist reports it too.
    """
    told = {os.path.normpath(path) for path in changed}

    def being_written(source: str) -> bool:
        if os.path.normpath(source) in told:
            return False
        try:
            st = os.stat(source)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_size == 0

    errors = tuple(err for err in result.errors if not being_written(err.source))
    if len(errors) == len(result.errors):
        return result
    return ManifestDirResult(result.pods, errors, result.warnings)


class _Watcher:
    """A thread reading one directory's inotify events; tells the actor what changed.

    Each change is told at once (no debounce), but only one FilesChanged is ever waiting
    in the actor's mailbox: changes made before the actor takes it up (``taken``) are in
    the listing it then makes, so a burst of manifests costs a few listings, not one each.
    """

    def __init__(self, target: str, only: str | None, dispatch: Dispatch, to: str) -> None:
        self.target = target
        self.only = only
        self._dispatch = dispatch
        self._to = to
        self._stop = threading.Event()
        self._told = threading.Event()  # a FilesChanged is in the mailbox, not yet taken
        self._events: DirectoryEvents | None = None
        self._lock = threading.Lock()  # _events between the thread and stop()
        self.events_read = 0  # inotify events read so far (for tests)
        self._thread = threading.Thread(target=self._run, name=f"watch:{target}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def taken(self) -> None:
        """The actor took up a FilesChanged: the next change is told again."""
        self._told.clear()

    def stop(self, wait: float = 1.0) -> None:
        """Stop watching: the thread is woken and ends."""
        self._stop.set()
        with self._lock:
            if self._events is not None:
                self._events.wake()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=wait)

    def _tell(self, paths: tuple[str, ...]) -> None:
        if self._told.is_set():
            return
        self._told.set()
        self._dispatch.tell(self._to, FilesChanged(paths), sender=f"{self._to}/watch")

    def _run(self) -> None:
        try:
            events = DirectoryEvents(self.target, WATCHED_EVENTS)
        except InotifyError as err:
            self._stop.set()
            _log.warning("watching {} for manifests failed: {}", self.target, err)
            return
        with self._lock:
            self._events = events
        try:
            # The watch is in place: one listing catches files made while it started.
            self._tell(())
            while not self._stop.is_set():
                batch = events.read()
                if batch is None:
                    break
                self.events_read += len(batch)
                wanted = [e for e in batch if _wanted(e, self.target, self.only)]
                if any(e.gone for e in wanted):
                    # The directory went: this watch is over; the listing moves it.
                    self._stop.set()
                if wanted:
                    self._tell(tuple(sorted({os.path.join(self.target, e.name) if e.name
                                             else self.target for e in wanted})))
        except Exception as err:
            # The actor starts a new watcher on its next listing.
            self._stop.set()
            _log.warning("watching {} for manifests stopped: {}", self.target, err)
        finally:
            with self._lock:
                self._events = None
                events.close()


class FileSource(Actor):
    """Lists a static-pod manifest directory and sends its pods to the supervisor."""

    def __init__(
        self,
        dispatch: Dispatch,
        path: str,
        node_name: str,
        clock: Clock,
        incarnation: int = 0,
        watch: bool = True,
    ) -> None:
        super().__init__(NAME, dispatch, incarnation)
        self.path = os.path.abspath(path)
        self.node_name = node_name
        self.clock = clock
        self.watch = watch
        self._watcher: _Watcher | None = None
        self._last: tuple[tuple[Pod, ...], tuple[ManifestProblem, ...]] | None = None
        self._problem_log = ProblemLog()
        self._good: dict[str, tuple[Pod, ...]] = {}  # each file's last good pods
        self._keeping: set[str] = set()
        self.listings = 0  # how many times the directory was read (for tests and metrics)
        self.sent = 0  # how many snapshots were sent

    # --- lifecycle ------------------------------------------------------------------------

    def on_start(self) -> None:
        # The watcher tells this actor by name: make sure the name points here first.
        if self.dispatch.ref(self.name) is not self.actor_ref:
            self.dispatch.register(self.name, self.actor_ref, self.incarnation)
        self._ensure_watcher()
        self._relist("start")

    def on_stop(self) -> None:
        self._stop_watcher()

    def on_failure(
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop_watcher()
        super().on_failure(exception_type, exception_value, traceback)

    # --- messages -------------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        if isinstance(message, FilesChanged):
            if self._watcher is not None:
                self._watcher.taken()  # before listing: later changes are told again
            self._ensure_watcher()
            self._relist("inotify" if message.paths else "watch ready", message.paths)
        elif isinstance(message, Tick) and message.kind == RELIST_TICK:
            self._ensure_watcher()
            self._relist("relist")
        else:
            return super().handle(message)
        return None

    # --- the listing ----------------------------------------------------------------------

    def _relist(self, why: str, changed: tuple[str, ...] = ()) -> None:
        result = read_manifest_dir(self.path, self.node_name)
        if changed:
            result = without_files_being_written(result, frozenset(changed))
        self.listings += 1
        pods = self._with_last_good(result)
        problems = tuple(problem_from_error(err) for err in result.errors)
        self._problem_log.note(problems, result.warnings)
        # The whole pods, not only their UIDs: a manifest that names its UID may change
        # its labels alone, and the sync loop must hear it (upstream sends every listing).
        key = (tuple(pods), problems)
        if key == self._last:
            return
        self._last = key
        self.sent += 1
        _log.debug(
            "file source ({}): {} pod(s), {} problem(s) in {}", why, len(pods), len(problems),
            self.path,
        )  # fmt: skip
        self.send(names.SYNC_LOOP, SourceSnapshot(SOURCE, pods, problems, result.warnings))

    def _with_last_good(self, result: ManifestDirResult) -> tuple[Pod, ...]:
        """The listing's pods, plus the last good pods of files an edit has broken.

        A typo in a manifest of a running pod is reported (log and metric) but does not
        stop the pod: its last good version stays until the file is fixed or deleted.
        """
        good: dict[str, list[Pod]] = {}
        for sourced in result.pods:
            good.setdefault(sourced.source, []).append(sourced.pod)
        kept: list[Pod] = []
        broken = {err.source for err in result.errors}
        for source in broken - set(good):
            previous = self._good.get(source)
            if previous and os.path.exists(source):
                good[source] = list(previous)
                kept.extend(previous)
                if source not in self._keeping:
                    _log.warning("{} is broken: keeping its last good version ({} pod(s)) "
                                 "until it is fixed or deleted", source, len(previous))
        self._keeping = broken & set(good)
        self._good = {source: tuple(p) for source, p in good.items()}
        return tuple(sp.pod for sp in result.pods) + tuple(kept)

    # --- the watcher ----------------------------------------------------------------------

    def _ensure_watcher(self) -> None:
        """Start a watcher, or move it, so it watches what ``path`` now is."""
        if not self.watch:
            return
        target = _watch_target(self.path)
        current = self._watcher
        if (
            current is not None
            and current.alive()
            and target is not None
            and (current.target, current.only) == target
        ):
            return
        self._stop_watcher()
        if target is None:
            return
        self._watcher = _Watcher(target[0], target[1], self.dispatch, self.name)
        self._watcher.start()
        _log.debug("watching {} for manifests", target[0])

    def _stop_watcher(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
