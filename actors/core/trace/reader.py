"""Reading traces back: the files of a trace directory (or one file), in order.

A kubelet killed mid-write may leave a torn last line; it is skipped, so a trace always
reads up to its last whole record.

A directory may hold several runs (a daemon restarted on the same --trace-dir), and a run
may have lost its first files to retention (--trace-max-files). Each file's header says
which run it belongs to (``run``) and which of its files it is (``part``, from 1), so
``Trace.runs()`` splits a trace into its runs and ``Trace.begins_mid_run`` tells one whose
beginning is gone. Files written before headers said so count as one run per pid, whole.

Large values a file holds once (``val`` records, format version 3) are put back into the
records that refer to them (actors.core.trace.interning), so every record reads whole. A
file written in an older format is converted to the current one as it is read
(actors.core.trace.compat), so what reads a trace knows one format.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from actors.core.trace.compat import CONVERTERS, recorded_version
from actors.core.trace.interning import UnknownValue, resolve
from actors.core.trace.records import ValueRecord
from actors.core.trace.writer import TRACE_VERSION

_decoder = msgspec.json.Decoder()
_value_decoder = msgspec.json.Decoder(ValueRecord)
_VALUE_LINE = b'{"k":"val",'


class TraceError(Exception):
    """The trace cannot be read: the message names the file and the cause."""


@dataclass(frozen=True, slots=True)
class TracePart:
    """One file of a trace: its header, and where its records start in ``Trace.records``."""

    file: Path
    header: dict[str, Any]
    start: int

    @property
    def run(self) -> str:
        """The run the file belongs to (older files: their writer's pid)."""
        return str(self.header.get("run") or f"pid {self.header.get('pid', '?')}")

    @property
    def part(self) -> int:
        """Which file of its run this is, from 1 (older files: 1, as if whole)."""
        part = self.header.get("part", 1)
        return part if isinstance(part, int) else 1


@dataclass(slots=True)
class Trace:
    """Every record of a trace, with the header of its first file."""

    records: list[dict[str, Any]]
    header: dict[str, Any]
    files: tuple[Path, ...]
    torn: list[str] = field(default_factory=list)
    parts: tuple[TracePart, ...] = ()

    @property
    def begins_mid_run(self) -> bool:
        """Whether the first file is not its run's first (retention deleted those)."""
        return bool(self.parts) and self.parts[0].part > 1

    def runs(self) -> list[Trace]:
        """The trace split into its runs, in order (one: itself)."""
        groups: list[list[TracePart]] = []
        for part in self.parts:
            if groups and groups[-1][-1].run == part.run:
                groups[-1].append(part)
            else:
                groups.append([part])
        if len(groups) <= 1:
            return [self]
        out: list[Trace] = []
        for n, group in enumerate(groups):
            end = groups[n + 1][0].start if n + 1 < len(groups) else len(self.records)
            start = group[0].start
            files = tuple(p.file for p in group)
            out.append(Trace(self.records[start:end], group[0].header, files,
                             [t for t in self.torn if t.startswith(tuple(map(str, files)))],
                             tuple(TracePart(p.file, p.header, p.start - start)
                                   for p in group)))
        return out

    def notes(self) -> list[str]:
        """What a reader of this trace should know: runs, and a beginning deleted."""
        out: list[str] = []
        runs = self.runs()
        if len(runs) > 1:
            out.append(f"{len(runs)} runs in this trace (the daemon was restarted on the "
                       "same trace directory); replay replays each on its own")
        for run in runs:
            if run.begins_mid_run:
                first = run.parts[0]
                out.append(f"{first.file.name} is file {first.part} of its run ({first.run}): "
                           f"the {first.part - 1} before it were deleted (--trace-max-files), "
                           "so what happened before it is not in the trace")
        if self.version < TRACE_VERSION:
            out.append(f"written in trace format {self.version}, converted to format "
                       f"{TRACE_VERSION} as it was read")
        return out

    @property
    def version(self) -> int:
        """The format the trace was written in (its header's ``v``; 1 when it has none):
        its records read as the current format's all the same (actors.core.trace.compat)."""
        return recorded_version(self.header)

    @property
    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = self.header.get("config", {})
        return config

    def messages(self) -> Iterator[dict[str, Any]]:
        return (r for r in self.records if r["k"] == "msg")


def trace_files(path: str | os.PathLike[str]) -> tuple[Path, ...]:
    target = Path(path)
    if target.is_dir():
        files = tuple(sorted(target.glob("trace-*.jsonl")))
        if not files:
            raise TraceError(f"{target}: no trace-*.jsonl files in this directory")
        return files
    if target.is_file():
        return (target,)
    raise TraceError(f"{target}: no such trace file or directory")


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """All records of the trace at ``path`` (a directory or one file)."""
    files = trace_files(path)
    records: list[dict[str, Any]] = []
    header: dict[str, Any] = {}
    torn: list[str] = []
    parts: list[TracePart] = []
    for file in files:
        start = len(records)
        file_records: list[dict[str, Any]] = []
        file_header: dict[str, Any] = {}
        values: dict[int, bytes] = {}
        lines = file.read_bytes().split(b"\n")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                if line.startswith(_VALUE_LINE):
                    value = _value_decoder.decode(line)
                    values[value.id] = bytes(value.value)
                    continue
                record = _decoder.decode(line)
                if "interned" in record:
                    resolve(record, values, _decoder.decode)
            except UnknownValue as err:
                raise TraceError(f"{file}: line {number}: {err}") from err
            except msgspec.DecodeError as err:
                if number >= len(lines) - 1:
                    torn.append(f"{file}: line {number} is torn (the kubelet stopped mid-write)")
                    continue
                raise TraceError(f"{file}: line {number}: not a trace record: {err}") from err
            if record.get("k") == "header":
                file_header = file_header or record
                continue
            file_records.append(record)
        CONVERTERS.upgrade(file_header, file_records)
        header = header or file_header
        records.extend(file_records)
        parts.append(TracePart(file, file_header, start))
    return Trace(records, header, files, torn, tuple(parts))
