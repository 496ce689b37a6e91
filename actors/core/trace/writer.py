"""Trace recording: every delivery, handler, runtime call, clock read and decision.

Records are JSON lines in ``trace-NNNNNN.jsonl`` files under the trace directory, a new
file once one passes ``max_bytes``, and the oldest files of the directory deleted past
``max_files`` (this project's --trace-max-bytes and --trace-max-files), so a trace costs
at most about ``max_bytes * max_files`` of disk. Every file starts with a header that
holds the whole start config, the run it belongs to (``run``: one id per writer, so a
daemon restarted on the same directory starts a new run) and which file of that run it is
(``part``, from 1): any suffix of a run's files can be read on its own, and a reader
knows when a run's beginning was deleted (actors.core.trace.reader). Callers only
enqueue (messages are immutable, so they can be encoded later); one writer thread encodes
and appends whole lines, so a kubelet killed mid-write leaves a trace readable up to its
last whole record.

Record kinds (field ``k``), all with wall time ``t`` and monotonic time ``m``:
  header    v, pid, run, part, argv, config             first record of every file
            (v: TRACE_VERSION; traces without one are version 1)
  msg       id, from, seq, to, inc, parent, dead, type, body [, carried]
                                                        a delivery or dead letter; carried:
                                                        the types of messages it holds
  begin/end id, actor, inc [, error]                    a handler ran for delivery ``id``
  call      actor, inc, in, method, args, dur, result, error     a runtime call
  input     actor, inc, in, name, value                 a clock read or another input
  spawn     actor, inc                                  an actor (re)started
  decision  actor, what, detail                         a supervisor decision
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
from loguru import logger

from actors.core import context
from actors.core.hooks import Recorder
from actors.core.trace.names import MESSAGES

TRACE_VERSION = 2
"""The format of the records (the header's ``v``). 2: message bodies may hold fields that
version 1's code did not have (StepResult.backoff); replay compares a version 1 trace's
bodies only on the keys they hold (actors.core.trace.stubs.known_keys_only)."""
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_FILES = 50
_FLUSH_EVERY = 0.05


def _enc_hook(value: Any) -> Any:
    if isinstance(value, BaseException):
        return {"type": type(value).__name__, "repr": repr(value)}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, frozenset | set):
        return sorted(value, key=repr)
    return repr(value)


_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)


def encode(value: object) -> bytes:
    """A value as trace JSON (what replay compares, so it must be deterministic)."""
    return _encoder.encode(value)


def error_record(error: BaseException) -> dict[str, Any]:
    record: dict[str, Any] = {"type": type(error).__name__, "detail": str(error)}
    for field in ("method", "code", "detail"):
        if hasattr(error, field):
            record[field] = getattr(error, field)
    return record


class TraceWriter(Recorder):
    """The recorder that writes traces: every hook becomes a record."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_files: int = DEFAULT_MAX_FILES,
        config: Mapping[str, Any] | None = None,
        argv: tuple[str, ...] = (),
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.config = dict(config or {})
        self.argv = argv
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        existing = sorted(self.directory.glob("trace-*.jsonl"))
        start = int(existing[-1].stem.split("-")[1]) + 1 if existing else 1
        self._index = itertools.count(start)
        self.run = uuid.uuid4().hex[:16]
        self._part = itertools.count(1)
        self._file: Any = None
        self._size = 0
        self.records = 0
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="trace-writer", daemon=True)
        self._thread.start()

    # --- recording (any thread; only enqueues) --------------------------------------------

    def _put(self, record: dict[str, Any]) -> None:
        record["t"] = time.time()
        record["m"] = time.monotonic()
        self._queue.put(record)

    def delivery(self, id: int, sender: str, sender_seq: int, receiver: str,
                 incarnation: int, parent: int | None, message: object, dead: bool) -> None:
        record: dict[str, Any] = {
            "k": "msg", "id": id, "from": sender, "seq": sender_seq, "to": receiver,
            "inc": incarnation, "parent": parent, "dead": dead,
            "type": MESSAGES.name_of(message), "body": message}
        carried = MESSAGES.carried(message)
        if carried:
            record["carried"] = carried  # replay rebuilds held mail as what it was
        self._put(record)

    def begin(self, id: int, actor: str, incarnation: int) -> None:
        self._put({"k": "begin", "id": id, "actor": actor, "inc": incarnation})

    def end(self, id: int, actor: str, incarnation: int, error: BaseException | None) -> None:
        record: dict[str, Any] = {"k": "end", "id": id, "actor": actor, "inc": incarnation}
        if error is not None:
            record["error"] = repr(error)
        self._put(record)

    def call(self, target: str, method: str, args: tuple[Any, ...], duration: float,
             result: object, error: BaseException | None) -> None:
        record = self._attributed({"k": "call", "target": target, "method": method,
                                   "args": args, "dur": duration})
        if error is not None:
            record["error"] = error_record(error)
        else:
            record["result"] = result
        self._put(record)

    def input(self, name: str, value: object) -> None:
        self._put(self._attributed({"k": "input", "name": name, "value": value}))

    def spawn(self, actor: str, incarnation: int) -> None:
        self._put({"k": "spawn", "actor": actor, "inc": incarnation})

    def decision(self, actor: str, what: str, detail: Mapping[str, Any]) -> None:
        self._put({"k": "decision", "actor": actor, "what": what, "detail": dict(detail)})

    @staticmethod
    def _attributed(record: dict[str, Any]) -> dict[str, Any]:
        handling = context.current()
        record["actor"] = handling.actor if handling else ""
        record["inc"] = handling.incarnation if handling else -1
        record["in"] = handling.delivery if handling else None
        return record

    def close(self, timeout: float = 10.0) -> None:
        """Write everything enqueued so far, then stop the writer thread."""
        self._queue.put(None)
        self._thread.join(timeout)

    # --- the writer thread ----------------------------------------------------------------

    def _open(self) -> None:
        if self._file is not None:
            self._file.close()
        path = self.directory / f"trace-{next(self._index):06d}.jsonl"
        self._file = path.open("ab", buffering=1024 * 1024)
        self._size = 0
        self._write({"k": "header", "v": TRACE_VERSION, "pid": os.getpid(), "run": self.run,
                     "part": next(self._part), "argv": self.argv, "config": self.config,
                     "t": time.time(), "m": time.monotonic()})
        self._prune()

    def _prune(self) -> None:
        files = sorted(self.directory.glob("trace-*.jsonl"))
        for old in files[: max(len(files) - self.max_files, 0)]:
            old.unlink(missing_ok=True)

    def _write(self, record: dict[str, Any]) -> None:
        try:
            line = encode(record) + b"\n"
        except (TypeError, ValueError, msgspec.EncodeError) as err:
            self.dropped += 1
            logger.warning("trace: cannot encode a {} record: {}", record.get("k"), err)
            return
        self._file.write(line)
        self._size += len(line)
        self.records += 1

    def _run(self) -> None:
        self._open()
        last_flush = time.monotonic()
        while True:
            try:
                record = self._queue.get(timeout=_FLUSH_EVERY)
            except queue.Empty:
                record = {}
            if record is None:
                break
            if record:
                if self._size >= self.max_bytes:
                    self._open()
                self._write(record)
            if time.monotonic() - last_flush >= _FLUSH_EVERY or not record:
                self._file.flush()
                last_flush = time.monotonic()
        self._file.flush()
        self._file.close()
