"""The file config source: a static-pod manifest directory, watched and re-listed.

Upstream's file source (pkg/kubelet/config/file*.go) lists the directory's top level,
turns each manifest into a static pod and sends the whole set (a SET) whenever inotify
reports a change, and re-lists every --file-check-frequency (20 s) in case an event was
missed. This actor does the same: it sends a SourceSnapshot("file", ...) to the supervisor
on start (always, even an empty one for a missing path, so the source becomes ready), on
each Tick("file-relist") the daemon schedules, and on each FilesChanged its watcher thread
sends. A listing identical to the last one sent (same pods, same problems) is not sent.

The watcher is a thread running ``watchfiles.watch`` (inotify) on the directory, with a
short debounce so a new manifest reaches the supervisor within tens of milliseconds. It
only ever tells the actor ``FilesChanged`` through the dispatch; the actor does the
listing in its own thread. A path that does not exist yet (or a single manifest file) is
watched through its parent directory; the actor moves the watch to the directory once it
appears, and restarts a watcher that died on the next listing.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import watchfiles
from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.core.trace.names import message
from actors.kubelet import names
from actors.kubelet.messages import ManifestProblem, SourceSnapshot
from runtime.clock import Clock
from runtime.errors import ManifestError
from runtime.pod.model import Pod
from runtime.pod.static import ManifestDirResult, read_manifest_dir

__all__ = [
    "DEBOUNCE_MS",
    "NAME",
    "RELIST_TICK",
    "STEP_MS",
    "FileSource",
    "FilesChanged",
    "ProblemLog",
    "problem_from_error",
]

NAME = names.SOURCE_FILE
RELIST_TICK = names.TICK_FILE_RELIST
SOURCE = "file"

DEBOUNCE_MS = 50
"""Longest time changes are grouped before the watcher reports them."""
STEP_MS = 10
"""Quiet time after a change before the watcher reports: the added latency when idle."""
READY_TIMEOUT_MS = 500
"""How often the watcher thread wakes without changes (and so when it first reports that
its watch is in place, prompting one listing to catch files made while it started)."""

_log = logger.bind(pod="", uid="", container="")


@message("FilesChanged")
@dataclass(frozen=True, slots=True)
class FilesChanged:
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


class _Watcher:
    """A thread running watchfiles.watch on one directory; tells the actor what changed."""

    def __init__(self, target: str, only: str | None, dispatch: Dispatch, to: str) -> None:
        self.target = target
        self.only = only
        self._dispatch = dispatch
        self._to = to
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch:{target}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def stop(self, wait: float = 1.0) -> None:
        """Stop watching; the thread notices within one watchfiles step."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=wait)

    def _relevant(self, _change: watchfiles.Change, path: str) -> bool:
        if self.only is not None:
            return path == self.only or path.startswith(self.only + os.sep)
        return not os.path.basename(path).startswith(".")

    def _run(self) -> None:
        announced = False
        try:
            for changes in watchfiles.watch(
                self.target,
                watch_filter=self._relevant,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                stop_event=self._stop,
                rust_timeout=READY_TIMEOUT_MS,
                yield_on_timeout=True,
                recursive=False,
                raise_interrupt=False,
            ):
                if self._stop.is_set():
                    break
                if not changes and announced:
                    continue
                announced = True
                paths = tuple(sorted(path for _, path in changes))
                self._dispatch.tell(self._to, FilesChanged(paths), sender=f"{self._to}/watch")
        except Exception as err:
            # The actor starts a new watcher on its next listing.
            _log.warning("watching {} for manifests stopped: {}", self.target, err)


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
            self._ensure_watcher()
            self._relist("inotify" if message.paths else "watch ready")
        elif isinstance(message, Tick) and message.kind == RELIST_TICK:
            self._ensure_watcher()
            self._relist("relist")
        else:
            return super().handle(message)
        return None

    # --- the listing ----------------------------------------------------------------------

    def _relist(self, why: str) -> None:
        result = read_manifest_dir(self.path, self.node_name)
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
