"""Trace recording: every delivery, handler, runtime call, clock read and decision.

Records are JSON lines in ``trace-NNNNNN.jsonl`` files under the trace directory, a new
file once one passes ``max_bytes``, and the oldest files of the directory deleted past
``max_files`` (this project's --trace-max-bytes and --trace-max-files), so a trace costs
at most about ``max_bytes * max_files`` of disk. Every file starts with a header that
holds the whole start config, the run it belongs to (``run``: one id per writer, so a
daemon restarted on the same directory starts a new run) and which file of that run it is
(``part``, from 1): any suffix of a run's files can be read on its own, and a reader
knows when a run's beginning was deleted (actors.core.trace.reader). Callers only
note their arguments (messages are immutable, so they can be encoded later); one writer
thread builds the records, encodes them and appends whole lines, so a kubelet killed
mid-write leaves a trace readable up to its last whole record.

Record kinds (field ``k``), all with wall time ``t`` and monotonic time ``m``:
  header    v, pid, run, part, argv, config [, write_every] [, product, version, commit]
            first record of every file (v: TRACE_VERSION; traces without one are
            version 1; write_every: the seconds a record may have waited for the file,
            what a kill lost at most; product, version, commit: the code that wrote it,
            actors.core.trace.provenance)
  msg       id, from, seq, to, inc, parent, dead, type, body [, carried] [, interned]
                                                        a delivery or dead letter; carried:
                                                        the types of messages it holds
  begin/end id, actor, inc [, error]                    a handler ran for delivery ``id``
  call      actor, inc, in, method, args, dur, result, error [, interned]   a runtime call
  val       id, value                                   a large value, written once a file;
            (no t, m)                                   records name it in ``interned``
  input     actor, inc, in, name, value                 a clock read or another input
  spawn     actor, inc                                  an actor (re)started
  decision  actor, what, detail                         a supervisor decision
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
from loguru import logger
from msgspec import UNSET

from actors.core import context
from actors.core.hooks import Recorder
from actors.core.trace.interning import Interner
from actors.core.trace.names import MESSAGES
from actors.core.trace.provenance import current
from actors.core.trace.records import (
    BeginRecord,
    CallRecord,
    DecisionRecord,
    EndRecord,
    HookRecord,
    InputRecord,
    MsgRecord,
    SpawnRecord,
)

TRACE_VERSION = 4
"""The format of the records (the header's ``v``). 2: message bodies may hold fields that
version 1's code did not have (StepResult.backoff); replay compares a version 1 trace's
bodies only on the keys they hold (actors.core.trace.stubs.known_keys_only). 3: large
values are written once per file in ``val`` records and referred to by id
(actors.core.trace.interning); the reader puts them back, so records read as before.
4: the header names the code that wrote it (product, version, commit), and the start
config holds no switches for older behaviour. An older file is converted to this format
as it is read (actors.core.trace.compat)."""
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_FILES = 50
DEFAULT_WRITE_EVERY = 5.0
"""How long a record may wait for the file, at most (--trace-flush-frequency; 5 s as the
upstream kubelet flushes its own log, --log-flush-frequency): what a kubelet killed
outright (SIGKILL, the OOM killer) loses of its trace at most. An orderly stop, and
``flush()``, write everything at once."""
_BATCH = 256
_RECORD_BYTES = 4096


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
    """The recorder that writes traces: every hook becomes a record.

    A hook only makes its record (actors.core.trace.records) and appends it to a deque:
    the writer thread takes what has gathered, fills in what can wait (a message's type
    name, the values it interns) and encodes and writes the batch. What recording costs a
    daemon most is the writer's wakes, not its records: on these machines a thread's wake
    costs some 0.15 ms of CPU (the timer, the scheduling, the GIL handed over and back;
    woken by another thread instead, it costs that thread some 0.08 ms more), writing a
    record a few us, and a writer that woke every 50 ms while records came cost the
    daemon more in wakes than in records. So it wakes as seldom as its bound allows:
    every ``write_every`` seconds while anything waits (a busy kubelet's records too: a
    pod's start and stop makes some 180 in a second, a burst of 50 pods some 9,000 in a
    few seconds, held until then at no cost but their memory), and not at all while
    nothing is recorded (the first record after a quiet spell wakes it to start its
    timer). An idle kubelet's timers make a dozen records a second. ``flush()`` and
    ``close()`` wake it at once.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_files: int = DEFAULT_MAX_FILES,
        config: Mapping[str, Any] | None = None,
        argv: tuple[str, ...] = (),
        write_every: float = DEFAULT_WRITE_EVERY,
        provenance: Mapping[str, str] | None = None,
    ) -> None:
        """``provenance``: the code named in each header (this process's by default,
        actors.core.trace.provenance.current)."""
        self.directory = Path(directory)
        self.provenance = dict(current() if provenance is None else provenance)
        self.write_every = write_every
        # A trace holds what the kubelet was answered: Secret data and service account
        # tokens among it. It is the node's to read, not any local user's.
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.config = dict(config or {})
        self.argv = argv
        # deque.append and popleft are atomic: the hooks' threads and the writer share it
        # without a lock.
        self._pending: deque[HookRecord] = deque()
        self._wake = threading.Event()
        self._closing = False
        self._idle = True  # the writer waits for a hook to wake it (nothing is pending)
        self._flushed = threading.Condition()
        self._asked = self._done = 0
        existing = sorted(self.directory.glob("trace-*.jsonl"))
        start = int(existing[-1].stem.split("-")[1]) + 1 if existing else 1
        self._index = itertools.count(start)
        self.run = uuid.uuid4().hex[:16]
        self._part = itertools.count(1)
        self._file: Any = None
        self._size = 0
        self._interner = Interner(encode)
        self.records = 0
        self.values = 0
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="trace-writer", daemon=True)
        self._thread.start()

    # --- recording (any thread: appends; the first record of a quiet spell wakes the writer)

    def _add(self, record: HookRecord) -> None:
        self._pending.append(record)
        if self._idle:  # the first record after a quiet spell: the writer sleeps until now
            self._idle = False
            self._wake.set()

    def delivery(self, id: int, sender: str, sender_seq: int, receiver: str,
                 incarnation: int, parent: int | None, message: object, dead: bool) -> None:
        # type and body: the writer's (messages are immutable, so they can wait).
        self._add(MsgRecord(id, sender, sender_seq, receiver, incarnation, parent, dead, "",
                            message, time.time(), time.monotonic()))

    def begin(self, id: int, actor: str, incarnation: int) -> None:
        self._add(BeginRecord(id, actor, incarnation, time.time(), time.monotonic()))

    def end(self, id: int, actor: str, incarnation: int, error: BaseException | None) -> None:
        self._add(EndRecord(id, actor, incarnation, time.time(), time.monotonic(),
                            UNSET if error is None else repr(error)))

    def call(self, target: str, method: str, args: tuple[Any, ...], duration: float,
             result: object, error: BaseException | None) -> None:
        handling = context.current()
        if handling is None:
            record = CallRecord(target, method, args, duration, "", -1, None, time.time(),
                                time.monotonic())
        else:
            record = CallRecord(target, method, args, duration, handling.actor,
                                handling.incarnation, handling.delivery, time.time(),
                                time.monotonic())
        if error is not None:
            record.error = error  # made a record by the writer (error_record)
        else:
            record.result = result
        self._add(record)

    def input(self, name: str, value: object) -> None:
        handling = context.current()
        if handling is None:
            self._add(InputRecord(name, value, "", -1, None, time.time(), time.monotonic()))
        else:
            self._add(InputRecord(name, value, handling.actor, handling.incarnation,
                                  handling.delivery, time.time(), time.monotonic()))

    def spawn(self, actor: str, incarnation: int) -> None:
        self._add(SpawnRecord(actor, incarnation, time.time(), time.monotonic()))

    def decision(self, actor: str, what: str, detail: Mapping[str, Any]) -> None:
        self._add(DecisionRecord(actor, what, dict(detail), time.time(), time.monotonic()))

    def flush(self, timeout: float = 10.0) -> bool:
        """Write everything recorded so far to the file now; False if not done in time."""
        with self._flushed:
            self._asked += 1
            asked = self._asked
            self._wake.set()
            return self._flushed.wait_for(lambda: self._done >= asked or
                                          not self._thread.is_alive(), timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Write everything recorded so far, then stop the writer thread."""
        self._closing = True
        self._wake.set()
        self._thread.join(timeout)

    # --- the writer thread ----------------------------------------------------------------

    def _prepare(self, record: HookRecord) -> None:
        """Fill in what the hook left to the writer; its new values go to ``pending``."""
        if type(record) is MsgRecord:
            message = record.body
            record.type = MESSAGES.name_of(message)
            carried = MESSAGES.carried(message)
            if carried:
                record.carried = carried  # replay rebuilds held mail as what it was
            interned: dict[str, Any] = {}
            record.body = self._interner.message(message, interned)
            if interned:
                record.interned = interned
        elif type(record) is CallRecord:
            if record.error is not UNSET:
                record.error = error_record(record.error)
            else:
                record.result, vid = self._interner.value(record.result)
                if vid is not None:
                    record.interned = {"result": vid}

    def _open(self) -> None:
        if self._file is not None:
            self._file.close()
        path = self.directory / f"trace-{next(self._index):06d}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._file = os.fdopen(fd, "ab", buffering=1024 * 1024)
        self._size = 0
        self._interner.new_file()
        self._write({"k": "header", "v": TRACE_VERSION, "pid": os.getpid(), "run": self.run,
                     "part": next(self._part), "argv": self.argv, "config": self.config,
                     "write_every": self.write_every, **self.provenance, "t": time.time(),
                     "m": time.monotonic()})
        self._prune()

    def _prune(self) -> None:
        files = sorted(self.directory.glob("trace-*.jsonl"))
        for old in files[: max(len(files) - self.max_files, 0)]:
            old.unlink(missing_ok=True)

    def _line(self, line: bytes) -> None:
        self._file.write(line)
        self._size += len(line)

    def _write(self, record: dict[str, Any]) -> None:
        self._line(encode(record) + b"\n")
        self.records += 1

    def _write_batch(self, batch: list[HookRecord]) -> None:
        """Prepare and write ``batch``, its new values before it (all in one file)."""
        interner = self._interner
        ready: list[HookRecord] = []
        for record in batch:
            if type(record) not in _PREPARED:
                ready.append(record)
                continue
            try:
                self._prepare(record)
            except (TypeError, ValueError, msgspec.EncodeError) as err:
                self.dropped += 1
                logger.warning("trace: cannot encode a {} record: {}", _kind(record), err)
                continue
            ready.append(record)
        try:
            lines = _encoder.encode_lines(ready)
        except (TypeError, ValueError, msgspec.EncodeError):
            lines = b"".join(self._encoded_alone(record) for record in ready)
        for vid, data in interner.pending:
            self._line(b'{"k":"val","id":%d,"value":%b}\n' % (vid, data))
            self.values += 1
        interner.pending.clear()
        self._line(lines)
        self.records += len(ready)

    def _encoded_alone(self, record: HookRecord) -> bytes:
        """One record's line, or nothing (counted, logged) if it cannot be encoded."""
        try:
            return encode(record) + b"\n"
        except (TypeError, ValueError, msgspec.EncodeError) as err:
            self.dropped += 1
            self.records -= 1
            logger.warning("trace: cannot encode a {} record: {}", _kind(record), err)
            return b""

    def _drain(self) -> int:
        """Write what the hooks have recorded; how many records that was."""
        pending = self._pending
        count = len(pending)
        batch = [pending.popleft() for _ in range(count)]
        # A file ends at the first record past max_bytes: one at a time near the end, in
        # batches of fewer records than the room left would hold at _RECORD_BYTES each
        # before it (so a file passes max_bytes by about one record, as ever).
        start = 0
        while start < count:
            if self._size >= self.max_bytes:
                self._open()
            step = min(_BATCH, max(1, (self.max_bytes - self._size) // _RECORD_BYTES))
            self._write_batch(batch[start:start + step])
            start += step
        return count

    def _run(self) -> None:
        self._open()
        while True:
            # Idle: until a record, a flush() or a close(); else at most write_every.
            woken = self._wake.wait(None if self._idle else self.write_every)
            self._wake.clear()
            if woken and not (self._closing or self._flush_asked()):
                continue  # a quiet spell's first record: it waits for the next timed wake
            with self._flushed:
                asked = self._asked
            written = self._drain()
            if written:
                self._file.flush()
            with self._flushed:
                self._done = asked
                self._flushed.notify_all()
            if self._closing:
                break
            if not written:
                # Nothing for a whole write_every: sleep until a record wakes it. A hook
                # that appended before _idle was set saw it False: seen in _pending here.
                self._idle = True
                if self._pending:
                    self._idle = False
        self._drain()
        self._file.flush()
        self._file.close()

    def _flush_asked(self) -> bool:
        with self._flushed:
            return self._asked > self._done


_PREPARED = (MsgRecord, CallRecord)
"""The records the writer thread completes (the others are whole when made)."""


def _kind(record: HookRecord) -> str:
    return str(type(record).__struct_config__.tag)
