"""Reading traces back: the files of a trace directory (or one file), in order.

A kubelet killed mid-write may leave a torn last line; it is skipped, so a trace always
reads up to its last whole record.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

_decoder = msgspec.json.Decoder()


class TraceError(Exception):
    """The trace cannot be read: the message names the file and the cause."""


@dataclass(slots=True)
class Trace:
    """Every record of a trace, with the header of its first file."""

    records: list[dict[str, Any]]
    header: dict[str, Any]
    files: tuple[Path, ...]
    torn: list[str] = field(default_factory=list)

    @property
    def version(self) -> int:
        """The format the trace was written in (its header's ``v``; 1 when it has none)."""
        version = self.header.get("v", 1)
        return version if isinstance(version, int) else 1

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
    for file in files:
        lines = file.read_bytes().split(b"\n")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = _decoder.decode(line)
            except msgspec.DecodeError as err:
                if number >= len(lines) - 1:
                    torn.append(f"{file}: line {number} is torn (the kubelet stopped mid-write)")
                    continue
                raise TraceError(f"{file}: line {number}: not a trace record: {err}") from err
            if record.get("k") == "header":
                header = header or record
                continue
            records.append(record)
    return Trace(records, header, files, torn)
